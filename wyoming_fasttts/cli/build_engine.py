"""``wyoming-fasttts build-engine``: convert the graphs if needed, then build (or confirm) both TensorRT plans."""

from __future__ import annotations

import argparse
import sys

from ..backends.plans import TENSORRT_BACKENDS, batch_shapes, ensure_plans, gpu_stage_graphs
from ..config import Settings
from ..core import PRECISIONS, EngineError
from .options import add_settings_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser)
    parser.add_argument("--backend", choices=sorted(TENSORRT_BACKENDS),
                        help="TensorRT flavour (default: --engine if it names one, else tensorrt-rtx)")
    parser.add_argument("--precision", choices=PRECISIONS,
                        help="stage-2 precision of the batched graphs (fp16: float32 islands, docs/TENSORRT.md)")
    parser.add_argument("--max-frames", type=int, help="stage-2 profile maximum, 25 ms each (default: config)")
    parser.add_argument("--batched", choices=["auto", "always", "never"],
                        help="batched plans (auto, always) or batch-1 plans (never); default: engine.batched")
    parser.add_argument("--compute-capability", help="build for this GPU architecture, e.g. 8.6 (TensorRT-RTX)")
    parser.add_argument("--force", action="store_true", help="rebuild even when valid plans are cached")


def _mb(value: int | None) -> str:
    return "?" if value is None else f"{value / 1e6:.1f}"


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Convert the graphs if needed, then build (or confirm) both plans and print what they need."""
    from ..assets import AssetError, ensure_assets
    from ..graphs.convert import GraphError

    backend = args.backend or (settings.engine.backend if settings.engine.backend in TENSORRT_BACKENDS
                               else "tensorrt-rtx")
    if args.precision:
        settings.engine.precision = args.precision
    if args.compute_capability:
        settings.engine.compute_capability = args.compute_capability
    if args.max_frames:
        settings.engine.max_frames = args.max_frames
    if args.batched:
        settings.engine.batched = args.batched
    try:
        assets = ensure_assets(settings.assets, voices=[])
        graphs = gpu_stage_graphs(settings, assets)
        plans = ensure_plans(settings, graphs, backend, rebuild=args.force)
    except (AssetError, GraphError, EngineError) as err:
        print(f"build-engine: {err}", file=sys.stderr)
        return 1
    kind = "batched" if graphs.batched else "batch-1"
    print(f"{backend} {kind} plans in {settings.engine.engine_path} (graphs {graphs.paths['stage1'].parent.name}):")
    print(f"  {'stage':7} {'plan MB':>8} {'weights MB':>11} {'activations MB':>15} {'build s':>8}  file")
    for stage, plan in plans.items():
        r = plan.record
        state = "built" if plan.built else "cached"
        print(f"  {stage:7} {_mb(r.plan_bytes):>8} {_mb(r.weights_bytes):>11} {_mb(r.activation_bytes):>15} "
              f"{r.build_seconds:>8.1f}  {plan.key.filename} ({state})")
    if graphs.batched:
        shapes = batch_shapes(settings.scheduler.max_batch, settings.engine.max_frames, settings.engine.batch_frames)
        print("  stage-2 profiles (rows x frames): " + ", ".join(f"{b} x {f}" for b, f in shapes))
    return 0
