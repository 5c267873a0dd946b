"""Batched Kokoro graphs: the on-disk cache, keyed by the model and a format version, filled once by
``export.batched`` (torch) and read by the engines.

The shipped export fixes the batch at 1 (squeezed audio, batch-0 gathers, LSTMs without lengths, no
masks), so it cannot be patched into a batched one. ``reference.BatchedDurations`` / ``BatchedVocoder``
compute every padded row exactly as the row alone; ``export.batched`` exports them as two graphs with the same
cut as the batch-1 stage graphs (``split``): stage 1 (text -> durations, features), a host step that turns
each row's durations into its alignment, stage 2 (alignment -> audio). The cut keeps every shape set by
an input (TensorRT profiles over B, T and F; no data-dependent output size), and it is where the host
caps the trailing silent token before the vocoder spends time on it.

Feeding a batch at run time is ``batching``'s job (numpy only; torch is needed just to export, once).

Export: ``python -m wyoming_fasttts.graphs.batched [--data-dir DIR]`` or ``ensure_batched_graphs``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..assets import ModelAssets, sha256_of
from ..core import PRECISIONS, check_precision
from .cache import build_once, file_entry, read_manifest, write_manifest

_LOGGER = logging.getLogger(__name__)


class ExportError(RuntimeError):
    """The batched graphs could not be produced; the message is meant for the user."""


@dataclass(frozen=True)
class BatchedGraphs:
    directory: Path
    stage1: Path
    stage2: Path
    sha256: dict[str, str]
    """Each stage file's content hash, as the manifest recorded it (TensorRT plans are keyed on it)."""


FORMAT_VERSION = 1
"""The batched graphs' format. Raise it in the change that makes newly exported graphs differ from earlier
ones (the batched modules in ``export.reference``, the dequantisation they load, ``export.batched.OPSET``, the
stage inputs and outputs in ``backends.batching``): caches and the GPU image's prebuilt graphs are then
exported again. Anything else (a comment, a refactor, a move) keeps the key, so a server without torch keeps
its batched graphs."""


def cache_key(model_path: Path, precision: str = "fp32") -> str:
    """Hash of the model's bytes, the format version and stage 2's precision: nothing else decides what the
    export produces. The float32 key is the one used before precisions existed, so its caches stay valid."""
    check_precision(precision)
    text = f"{sha256_of(model_path)}:batched-format-{FORMAT_VERSION}"
    if precision != "fp32":
        text += f":stage2-{precision}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _cached(directory: Path, key: str) -> BatchedGraphs | None:
    found = read_manifest(directory, key, lambda manifest: manifest["stages"], {"stage1", "stage2"}, "batched graphs")
    if found is None:
        return None
    return BatchedGraphs(directory, found["stage1"].path, found["stage2"].path,
                         {stage: f.sha256 for stage, f in found.items()})


def ensure_batched_graphs(assets: ModelAssets, data_path: Path, precision: str = "fp32") -> BatchedGraphs:
    """The batched graphs for ``assets.model`` in ``data_path/graphs/batched-<key>``, exported on first use.

    ``precision`` is stage 2's (``engine.precision``): each has its own directory, so switching between them
    exports once each and never serves one for the other. Exporting needs the ``export`` extra (torch,
    kokoro); a server without it only ever reads the cache.
    """
    key = cache_key(assets.model, precision)
    directory = data_path / "graphs" / f"batched-{key}"
    result = build_once(directory, lambda d: _cached(d, key),
                        lambda tmp: _export_into(assets, tmp, key, precision))
    if result is None:
        raise ExportError(f"batched graph cache {directory} is incomplete after export")
    return result


def _export_into(assets: ModelAssets, tmp: Path, key: str, precision: str) -> None:
    try:
        from ..export.batched import export_batched

        files = export_batched(assets, tmp, precision)
    except ImportError as err:
        raise ExportError(f"batched graphs are not built yet and cannot be here: {err}. Run "
                          "'python -m wyoming_fasttts.graphs.batched' where the 'export' extra is installed") from err
    import torch

    write_manifest(tmp, {"key": key, "source": str(assets.model), "torch": torch.__version__, "precision": precision,
                         "stages": {s: file_entry(tmp / f) for s, f in files.items()}})


def main(argv: Sequence[str] | None = None) -> None:
    from ..assets import ensure_assets
    from ..config import load_settings

    parser = argparse.ArgumentParser(description="Export Kokoro's batched stage graphs into the data dir cache.")
    parser.add_argument("--config", help="a config file (same keys as defaults.yaml)")
    parser.add_argument("--data-dir", help="overrides assets.data_dir")
    parser.add_argument("--precision", choices=PRECISIONS, help="stage 2's precision (overrides engine.precision)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    settings = load_settings(args.config, {"assets.data_dir": args.data_dir, "engine.precision": args.precision})
    graphs = ensure_batched_graphs(ensure_assets(settings.assets, voices=[]), settings.assets.data_path,
                                   settings.engine.precision)
    print(json.dumps({"stage1": str(graphs.stage1), "stage2": str(graphs.stage2)}, indent=2))


if __name__ == "__main__":
    main()
