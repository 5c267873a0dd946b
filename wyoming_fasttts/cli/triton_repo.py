"""``wyoming-fasttts triton-repo --out DIR [--backend python|onnxruntime|tensorrt] [--instances N] [--gpus ...]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import Settings
from ..triton.repository import BACKENDS, ENSEMBLE, RepositoryError, write_repository
from .options import add_settings_arguments


def _gpu_list(values: list[str] | None) -> tuple[int, ...]:
    try:
        return tuple(int(v) for value in values or () for v in value.split(",") if v.strip())
    except ValueError as err:
        raise RepositoryError(f"--gpus takes GPU numbers (0 1 or 0,1): {err}") from err


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser)
    g = parser.add_argument_group("triton-repo")
    g.add_argument("--out", required=True, help="folder to write the model repository into")
    g.add_argument("--backend", choices=BACKENDS, default="python",
                   help="python: runs anywhere (scripts/triton-local, CI); onnxruntime / tensorrt: NVIDIA's "
                        "Triton container on GPUs (default: python)")
    g.add_argument("--instances", type=int, default=1, help="model instances per GPU, or on the CPU (default 1)")
    g.add_argument("--gpus", nargs="+", metavar="GPU", help="GPUs to place instances on (0 1 or 0,1; default all)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ..assets import ensure_assets
    from ..graphs.batched import ExportError, ensure_batched_graphs

    out = Path(args.out)
    try:
        gpus = _gpu_list(args.gpus)
        graphs = ensure_batched_graphs(ensure_assets(settings.assets), settings.assets.data_path,
                                       settings.engine.precision)
        layout = write_repository(out, settings, graphs.stage1, graphs.stage2, backend=args.backend,
                                  instances=args.instances, gpus=gpus)
    except (RepositoryError, ExportError, OSError) as err:
        print(f"wyoming-fasttts triton-repo: {err}", file=sys.stderr)
        return 1
    where = f" on GPUs {','.join(map(str, layout.gpus))}" if layout.gpus else ""
    print(f"{out}: model '{ENSEMBLE}' ({layout.backend}, {layout.instances} instance(s){where}, "
          f"batch up to {layout.max_batch}, "
          f"preferred {list(layout.preferred)}, {layout.delay_us} us queue delay)")
    if layout.backend == "python":
        print(f"serve it here: scripts/triton-local --repo {out} --grpc-port 8001")
    elif layout.backend == "tensorrt":
        print(f"build the plans inside NVIDIA's Triton container first: {out}/build-plans.sh")
    return 0
