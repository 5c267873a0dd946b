"""Export Kokoro's batched stage graphs from the reference PyTorch model (the ``export`` extra: torch, kokoro).

Build-time only: the runtime never imports this package unless the batched graph cache
(``graphs.batched``) is empty and torch is installed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from ..assets import ModelAssets, load_vocab
from ..backends.batching import STAGE1_INPUTS, STAGE1_OUTPUTS, STAGE2_INPUTS, STAGE2_OUTPUTS, stage1_feeds, stage2_feeds
from ..core import SynthesisItem
from ..graphs.batched import ExportError

_DYNAMIC = {
    "tokens": {0: "B", 1: "T"}, "lengths": {0: "B"}, "style": {0: "B"}, "speed": {0: "B"},
    "durations": {0: "B", 1: "T"}, "d": {0: "B", 1: "T"}, "t_en": {0: "B", 2: "T"},
    "alignment": {0: "B", 1: "T", 2: "F"}, "frames": {0: "B"}, "audio": {0: "B", 1: "S"},
    "audio_lengths": {0: "B"},
}
OPSET = 20


def _example_batch(max_tokens: int = 40) -> dict[str, np.ndarray]:
    """Two rows of different lengths: tracing a batch of 1 would bake size-1 broadcasts into the graph."""
    rng = np.random.default_rng(0)
    items = [SynthesisItem(rng.integers(1, 170, n), rng.standard_normal(256).astype(np.float32) * 0.2, speed)
             for n, speed in ((max_tokens, 1.0), (max_tokens // 2, 1.2))]
    return stage1_feeds(items)


def export_batched(assets: ModelAssets, out_dir: Path, precision: str = "fp32") -> dict[str, str]:
    """Write ``stage1.onnx`` and ``stage2.onnx`` into ``out_dir``; returns file name per stage.

    ``precision`` is stage 2's (``reference.BatchedVocoder``); its graph inputs and outputs are float32 either
    way. An fp16 stage 2 is traced on the GPU when there is one: torch's CPU fp16 kernels take minutes.
    """
    import torch

    from . import reference

    kmodel = reference.build_kmodel(assets.model, load_vocab(assets.vocab), deterministic=True)
    stage1 = reference.BatchedDurations(kmodel).eval()
    stage2 = reference.BatchedVocoder(kmodel, precision).eval()
    feeds1 = _example_batch()
    args1 = tuple(torch.from_numpy(feeds1[name]) for name in STAGE1_INPUTS)
    with torch.inference_mode():
        durations, d, t_en = (x.numpy() for x in stage1(*args1))
    feeds2 = stage2_feeds(durations, d, t_en, feeds1, tail_frames=0)
    args2 = tuple(torch.from_numpy(feeds2[name]) for name in STAGE2_INPUTS)
    if precision != "fp32" and torch.cuda.is_available():
        stage2 = stage2.cuda()
        args2 = tuple(a.cuda() for a in args2)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, module, args, inputs, outputs in (("stage1", stage1, args1, STAGE1_INPUTS, STAGE1_OUTPUTS),
                                                ("stage2", stage2, args2, STAGE2_INPUTS, STAGE2_OUTPUTS)):
        path = out_dir / f"{name}.onnx"
        with torch.no_grad():
            torch.onnx.export(module, args, str(path), dynamo=False, opset_version=OPSET,
                              input_names=list(inputs), output_names=list(outputs),
                              dynamic_axes={k: _DYNAMIC[k] for k in (*inputs, *outputs)})
        graph = onnx.load(str(path))
        onnx.checker.check_model(graph)
        foreign = sorted({n.op_type for n in graph.graph.node if n.domain not in ("", "ai.onnx")})
        if foreign:
            raise ExportError(f"{name} has non-standard operators: {foreign}")
        files[name] = path.name
    return files
