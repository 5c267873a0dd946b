"""Where the torch-cuda engine's graph pool grows (issue 13, eighth pass): PyTorch's reserved and allocated memory
after each bucket shape's capture into the one shared pool, beside that shape's own working set (its peak
allocation run eagerly), eager kernels, shapes in the engine's order (largest first) or smallest first.

    python benchmarks/gpu_torch_pool.py --data-dir D [--order largest|smallest] --out pool.json     # on a GPU
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from wyoming_fasttts.assets import ModelAssets
from wyoming_fasttts.backends.torch_cuda import create_torch_engine
from wyoming_fasttts.config import load_settings

MIB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--order", choices=("largest", "smallest"), default="largest")
    parser.add_argument("--out", default="pool.json")
    args = parser.parse_args()
    data = Path(args.data_dir)
    settings = load_settings(overrides={"assets.data_dir": str(data), "engine.torch_compile": False})
    engine = create_torch_engine(settings, ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data))
    engine.graphs = False
    engine.warmup()  # every shape twice, nothing captured
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
        base_reserved, base_allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
        pool, stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()
        graphs = []
        for row, shape in zip(rows, shapes, strict=True):
            graph, call = torch.cuda.CUDAGraph(), engine._call(shape)
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                call()
            graphs.append(graph)
            row["reserved_mib"] = (torch.cuda.memory_reserved() - base_reserved) / MIB
            row["allocated_mib"] = (torch.cuda.memory_allocated() - base_allocated) / MIB
    report = {"order": args.order, "base_reserved_mib": base_reserved / MIB, "rows": rows,
              "largest_working_set_mib": max(r["working_set_mib"] for r in rows),
              "pool_reserved_mib": rows[-1]["reserved_mib"], "pool_allocated_mib": rows[-1]["allocated_mib"]}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print({k: v for k, v in report.items() if k != "rows"})
    for r in rows[:6] + rows[-3:]:
        print(r)


if __name__ == "__main__":
    main()
