"""GPU latency, jitter, memory and node placement of the stage graphs vs the full graph (and PyTorch eager).

Two steps, because the GPU machine has no G2P and no network:

    python benchmarks/gpu_stages.py prepare --out .gpu/inputs.json        # here: text -> ids, style rows
    python benchmarks/gpu_stages.py measure --inputs .gpu/inputs.json --model M --data-dir D [--runs 200]

``measure`` converts the model with the package's own pipeline, then times each variant interleaved in one
process on ONNX Runtime CUDA (and eager PyTorch if ``model.reference`` and its ``kokoro`` dependency import),
prints a table and writes everything (placement, per-op profile of stage 2) as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TEXTS = [
    "欢迎使用语音合成系统",
    "今天天气很好，我们一起去公园散步吧。人工智能技术正在快速发展，语音合成已经可以做到非常自然的效果。",
]


def prepare(out: Path) -> None:
    from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.text.g2p import phonemize
    from wyoming_fasttts.text.normalize import normalize

    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei"])
    vocab = load_vocab(assets.vocab)
    voice = np.fromfile(assets.voice("zf_xiaobei"), np.float32).reshape(510, 256)
    items = []
    for text in TEXTS:
        ids = phoneme_ids(phonemize(normalize(text)), vocab).tolist()
        items.append({"text": text, "ids": ids, "style": voice[len(ids) - 1].tolist()})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(items, ensure_ascii=False))


def _gpu_used_mb() -> float:
    import pynvml

    pynvml.nvmlInit()
    return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).used / 2**20


def _placement(profile_file: str) -> tuple[dict[str, int], dict[str, int], list[tuple[str, float]]]:
    """Nodes per provider, op types left on the CPU, and the slowest op types (ms over the warm-up runs)."""
    events = json.loads(Path(profile_file).read_text())
    providers, ops, per_op = {}, {}, defaultdict(float)
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        args = e.get("args", {})
        providers[e["name"]] = args.get("provider", "?")
        ops[e["name"]] = args.get("op_name", "?")
        per_op[ops[e["name"]]] += e.get("dur", 0) / 1000
    cpu_ops = Counter(ops[n] for n, p in providers.items() if p == "CPUExecutionProvider")
    return dict(Counter(providers.values())), dict(cpu_ops), sorted(per_op.items(), key=lambda kv: -kv[1])[:8]


def _claim_cudnn_for_torch() -> None:
    """Load PyTorch's bundled cuDNN before ONNX Runtime loads an older system one (which breaks torch)."""
    try:
        import torch
    except ImportError:
        return
    conv = torch.nn.Conv1d(1, 1, 3).cuda()
    conv(torch.zeros(1, 1, 8, device="cuda"))


def measure(args: argparse.Namespace) -> None:
    if args.device == "cuda":
        _claim_cudnn_for_torch()
    import onnx
    import onnxruntime as ort

    from wyoming_fasttts.backends.alignment import alignment, frame_counts
    from wyoming_fasttts.backends.onnxruntime import cuda_providers, pad_tokens, session_options
    from wyoming_fasttts.graphs.convert import ensure_graphs
    from wyoming_fasttts.graphs.dequantize import dequantize
    from wyoming_fasttts.graphs.trt_fixes import fix_for_tensorrt

    items = json.loads(Path(args.inputs).read_text())[: args.items]
    model = Path(args.model)
    t0 = time.time()
    graphs = ensure_graphs(model, Path(args.data_dir))
    tmp = Path(tempfile.mkdtemp())
    plain = dequantize(onnx.load(str(model)))
    onnx.save(plain, str(tmp / "full-float.onnx"))
    onnx.save(fix_for_tensorrt(plain), str(tmp / "full-trt.onnx"))
    del plain
    print(f"graphs ready in {time.time() - t0:.0f} s", flush=True)

    report: dict = {"machine": platform.node(), "ort": ort.__version__, "date": time.strftime("%Y-%m-%d"),
                    "memory_mb": {}, "placement": {}, "slow_ops": {}}
    gpu = args.device == "cuda"
    from wyoming_fasttts.config import load_settings

    providers = cuda_providers(0, load_settings().engine.cuda_provider_options) if gpu else ["CPUExecutionProvider"]
    base = _gpu_used_mb() if gpu else 0.0

    def session(path: Path, name: str) -> ort.InferenceSession:
        opts = session_options(args.threads, spin=False)
        opts.enable_profiling = True
        opts.profile_file_prefix = str(tmp / name)
        return ort.InferenceSession(str(path), opts, providers=providers)

    sessions = {"full-float": session(tmp / "full-float.onnx", "full-float"),
                "full-trt": session(tmp / "full-trt.onnx", "full-trt"),
                "stage1": session(graphs.path("float", "stage1"), "stage1"),
                "stage2": session(graphs.path("float", "stage2"), "stage2")}

    def feeds(item: dict) -> dict:
        return {"tokens": pad_tokens(item["ids"]), "style": np.asarray(item["style"], np.float32)[None],
                "speed": np.array([1.0], np.float32)}

    def stages(item: dict, edge: int) -> tuple[np.ndarray, float, float]:
        f = feeds(item)
        a = time.perf_counter()
        dur, d, t_en = sessions["stage1"].run(None, f)
        b = time.perf_counter()
        aln = alignment(frame_counts(dur, edge))
        audio = sessions["stage2"].run(None, {"alignment": aln, "d": d, "t_en": t_en, "style": f["style"]})[0]
        return audio, (b - a) * 1000, (time.perf_counter() - b) * 1000

    variants = {
        "ORT full float graph": lambda it: sessions["full-float"].run(None, feeds(it))[0],
        "ORT full TensorRT-ready graph": lambda it: sessions["full-trt"].run(None, feeds(it))[0],
        "ORT stage1+host+stage2": lambda it: stages(it, 0)[0],
        "ORT stages, edges capped (3)": lambda it: stages(it, 3)[0],
    }
    for it in items:  # warm-up; then the profiles hold one run of each session
        for fn in variants.values():
            fn(it)
    for name, sess in sessions.items():
        report["placement"][name], cpu_ops, slow = _placement(sess.end_profiling())
        report["placement"][name + " cpu ops"] = cpu_ops
        report["slow_ops"][name] = slow
    if gpu:
        report["memory_mb"]["ORT (all four sessions, warm)"] = round(_gpu_used_mb() - base)
    try:
        import torch

        from wyoming_fasttts.assets import ModelAssets
        from wyoming_fasttts.export.reference import ReferenceModel

        ref = ReferenceModel(ModelAssets(model, Path(args.vocab), model.parent), device=args.device)

        def eager(it: dict) -> np.ndarray:
            out = ref.synthesize(it["ids"], np.asarray(it["style"], np.float32)).audio
            if gpu:
                torch.cuda.synchronize()
            return out

        for it in items:
            eager(it)
        variants["PyTorch eager fp32 (model.reference)"] = eager
        if gpu:
            torch.cuda.reset_peak_memory_stats()
    except Exception as err:  # eager is optional: report why it is missing
        report["eager_error"] = repr(err)
        print("eager PyTorch not measured:", repr(err), flush=True)

    times: dict[str, dict[str, list[float]]] = {it["text"]: {v: [] for v in variants} for it in items}
    split_ms: dict[str, list[tuple[float, float]]] = {it["text"]: [] for it in items}
    deadline = time.monotonic() + args.budget_s
    runs = 0
    while runs < args.runs and time.monotonic() < deadline:
        for it in items:
            for name, fn in variants.items():
                a = time.perf_counter()
                fn(it)
                times[it["text"]][name].append((time.perf_counter() - a) * 1000)
            split_ms[it["text"]].append(stages(it, 3)[1:])
        runs += 1
    if gpu and "PyTorch eager fp32 (model.reference)" in variants:
        report["memory_mb"]["PyTorch eager peak allocated"] = round(torch.cuda.max_memory_allocated() / 2**20)
    report["runs"] = runs
    report["results"], report["stage_p50_ms"] = {}, {}
    for text, per in times.items():
        rows = {}
        for name, ms in per.items():
            rows[name] = {"p50": statistics.median(ms), "mean": statistics.fmean(ms), "std": statistics.pstdev(ms),
                          "p99": float(np.percentile(ms, 99))}
        report["results"][text] = rows
        s1, s2 = zip(*split_ms[text], strict=True)
        report["stage_p50_ms"][text] = {"stage1": statistics.median(s1), "stage2 (capped)": statistics.median(s2)}
    Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1))
    print(json.dumps({k: report[k] for k in ("placement", "slow_ops", "memory_mb", "runs")}, ensure_ascii=False))
    for text, rows in report["results"].items():
        print(f"\n{text[:12]}… ({runs} interleaved runs; stage p50 ms {report['stage_p50_ms'][text]})")
        print("| variant | p50 ms | mean ± std ms | p99 ms |\n|---|---|---|---|")
        for name, r in rows.items():
            print(f"| {name} | {r['p50']:.1f} | {r['mean']:.1f} ± {r['std']:.1f} | {r['p99']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=".gpu/inputs.json")
    m = sub.add_parser("measure")
    m.add_argument("--inputs", required=True)
    m.add_argument("--model", required=True)
    m.add_argument("--vocab", required=True)
    m.add_argument("--data-dir", required=True)
    m.add_argument("--runs", type=int, default=200)
    m.add_argument("--items", type=int, default=2, help="how many of the prepared sentences to time")
    m.add_argument("--threads", type=int, default=2, help="ONNX Runtime intra-op threads per session")
    m.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a smoke test of this script")
    m.add_argument("--budget-s", type=float, default=240.0, help="stop timing after this long")
    m.add_argument("--out", default="gpu_stages.json")
    args = parser.parse_args()
    if args.cmd == "prepare":
        prepare(Path(args.out))
    else:
        measure(args)


if __name__ == "__main__":
    main()
