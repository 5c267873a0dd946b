"""Engine-level: the bucketed ONNX Runtime CUDA engine with CUDA graphs against the same engine without them
(same buckets, same bound buffers), batches of the prepared sentence, interleaved, in one process.

    python benchmarks/gpu_table.py prepare --out inputs.json          # here: the ids our server sends
    python benchmarks/gpu_replay.py --inputs inputs.json --data-dir D [--runs 200] [--batches 1,4,16]

The batched graphs must be in ``D`` (``python -m wyoming_fasttts.model.export --data-dir D``). Buckets are
cut to ``--max-tokens`` / ``--max-frames`` so each engine's warm-up (every shape twice) stays short.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_fasttts.assets import ModelAssets
from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.buckets import Buckets
from wyoming_fasttts.backends.onnxruntime import cuda_providers, session_options
from wyoming_fasttts.backends.ort_graphs import GraphOnnxRuntimeEngine
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.graphs.batched import ensure_batched_graphs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--batches", default="1,4,16")
    parser.add_argument("--max-tokens", type=int, default=126)
    parser.add_argument("--max-frames", type=int, default=256)
    parser.add_argument("--out", default="gpu_replay.json")
    args = parser.parse_args()
    data = Path(args.data_dir)
    graphs = ensure_batched_graphs(ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data),
                                   data)
    item = json.loads(Path(args.inputs).read_text())["items"][0]
    sentence = SynthesisItem(np.asarray(item["ids"], np.int64), np.asarray(item["style"], np.float32))
    batches = [int(b) for b in args.batches.split(",")]
    buckets = Buckets.for_limits(max(batches), args.max_tokens, args.max_frames, 2048)
    engines, report = {}, {"date": time.strftime("%Y-%m-%d %H:%M"), "buckets": str(buckets), "rows": {}}
    for name, graphs_on in (("CUDA graphs", True), ("bound shapes, no graphs", False)):
        start = time.perf_counter()
        engine = GraphOnnxRuntimeEngine(graphs.stage1, graphs.stage2, buckets=buckets,
                                        providers=cuda_providers(0, load_settings().engine.cuda_provider_options),
                                        options=session_options(2, spin=False), tail_frames=4, graphs=graphs_on)
        engine.warmup()
        engines[name] = engine
        report[name] = {"replay": engine.replay, "start_s": round(time.perf_counter() - start, 1)}
        print(name, report[name], flush=True)
    for b in batches:
        times: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.runs):
            for name, engine in engines.items():
                t = time.perf_counter()
                engine.run([sentence] * b)
                times[name].append((time.perf_counter() - t) * 1000)
        for name, ms in times.items():
            row = {"p50": statistics.median(ms), "mean": statistics.fmean(ms), "std": statistics.pstdev(ms),
                   "p99": float(np.percentile(ms, 99)), "n": len(ms)}
            report["rows"][f"{name}, batch {b}"] = row
            print(f"| {name} | {b} | {row['p50']:.2f} | {row['mean']:.2f} ± {row['std']:.2f} | {row['p99']:.2f} |",
                  flush=True)
    Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
