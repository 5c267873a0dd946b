"""Stage 2 (the vocoder, most of a request's GPU time) kernel by kernel: ONNX Runtime CUDA's captured graph
against the same batched PyTorch module, eager and captured in a ``torch.cuda.CUDAGraph``, at the same bucket
shape (the benchmark sentence padded to 64 tokens and 192 frames), batch 1 and 16.

    python benchmarks/gpu_kernels.py --inputs inputs.json --data-dir D [--cuda '{"prefer_nhwc": "1"}'] \\
        [--runs 50] --out gpu_kernels.json

Wall time per call comes from CUDA events around ``--runs`` calls (median); the kernels from PyTorch's
profiler, which records every CUDA kernel of the process through CUPTI, ONNX Runtime's too, graph replays
included. Kernels are grouped by kind (convolution, GEMM, elementwise, ...) so the gap between ONNX Runtime's
kernels and PyTorch's shows where it lies.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KINDS = (("conv", ("conv", "implicit", "xmma", "cudnn", "sm90_xmma", "dgrad", "fprop", "winograd", "fft")),
         ("gemm", ("gemm", "cublas", "cutlass", "matmul")),
         ("rnn", ("lstm", "rnn", "persist")),
         ("norm", ("norm", "welford")),
         ("reduce", ("reduce", "softmax")),
         ("copy/transpose", ("transpose", "copy", "memcpy", "cat", "concat", "pad", "slice", "gather", "scatter",
                             "expand", "tile", "index")),
         ("elementwise", ("elementwise", "vectorized", "unrolled", "binary", "unary", "pointwise", "fill", "where",
                          "clip", "sin", "cos", "exp", "tanh", "pow", "mul", "add", "sub", "div", "leaky")))


def kind(name: str) -> str:
    low = name.lower()
    return next((k for k, keys in KINDS if any(key in low for key in keys)), "other")


def timed(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    import torch

    for _ in range(3):
        fn()
    ms = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
    return {"p50_ms": round(statistics.median(ms), 3), "std_ms": round(statistics.pstdev(ms), 3)}


def kernels(fn: Callable[[], Any], runs: int) -> dict[str, Any]:
    """Per call: kernel count and time by kind, and the 15 costliest kernels."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for event in prof.events():
        if str(event.device_type).endswith("CUDA"):
            per[event.name][0] += event.time_range.elapsed_us() / 1000 / runs
            per[event.name][1] += 1 / runs
    by_kind: dict[str, float] = defaultdict(float)
    for name, (ms, _n) in per.items():
        by_kind[kind(name)] += ms
    top = sorted(per.items(), key=lambda kv: -kv[1][0])[:15]
    return {"kernel_ms": round(sum(ms for ms, _ in per.values()), 3),
            "kernels": round(sum(n for _, n in per.values())),
            "by_kind_ms": {k: round(v, 3) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
            "top": [[name[:110], round(ms, 3), round(n, 1)] for name, (ms, n) in top]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--cuda", default="{}", help="provider options (JSON) over the shipped ones")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--out", default="gpu_kernels.json")
    args = parser.parse_args()
    import torch  # first: PyTorch's cuDNN loads before ONNX Runtime's
    from replay_timing import captured  # beside this script

    from wyoming_fasttts.assets import ModelAssets, load_vocab
    from wyoming_fasttts.backends.base import SynthesisItem
    from wyoming_fasttts.backends.batching import STAGE1_INPUTS, STAGE2_INPUTS, stage2_feeds
    from wyoming_fasttts.backends.buckets import Buckets, bucket_feeds
    from wyoming_fasttts.backends.onnxruntime import cuda_providers, session_options
    from wyoming_fasttts.backends.ort_graphs import GraphOnnxRuntimeEngine
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.export import reference
    from wyoming_fasttts.graphs.batched import ensure_batched_graphs

    data = Path(args.data_dir)
    assets = ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data)
    graphs = ensure_batched_graphs(assets, data)
    item = json.loads(Path(args.inputs).read_text())["items"][0]
    sentence = SynthesisItem(np.asarray(item["ids"], np.int64), np.asarray(item["style"], np.float32))
    batches = [int(b) for b in args.batches.split(",")]
    tokens, frames = 64, 192
    buckets = Buckets(rows=tuple(batches), tokens=(tokens,), frames=(frames,), batch_frames=frames * max(batches))
    options = {**load_settings().engine.cuda_provider_options, **json.loads(args.cuda)}
    engine = GraphOnnxRuntimeEngine(graphs.stage1, graphs.stage2, buckets=buckets,
                                    providers=cuda_providers(0, options), options=session_options(0, spin=False),
                                    tail_frames=4)
    engine.warmup()
    kmodel = reference.build_kmodel(assets.model, load_vocab(assets.vocab), deterministic=True)
    stage1 = reference.BatchedDurations(kmodel).eval().cuda()
    stage2 = reference.BatchedVocoder(kmodel).eval().cuda()
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "gpu": torch.cuda.get_device_name(0),
                              "torch": torch.__version__, "options": options, "replay": engine.replay, "rows": {}}
    for b in batches:
        engine.run([sentence] * b)  # fills stage 2's inputs at (b, 64, 192) with this sentence's rows
        shape = (b, tokens, frames)
        feeds1, _ = bucket_feeds([sentence] * b, buckets)
        with torch.inference_mode():
            out1 = stage1(*(torch.from_numpy(feeds1[n]).cuda() for n in STAGE1_INPUTS))
            feeds2 = stage2_feeds(*(x.float().cpu().numpy() for x in out1), feeds1, tail_frames=4)
        aligned = np.zeros((b, tokens, frames), np.float32)
        aligned[:, :, : feeds2["alignment"].shape[2]] = feeds2["alignment"]
        feeds2["alignment"] = aligned
        static = [torch.from_numpy(np.ascontiguousarray(feeds2[n])).cuda() for n in STAGE2_INPUTS]

        def eager(static: list[torch.Tensor] = static) -> Any:
            with torch.inference_mode():
                return stage2(*static)

        variants: dict[str, Callable[[], Any]] = {
            "onnxruntime-cuda, captured": lambda shape=shape: engine.stage2.run(shape), "pytorch eager": eager}
        try:
            with torch.inference_mode():
                graph, _ = captured(eager)
            variants["pytorch, captured"] = graph.replay
        except Exception as err:  # a host sync in the module: report the two that ran
            report["rows"][f"pytorch, captured, batch {b}"] = {"error": f"{type(err).__name__}: {err}"[:300]}
        for name, fn in variants.items():
            row = {**timed(fn, args.runs), **kernels(fn, min(args.runs, 20))}
            report["rows"][f"{name}, batch {b}"] = row
            print(f"| {name} | {b} | {row['p50_ms']} | {row['kernel_ms']} | {row['kernels']} | "
                  f"{json.dumps(row['by_kind_ms'])} |", flush=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    for name, row in report["rows"].items():
        print(f"== {name}: top kernels (ms per call, count per call)")
        for line in row["top"][:8]:
            print("  ", line)


if __name__ == "__main__":
    main()
