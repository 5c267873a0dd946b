"""Triton Python-backend model: one of the two batched stage graphs on ONNX Runtime.

Triton's dynamic batcher hands ``execute`` several requests, each one sentence of its own length (the
inputs allow ragged batches). They are zero-padded into one batch, as the in-process engine pads its
batches (``backends/batching.py``: the graphs mask each row to its ``lengths`` / ``frames``), run in one
ONNX Runtime call, and each request gets its own rows back, cut to its own length, so what a request
receives does not depend on what it was batched with beyond float rounding.

Parameters (config.pbtxt): ``graph`` (file in the version folder), ``stage`` (stage1 | stage2), ``threads``
(ONNX Runtime intra-op threads, 0 = the cores divided among the instances). On a GPU instance (``KIND_GPU``)
it runs on ONNX Runtime CUDA where the model's Python environment has it.
"""

import json
import os
from typing import Any

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils

SAMPLES_PER_FRAME = 600

# Per stage: output -> (axis to cut, input whose length sets it, that input's axis, scale).
CUTS: dict[str, dict[str, tuple[int, str, int, int] | None]] = {
    "stage1": {"durations": (1, "tokens", 1, 1), "d": (1, "tokens", 1, 1), "t_en": (2, "tokens", 1, 1)},
    "stage2": {"audio": (1, "alignment", 2, SAMPLES_PER_FRAME), "audio_lengths": None},
}
INPUTS = {
    "stage1": ("tokens", "lengths", "style", "speed"),
    "stage2": ("alignment", "d", "t_en", "style", "frames"),
}
# Inputs Triton sees as [1] per request but the graph takes as [B].
FLAT = {"lengths", "speed", "frames", "audio_lengths"}


def pad_stack(arrays: list[np.ndarray]) -> np.ndarray:
    """[1, ...] arrays of different sizes -> one zero-padded [B, ...] array."""
    shape = [len(arrays), *np.max([a.shape[1:] for a in arrays], axis=0)]
    out = np.zeros(shape, dtype=arrays[0].dtype)
    for row, array in enumerate(arrays):
        out[row][tuple(slice(0, n) for n in array.shape[1:])] = array[0]
    return out


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        self.stage = params["stage"]
        self.outputs = [o["name"] for o in config["output"]]
        options = ort.SessionOptions()
        # 0: the cores shared among this model's instances (each instance is its own process).
        instances = sum(int(group.get("count", 1)) for group in config.get("instance_group", [])) or 1
        options.intra_op_num_threads = int(params.get("threads", "0")) or max(1, (os.cpu_count() or 1) // instances)
        options.inter_op_num_threads = 1
        providers: list[Any] = ["CPUExecutionProvider"]
        if args.get("model_instance_kind") == "GPU" and "CUDAExecutionProvider" in ort.get_available_providers():
            providers.insert(0, ("CUDAExecutionProvider", {"device_id": int(args["model_instance_device_id"])}))
        path = os.path.join(args["model_repository"], args["model_version"], params["graph"])
        self.session = ort.InferenceSession(path, options, providers=providers)

    def execute(self, requests: list[Any]) -> list[Any]:
        feeds = {}
        for name in INPUTS[self.stage]:
            arrays = [pb_utils.get_input_tensor_by_name(r, name).as_numpy() for r in requests]
            feeds[name] = np.concatenate(arrays).reshape(-1) if name in FLAT else pad_stack(arrays)
        results = dict(zip(self.outputs, self.session.run(self.outputs, feeds), strict=True))
        responses = []
        for row, request in enumerate(requests):
            tensors = []
            for name, value in results.items():
                cut = CUTS[self.stage][name]
                if cut is None:
                    part = value[row:row + 1].reshape(1, 1)
                else:
                    index = [slice(row, row + 1)] + [slice(None)] * (value.ndim - 1)
                    axis, source, source_axis, scale = cut
                    size = pb_utils.get_input_tensor_by_name(request, source).as_numpy().shape[source_axis]
                    index[axis] = slice(0, size * scale)
                    part = value[tuple(index)]
                tensors.append(pb_utils.Tensor(name, np.ascontiguousarray(part)))
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses
