"""Where a batch's GPU time goes in stage 2 (the vocoder), and what fusing its elementwise work buys.

Issue 13 needs a batch of 16 sentences in <= ~46 ms on the H200; ONNX Runtime CUDA replaying CUDA graphs takes
~58 ms at 8 x 192 frames and ~116-125 ms at 16. "Arithmetic and memory traffic on ONNX Runtime's kernels" was a
guess: nobody had measured where the time goes. This runs the batched stage modules the batched graphs are
exported from (``export.reference.BatchedDurations`` / ``BatchedVocoder``, the server's host step
``backends.batching`` between them, inputs padded to the server's token/frame buckets) on the GPU with PyTorch:

* ``--part profile``: stage 2 under ``torch.profiler`` (CUDA activity) at batches 1, 8, 16 of
  ``gpu_table.py prepare``'s sentence. Every kernel is attributed to the ``record_function`` ranges open on the
  host when it was launched (the reference's helpers and every conv/linear module are wrapped for the run), and
  summed per part of the vocoder (prosody, decoder, generator source/STFT, upsampling, resblocks ...), per role
  (convolution, instance norm, snake, AdaIN affine, ...) and per kernel family (cuDNN conv, ATen elementwise,
  reductions ...), in ms and as a share of the batch's kernel time. It also times the batch (CUDA events, eager
  and replayed as one CUDA graph, as ONNX Runtime does) and reports the GPU's busy time and span, so launch
  gaps show.
* ``--part compile --mode M``: the same batches under ``torch.compile`` (inductor; ``default`` or
  ``max-autotune-no-cudagraphs``) against eager in one process, timed with CUDA events: what fusing the
  elementwise work around the convolutions buys (as TensorRT fuses and ONNX Runtime CUDA does not).
* ``--part planar``: stage 2 compiled as the engine compiles it, 1-D against planar, captured and replayed
  interleaved, each profiled (``part_planar``); ``--as-engine`` builds it as the engine does. Each profile's largest
  kernels carry their launches a call, and the largest inductor kernels their Triton source (``--kernel-source``).
* ``--part report``: merges the parts' JSON files into one and prints markdown tables.

    python benchmarks/gpu_profile.py --part profile --inputs inputs.json --model kokoro-v1.0.int8.onnx \\
        --vocab vocab.json --results DIR [--batches 1,8,16] [--runs 30]
    python benchmarks/gpu_profile.py --part compile --mode default --batches 16,8 ... --results DIR
    python benchmarks/gpu_profile.py --part report --results DIR --out gpu-profile.json
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, STAGE2_INPUTS, stage1_feeds, stage2_feeds
from wyoming_fasttts.backends.buckets import pad_to

TOKEN_BUCKET = 64     # the shipped token bucket holding the sentence's 40 ids + 2 pads
FRAME_BUCKET = 192    # the shipped frame bucket holding its ~150 frames (issue 13's "8 x 192")


# ----------------------------------------------------------------------------------------------- inputs

def load_kmodel(args: argparse.Namespace) -> Any:
    import torch

    from wyoming_fasttts.export import reference

    cache = Path(args.kmodel_cache) if args.kmodel_cache else None
    reference.kokoro_modules()  # unpickling needs kokoro.model without kokoro/__init__ (which loads the G2P)
    if cache and cache.exists():
        return torch.load(cache, weights_only=False)
    vocab = json.loads(Path(args.vocab).read_text())["vocab"]
    kmodel = reference.build_kmodel(Path(args.model), vocab, deterministic=True)
    if cache:
        torch.save(kmodel, cache)
    return kmodel


def load_stages(args: argparse.Namespace) -> tuple[Any, Any]:
    from wyoming_fasttts.export import reference

    kmodel = load_kmodel(args)
    stage1 = reference.BatchedDurations(kmodel).eval().to(args.device)
    stage2 = reference.BatchedVocoder(kmodel, args.precision).eval().to(args.device)
    if args.channels_last:
        channels_last_convolutions(stage2)
    return stage1, stage2


def channels_last_convolutions(stage2: Any) -> None:
    """Every Conv1d weight of stage 2 laid out channels-last ([O, I, K] with strides (K*I, 1, I)): cuDNN's fp16
    tensor-core kernels take NHWC, and with NCHW activations and weights each convolution is wrapped in an
    NCHW->NHWC and an NHWC->NCHW transform (28% of the fused stage 2 of 16 rows, twentieth pass). A weight
    laid out so makes PyTorch pick NHWC for the call; its output stays NHWC for the elementwise work and the
    next convolution, so only tensors entering from elsewhere are converted. Values unchanged."""
    from torch import nn

    for module in stage2.modules():
        if isinstance(module, nn.Conv1d):
            module.weight.data = module.weight.data.transpose(1, 2).contiguous().transpose(1, 2)


def stage2_inputs(stage1: Any, item: dict, batch: int, device: str,
                  frames: int = FRAME_BUCKET) -> tuple[list[Any], dict]:
    """Stage-2 inputs for ``batch`` copies of the sentence, padded like the server's buckets."""
    import torch

    rows = [SynthesisItem(np.array(item["ids"], np.int64), np.array(item["style"], np.float32))] * batch
    feeds1 = stage1_feeds(rows)
    feeds1["tokens"] = pad_to(feeds1["tokens"], (batch, max(TOKEN_BUCKET, feeds1["tokens"].shape[1])))
    with torch.no_grad():
        out1 = stage1(*(torch.from_numpy(feeds1[n]).to(device) for n in STAGE1_INPUTS))
    durations, d, t_en = (x.float().cpu().numpy() for x in out1)
    feeds2 = stage2_feeds(durations, d, t_en, feeds1, tail_frames=4)
    a = feeds2["alignment"]
    feeds2["alignment"] = pad_to(a, (a.shape[0], a.shape[1], max(frames, a.shape[2])))
    shape = {"rows": batch, "tokens": int(a.shape[1]), "frames_bucket": int(feeds2["alignment"].shape[2]),
             "frames": int(feeds2["frames"][0]), "audio_s_per_row": int(feeds2["frames"][0]) * 600 / 24000}
    return [torch.from_numpy(feeds2[n]).to(device) for n in STAGE2_INPUTS], shape


# ----------------------------------------------------------------------------------------------- timing

def time_calls(fn: Callable[[], Any], runs: int, warmup: int, cuda: bool) -> dict:
    """Median/mean of ``runs`` calls after ``warmup``: CUDA-event ms (GPU) and host wall ms (synchronised)."""
    import torch

    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    gpu, wall = [], []
    for _ in range(runs):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            fn()
            end.record()
            end.synchronize()
            wall.append((time.perf_counter() - t0) * 1000)
            gpu.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            wall.append((time.perf_counter() - t0) * 1000)
    out = {"runs": runs, "wall_p50_ms": statistics.median(wall), "wall_mean_ms": statistics.fmean(wall),
           "wall_std_ms": statistics.pstdev(wall)}
    if gpu:
        out.update(event_p50_ms=statistics.median(gpu), event_mean_ms=statistics.fmean(gpu),
                   event_std_ms=statistics.pstdev(gpu), event_min_ms=min(gpu))
    return out


def graph_replay(stage2: Any, inputs: list[Any]) -> Callable[[], Any]:
    """Stage 2 captured once as a CUDA graph (static inputs), replayed: launch gaps gone, kernels unchanged."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(2):
            stage2(*inputs)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        stage2(*inputs)
    return graph.replay


# ------------------------------------------------------------------------------------- ranges and labels

@contextlib.contextmanager
def ranges(stage2: Any) -> Iterator[None]:
    """Wrap the reference's stage-2 helpers and every conv/linear module in ``record_function`` ranges."""
    import torch
    from torch import nn
    from torch.profiler import record_function

    from wyoming_fasttts.export import reference

    names = {id(m): n for n, m in stage2.named_modules()}
    restore: list[Callable[[], None]] = []

    def wrapped(fn: Callable, label: Callable[..., str]) -> Callable:
        @functools.wraps(fn)
        def inner(*a: Any, **kw: Any) -> Any:
            with record_function(label(*a, **kw)):
                return fn(*a, **kw)
        return inner

    def patch(owner: Any, attr: str, label: Callable[..., str], static: bool = False) -> None:
        raw = owner.__dict__[attr]
        fn = raw.__func__ if isinstance(raw, staticmethod) else raw
        new = wrapped(fn, label)
        setattr(owner, attr, staticmethod(new) if static else new)
        restore.append(lambda: setattr(owner, attr, raw))

    def fixed(text: str) -> Callable[..., str]:
        return lambda *a, **kw: text

    for attr, text in (("_instance_norm", "instance_norm"), ("_adain", "adain"), ("_snake", "snake"),
                       ("_mask", "mask"), ("_upsample2", "upsample2")):
        patch(reference, attr, fixed(text))
    patch(reference, "_adain_resblk", lambda block, *a, **kw: "resblk:" + names.get(id(block), "?"))
    patch(reference, "_adain_resblock1", lambda block, *a, **kw: "resblock1:" + names.get(id(block), "?"))
    vocoder = reference.BatchedVocoder
    patch(vocoder, "_prosody", lambda blocks, *a, **kw: "prosody:" + names.get(id(blocks), "?"), static=True)
    patch(vocoder, "_generator", fixed("generator"))
    patch(vocoder, "_source", fixed("source"))
    patch(vocoder, "_reflect_pad", fixed("reflect_pad"), static=True)
    patch(reference._Batched, "lstm", lambda self, name, *a, **kw: "lstm:" + name)
    patch(reference.ShippedSTFT, "spectrum", fixed("stft"))
    patch(reference.ShippedSTFT, "overlap_add", fixed("istft"))
    kinds = ((nn.ConvTranspose1d, "convT:"), (nn.Conv1d, "conv:"), (nn.Linear, "linear:"))
    for name, module in stage2.named_modules():
        prefix = next((p for cls, p in kinds if isinstance(module, cls)), None)
        if prefix:
            module.forward = wrapped(type(module).forward.__get__(module), fixed(prefix + name))
            restore.append(lambda m=module: m.__dict__.pop("forward", None))
    try:
        with torch.no_grad():
            yield
    finally:
        for undo in reversed(restore):
            undo()


def part_of(stack: list[str]) -> str:
    """The part of the vocoder a kernel belongs to, from the ranges open at its launch."""
    s = " ".join(stack)
    if "prosody:" in s:
        return "prosody F0/N blocks"
    if "lstm:predictor.shared" in s:
        return "shared LSTM"
    if "generator" in stack:
        if any(x in stack for x in ("source", "reflect_pad", "stft")):
            return "gen: harmonic source + STFT"
        if "istft" in stack or ".generator.conv_post" in s:
            return "gen: conv_post + iSTFT"
        if "convT:" in s:
            return "gen: upsampling ConvTranspose"
        if ".noise_res." in s or ".noise_convs." in s:
            return "gen: noise branch (noise_convs + noise_res)"
        if ".generator.resblocks." in s:
            return "gen: resblocks"
        return "gen: other (leaky_relu, masks, adds, exp/sin tail)"
    if "resblk:" in s or "conv:" in s:
        return "decoder (F0/N conv, encode, asr_res, decode)"
    if not any(x.startswith("stage2#") for x in stack):
        return "unattributed"
    return "entry (alignment matmuls, masks)"


def role_of(stack: list[str]) -> str:
    """What the kernel computes: the innermost range that names an operation."""
    for label in reversed(stack):
        if label == "instance_norm":
            return "instance norm (masked mean/var)"
        if label == "snake":
            return "snake activation"
        if label.startswith("linear:"):
            return "linear (AdaIN style fc, l_linear)"
        if label == "adain":
            return "AdaIN affine + mask"
        if label.startswith("convT:"):
            return "conv transpose (ups, pool)"
        if label.startswith("conv:"):
            return "conv"
        if label.startswith("lstm:"):
            return "LSTM"
        if label in ("stft", "istft"):
            return "STFT/iSTFT (basis convs, phase)"
        if label in ("source", "reflect_pad"):
            return "harmonic source (sine, upsampling)"
        if label == "mask":
            return "masks"
        if label == "upsample2":
            return "x2 upsample (shortcut)"
    return "other elementwise (leaky_relu, adds, cat, scale)"


_FAMILIES = (
    ("triton (inductor fused)", re.compile(r"^triton_|triton", re.I)),
    ("ATen elementwise", re.compile(r"elementwise_kernel|vectorized_|unrolled_elementwise|copy_kernel", re.I)),
    ("ATen reduction", re.compile(r"reduce_kernel|reduction", re.I)),
    ("cat / pad / index", re.compile(r"CatArrayBatchedCopy|reflection_pad|gather|index|scatter|cumsum|scan", re.I)),
    ("cuDNN RNN (LSTM)", re.compile(r"rnn|lstm", re.I)),
    ("conv (cuDNN/cutlass)", re.compile(r"conv|xmma|cudnn|implicit|fprop|winograd|fft|dgrad|nchw|nhwc|transform",
                                        re.I)),
    ("gemm (cuBLAS/cutlass)", re.compile(r"gemm|gemv|cublas|cutlass|sm90|sm80", re.I)),
)


def family_of(name: str, cat: str, role: str) -> str:
    if cat == "gpu_memcpy":
        return "memcpy"
    if cat == "gpu_memset":
        return "memset"
    for family, pattern in _FAMILIES[:4]:
        if pattern.search(name):
            return family
    if (role.startswith("conv") or role.startswith("STFT")) and not _FAMILIES[4][1].search(name):
        return "conv (cuDNN/cutlass)"
    for family, pattern in _FAMILIES[4:]:
        if pattern.search(name):
            return family
    return "other"


def kernels_with_stacks(trace: dict, cuda: bool) -> list[dict]:
    """Each device activity (kernel, memcpy, memset) with the host ranges open when it was launched."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    anns = sorted(((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"], e.get("tid"))
                   for e in events if e.get("cat") == "user_annotation"), key=lambda a: (a[0], -a[1]))
    if cuda:
        launch = {e["args"]["correlation"]: (float(e["ts"]), e.get("tid")) for e in events
                  if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        at = [launch.get(e.get("args", {}).get("correlation"), (None, None)) for e in device]
    else:  # smoke test on the CPU: host ops stand in for kernels (nested ops count twice; shares mean nothing)
        device = [e for e in events if e.get("cat") == "cpu_op"]
        at = [(float(e["ts"]), e.get("tid")) for e in device]
    order = sorted(range(len(device)), key=lambda i: (at[i][0] is None, at[i][0] or 0.0))
    out: list[dict] = [{}] * len(device)
    stacks: dict[Any, list] = defaultdict(list)
    pending = defaultdict(list)
    for a in anns:
        pending[a[3]].append(a)
    cursor: dict[Any, int] = defaultdict(int)
    for i in order:
        ts, tid = at[i]
        stack: list = []
        if ts is not None:
            stack, queue = stacks[tid], pending[tid]
            while cursor[tid] < len(queue) and queue[cursor[tid]][0] <= ts:
                nxt = queue[cursor[tid]]
                while stack and stack[-1][1] <= nxt[0]:
                    stack.pop()
                stack.append(nxt)
                cursor[tid] += 1
            while stack and stack[-1][1] < ts:
                stack.pop()
        e = device[i]
        out[i] = {"name": e["name"], "cat": e.get("cat"), "ts": float(e["ts"]), "dur": float(e.get("dur", 0)),
                  "stack": [a[2] for a in stack]}
    return out


def summarise(kernels: list[dict], iterations: int, wall_ms: list[float]) -> dict:
    """Per-iteration kernel time by part, role, family (and part x role), GPU busy time and span."""
    by: dict[str, dict[str, float]] = {k: defaultdict(float) for k in ("part", "role", "family", "part_role")}
    counts: dict[str, float] = defaultdict(float)
    per_iter: dict[str, list[dict]] = defaultdict(list)
    top: dict[str, float] = defaultdict(float)
    launches: dict[str, int] = defaultdict(int)
    full_names: dict[str, str] = {}
    for k in kernels:
        it = next((x for x in k["stack"] if x.startswith("stage2#")), "none")
        per_iter[it].append(k)
        part, role = part_of(k["stack"]), role_of(k["stack"])
        family = family_of(k["name"], k["cat"], role)
        ms = k["dur"] / 1000
        by["part"][part] += ms
        by["role"][role] += ms
        by["family"][family] += ms
        by["part_role"][f"{part} | {role}"] += ms
        counts[family] += 1
        short = k["name"][:120]
        top[short] += ms
        launches[short] += 1
        full_names.setdefault(short, k["name"])
    total = sum(by["family"].values())
    spans, busy = [], []
    for it, ks in per_iter.items():
        if it == "none" or not ks:
            continue
        start, end = min(k["ts"] for k in ks), max(k["ts"] + k["dur"] for k in ks)
        spans.append((end - start) / 1000)
        t, covered = start, 0.0
        for k in sorted(ks, key=lambda k: k["ts"]):
            a, b = max(k["ts"], t), k["ts"] + k["dur"]
            if b > a:
                covered += b - a
                t = b
        busy.append(covered / 1000)

    def table(d: dict[str, float]) -> dict[str, dict[str, float]]:
        return {k: {"ms": v / iterations, "share": v / total if total else 0.0}
                for k, v in sorted(d.items(), key=lambda kv: -kv[1])}

    return {
        "iterations": iterations, "kernel_ms": total / iterations,
        "kernels_per_iter": len(kernels) / iterations,
        "unattributed_kernels": sum(1 for k in kernels if not k["stack"]),
        "gpu_busy_ms": statistics.fmean(busy) if busy else None,
        "gpu_span_ms": statistics.fmean(spans) if spans else None,
        "profiled_wall_ms": statistics.fmean(wall_ms) if wall_ms else None,
        "part": table(by["part"]), "role": table(by["role"]), "family": table(by["family"]),
        "part_role": table(by["part_role"]),
        "family_launches_per_iter": {k: v / iterations for k, v in counts.items()},
        # launches a call and the whole name: one kernel of 1.5 ms and 18 of 84 us are different problems, and the
        # whole name finds the kernel's source (kernel_sources)
        "top_kernels": {name: {**row, "launches": launches[name] / iterations, "name": full_names[name]}
                        for name, row in list(table(top).items())[:25]},
    }


def kernel_sources(names: list[str], before: int = 1500, after: int = 8000) -> dict[str, list[str]]:
    """The Triton source inductor wrote for each of ``names`` (found in its cache, ``TORCHINDUCTOR_CACHE_DIR``):
    what a top kernel computes, its index arithmetic, masks and dtypes, read after the run instead of guessed from
    its name (the thirty-first pass read its largest kernel as the source's sine; by the operators its name lists it
    is AdaIN + Snake, thirty-second pass). A name can stand for different code in two compiled graphs (its number
    counts kernels within one), so up to three distinct sources are kept."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    wanted = [n for n in names if n.startswith("triton_")]
    found: dict[str, list[str]] = {n: [] for n in wanted}
    for path in Path(cache_dir()).rglob("*.py"):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for name in wanted:
            at = text.find(f"def {name}(")
            if at < 0 or len(found[name]) >= 3:
                continue
            start = text.find("@triton", max(0, at - before), at)  # its decorators: size hints, then jit
            snippet = text[start if start >= 0 else max(0, at - before):at + after]
            if snippet not in found[name]:
                found[name].append(snippet)
    return found


def profile_batch(stage2: Any, inputs: list[Any], iterations: int, cuda: bool, attribute: bool = True) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    wall: list[float] = []
    scope = ranges(stage2) if attribute else torch.no_grad()
    with scope:
        for _ in range(2):
            stage2(*inputs)
        if cuda:
            torch.cuda.synchronize()
        with profile(activities=activities) as prof:
            for i in range(iterations):
                t0 = time.perf_counter()
                with record_function(f"stage2#{i}"):
                    stage2(*inputs)
                    if cuda:
                        torch.cuda.synchronize()
                wall.append((time.perf_counter() - t0) * 1000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
    return summarise(kernels_with_stacks(trace, cuda), iterations, wall)


# ------------------------------------------------------------------------------------------------- parts

def part_planar(args: argparse.Namespace, item: dict, save: Callable[[dict], None]) -> dict:
    """Stage 2 compiled as the engine compiles it (``torch_cuda._compiled``: dynamic shapes), 1-D against planar
    (``BatchedVocoder(planar=True)``: 2-D convolutions, inductor's channels-last layout forced), each batch's two
    captured as CUDA graphs and replayed interleaved (CUDA events); their audio compared; each profiled."""
    import torch

    from wyoming_fasttts.backends.torch_cuda import STAGE2_FORMS, _compiled
    from wyoming_fasttts.export import reference

    kmodel = load_kmodel(args)
    stage1 = reference.BatchedDurations(kmodel).eval().to(args.device)
    shipped = STAGE2_FORMS if args.as_engine else {}
    variants = {name: _compiled(reference.BatchedVocoder(kmodel, args.precision, planar=planar, **shipped).eval()
                                .to(args.device), channels_last=planar)
                for name, planar in (("1-D", False), ("planar", True))}
    results: list[dict] = []
    for batch in args.batch_list:
        inputs, shape = stage2_inputs(stage1, item, batch, args.device, args.frames)
        row: dict[str, Any] = {"batch": batch, "shape": shape}
        try:
            replays, audio = {}, {}
            for name, module in variants.items():
                t0 = time.perf_counter()
                with torch.no_grad():
                    audio[name] = module(*inputs)[0].double()
                row[f"first_call_s_{name}"] = time.perf_counter() - t0
                replays[name] = graph_replay(module, inputs)
            peak = audio["1-D"].abs().max().item()
            row["max_abs_diff"] = (audio["planar"] - audio["1-D"]).abs().max().item()
            row["rel_err"] = row["max_abs_diff"] / peak
            times: dict[str, list[dict]] = {name: [] for name in variants}
            for _ in range(args.warmup):
                for replay in replays.values():
                    replay()
            for _ in range(args.runs):   # interleaved, so drift hits both alike
                for name, replay in replays.items():
                    times[name].append(time_calls(replay, 1, 0, True))
            for name, runs in times.items():
                events = [r["event_p50_ms"] for r in runs]
                row[name] = {"p50_ms": statistics.median(events), "mean_ms": statistics.fmean(events),
                             "min_ms": min(events)}
            row["planar_over_1d"] = row["planar"]["p50_ms"] / row["1-D"]["p50_ms"]
            for name, module in variants.items():
                prof = profile_batch(module, inputs, args.iterations, True, attribute=False)
                row[f"profile_{name}"] = {k: prof[k] for k in ("kernel_ms", "kernels_per_iter", "family",
                                                               "top_kernels")}
                if args.kernel_source:
                    tops = [t["name"] for t in prof["top_kernels"].values() if t["name"].startswith("triton_")]
                    try:
                        row[f"kernel_source_{name}"] = kernel_sources(tops[:args.kernel_source])
                    except Exception as exc:  # the sources are a reading aid: their loss is not the batch's
                        row[f"kernel_source_{name}"] = {"error": [repr(exc)[:400]]}
        except Exception as exc:  # a batch that fails is reported, the others still run
            row["error"] = repr(exc)[:400]
        results.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.startswith(("profile_", "kernel_source_"))
                          and k != "shape"}),
              flush=True)
        save({"part": "planar", "meta": meta(args), "results": results})
    return {"part": "planar", "meta": meta(args), "results": results}


def meta(args: argparse.Namespace) -> dict:
    import torch

    out = {"precision": args.precision, "frames_bucket": args.frames, "channels_last": args.channels_last,
           "torch": torch.__version__, "python": platform.python_version(), "device_arg": args.device,
           "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark,
           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32, "as_engine": args.as_engine,
           "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.device.startswith("cuda"):
        out.update(gpu=torch.cuda.get_device_name(), cudnn=torch.backends.cudnn.version())
    return out


def part_profile(args: argparse.Namespace, item: dict, save: Callable[[dict], None]) -> dict:
    import torch

    cuda = args.device.startswith("cuda")
    stage1, stage2 = load_stages(args)
    results = []
    for batch in args.batch_list:
        inputs, shape = stage2_inputs(stage1, item, batch, args.device, args.frames)
        with torch.no_grad():
            eager = time_calls(lambda inputs=inputs: stage2(*inputs), args.runs, args.warmup, cuda)
        replay = None
        if cuda:
            try:
                replay = time_calls(graph_replay(stage2, inputs), args.runs, args.warmup, cuda)
            except Exception as exc:
                replay = {"error": repr(exc)[:300]}
        prof = profile_batch(stage2, inputs, args.iterations, cuda)
        row = {"batch": batch, "shape": shape, "eager": eager, "cuda_graph": replay, "profile": prof}
        results.append(row)
        print(json.dumps({"batch": batch, "eager_p50": eager.get("event_p50_ms", eager["wall_p50_ms"]),
                          "graph_p50": (replay or {}).get("event_p50_ms"), "kernel_ms": prof["kernel_ms"],
                          "busy_ms": prof["gpu_busy_ms"], "span_ms": prof["gpu_span_ms"],
                          "unattributed": prof["unattributed_kernels"]}), flush=True)
        save({"part": "profile", "meta": meta(args), "results": results})
        if cuda:
            torch.cuda.empty_cache()
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
    return {"part": "profile", "meta": {**meta(args), "peak_alloc_mib": peak}, "results": results}


def part_compile(args: argparse.Namespace, item: dict, save: Callable[[dict], None]) -> dict:
    import torch

    cuda = args.device.startswith("cuda")
    stage1, stage2 = load_stages(args)
    compiled = torch.compile(stage2, mode=None if args.mode == "default" else args.mode, dynamic=False)
    results = []
    for batch in args.batch_list:
        inputs, shape = stage2_inputs(stage1, item, batch, args.device, args.frames)
        row: dict[str, Any] = {"batch": batch, "shape": shape, "mode": args.mode}
        try:
            t0 = time.perf_counter()
            with torch.no_grad():
                out_c = compiled(*inputs)
                if cuda:
                    torch.cuda.synchronize()
            row["compile_s"] = time.perf_counter() - t0
            with torch.no_grad():
                ref = stage2(*inputs)[0].double()
                got = compiled(*inputs)[0].double()
                row["rel_err_vs_eager"] = float((got - ref).norm() / ref.norm())
                row["lengths_equal"] = bool(torch.equal(out_c[1], stage2(*inputs)[1]))
                # interleaved: eager, compiled, eager, compiled ... so drift hits both alike
                eager_t, comp_t = [], []
                for _ in range(args.warmup):
                    stage2(*inputs)
                    compiled(*inputs)
                for _ in range(args.runs):
                    eager_t.append(time_calls(lambda x=inputs: stage2(*x), 1, 0, cuda))
                    comp_t.append(time_calls(lambda x=inputs: compiled(*x), 1, 0, cuda))
            key = "event_p50_ms" if cuda else "wall_p50_ms"
            for name, runs in (("eager", eager_t), ("compiled", comp_t)):
                values = [r[key] for r in runs]
                row[name] = {"runs": len(values), "p50_ms": statistics.median(values),
                             "mean_ms": statistics.fmean(values), "std_ms": statistics.pstdev(values),
                             "min_ms": min(values)}
            row["speedup_p50"] = row["eager"]["p50_ms"] / row["compiled"]["p50_ms"]
            if cuda:
                try:
                    row["compiled_cuda_graph"] = time_calls(graph_replay(compiled, inputs), args.runs,
                                                            args.warmup, cuda)
                except Exception as exc:
                    row["compiled_cuda_graph"] = {"error": repr(exc)[:300]}
            row["compiled_profile"] = profile_batch(compiled, inputs, args.iterations, cuda, attribute=False)
            for k in ("part", "role", "part_role"):
                row["compiled_profile"].pop(k, None)   # no ranges inside the compiled graph
        except Exception as exc:  # one mode failing must not lose the others
            row["error"] = repr(exc)[:2000]
        results.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("compiled_profile", "shape")}), flush=True)
        save({"part": f"compile-{args.mode}", "meta": meta(args), "results": results})
        if cuda:
            torch.cuda.empty_cache()
    return {"part": f"compile-{args.mode}", "meta": meta(args), "results": results}


# ------------------------------------------------------------------------------------------------ report

def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def report(parts: list[dict]) -> str:
    lines: list[str] = []
    prof = next((p for p in parts if p["part"] == "profile"), None)
    if prof:
        rows = prof["results"]
        head = " | ".join(f"batch {r['batch']}" for r in rows)
        lines += ["| stage 2, eager PyTorch | " + head + " |", "|---|" + "---|" * len(rows)]

        def line(label: str, get: Callable[[dict], Any]) -> None:
            lines.append(f"| {label} | " + " | ".join(_ms(get(r)) for r in rows) + " |")

        line("CUDA-event time p50 ms", lambda r: r["eager"].get("event_p50_ms"))
        line("host wall p50 ms", lambda r: r["eager"]["wall_p50_ms"])
        line("one CUDA graph, replay p50 ms", lambda r: (r["cuda_graph"] or {}).get("event_p50_ms"))
        line("kernel time (sum) ms", lambda r: r["profile"]["kernel_ms"])
        line("GPU busy (union) ms", lambda r: r["profile"]["gpu_busy_ms"])
        line("GPU span first→last kernel ms", lambda r: r["profile"]["gpu_span_ms"])
        line("kernels per batch", lambda r: r["profile"]["kernels_per_iter"])
        for key, title in (("part", "part of the vocoder"), ("role", "operation"), ("family", "kernel family")):
            names = sorted({n for r in rows for n in r["profile"][key]},
                           key=lambda n: -rows[-1]["profile"][key].get(n, {"ms": 0})["ms"])
            lines += ["", f"| {title}: kernel ms (share) | " + head + " |", "|---|" + "---|" * len(rows)]
            for n in names:
                cells = []
                for r in rows:
                    v = r["profile"][key].get(n)
                    cells.append("–" if v is None else f"{v['ms']:.2f} ({100 * v['share']:.1f}%)")
                lines.append(f"| {n} | " + " | ".join(cells) + " |")
    comps = [p for p in parts if p["part"].startswith("compile-")]
    if comps:
        lines += ["", "| batch | mode | eager p50 ms | compiled p50 ms | speedup | compiled as a CUDA graph p50 ms"
                  " | compiled kernel ms | compile s | rel. error |", "|---|---|---|---|---|---|---|---|---|"]
        for p in comps:
            for r in p["results"]:
                if "error" in r:
                    lines.append(f"| {r['batch']} | {r['mode']} | failed: {r['error'][:80]} |||||||")
                    continue
                cg = (r.get("compiled_cuda_graph") or {}).get("event_p50_ms")
                lines.append(f"| {r['batch']} | {r['mode']} | {r['eager']['p50_ms']:.1f} | "
                             f"{r['compiled']['p50_ms']:.1f} | {r['speedup_p50']:.2f}× | {_ms(cg)} | "
                             f"{r['compiled_profile']['kernel_ms']:.1f} | {r['compile_s']:.0f} | "
                             f"{r['rel_err_vs_eager']:.1e} |")
    for p in (p for p in parts if p["part"] == "planar"):
        lines += ["", "| rows | 1-D p50 ms | planar p50 ms | planar / 1-D | kernel ms 1-D / planar | rel. difference |",
                  "|---|---|---|---|---|---|"]
        for r in p["results"]:
            if "error" in r:
                lines.append(f"| {r['batch']} | failed: {r['error'][:80]} |||||")
                continue
            lines.append(f"| {r['batch']} | {r['1-D']['p50_ms']:.2f} | {r['planar']['p50_ms']:.2f} | "
                         f"{r['planar_over_1d']:.2f} | {r['profile_1-D']['kernel_ms']:.1f} / "
                         f"{r['profile_planar']['kernel_ms']:.1f} | {r['rel_err']:.1e} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("profile", "compile", "planar", "report"), required=True)
    parser.add_argument("--inputs")
    parser.add_argument("--model")
    parser.add_argument("--vocab")
    parser.add_argument("--kmodel-cache", help="torch.save of the built KModel, reused by later parts")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batches", default="1,8,16")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=5, help="profiled batches per point")
    parser.add_argument("--mode", default="default", help="torch.compile mode for --part compile")
    parser.add_argument("--channels-last", action="store_true",
                        help="stage 2's Conv1d weights channels-last (cuDNN's layout transforms gone)")
    parser.add_argument("--cudnn-benchmark", action="store_true",
                        help="cuDNN times its algorithms per convolution shape (torch.backends.cudnn.benchmark)")
    parser.add_argument("--precision", default="fp32", help="stage 2's (fp16: the fused engine's, ninth pass on)")
    parser.add_argument("--frames", type=int, default=FRAME_BUCKET,
                        help="frame bucket (160: the README's fused setting's, nineteenth pass)")
    parser.add_argument("--as-engine", action="store_true",
                        help="--part planar: stage 2 built as the torch-cuda engine builds it "
                             "(torch_cuda.STAGE2_FORMS: one-call LSTMs, style projections and harmonic mix fused)")
    parser.add_argument("--kernel-source", type=int, default=6,
                        help="--part planar: the Triton source of this many of each profile's largest inductor "
                             "kernels, from inductor's cache (0: none)")
    parser.add_argument("--results", required=True, help="folder of the parts' JSON files")
    parser.add_argument("--out", help="--part report: the merged JSON")
    args = parser.parse_args()
    args.batch_list = [int(b) for b in args.batches.split(",")]
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    if args.part == "report":
        parts = [json.loads(p.read_text()) for p in sorted(results.glob("part-*.json"))]
        if args.out:
            Path(args.out).write_text(json.dumps({"parts": parts}, indent=1, ensure_ascii=False))
        print(report(parts))
        return
    item = json.loads(Path(args.inputs).read_text())["items"][0]
    if args.cudnn_benchmark:
        import torch

        torch.backends.cudnn.benchmark = True
    t0 = time.perf_counter()

    def save(out: dict) -> None:   # after every batch, so a part cut short by its timeout keeps what it measured
        out["meta"].update(seconds=time.perf_counter() - t0, host=platform.node(), cpus=os.cpu_count(),
                           inputs_text=item.get("text"), n_ids=len(item["ids"]))
        (results / f"part-{out['part']}.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))

    out = {"profile": part_profile, "compile": part_compile, "planar": part_planar}[args.part](args, item, save)
    save(out)
    print(report([out]))


if __name__ == "__main__":
    main()
