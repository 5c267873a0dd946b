"""Triton Python-backend model: the host step between the two stages, per sentence.

Durations from stage 1 -> frames per token (the trailing silent token capped at ``tail_frames``) -> the
token-to-frame alignment stage 2 takes. It is the package's own ``backends/alignment.py``, copied beside this
file by ``triton-repo``, so Triton computes exactly what the in-process engines compute.

``frame_bucket`` > 1 pads the frame axis up to a multiple of it (zeros, ``frames`` keeps the true count):
stage-2 backends without ragged batching (ONNX Runtime, TensorRT) batch only equal shapes.
"""

import json
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils
from alignment import alignment, frame_counts  # type: ignore[import-not-found]  # copied beside this file


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        params = {k: v["string_value"] for k, v in json.loads(args["model_config"]).get("parameters", {}).items()}
        self.tail_frames = int(params.get("tail_frames", "0"))
        self.frame_bucket = max(1, int(params.get("frame_bucket", "1")))

    def execute(self, requests: list[Any]) -> list[Any]:
        responses = []
        for request in requests:
            durations = pb_utils.get_input_tensor_by_name(request, "durations").as_numpy()
            length = int(pb_utils.get_input_tensor_by_name(request, "lengths").as_numpy().reshape(-1)[0])
            counts = frame_counts(durations[0, :length], self.tail_frames)
            total = int(counts.sum())
            padded = -(-total // self.frame_bucket) * self.frame_bucket
            aligned = np.zeros((1, durations.shape[1], padded), dtype=np.float32)
            aligned[0, :length, :total] = alignment(counts)[0]
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("alignment", aligned),
                pb_utils.Tensor("frames", np.array([[total]], dtype=np.int64)),
            ]))
        return responses
