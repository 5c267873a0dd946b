"""Batched Kokoro graphs: re-exported from the reference PyTorch model, cached by content, fed by the host.

The shipped export fixes the batch at 1 (squeezed audio, batch-0 gathers, LSTMs without lengths, no
masks), so it cannot be patched into a batched one. ``reference.BatchedDurations`` / ``BatchedVocoder``
compute every padded row exactly as the row alone; this module exports them as two graphs with the same
cut as the batch-1 stage graphs (``split``): stage 1 (text -> durations, features), a host step that turns
each row's durations into its alignment, stage 2 (alignment -> audio). The cut keeps every shape set by
an input (TensorRT profiles over B, T and F; no data-dependent output size), and it is where the host
caps the trailing silent token before the vocoder spends time on it.

Feeding a batch at run time is ``batching``'s job (numpy only; torch is needed just to export, once).

Export: ``python -m wyoming_fasttts.model.export [--data-dir DIR]`` or ``ensure_batched_graphs``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from ..assets import ModelAssets, load_vocab, sha256_of
from ..backends.base import SynthesisItem
from .batching import STAGE1_INPUTS, STAGE1_OUTPUTS, STAGE2_INPUTS, STAGE2_OUTPUTS, stage1_feeds, stage2_feeds
from .cache import build_once, changed_files

_LOGGER = logging.getLogger(__name__)
_DYNAMIC = {
    "tokens": {0: "B", 1: "T"}, "lengths": {0: "B"}, "style": {0: "B"}, "speed": {0: "B"},
    "durations": {0: "B", 1: "T"}, "d": {0: "B", 1: "T"}, "t_en": {0: "B", 2: "T"},
    "alignment": {0: "B", 1: "T", 2: "F"}, "frames": {0: "B"}, "audio": {0: "B", 1: "S"},
    "audio_lengths": {0: "B"},
}
OPSET = 20
_MANIFEST = "manifest.json"


class ExportError(RuntimeError):
    """The batched graphs could not be produced; the message is meant for the user."""


# ------------------------------------------------------------------------------------------------ export

def _example_batch(max_tokens: int = 40) -> dict[str, np.ndarray]:
    """Two rows of different lengths: tracing a batch of 1 would bake size-1 broadcasts into the graph."""
    rng = np.random.default_rng(0)
    items = [SynthesisItem(rng.integers(1, 170, n), rng.standard_normal(256).astype(np.float32) * 0.2, speed)
             for n, speed in ((max_tokens, 1.0), (max_tokens // 2, 1.2))]
    return stage1_feeds(items)


def export_batched(assets: ModelAssets, out_dir: Path) -> dict[str, str]:
    """Write ``stage1.onnx`` and ``stage2.onnx`` into ``out_dir``; returns file name per stage."""
    import torch

    from . import reference

    kmodel = reference.build_kmodel(assets.model, load_vocab(assets.vocab), deterministic=True)
    stage1, stage2 = reference.BatchedDurations(kmodel).eval(), reference.BatchedVocoder(kmodel).eval()
    feeds1 = _example_batch()
    args1 = tuple(torch.from_numpy(feeds1[name]) for name in STAGE1_INPUTS)
    with torch.inference_mode():
        durations, d, t_en = (x.numpy() for x in stage1(*args1))
    feeds2 = stage2_feeds(durations, d, t_en, feeds1, tail_frames=0)
    args2 = tuple(torch.from_numpy(feeds2[name]) for name in STAGE2_INPUTS)
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


# ------------------------------------------------------------------------------------------------ cache

@dataclass(frozen=True)
class BatchedGraphs:
    directory: Path
    stage1: Path
    stage2: Path


def cache_key(model_path: Path) -> str:
    """Hash of the model's bytes and of the code that builds the graphs from it."""
    from . import dequantize

    digest = hashlib.sha256(sha256_of(model_path).encode())
    for source in (Path(__file__), Path(__file__).with_name("reference.py"), Path(dequantize.__file__)):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:20]


def _cached(directory: Path, key: str) -> BatchedGraphs | None:
    try:
        manifest = json.loads((directory / _MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    paths = {stage: directory / entry["file"] for stage, entry in manifest.get("stages", {}).items()}
    if manifest.get("key") != key or set(paths) != {"stage1", "stage2"}:
        return None
    if any(not p.is_file() or p.stat().st_size != manifest["stages"][s]["bytes"] for s, p in paths.items()):
        return None
    changed = changed_files(directory, {entry["file"]: entry["sha256"] for entry in manifest["stages"].values()})
    if changed:
        _LOGGER.warning("cached batched graphs in %s changed since export (%s): exporting again",
                        directory, ", ".join(changed))
        return None
    return BatchedGraphs(directory, paths["stage1"], paths["stage2"])


def ensure_batched_graphs(assets: ModelAssets, data_path: Path) -> BatchedGraphs:
    """The batched graphs for ``assets.model`` in ``data_path/graphs/batched-<key>``, exported on first use.

    Exporting needs the ``export`` extra (torch, kokoro); a server without it only ever reads the cache.
    """
    key = cache_key(assets.model)
    directory = data_path / "graphs" / f"batched-{key}"
    result = build_once(directory, lambda d: _cached(d, key), lambda tmp: _export_into(assets, tmp, key))
    if result is None:
        raise ExportError(f"batched graph cache {directory} is incomplete after export")
    return result


def _export_into(assets: ModelAssets, tmp: Path, key: str) -> None:
    try:
        files = export_batched(assets, tmp)
    except ImportError as err:
        raise ExportError(f"batched graphs are not built yet and cannot be here: {err}. Run "
                          "'python -m wyoming_fasttts.model.export' where the 'export' extra is installed") from err
    import torch

    manifest = {"key": key, "source": str(assets.model), "torch": torch.__version__,
                "stages": {s: {"file": f, "bytes": (tmp / f).stat().st_size, "sha256": sha256_of(tmp / f)}
                           for s, f in files.items()}}
    (tmp / _MANIFEST).write_text(json.dumps(manifest, indent=2))


def main(argv: Sequence[str] | None = None) -> None:
    from ..assets import ensure_assets
    from ..config import load_settings

    parser = argparse.ArgumentParser(description="Export Kokoro's batched stage graphs into the data dir cache.")
    parser.add_argument("--config", help="a config file (same keys as config.yaml)")
    parser.add_argument("--data-dir", help="overrides assets.data_dir")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    settings = load_settings(args.config, {"assets.data_dir": args.data_dir})
    graphs = ensure_batched_graphs(ensure_assets(settings.assets), settings.assets.data_path)
    print(json.dumps({"stage1": str(graphs.stage1), "stage2": str(graphs.stage2)}, indent=2))


if __name__ == "__main__":
    main()
