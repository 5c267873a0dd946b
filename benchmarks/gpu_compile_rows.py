"""Why the fused torch-cuda engine's batch of one is slow (issue 13, thirteenth pass): inductor's kernels per
compile setting, at one row and at sixteen, each replayed as one CUDA graph beside eager kernels captured.

The engine compiles each stage once with ``dynamic=True`` (``backends/torch_cuda._compiled``); through Wyoming its
fused fp16 batch of one took 36-37 ms against 23 ms for eager kernels captured (docs/BENCHMARKS.md, eighth to
twelfth passes). This times the stages themselves, at the benchmark sentence's shape (``gpu_table.py prepare``'s
ids and style, 1 and 16 copies, tokens and frames padded to the shipped buckets), in four settings:

* ``eager``: eager kernels, captured (the engine with ``torch_compile: false``);
* ``dynamic``: ``torch.compile(dynamic=True)``, as the engine compiles (a row count of 1 is specialised by
  dynamo, so rows 16 and rows 1 are two compiles);
* ``rows``: static row counts, dynamic tokens and frames: ``torch.compile()`` with automatic dynamic shapes,
  first called at the next larger token and frame buckets (a static compile), then at the measured shape, where
  dynamo recompiles every frame (the LSTMs are graph breaks: the parts after them are frames of their own) with
  the sizes that changed made symbolic and the row count left static; rows 1 afterwards compiles once more
  (its rows changed: specialised at 1, tokens and frames symbolic). ``mark_dynamic`` on the inputs would not
  reach the frames after a graph break, whose inputs are fresh tensors;
* ``static``: ``torch.compile(dynamic=False)``, one compile per shape (the sixth pass's setting);
* ``cudnn``: eager kernels again, with ``torch.backends.cudnn.benchmark`` on for its calls and its capture (cuDNN
  times its algorithms per convolution shape and keeps the fastest; off, the engine's setting, it takes its
  heuristics' choice): what the convolutions, most of a fused batch's time (sixth pass), would gain. No compile.

Each compiled setting runs in a process of its own with empty inductor and Triton caches (so compile times are
cold and no dynamo state is shared between settings), eager kernels captured beside it in the same process. The
processes compile side by side (the machine's cores split between them: compile times are those of a shared
machine), then take the GPU one at a time under a lock, once all have compiled: each captures its graphs and
eager's, replays them interleaved (eager 1, setting 1, eager 16, setting 16, ...) and times them with CUDA
events (p50 of ``--runs``); the eager figures of the several processes are one check on the slots' agreement.
Audio error: relative L2 of the setting's direct call against eager's (fp16 both; each output of the stage per
row count). Stage 1 (``BatchedDurations``) is timed the same way for eager and ``dynamic`` (``1:dynamic``). Every
measurement prints one JSON line; each process rewrites its part (beside ``--out``) after each, the driver
``--out`` as each process ends.

    python benchmarks/gpu_compile_rows.py --inputs .gpu/inputs.json --model kokoro-v1.0.int8.onnx \\
        --vocab vocab.json --out gpu-compile-rows.json [--variants 2:dynamic,2:static,2:rows,1:dynamic] \\
        [--rows 16,1] [--runs 40] [--budget-s 480]
    python benchmarks/gpu_compile_rows.py ... --device cpu --precision fp32 --variants 2:eager --runs 2  # smoke test
    python benchmarks/gpu_compile_rows.py ... --device cpu --precision fp32 --backend eager --rows 2,1 --probe ...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_profile as gp

from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, stage1_feeds
from wyoming_fasttts.backends.buckets import Buckets, pad_to
from wyoming_fasttts.config import load_settings

MODES = ("eager", "dynamic", "rows", "static", "cudnn")


def shipped_buckets() -> Buckets:
    """The engine's buckets as the defaults set them (``create_torch_engine``'s call)."""
    s = load_settings()
    eng = s.engine
    return Buckets.for_limits(s.scheduler.max_batch, eng.max_tokens, eng.max_frames, eng.batch_frames,
                              rows=eng.buckets.rows, tokens=eng.buckets.tokens, frames=eng.buckets.frames)


def load_kmodel(args: argparse.Namespace) -> Any:
    import torch

    from wyoming_fasttts.export import reference

    reference.kokoro_modules()
    cache = Path(args.kmodel_cache)
    if cache.exists():
        return torch.load(cache, weights_only=False)
    kmodel = reference.build_kmodel(Path(args.model), json.loads(Path(args.vocab).read_text())["vocab"],
                                    deterministic=True)
    torch.save(kmodel, cache)
    return kmodel


def stage2_at(stage1: Any, item: dict, rows: int, tokens: int, frames: int, device: str) -> tuple[list, dict]:
    """``gpu_profile.stage2_inputs`` padded to the given token and frame buckets (0: the sentence's own)."""
    gp.TOKEN_BUCKET, gp.FRAME_BUCKET = tokens, frames
    return gp.stage2_inputs(stage1, item, rows, device)


def stage1_at(item: dict, rows: int, tokens: int, device: str) -> tuple[list, dict]:
    import torch

    feeds = stage1_feeds([SynthesisItem(np.array(item["ids"], np.int64), np.array(item["style"], np.float32))] * rows)
    feeds["tokens"] = pad_to(feeds["tokens"], (rows, tokens))
    return [torch.from_numpy(feeds[n]).to(device) for n in STAGE1_INPUTS], {"rows": rows, "tokens": tokens}


def summary(values: list[float]) -> dict:
    return {"runs": len(values), "p50_ms": statistics.median(values), "mean_ms": statistics.fmean(values),
            "std_ms": statistics.pstdev(values), "min_ms": min(values)}


def rel_err(got: Any, ref: Any) -> float:
    ref64, got64 = ref.double(), got.double()
    return float((got64 - ref64).norm() / ref64.norm()) if float(ref64.norm()) else float((got64 - ref64).norm())


# ------------------------------------------------------------------------------------------------- child

def child(args: argparse.Namespace) -> None:
    """One setting (``--child STAGE:MODE``) beside eager kernels, in this process; the part to ``--part``."""
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    from wyoming_fasttts.export import reference

    stage, mode = args.child.split(":")
    cuda = args.device.startswith("cuda")
    deadline = args.deadline or float("inf")
    item = json.loads(Path(args.inputs).read_text())["items"][0]
    t0 = time.perf_counter()
    kmodel = load_kmodel(args)
    stage1 = reference.BatchedDurations(kmodel).eval().to(args.device)
    module = stage1 if stage == "1" else reference.BatchedVocoder(kmodel, args.precision).eval().to(args.device)
    buckets = shipped_buckets()
    n_tokens = buckets.token_bucket(len(item["ids"]) + 2)
    _, own = stage2_at(stage1, item, 1, n_tokens, 0, args.device)
    n_frames = buckets.frame_bucket(own["frames"])
    bigger = (buckets.tokens[buckets.tokens.index(n_tokens) + 1], buckets.frames[buckets.frames.index(n_frames) + 1])
    inputs, other, shapes = {}, {}, {}
    for r in args.row_list:
        if stage == "1":
            inputs[r], shapes[r] = stage1_at(item, r, n_tokens, args.device)
            other[r] = stage1_at(item, r, bigger[0], args.device)[0]
        else:
            inputs[r], shapes[r] = stage2_at(stage1, item, r, n_tokens, n_frames, args.device)
            other[r] = stage2_at(stage1, item, r, *bigger, args.device)[0]
    part: dict[str, Any] = {
        "setting": args.child, "stage": int(stage), "mode": mode,
        "precision": args.precision if stage == "2" else "fp32", "backend": args.backend,
        "meta": {**gp.meta(args), "host": os.uname().nodename, "cpus": os.cpu_count(), "text": item.get("text"),
                 "n_ids": len(item["ids"]), "load_s": time.perf_counter() - t0,
                 "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
                 "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")},
        "shapes": {str(r): shapes[r] for r in args.row_list}, "warm_shape": {"tokens": bigger[0], "frames": bigger[1]},
        "compile": {}, "error_vs_eager": {}, "replay": {}, "notes": []}

    def save() -> None:
        part["meta"]["seconds"] = time.perf_counter() - t0
        Path(args.part).write_text(json.dumps(part, indent=1, ensure_ascii=False))

    def emit(kind: str, **fields: Any) -> None:
        print(json.dumps({"setting": args.child, "kind": kind, **fields}), flush=True)
        save()

    emit("inputs", shapes=part["shapes"], warm_shape=part["warm_shape"], load_s=round(part["meta"]["load_s"], 1))

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    if mode in ("eager", "cudnn"):
        fn = module
    else:
        fn = torch.compile(module, dynamic={"dynamic": True, "rows": None, "static": False}[mode], backend=args.backend)

    def call(x: list) -> Any:
        out = fn(*x)
        if cuda:
            torch.cuda.synchronize()
        return out

    probe_frames = buckets.frames[buckets.frames.index(bigger[1]) + 1]
    probe = stage2_at(stage1, item, args.row_list[0], n_tokens, probe_frames, args.device)[0] \
        if stage == "2" and mode in ("dynamic", "rows") and args.probe else None
    sync = Path(args.sync) if args.sync else None
    tag = args.child.replace(":", "-")
    compiled_ok = mode != "eager"
    # inputs are made outside inference mode, as the engine's buffers are (dynamo guards on the dispatch keys)
    with torch.inference_mode():   # as the engine warms, captures and replays
        try:
            refs = {r: module(*inputs[r]) for r in args.row_list}
            torch.backends.cudnn.benchmark = mode == "cudnn"  # its first calls below time cuDNN's algorithms
            for i, r in enumerate(args.row_list if compiled_ok else []):   # largest first, as the engine warms
                steps = [("warm_shape", other[r]), ("shape", inputs[r])] if mode == "rows" and i == 0 else \
                    [("shape", inputs[r])]
                for label, x in steps:
                    graphs = counters["stats"]["unique_graphs"]
                    start = time.perf_counter()
                    out = call(x)
                    entry = {"s": time.perf_counter() - start, "graphs": counters["stats"]["unique_graphs"] - graphs}
                    start = time.perf_counter()
                    out = call(x)
                    entry["second_call_s"] = time.perf_counter() - start
                    part["compile"].setdefault(str(r), {})[label] = entry
                    emit("compile", rows=r, at=label, **entry)
                pairs = list(zip(out, refs[r], strict=True))
                errs = {f"out{j}": rel_err(got, ref) for j, (got, ref) in enumerate(pairs) if got.is_floating_point()}
                exact = {f"out{j}": bool(torch.equal(got, ref)) for j, (got, ref) in enumerate(pairs)}
                part["error_vs_eager"][str(r)] = {"rel_l2": errs, "equal": exact}
                emit("error", rows=r, rel_l2=errs, equal=exact)
        except Exception as exc:   # eager kernels are still timed
            compiled_ok = False
            part["notes"].append(f"compile failed: {exc!r}"[:2000])
            emit("compile_failed", error=repr(exc)[:500])
        finally:
            if sync:
                (sync / f"compiled-{tag}").touch()
        # the GPU to one process at a time: after every setting has compiled (or the barrier's time is up)
        lock = None
        if sync:
            everyone = wait_for(sync, "compiled-", args.siblings, deadline - 30 * args.siblings - 60)
            part["timing"] = {"all_compiled_before": everyone}
            lock = gpu_lock(sync, deadline)
            part["timing"]["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            time_replays(args, part, module, fn if compiled_ok else None, mode, inputs, cuda, deadline)
            emit("replay", **{k: round(v["p50_ms"], 3) for k, v in part["replay"].items()})
        finally:
            if lock:
                lock.close()
            if sync:
                (sync / f"timed-{tag}").touch()
        if probe is not None and compiled_ok and (not sync or wait_for(sync, "timed-", args.siblings, deadline - 60)):
            # a third frame bucket at the first row count: does the measured compile serve it without a recompile?
            graphs = counters["stats"]["unique_graphs"]
            start = time.perf_counter()
            call(probe)
            part["probe"] = {"rows": args.row_list[0], "tokens": n_tokens, "frames": probe_frames,
                             "s": time.perf_counter() - start, "graphs": counters["stats"]["unique_graphs"] - graphs}
            emit("probe", **part["probe"])
    if cuda:
        part["meta"]["max_allocated_mib"] = torch.cuda.max_memory_allocated() / 2**20
    save()


def time_replays(args: argparse.Namespace, part: dict, module: Any, fn: Any, mode: str, inputs: dict,
                 cuda: bool, deadline: float) -> None:
    """Eager kernels and the setting, each shape captured as one CUDA graph, replayed interleaved."""
    import torch

    replays: dict[str, Any] = {}
    for r in args.row_list:
        for name, f in (("eager", module), (mode, fn)):
            key = f"{name}@{r}"
            if f is None or key in replays:
                continue
            if cuda:
                try:
                    torch.backends.cudnn.benchmark = name == "cudnn"
                    replays[key] = gp.graph_replay(f, inputs[r])
                except Exception as exc:   # one capture failing must not lose the others
                    part["notes"].append(f"{key}: capture failed: {exc!r}"[:500])
                    print(json.dumps({"setting": args.child, "kind": "capture_failed", "key": key,
                                      "error": repr(exc)[:300]}), flush=True)
            else:
                replays[key] = lambda f=f, x=inputs[r]: f(*x)
    for replay in replays.values():
        for _ in range(args.warmup):
            replay()
    times: dict[str, list[float]] = {k: [] for k in replays}
    metric = "event_p50_ms" if cuda else "wall_p50_ms"
    for i in range(args.runs):
        if time.time() > deadline - 5:
            part["notes"].append(f"timed runs stopped at {i} by the deadline")
            break
        for key, replay in replays.items():
            times[key].append(gp.time_calls(replay, 1, 0, cuda)[metric])
    part["replay"] = {k: summary(v) for k, v in times.items() if v}
    part["replay_how"] = "one CUDA graph per stage and shape, CUDA events" if cuda else "direct calls, wall"


def wait_for(sync: Path, prefix: str, count: int, until: float) -> bool:
    """Until ``count`` marker files named ``prefix``* are in ``sync`` (True) or ``until`` has passed (False)."""
    while len(list(sync.glob(prefix + "*"))) < count:
        if time.time() > until:
            return False
        time.sleep(0.5)
    return True


def gpu_lock(sync: Path, deadline: float) -> Any:
    """An exclusive lock on ``sync``/gpu.lock (closing the file releases it)."""
    import fcntl

    handle = open(sync / "gpu.lock", "w")  # noqa: SIM115  (held past this function)
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.time() > deadline - 10:
                raise TimeoutError("the GPU lock was held to the deadline") from None
            time.sleep(0.2)


# ------------------------------------------------------------------------------------------------ driver

def driver(args: argparse.Namespace) -> None:
    """Each setting in a child process with its own empty inductor/Triton caches, within ``--budget-s``."""
    start = time.time()
    deadline = start + args.budget_s
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="compile-rows-"))
    if not Path(args.kmodel_cache).exists():
        load_kmodel(args)
    merged: dict[str, Any] = {"command": " ".join(sys.argv), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                         time.gmtime(start)),
                              "rows": args.row_list, "runs": args.runs, "parts": {}, "failed": {}}
    settings = args.variants.split(",")
    sync = work / "sync"
    sync.mkdir()
    threads = max(1, (os.cpu_count() or 1) // len(settings))
    merged["concurrency"] = {"processes": len(settings), "inductor_compile_threads_each": threads,
                             "how": "compiled side by side; captures and timed replays one process at a time "
                                    "under a lock once every setting compiled; probes after all timed"}
    procs: dict[str, tuple[subprocess.Popen, Path]] = {}
    for setting in settings:
        tag = setting.replace(":", "-")
        part = out.parent / f"{out.stem}-part-{tag}.json"   # beside --out: kept if the run is cut short
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work / tag / "inductor"),
               "TRITON_CACHE_DIR": str(work / tag / "triton"), "TORCHINDUCTOR_COMPILE_THREADS": str(threads)}
        cmd = [sys.executable, __file__, "--child", setting, "--part", str(part), "--deadline", str(deadline),
               "--sync", str(sync), "--siblings", str(len(settings)),
               "--inputs", args.inputs, "--model", args.model, "--vocab", args.vocab, "--kmodel-cache",
               args.kmodel_cache, "--device", args.device, "--rows", args.rows, "--runs", str(args.runs),
               "--warmup", str(args.warmup), "--precision", args.precision, "--backend", args.backend,
               *(["--probe"] if args.probe else [])]
        procs[setting] = (subprocess.Popen(cmd, env=env), part)
    for setting, (proc, part) in procs.items():
        try:
            rc = proc.wait(timeout=max(1.0, deadline - time.time()))
            if rc:
                merged["failed"][setting] = f"exit status {rc}"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            merged["failed"][setting] = f"killed at the budget ({args.budget_s:.0f} s)"
        if part.exists():
            merged["parts"][setting] = json.loads(part.read_text())
        merged["seconds"] = time.time() - start
        out.write_text(json.dumps(merged, indent=1, ensure_ascii=False))
    out.write_text(json.dumps(merged, indent=1, ensure_ascii=False))
    print(table(merged))


def table(merged: dict) -> str:
    lines = ["| setting | rows | p50 ms (eager beside it) | compile s | rel. L2 vs eager (audio / out0) |",
             "|---|---|---|---|---|"]
    for setting, p in merged["parts"].items():
        for r in merged["rows"]:
            rep = p.get("replay", {})
            mine, eager = rep.get(f"{p['mode']}@{r}", {}), rep.get(f"eager@{r}", {})
            comp = p.get("compile", {}).get(str(r), {})
            secs = "+".join(f"{v['s']:.0f}" for v in comp.values()) or "–"
            err = p.get("error_vs_eager", {}).get(str(r), {}).get("rel_l2", {}).get("out0")
            lines.append(f"| {setting} | {r} | {mine.get('p50_ms', float('nan')):.2f} "
                         f"({eager.get('p50_ms', float('nan')):.2f}) | {secs} | "
                         f"{'–' if err is None else f'{err:.1e}'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--kmodel-cache", default=os.path.join(tempfile.gettempdir(), "kmodel-compile-rows.pt"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--variants", default="2:dynamic,2:static,2:rows,1:dynamic",
                        help="STAGE:MODE, MODE one of " + ", ".join(MODES) + " (each beside eager kernels)")
    parser.add_argument("--rows", default="16,1", help="row counts, largest first (the engine's warm-up order)")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=480.0, help="all settings together; the rest is skipped")
    parser.add_argument("--precision", default="fp16", help="stage 2's (fp32: a quicker smoke test on the CPU)")
    parser.add_argument("--backend", default="inductor", help="torch.compile's (eager: dynamo alone, a smoke test)")
    parser.add_argument("--probe", action="store_true", help="then one more frame bucket: recompiled or not")
    parser.add_argument("--out", default="gpu-compile-rows.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--sync", help=argparse.SUPPRESS)
    parser.add_argument("--siblings", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.row_list = [int(r) for r in args.rows.split(",")]
    if args.child:
        child(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
