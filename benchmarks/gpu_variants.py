"""Engine-level, on the GPU: what the bucket set and ONNX Runtime CUDA's options cost in device memory and
start-up and buy in replay time, each variant in a process of its own (NVML's reading of the device memory
the engine took is then the engine's alone; the CUDA context, made first by a one-node session, is apart).

    python benchmarks/gpu_variants.py --inputs inputs.json --data-dir D [--runs 40] --out variants.json

Part P: stage 2 in fp32 against fp16 (``engine.precision``) at the shipped buckets: memory, start-up, replay
at batch 1 / 4 / 8 / 16, stage 1 alone, and the fp16 audio against fp32's (batch 1 and every row of batch 16).
Part K: ONNX Runtime CUDA provider knobs (cuDNN algorithm search, layouts, TF32, conv+bias fusion) over the
shipped ``engine.cuda_provider_options``, at exact buckets that hold the benchmark sentence at batch 1, 8 and 16:
replay time, stage 1 alone, memory and the batch-1 audio against the shipped options' (parity).
Part M: one arena for both stages (``engine.shared_arena``) under several arena settings against one arena per
session, then fewer bucket shapes and a smaller ``batch_frames``: device memory after each warm-up pass, the
process's GPU memory as NVML charges it, replay at batch 1 / 4 / 8 / 16 and the batch-1 audio against the first
row's.
Part O: the engine's warm-up order (largest shapes first, stage 2 first) against the order before, with one arena
per session and one shared; writes the config that took least memory at no replay cost (``--config-out``).
Part A: one small bucket set and one with more frame buckets under each option set: the memory per shape and
what each option saves. Part B: candidate ``engine.buckets`` / ``engine.batch_frames`` under the option set
that took least memory per shape in A: memory, start-up, replay at batch 1 / 8 / 16 and stage 1 alone. It
writes the candidate that fits ``--budget-mib`` with the fastest batch 1 (else the smallest) as a config file
(``--config-out``) for ``gpu_table.py measure --config``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KNOBS: dict[str, dict[str, str]] = {  # over the shipped engine.cuda_provider_options
    "shipped": {},
    "EXHAUSTIVE": {"cudnn_conv_algo_search": "EXHAUSTIVE"},
    "DEFAULT search": {"cudnn_conv_algo_search": "DEFAULT"},
    "prefer_nhwc": {"prefer_nhwc": "1"},
    "conv1d pad to nc1d": {"cudnn_conv1d_pad_to_nc1d": "1"},
    "EXHAUSTIVE + nc1d": {"cudnn_conv_algo_search": "EXHAUSTIVE", "cudnn_conv1d_pad_to_nc1d": "1"},
    "fuse_conv_bias": {"fuse_conv_bias": "1"},
    "tf32 off": {"use_tf32": "0"},
}
KNOB_BUCKETS = {"rows": [1, 8, 16], "tokens": [64], "frames": [192]}  # the benchmark sentence: 42 ids, ~147 frames
OPTIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "conv workspace off": {"cuda": {"cudnn_conv_use_max_workspace": "0"}},
    "arena kSameAsRequested": {"cuda": {"arena_extend_strategy": "kSameAsRequested"}},
    "no graphs": {"graphs": False},
}
SMALL = {"rows": [1, 8], "tokens": [64], "frames": [192]}
MORE = {"rows": [1, 8], "tokens": [64], "frames": [192, 256, 384]}
FINE = {"rows": [1, 4, 8, 16], "tokens": [32, 64, 128], "frames": [64, 128, 192, 256, 384, 512, 768]}
CANDIDATES: dict[str, dict[str, Any]] = {  # engine.buckets and engine.batch_frames; limits appended
    "fine bf1024": {"buckets": FINE, "batch_frames": 1024},
    "r1-4-16 t64-128 f128-256-512 bf1024": {"buckets": {"rows": [1, 4, 16], "tokens": [64, 128],
                                                        "frames": [128, 256, 512]}, "batch_frames": 1024},
    "fine bf2048": {"buckets": FINE, "batch_frames": 2048},
    "r1-8-16 t64 f128-256-512 bf4096": {"buckets": {"rows": [1, 8, 16], "tokens": [64], "frames": [128, 256, 512]},
                                        "batch_frames": 4096},
}


def one(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine in this process: memory, start-up, replay times."""
    from wyoming_fasttts.assets import ModelAssets
    from wyoming_fasttts.backends.base import SynthesisItem
    from wyoming_fasttts.backends.buckets import Buckets
    from wyoming_fasttts.backends.onnxruntime import cuda_provider_problem, cuda_providers, session_options
    from wyoming_fasttts.backends.ort_graphs import GraphOnnxRuntimeEngine, _device_used
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.graphs.batched import ensure_batched_graphs

    data = Path(spec["data_dir"])
    graphs = ensure_batched_graphs(ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data), data,
                                   spec.get("precision", "fp32"))
    item = json.loads(Path(spec["inputs"]).read_text())["items"][0]
    sentence = SynthesisItem(np.asarray(item["ids"], np.int64), np.asarray(item["style"], np.float32))
    b = spec["buckets"]
    if spec.get("exact"):
        buckets = Buckets(rows=tuple(b["rows"]), tokens=tuple(b["tokens"]), frames=tuple(b["frames"]),
                          batch_frames=2048)
    else:
        buckets = Buckets.for_limits(16, 510, 1024, spec.get("batch_frames", 2048), rows=b["rows"], tokens=b["tokens"],
                                     frames=b["frames"])
    options = session_options(0, spin=False)
    cpu = spec.get("cpu", False)  # a smoke test of this script on a machine without a GPU
    shipped = load_settings().engine.cuda_provider_options  # the one source of the shipped options
    providers = ["CPUExecutionProvider"] if cpu else cuda_providers(0, {**shipped, **spec.get("cuda", {})})


    idle = _device_used(0) or 0
    problem = None if cpu else cuda_provider_problem(0)  # the CUDA context (one-node session), counted apart
    before = _device_used(0) or 0
    start = time.perf_counter()
    for key, value in spec.get("session_config", {}).items():
        options.add_session_config_entry(key, value)
    engine = GraphOnnxRuntimeEngine(graphs.stage1, graphs.stage2, buckets=buckets, providers=providers,
                                    options=options, tail_frames=4, graphs=spec.get("graphs", True),
                                    arena=spec.get("arena"), largest_first=spec.get("largest_first", True))
    phases = {"sessions": round(((_device_used(0) or 0) - before) / 2**20)}
    if spec.get("phases"):  # warm-up as engine.warmup does it, read after each pass of each stage
        engine._put("style", np.full(engine._host["style"].size, 0.1, np.float32))
        engine._put("speed", np.ones(engine._host["speed"].size, np.float32))
        engine._put("tokens", np.full(engine._host["tokens"].size, 16, np.int64))
        for name in ("d", "t_en"):
            engine._put(name, np.zeros(engine._host[name].size, np.float32))
        for capture in (False, True):
            for stage in engine.warm_stages():
                engine._warm(stage)
                phases[f"{'captured' if capture else 'plain'} {stage.name}"] = \
                    round(((_device_used(0) or 0) - before) / 2**20)
    else:
        engine.warmup()
    process = _process_mib()
    out: dict[str, Any] = {"start_s": round(time.perf_counter() - start, 1),
                           "pool_mib": round(((_device_used(0) or 0) - before) / 2**20),
                           "context_mib": round((before - idle) / 2**20), "probe": problem,
                           "process_mib": process, "phases_mib": phases, "arena": engine.arena,
                           "shapes": len(buckets.stage1_shapes()) + len(buckets.stage2_shapes()),
                           "replay": engine.replay, "options": providers[0][1] if not cpu else {}}
    if spec.get("audio_out"):  # batch 1's audio, for the parity of option sets against the shipped one
        np.save(spec["audio_out"], engine.run([sentence])[0])
    if spec.get("batch_audio_out"):  # every row of the largest batch (NaN anywhere in it shows up here)
        np.save(spec["batch_audio_out"], np.stack(engine.run([sentence] * max(spec.get("batches", [16])))))
    out |= time_batches(engine, sentence, spec.get("batches", [1, 8, 16]), spec["runs"])
    for rows in spec.get("batches", [1, 8, 16]):  # stage 1 alone, at the shape the sentence lands on
        shape = (buckets.row_bucket(rows), buckets.token_bucket(len(sentence.ids) + 2))
        engine.run([sentence] * rows)
        ms = []
        for _ in range(spec["runs"]):
            t = time.perf_counter()
            engine.stage1.run(shape)
            ms.append((time.perf_counter() - t) * 1000)
        out[f"b{rows}_stage1_p50"] = round(statistics.median(ms), 2)
        out[f"b{rows}_sentences_per_s"] = round(1000 * rows / out[f"b{rows}_p50"], 1)
    engine.close()
    return out


def time_batches(engine: Any, sentence: Any, batches: list[int], runs: int) -> dict[str, float]:
    """p50 and std (ms) of ``runs`` calls of ``engine.run`` on ``sentence`` repeated to each batch size."""
    out = {}
    for rows in batches:
        ms = []
        for _ in range(runs):
            t = time.perf_counter()
            engine.run([sentence] * rows)
            ms.append((time.perf_counter() - t) * 1000)
        out[f"b{rows}_p50"] = round(statistics.median(ms), 2)
        out[f"b{rows}_std"] = round(statistics.pstdev(ms), 2)
    return out


def _process_mib() -> float | None:
    """This process's GPU memory as NVML charges it (CUDA context included), where NVML can see the process."""
    from wyoming_fasttts.backends.memory import Nvml

    nvml = Nvml.open(0)
    if nvml is None:
        return None
    try:
        mine = nvml.read()[3]
    finally:
        nvml.close()
    return None if mine is None else round(mine / 2**20, 1)


def spawn(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    try:
        done = subprocess.run([sys.executable, __file__, "--one", json.dumps(spec)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": done.stderr[-600:]}


def knobs(base: dict[str, Any], stem: Path) -> dict[str, Any]:
    """Part K: each knob set in a process of its own; audio compared with the shipped set's (relative L2)."""
    rows: dict[str, Any] = {}
    for name, cuda in KNOBS.items():
        audio = f"{stem}-{len(rows)}.npy"
        row = spawn({**base, "cuda": cuda, "buckets": KNOB_BUCKETS, "exact": True, "audio_out": audio}, 240)
        if "error" not in row and Path(f"{stem}-0.npy").exists():
            ref, got = np.load(f"{stem}-0.npy"), np.load(audio)
            n = min(len(ref), len(got))
            row["rel_l2_vs_shipped"] = float(np.linalg.norm(got[:n] - ref[:n]) / np.linalg.norm(ref[:n]))
            row["samples"] = [len(ref), len(got)]
        rows[name] = row
        print(f"K {name}: {row}", flush=True)
    return rows


ARENAS: dict[str, dict[str, int] | None] = {  # engine arena=: None one per session, else one shared (OrtArenaCfg)
    "per session (shipped)": None,
    "shared, ORT defaults": {},
    "shared, kSameAsRequested": {"arena_extend_strategy": 1},
    "shared, powers of two up to 64 MiB": {"max_power_of_two_extend_bytes": 64 << 20},
    "shared, kSameAsRequested, first chunk 1 GiB": {"arena_extend_strategy": 1, "initial_chunk_size_bytes": 1 << 30},
}
BUCKET_SETS: dict[str, dict[str, Any]] = {  # under the shared arena that took least memory above; limits appended
    "r1-8-16 t64-128 f128-256-512": {"buckets": {"rows": [1, 8, 16], "tokens": [64, 128], "frames": [128, 256, 512]},
                                     "batch_frames": 2048},
    "shipped, frames 64-128-256-512": {"buckets": {"rows": [1, 4, 8, 16], "tokens": [32, 64, 128],
                                                   "frames": [64, 128, 256, 512]}, "batch_frames": 2048},
    "shipped, batch_frames 1024": {"batch_frames": 1024},
}


def memory(base: dict[str, Any], stem: Path, deadline_s: float) -> dict[str, Any]:
    """Part M: where the engine's device memory goes and what moves it, at the shipped buckets and options
    unless a row says otherwise, each in a process of its own (NVML after each warm-up pass of each stage):
    each stage's own arena against one arena shared by both (``engine.shared_arena``) under several
    ``OrtArenaCfg`` settings, then fewer bucket shapes and a smaller ``batch_frames`` under the shared arena
    that took least. Replay times at batch 1 / 4 / 8 / 16 and the batch-1 audio against the first row's."""
    shipped = load_shipped()
    start, rows = time.monotonic(), {}
    ref = f"{stem}-0.npy"

    def run(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        if time.monotonic() - start > deadline_s:
            rows[name] = {"skipped": f"past the {deadline_s:.0f} s budget"}
            return rows[name]
        audio = f"{stem}-{len(rows)}.npy"
        row = spawn({**base, **shipped, "batches": [1, 4, 8, 16], "phases": True, "audio_out": audio, **spec}, 200)
        _against_first(row, ref, audio)
        rows[name] = row
        print(f"M {name}: {json.dumps(row)}", flush=True)
        return row

    for name, arena in ARENAS.items():
        run(name, {"arena": arena})
    shared = {k: v for k, v in rows.items() if "pool_mib" in v and ARENAS.get(k) is not None}
    best = min(shared, key=lambda k: shared[k]["pool_mib"]) if shared else "per session (shipped)"
    for name, spec in BUCKET_SETS.items():
        run(f"{best}; {name}", {"arena": ARENAS[best], **spec})
    run(f"{best}; cudnn_conv_use_max_workspace 0", {"arena": ARENAS[best],
                                                    "cuda": {"cudnn_conv_use_max_workspace": "0"}})
    return {"rows": rows, "best_arena": best, "arena_cfg": ARENAS[best]}


def _against_first(row: dict[str, Any], ref: str, audio: str) -> None:
    """The row's audio against the first row's (the same sentence): relative L2 distance, and both lengths."""
    if "error" not in row and Path(ref).exists() and audio != ref:
        a, b = np.load(ref), np.load(audio)
        n = min(len(a), len(b))
        row["rel_l2_vs_first"] = float(np.linalg.norm(b[:n] - a[:n]) / np.linalg.norm(a[:n]))
        row["samples"] = [len(a), len(b)]


ORDERS: dict[str, dict[str, Any]] = {  # part O: the warm-up order (engine largest_first) x the arena
    "per session, smallest first (before)": {"arena": None, "largest_first": False},
    "per session, largest first": {"arena": None},
    "shared, largest first": {"arena": {}},
    "shared kSameAsRequested, largest first": {"arena": {"arena_extend_strategy": 1}},
}


def orders(base: dict[str, Any], stem: Path, config_out: Path) -> dict[str, Any]:
    """Part O: the warm-up order (largest shapes first, stage 2 first: the engine's ``largest_first``) against
    the order before, with each stage's own arena and with one shared arena, at the shipped buckets and options,
    each in a process of its own, with NVML after each pass. Writes the config of the row that took least
    memory without costing replay time (batch 1 and 16 p50 within 3% / 5% of the first row's) to
    ``config_out`` (JSON, which is YAML) for ``gpu_table.py measure --config``."""
    shipped = load_shipped()
    rows: dict[str, Any] = {}
    ref = f"{stem}-0.npy"
    for name, spec in ORDERS.items():
        audio = f"{stem}-{len(rows)}.npy"
        row = spawn({**base, **shipped, "batches": [1, 4, 8, 16], "phases": True, "audio_out": audio, **spec}, 200)
        _against_first(row, ref, audio)
        rows[name] = row
        print(f"O {name}: {json.dumps(row)}", flush=True)
    first = rows[next(iter(ORDERS))]
    fits = {k: v for k, v in list(rows.items())[1:] if "pool_mib" in v and "b1_p50" in first
            and v["b1_p50"] <= 1.03 * first["b1_p50"] and v["b16_p50"] <= 1.05 * first["b16_p50"]}
    pick = min(fits, key=lambda k: fits[k]["pool_mib"]) if fits else None
    arena = ORDERS[pick]["arena"] if pick else None
    config = {"engine": {"shared_arena": arena is not None, "cuda_arena": arena or {}}}
    config_out.write_text(json.dumps(config))
    print(f"O chosen: {pick}; config {json.dumps(config)}", flush=True)
    return {"rows": rows, "chosen": pick, "config": config}


def precisions(base: dict[str, Any], stem: Path, rounds: int) -> dict[str, Any]:
    """Part P: stage 2 in fp32 and in fp16 (``engine.precision``), the shipped buckets and options, each in a
    process of its own (NVML memory is then the engine's alone), alternating for ``rounds`` rounds; the fp16
    audio against fp32's at batch 1 and at batch 16 (relative L2, mel distance, NaN count)."""
    from wyoming_fasttts.doctor.parity import mel_distance_db

    shipped = load_shipped()
    rows: dict[str, Any] = {}
    for k in range(rounds):
        for precision in ("fp32", "fp16"):
            audio, batch = f"{stem}-{precision}.npy", f"{stem}-{precision}-b16.npy"
            row = spawn({**base, **shipped, "precision": precision, "batches": [1, 4, 8, 16], "audio_out": audio,
                         "batch_audio_out": batch}, 400)
            if "error" not in row and k == 0 and precision == "fp16" and Path(f"{stem}-fp32.npy").exists():
                for kind, ref_file, got_file in (("b1", f"{stem}-fp32.npy", audio),
                                                 ("b16", f"{stem}-fp32-b16.npy", batch)):
                    ref, got = np.load(ref_file), np.load(got_file)
                    n = min(ref.shape[-1], got.shape[-1])
                    ref, got = ref[..., :n].reshape(-1, n), got[..., :n].reshape(-1, n)
                    row[f"{kind}_nan"] = int(np.isnan(got).sum())
                    row[f"{kind}_rel_l2_vs_fp32"] = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                    row[f"{kind}_mel_db_vs_fp32"] = max(mel_distance_db(r, g) for r, g in zip(ref, got, strict=True))
                    row[f"{kind}_rows_equal"] = bool(np.array_equal(got, got[:1].repeat(len(got), axis=0)))
            rows[f"{precision} round {k + 1}"] = row
            print(f"P {precision} round {k + 1}: {row}", flush=True)
    return rows


def load_shipped() -> dict[str, Any]:
    """The shipped buckets and batch_frames (``defaults.yaml``), as a spec for ``one``."""
    from wyoming_fasttts.config import load_settings

    eng = load_settings().engine
    return {"buckets": {"rows": list(eng.buckets.rows), "tokens": list(eng.buckets.tokens),
                        "frames": list(eng.buckets.frames)}, "batch_frames": eng.batch_frames}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--inputs")
    parser.add_argument("--data-dir")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--budget-mib", type=float, default=1430, help="engine, CUDA context apart (issue 13: 1.5 GB)")
    parser.add_argument("--out", default="gpu_variants.json", help="the report; part B adds to part A's")
    parser.add_argument("--part", choices=("K", "A", "B", "P", "M", "O", "all"), default="all")
    parser.add_argument("--deadline-s", type=float, default=520, help="part M: start no variant after this long")
    parser.add_argument("--rounds", type=int, default=1, help="part P: fp32/fp16 rounds, alternating")
    parser.add_argument("--cuda", default="{}", help="part B: provider options (JSON) over the shipped ones; "
                        "default: part A's choice")
    parser.add_argument("--config-out", default="best.yaml")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(json.loads(args.one))), flush=True)
        return
    from wyoming_fasttts.assets import ModelAssets
    from wyoming_fasttts.graphs.batched import ensure_batched_graphs

    data = Path(args.data_dir)  # exported once here (CPU), before the timed processes
    assets = ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data)
    for precision in ("fp32", "fp16") if args.part == "P" else ("fp32",):
        ensure_batched_graphs(assets, data, precision)
    base = {"inputs": args.inputs, "data_dir": args.data_dir, "runs": args.runs}
    out = Path(args.out)
    report: dict[str, Any] = json.loads(out.read_text()) if args.part == "B" and out.exists() else \
        {"date": time.strftime("%Y-%m-%d %H:%M"), "A": {}, "B": {}}
    if args.part == "P":
        report["P"] = precisions(base, Path(tempfile.mkdtemp()) / "precision", args.rounds)
        out.write_text(json.dumps(report, indent=1))
        return
    if args.part == "O":
        report["O"] = orders(base, Path(tempfile.mkdtemp()) / "order", Path(args.config_out))
        out.write_text(json.dumps(report, indent=1))
        return
    if args.part == "M":
        report["M"] = memory(base, Path(tempfile.mkdtemp()) / "memory", args.deadline_s)
        out.write_text(json.dumps(report, indent=1))
        return
    if args.part == "K":
        report["K"] = knobs(base, Path(tempfile.mkdtemp()) / "knob")
        out.write_text(json.dumps(report, indent=1))
        return
    if args.part in ("A", "all"):
        per_shape: dict[str, float] = {}
        for name, option in OPTIONS.items():
            small = spawn({**base, **option, "buckets": SMALL, "exact": True, "batches": [1, 8], "runs": 10}, 150)
            more = spawn({**base, **option, "buckets": MORE, "exact": True, "batches": [1], "runs": 10}, 150)
            report["A"][name] = {"small": small, "more": more}
            if "pool_mib" in small and "pool_mib" in more:
                per_shape[name] = (more["pool_mib"] - small["pool_mib"]) / (more["shapes"] - small["shapes"])
            print(f"A {name}: small {small} | more {more}", flush=True)
        usable = {k: v for k, v in per_shape.items() if k != "no graphs"}
        best = min(usable, key=lambda k: (round(usable[k] / 5), report["A"][k]["small"].get("pool_mib", 1e9))) \
            if usable else "defaults"
        report["options"] = {"chosen": best, "per_shape_mib": per_shape}
        print(f"options: {best}; MiB per shape {per_shape}", flush=True)
        out.write_text(json.dumps(report, indent=1))
        if args.part == "A":
            return
    cuda = json.loads(args.cuda) or OPTIONS[report.get("options", {}).get("chosen", "defaults")].get("cuda", {})
    fits = {}
    for name, candidate in CANDIDATES.items():
        row = spawn({**base, **candidate, "cuda": cuda}, 240)
        report["B"][name] = row
        print(f"B {name}: {row}", flush=True)
        if row.get("pool_mib", 1e9) <= args.budget_mib:
            fits[name] = row
    pick = min(fits, key=lambda k: fits[k]["b1_p50"]) if fits else \
        min(report["B"], key=lambda k: report["B"][k].get("pool_mib", 1e9))
    config = {"engine": {**CANDIDATES[pick], "cuda_provider_options": {**cuda}}}
    report["chosen"] = {"buckets": pick, "config": config}
    Path(args.config_out).write_text(json.dumps(config))  # JSON is YAML
    out.write_text(json.dumps(report, indent=1))
    print(f"chosen: {pick}; config {json.dumps(config)}", flush=True)


if __name__ == "__main__":
    main()
