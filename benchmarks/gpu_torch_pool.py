"""Where the torch-cuda engine's graph pool grows (issue 13, eighth pass): PyTorch's reserved and allocated memory
after each bucket shape's capture into the one shared pool, beside that shape's own working set (its peak
allocation run eagerly), eager kernels, shapes in the engine's order (largest first) or smallest first.

``--config`` runs the engine a config file sets up (fused fp16, a smaller ``batch_frames``: the eleventh pass) instead
of eager kernels, and the report adds what a capture's working set is while it is recorded (PyTorch's peak allocation
during each capture) and the process's device memory by NVML at each step (CUDA's context and modules, which
PyTorch's counters do not see). ``PYTORCH_CUDA_ALLOC_CONF`` is recorded as it was set.

Captures go where the engine puts them (``TorchGraphEngine._capture``): with two slots each stage into a pool and
capture stream of its own. Each capture's row has the process's NVML growth beside PyTorch's reserved growth (what
the driver holds for the graph itself). ``--origins`` records PyTorch's allocation history from the start and names
what is still allocated before the first capture, by the code that allocated it (twenty-fifth pass: weights 236
MiB, I/O buffers 45, one 32 MiB cuBLAS workspace; the 674 MiB the server's engine reported reserved there under
gpu_table.py includes the eager reference model beside it in that process).

    python benchmarks/gpu_torch_pool.py --data-dir D [--order largest|smallest] [--config C.yaml] [--origins]
        --out pool.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from wyoming_fasttts.assets import ModelAssets
from wyoming_fasttts.backends.memory import gpu_process_bytes
from wyoming_fasttts.backends.torch_cuda import create_torch_engine
from wyoming_fasttts.config import load_settings

MIB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--order", choices=("largest", "smallest"), default="largest")
    parser.add_argument("--config", help="the engine's settings (default: eager kernels, the shipped buckets)")
    parser.add_argument("--origins", action="store_true", help="name the blocks live before the first capture")
    parser.add_argument("--out", default="pool.json")
    args = parser.parse_args()
    data = Path(args.data_dir)
    overrides: dict[str, object] = {"assets.data_dir": str(data)}
    if not args.config:
        overrides["engine.torch_compile"] = False
    settings = load_settings(args.config, overrides)
    process: dict[str, float] = {}

    def process_mib() -> float:
        """The process's device memory by NVML, once the device has finished what was queued."""
        torch.cuda.synchronize()
        return (gpu_process_bytes(os.getpid()) or 0) / MIB

    def nvml(step: str) -> None:
        process[step] = process_mib()

    if args.origins:
        # Live blocks keep their Python stacks; the event log is one entry.
        torch.cuda.memory._record_memory_history(max_entries=1, stacks="python")
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    nvml("context")
    engine = create_torch_engine(settings, ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data))
    nvml("weights and buffers")
    replay = engine.replay  # as the server would run it; this script captures the graphs itself
    engine.graphs = False
    engine.warmup()  # every shape twice, nothing captured
    nvml("warm-up")
    shapes = engine.warm_shapes()
    if args.order == "smallest":
        shapes = shapes[::-1]
    rows = []
    with torch.inference_mode():
        for shape in shapes:  # each shape's own working set, eagerly
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            engine._warm_feeds(shape)
            engine._call(shape)()
            torch.cuda.synchronize()
            rows.append({"shape": list(shape), "working_set_mib": (torch.cuda.max_memory_allocated() - before) / MIB})
        torch.cuda.empty_cache()
        nvml("warm-up's cache handed back")
        origins = live_origins() if args.origins else None
        base_reserved, base_allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
        places = [(torch.cuda.graph_pool_handle(), torch.cuda.Stream()) for _ in range(engine.slots)]
        graphs = []
        for row, shape in zip(rows, shapes, strict=True):
            graph, call = torch.cuda.CUDAGraph(), engine._call(shape)
            pool, stream = places[(len(shape) - 2) % engine.slots]  # as the engine's _capture
            torch.cuda.reset_peak_memory_stats()
            reserved, before = torch.cuda.memory_reserved(), process_mib()
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                call()
            graphs.append(graph)
            row["captured_peak_mib"] = (torch.cuda.max_memory_allocated() - base_allocated) / MIB
            row["reserved_mib"] = (torch.cuda.memory_reserved() - base_reserved) / MIB
            row["allocated_mib"] = (torch.cuda.memory_allocated() - base_allocated) / MIB
            row["nvml_growth_mib"] = process_mib() - before
            row["outside_pytorch_mib"] = row["nvml_growth_mib"] - (torch.cuda.memory_reserved() - reserved) / MIB
        torch.cuda.empty_cache()
        nvml("captured")
    report = {"order": args.order, "config": args.config, "replay": replay,
              "weights_mib": engine.weights_bytes / MIB, "io_buffer_mib": engine.buffer_bytes / MIB,
              "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), "process_nvml_mib": process,
              "base_reserved_mib": base_reserved / MIB, "base_allocated_mib": base_allocated / MIB,
              "slots": engine.slots, "live_before_capture": origins, "rows": rows,
              "outside_pytorch_by_stage_mib": {
                  str(n): sum(r["outside_pytorch_mib"] for r in rows if len(r["shape"]) == n) for n in (2, 3)},
              "largest_working_set_mib": max(r["working_set_mib"] for r in rows),
              "pool_reserved_mib": rows[-1]["reserved_mib"], "pool_allocated_mib": rows[-1]["allocated_mib"]}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print({k: v for k, v in report.items() if k not in ("rows", "live_before_capture")})
    for origin in origins or []:
        print(origin)
    for r in rows[:6] + rows[-3:]:
        print(r)


def live_origins(top: int = 25) -> list[dict[str, object]]:
    """PyTorch's allocated blocks now, summed by where they were allocated: the innermost frame in this project's
    code and the innermost frame of all, largest first."""
    sums: dict[tuple[str, str], list[float]] = {}
    for segment in torch.cuda.memory._snapshot()["segments"]:
        for block in segment["blocks"]:
            if block["state"] != "active_allocated":
                continue
            frames = block.get("frames") or []
            where = [f"{Path(f['filename']).name}:{f['line']} {f['name']}" for f in frames]
            ours = next((w for w, f in zip(where, frames, strict=True)
                         if "wyoming_fasttts" in f["filename"] or "benchmarks" in f["filename"]), "?")
            entry = sums.setdefault((ours, where[0] if where else "?"), [0.0, 0])
            entry[0] += block["size"] / MIB
            entry[1] += 1
    ranked = sorted(sums.items(), key=lambda kv: -kv[1][0])[:top]
    return [{"ours": o, "innermost": i, "mib": round(m, 1), "blocks": int(n)} for (o, i), (m, n) in ranked]


if __name__ == "__main__":
    main()
