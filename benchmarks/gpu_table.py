"""GPU rows of the published table, in one process: PyTorch eager (the reference model on the weights recovered
from the shipped graph) and, where the engine can be built, our real server in-process, requests interleaved.

Two steps, because the GPU machine has neither the text front end's data nor a network:

    python benchmarks/gpu_table.py prepare --out .gpu/bench/inputs.json   # here: the ids our server sends
    python benchmarks/gpu_table.py measure --inputs .gpu/bench/inputs.json --model M --vocab V \\
        [--engine onnxruntime-cuda] [--runs 500] [--concurrency 1,4,8,16,32] --out gpu_table.json

``measure`` always times eager PyTorch on ``inputs.json``'s sentence (its peak is PyTorch's allocator peak). With
``--engine`` it also starts the server as ``serve`` does (``build_runtime`` + ``start_wyoming`` and the watchdog, so
text front end, scheduler, protocol and the watchdog's sampling are in the timing) on a free port of this process,
times one-shot requests through the Wyoming client, alternating with eager runs (each request's start and latency
kept in order: ``series``), then closed-loop clients at each concurrency level, with the clients in this process and
then in a child process (as a user's are: elsewhere, not on the server's event loop and GIL), logging the
scheduler's batches at each (``BatchLog``) and the process's CPU (a request's, and in cores), and last times the
engine alone by batch size, the server idle: what a batch costs in the busy server against what it costs by itself;
then its largest batch from all its slots back to back (``engine_pipelined``). At 16 clients, the pipelined engine
near their QPS says the GPU holds them; well above it, the host path (the process's CPU counts CUDA's waits where
they spin, so it is read beside the engine's, not alone).
(``benchmarks/gpu_stages.py`` times the stage graphs themselves; this is the end-to-end row.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from host_ceiling import process_cpu_s

from wyoming_fasttts.assets import ModelAssets, ensure_assets, load_vocab
from wyoming_fasttts.backends.base import Engine
from wyoming_fasttts.bench.report import load_row, md_table, summary_ms
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.core import SynthesisItem

SAMPLE_RATE = 24000


def prepare(out: Path, voice: str) -> None:
    from wyoming_fasttts.bench.run import WELCOME
    from wyoming_fasttts.synthesizer import Synthesizer
    from wyoming_fasttts.voices import VoiceBank

    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=[voice])
    voices = VoiceBank(assets)
    # Only the text path of the synthesiser is used, so it needs no scheduler.
    pieces = Synthesizer(settings, voices, load_vocab(assets.vocab), scheduler=None).sentences(WELCOME)  # type: ignore[arg-type]
    items = [{"text": p.text, "ids": p.ids.tolist(), "style": voices.style(voice, len(p.ids)).tolist()} for p in pieces]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"text": WELCOME, "voice": voice, "items": items}, ensure_ascii=False))


class Eager:
    """The reference model; one call = the whole text (each prepared piece in turn), synchronised."""

    def __init__(self, model: Path, vocab: Path, items: list[dict], device: str) -> None:
        import torch

        from wyoming_fasttts.export.reference import ReferenceModel

        self.torch, self.device = torch, device
        self.model = ReferenceModel(ModelAssets(model, vocab, model.parent), device=device)
        self.items = [(it["ids"], np.asarray(it["style"], np.float32)) for it in items]

    def __call__(self) -> tuple[float, float]:
        start = time.perf_counter()
        samples = sum(len(self.model.synthesize(ids, style).audio) for ids, style in self.items)
        return time.perf_counter() - start, samples / SAMPLE_RATE

    def reset_peak(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.reset_peak_memory_stats()

    def peak_mib(self) -> float | None:
        if not self.device.startswith("cuda"):
            return None
        return round(self.torch.cuda.max_memory_allocated() / 2**20, 1)


def _row(latencies_s: list[float], audio_s: list[float]) -> dict:
    row = summary_ms(latencies_s)
    row["rtf"] = float(np.mean(np.asarray(latencies_s) / np.asarray(audio_s)))
    row["audio_s"] = float(np.mean(audio_s))
    return row


EAR_TEXTS = ["欢迎使用语音合成系统", "今天天气很好，我们一起去公园散步吧。", "客厅温度二十三度，湿度百分之四十五。",
             "好的，已经为您打开客厅的灯。明天北京晴转多云，最高气温十八度。"]


async def _wavs(uri: str, out: Path) -> None:
    """The server's audio for a few sentences, for the Whisper ear (tests/ear.py) on a machine that has it."""
    from wyoming_fasttts.audio import wav_bytes
    from wyoming_fasttts.client import say

    out.mkdir(parents=True, exist_ok=True)
    texts = {}
    for k, text in enumerate(EAR_TEXTS):
        reply = await say(uri, text)
        (out / f"ear{k}.wav").write_bytes(wav_bytes(bytes(reply.pcm), reply.rate))
        texts[f"ear{k}.wav"] = text
    (out / "ear.json").write_text(json.dumps(texts, ensure_ascii=False))


def _brief(row: dict) -> str:
    return f"n {row['n']}, p50 {row['p50']:.1f} ms, std {row['std']:.2f} ms"


def _timed(engine: Engine, batch: list[SynthesisItem], runs: int) -> list[float]:
    """Seconds each of ``runs`` calls of ``engine.run(batch)`` took, back to back."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        engine.run(batch)
        times.append(time.perf_counter() - start)
    return times


def _engine_alone(engine: Engine, items: list[SynthesisItem], runs: int) -> dict[str, dict[str, float]]:
    """The engine's own time for a batch of each size, called directly with the server idle: set beside the
    scheduler's timing of the same batches under load (``batches``), what the server around it costs a batch."""
    out = {}
    for size in (b for b in (1, 4, 8, 16) if b <= engine.max_batch):  # a setting with smaller batches has no 16
        batch = [items[k % len(items)] for k in range(size)]
        engine.run(batch)
        out[str(size)] = summary_ms(_timed(engine, batch, runs))
    return out


def _engine_pipelined(engine: Engine, items: list[SynthesisItem], runs: int, slots: int) -> dict[str, float | int]:
    """The engine's own throughput at its largest batch with ``slots`` threads calling it back to back, as the
    scheduler's slots do when every client is waiting: what 16 clients could get at most from this engine, whatever the
    server around it does (set beside ``load``'s 16-client QPS: the gap is the server's and the clients' round trip)."""
    size = engine.max_batch
    batch = [items[k % len(items)] for k in range(size)]
    engine.run(batch)
    start = time.perf_counter()
    with ThreadPoolExecutor(slots) as pool:  # a slot's failure is raised here, not lost with its thread
        times = [t for slot in pool.map(lambda _: _timed(engine, batch, runs), range(slots)) for t in slot]
    elapsed = time.perf_counter() - start
    each = summary_ms(times)
    return {"rows": size, "slots": slots, "batches": len(times), "qps": round(len(times) * size / elapsed, 1),
            "batch_p50_ms": each["p50"], "batch_p95_ms": each["p95"]}


async def _with_server(args: argparse.Namespace, eager: Eager, text_items: list[SynthesisItem], text: str,
                       report: dict) -> None:
    """Our server in this process; one-shot requests alternate with eager runs, then the load levels."""
    from wyoming_fasttts.backends.memory import Nvml
    from wyoming_fasttts.bench.load import BatchLog, load, load_from_child, one
    from wyoming_fasttts.bench.servers import free_port
    from wyoming_fasttts.server.app import start_wyoming
    from wyoming_fasttts.server.runtime import build_runtime

    def save() -> None:
        """The report so far: a step cut off at its time limit (a fresh inductor compile is ~7 min of it) still
        leaves what it measured."""
        Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1))

    uri = f"tcp://127.0.0.1:{free_port()}"
    settings = load_settings(args.config, {"engine.backend": args.engine, "server.uri": uri, "server.http_uri": "",
                                           "assets.data_dir": args.data_dir, "assets.model_path": args.model})
    nvml = Nvml.open(settings.engine.device_id)
    before = (nvml.read()[3] or 0) if nvml is not None else 0
    started = time.perf_counter()
    batches = BatchLog()
    runtime = await build_runtime(settings, observer=batches)
    report["server_start_s"] = round(time.perf_counter() - started, 1)
    if nvml is not None:  # what the server added to this process (eager's model and context came before)
        report["server_gpu_mib"] = round(((nvml.read()[3] or 0) - before) / 2**20, 1)
        report["before_server_gpu_mib"] = round(before / 2**20, 1)
    engine = runtime.scheduler.engine
    report["replay"] = getattr(engine, "replay", None)
    report["engine_memory"] = {k: v for k, v in vars(engine.memory()).items() if v is not None}
    save()
    server = await start_wyoming(runtime)
    await runtime.watchdog.start()  # as serve runs it (until the sixteenth pass it did not run here)
    try:
        if args.wavs:
            await _wavs(uri, Path(args.wavs))
        for _ in range(args.warmup):
            await one(uri, text)
        batches.take()
        eager.reset_peak()
        ours, eager_s, eager_audio = [], [], []
        deadline = time.monotonic() + args.budget_s
        while len(ours) < args.runs and time.monotonic() < deadline:
            ours.append(await one(uri, text))
            seconds, audio = eager()
            eager_s.append(seconds)
            eager_audio.append(audio)
        name = f"wyoming-fasttts {args.engine} (server in-process, Wyoming client)"
        report["rows"]["PyTorch eager fp32 (model.reference)"] = {**_row(eager_s, eager_audio),
                                                                   "peak_alloc_mib": eager.peak_mib()}
        report["rows"][name] = {**_row([s.latency_s for s in ours], [s.audio_s for s in ours]),
                                "engine": runtime.scheduler.engine.name, "batches": batches.take(),
                                # each request's start (s from the first) and latency, in order: whether the
                                # slow ones come at a period (the watchdog samples every watchdog.interval_s)
                                "series": [[round(s.start - ours[0].start, 3), round(s.latency_s * 1e3, 2)]
                                           for s in ours]}
        if nvml is not None:
            report["process_gpu_mib"] = round((nvml.read()[3] or 0) / 2**20, 1)
        save()
        print(f"one-shot: {_brief(report['rows'][name])}; eager: {_brief(report['rows'][next(iter(report['rows']))])}",
              flush=True)
        for key, run in (("load", load), ("load_from_child", load_from_child)):  # the clients here, then elsewhere
            report[key] = []
            for clients in (int(c) for c in args.concurrency.split(",") if c):
                batches.take()
                cpu, wall = process_cpu_s(), time.perf_counter()
                result = await run(uri, text, clients, max(args.requests, 2 * clients))
                cpu, wall = process_cpu_s() - cpu, time.perf_counter() - wall
                # The server process's CPU a request and in cores while the level ran (the engine's threads, their
                # CUDA waits where they spin, and in-process clients included): read beside engine_pipelined.
                report[key].append({**load_row(result), "batches": batches.take(),
                                    "cpu_ms_per_request": round(cpu * 1e3 / len(result.samples), 3),
                                    "cpu_cores": round(cpu / wall, 3)})
                print(f"{key} c={clients}: {report[key][-1]}", flush=True)
                save()
        report["engine_alone"] = await asyncio.to_thread(_engine_alone, engine, text_items, args.alone_runs)
        alone = {k: f"{v['p50']:.1f} / {v['p95']:.1f}" for k, v in report["engine_alone"].items()}
        print(f"engine alone (no server around it), p50 / p95 ms by batch size: {alone}", flush=True)
        report["engine_pipelined"] = await asyncio.to_thread(_engine_pipelined, engine, text_items, 4 * args.alone_runs,
                                                             engine.slots)
        print(f"engine alone, its slots back to back: {report['engine_pipelined']}", flush=True)
    finally:
        server.close()
        await runtime.watchdog.stop()
        await runtime.scheduler.stop(timeout=10)


def measure(args: argparse.Namespace) -> None:
    inputs = json.loads(Path(args.inputs).read_text())
    eager = Eager(Path(args.model), Path(args.vocab), inputs["items"], args.device)
    report: dict = {"machine": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M"), "text": inputs["text"],
                    "rows": {}, "switch_ms": sys.getswitchinterval() * 1e3}
    try:
        import torch

        report["torch"] = torch.__version__
        if args.device.startswith("cuda"):
            report["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    for _ in range(args.warmup):
        eager()
    if args.engine:
        items = [SynthesisItem(np.array(i["ids"], np.int64), np.array(i["style"], np.float32)) for i in inputs["items"]]
        asyncio.run(_with_server(args, eager, items, inputs["text"], report))
    else:
        eager.reset_peak()
        deadline = time.monotonic() + args.budget_s
        runs = []
        while len(runs) < args.runs and time.monotonic() < deadline:
            runs.append(eager())
        report["rows"]["PyTorch eager fp32 (model.reference)"] = {**_row(*map(list, zip(*runs, strict=True))),
                                                                   "peak_alloc_mib": eager.peak_mib()}
    Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1))
    rows = [[name, r["n"], f"{r['mean']:.1f} ± {r['std']:.1f}", f"{r['p50']:.1f}", f"{r['p95']:.1f}",
             f"{r['p99']:.1f}", f"{r['rtf']:.4f}", r.get("peak_alloc_mib")] for name, r in report["rows"].items()]
    print("\n".join(md_table(f"{report.get('gpu', args.device)}, {inputs['text']}",
                              ["row", "runs", "mean ± std ms", "p50", "p95", "p99", "RTF", "peak alloc MiB"], rows)))
    for where, key in (("clients in-process", "load"), ("clients in a child", "load_from_child")):
        for row in report.get(key, []):
            sizes = ", ".join(f"{k} x{v['batches']} ({v['engine_p50_ms']:.1f} / {v['engine_p95_ms']:.1f} ms)"
                              for k, v in row["batches"].items())
            print(f"{where}, c={row['clients']}: {row['qps']:.1f} QPS, p50 {row['p50']:.1f} ms, p99 {row['p99']:.1f} "
                  f"ms; batches by size (engine p50 / p95): {sizes}")
    for key in ("replay", "server_start_s", "server_gpu_mib", "before_server_gpu_mib", "process_gpu_mib"):
        if key in report:
            print(f"{key}: {report[key]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=".gpu/bench/inputs.json")
    p.add_argument("--voice", default="zf_xiaobei")
    m = sub.add_parser("measure")
    m.add_argument("--inputs", required=True)
    m.add_argument("--model", required=True)
    m.add_argument("--vocab", required=True)
    m.add_argument("--device", default="cuda", help="torch device for eager (cpu: a smoke test of this script)")
    m.add_argument("--engine", help="also run our server in-process on this engine (e.g. onnxruntime-cuda)")
    m.add_argument("--config", help="config file for the server")
    m.add_argument("--data-dir", help="the server's data dir (converted graphs are cached there)")
    m.add_argument("--runs", type=int, default=500)
    m.add_argument("--warmup", type=int, default=10)
    m.add_argument("--budget-s", type=float, default=240.0, help="stop the timed runs after this long")
    m.add_argument("--concurrency", default="1,4,8,16,32")
    m.add_argument("--requests", type=int, default=256, help="timed requests per level, at least 2 x clients")
    m.add_argument("--alone-runs", type=int, default=40,
                   help="runs per batch size of the engine alone, after the levels")
    m.add_argument("--out", default="gpu_table.json")
    m.add_argument("--wavs", help="write the server's audio of a few sentences here (for tests/ear.py)")
    m.add_argument("--switch-ms", type=float, help="the interpreter's GIL switch interval (default 5 ms): how long "
                   "the engine's thread can wait for the event loop to let the GIL go")
    args = parser.parse_args()
    if getattr(args, "switch_ms", None):
        sys.setswitchinterval(args.switch_ms / 1e3)
    if args.cmd == "prepare":
        prepare(Path(args.out), args.voice)
    else:
        measure(args)


if __name__ == "__main__":
    main()
