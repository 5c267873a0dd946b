"""``wyoming-fasttts bench``: our server against the plain baseline, side by side, through the Wyoming protocol.

Both servers run as real processes on the same model file; one run measures, with the real client:

- ``sequential``: ``--runs`` one-shot requests of one sentence, one at a time (the published table's row:
  mean ± std, p50/p95/p99, peak RSS and GPU memory, real-time factor);
- ``load``: closed-loop clients at each ``--concurrency`` level (QPS, p50/p99);
- ``first-audio``: time to first audio for a five-sentence paragraph and two typical assistant replies,
  one-shot and streamed;
- ``wyoming-bench``: the external PyPI client on the replies, against both servers in one invocation.

Requests to different servers are interleaved so the ratios hold on a busy machine. It prints the Markdown
report and writes ``bench.json``, ``bench.md`` and ``bench.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ..cli.options import add_settings_arguments
from ..config import Settings
from . import external as bench_external
from . import report as bench_report
from .load import LoadResult, first_audio, load, sequential
from .servers import Served, baseline_command, free_port, ours_command, start

WELCOME = "欢迎使用语音合成系统"
PARAGRAPH = ("欢迎回家。今天是星期六，天气晴朗。客厅的灯已经打开，空调设为二十四度。"
             "您有两条未读消息。需要我为您播放音乐吗？")
REPLIES = [
    "好的，已经为您打开客厅的灯。现在室内温度是二十三度。",
    "明天北京晴转多云，最高气温十八度。早晚温差较大，出门记得添衣。祝您出行愉快！",
]
PHASES = ("sequential", "load", "first-audio", "wyoming-bench")
BASELINE = "baseline"
_RECORDED_FLAGS = ("runs", "concurrency", "requests", "load_passes", "ttfa_rounds", "wb_rounds", "wb_passes", "phases")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser)
    g = parser.add_argument_group("bench")
    g.add_argument("--runs", type=int, default=1000, help="sequential one-shot requests per server (default 1000)")
    g.add_argument("--concurrency", default="1,4,8,16,32", help="client counts for the load phase")
    g.add_argument("--requests", type=int, default=64,
                   help="timed requests per concurrency level, at least 2 x clients (default 64)")
    g.add_argument("--load-passes", type=int, default=2,
                   help="each level's requests split into this many passes, servers alternating (default 2)")
    g.add_argument("--ttfa-rounds", type=int, default=10, help="rounds of the first-audio texts (default 10)")
    g.add_argument("--wb-rounds", type=int, default=3, help="wyoming-bench --rounds per pass (default 3)")
    g.add_argument("--wb-passes", type=int, default=2, help="wyoming-bench passes, server order reversed each")
    g.add_argument("--phases", default=",".join(PHASES), help=f"comma list of {', '.join(PHASES)}")
    g.add_argument("--engines", help="our engines to start, comma list (default: --engine, else auto)")
    g.add_argument("--ours-uri", help="measure this running server instead of starting ours")
    g.add_argument("--baseline-uri", help="measure this running baseline instead of starting one")
    g.add_argument("--no-baseline", action="store_true", help="measure our server(s) alone")
    g.add_argument("--baseline-cuda", action="store_true", help="run the baseline on ONNX Runtime's CUDA provider")
    g.add_argument("--text", default=WELCOME, help="the sequential and load sentence")
    g.add_argument("--paragraph", default=PARAGRAPH, help="the five-sentence first-audio text")
    g.add_argument("--replies", nargs="+", default=REPLIES, help="typical assistant replies (2-3 sentences)")
    g.add_argument("--out", default="out/bench", help="folder for bench.json, bench.md, bench.png and logs")


def run(args: argparse.Namespace, settings: Settings) -> int:
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = set(phases) - set(PHASES)
    if unknown:
        print(f"wyoming-fasttts bench: unknown phase(s) {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    servers, engines = _start_servers(args, settings, out / "logs")
    report: dict[str, Any] = {"meta": _meta(args, settings), "servers": {}}
    try:
        asyncio.run(_measure(args, phases, servers, report))
        if "wyoming-bench" in phases:
            _external(args, servers, report)
        for s in servers:
            entry = report["servers"].setdefault(s.name, {})
            entry.update(engine=engines[s.name], uri=s.uri, peak_rss_mib=bench_report.mib(s.peak_rss_bytes()))
            entry["gpu_mib"] = max(filter(None, [entry.get("gpu_mib"), bench_report.mib(s.gpu_bytes())]), default=None)
    finally:
        for s in servers:
            s.stop()
    ours = [s.name for s in servers if s.name != BASELINE]
    if any(s.name == BASELINE for s in servers):
        report["ratios"] = {name: bench_report.ratios(report, name, BASELINE) for name in ours}
    report["goals"] = {name: bench_report.goals(report, name, engines[name].endswith(("cuda", "tensorrt", "rtx")))
                       for name in ours}
    _write(report, out)
    return 0


def _start_servers(args: argparse.Namespace, settings: Settings, logs: Path) -> tuple[list[Served], dict[str, str]]:
    from ..backends import resolve_backend

    servers: list[Served] = []
    engines: dict[str, str] = {}
    try:
        if args.ours_uri:
            servers.append(Served("fasttts", args.ours_uri))
            engines["fasttts"] = "attached"
        else:
            wanted = args.engines.split(",") if args.engines else [resolve_backend(settings)[0]]
            for engine in wanted:
                port = free_port()
                servers.append(start(f"fasttts-{engine}", ours_command(args, engine, port), port, logs))
                engines[f"fasttts-{engine}"] = engine
        if args.baseline_uri:
            servers.append(Served(BASELINE, args.baseline_uri))
        elif not args.no_baseline:
            port = free_port()
            servers.append(start(BASELINE, baseline_command(settings, port, args.baseline_cuda), port, logs))
        if BASELINE in [s.name for s in servers]:
            engines[BASELINE] = f"onnxruntime{'-cuda' if args.baseline_cuda else ''} (full int8 graph)"
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers, engines


async def _measure(args: argparse.Namespace, phases: list[str], servers: list[Served], report: dict[str, Any]) -> None:
    br = bench_report
    uris = {s.name: s.uri for s in servers}
    for uri in uris.values():  # first requests pay for lazy initialisation in either server
        await sequential({"warm": uri}, args.text, 2)
    if "sequential" in phases:
        runs = await sequential(uris, args.text, args.runs)
        report["sequential"] = {
            "text": args.text, "runs": args.runs, "rows": {n: br.sequential_row(s) for n, s in runs.items()},
            "latencies_ms": {n: [round(x.latency_s * 1000, 2) for x in s] for n, s in runs.items()},
        }
        _sample_gpu(servers, report)
    if "load" in phases:
        levels: dict[str, list[dict[str, Any]]] = {name: [] for name in uris}
        for clients in (int(c) for c in args.concurrency.split(",")):
            per_pass = max(1, max(args.requests, 2 * clients) // args.load_passes)
            pooled: dict[str, LoadResult] = {}
            for n in range(args.load_passes):  # servers alternate, so a busy spell on the machine hits both
                for name, uri in (uris.items() if n % 2 == 0 else reversed(uris.items())):
                    result = await load(uri, args.text, clients, per_pass)
                    pooled[name] = pooled[name] + result if name in pooled else result
            for name, result in pooled.items():
                levels[name].append(br.load_row(result))
                print(f"load {name} c={clients}: {result.qps:.2f} QPS", file=sys.stderr, flush=True)
            _sample_gpu(servers, report)
        report["load"] = {"text": args.text, "passes": args.load_passes, "levels": levels}
    if "first-audio" in phases:
        texts = {"paragraph": args.paragraph, **{f"reply{i + 1}": t for i, t in enumerate(args.replies)}}
        samples = await first_audio(uris, texts, args.ttfa_rounds)
        report["first_audio"] = {"texts": texts, "rounds": args.ttfa_rounds,
                                 "rows": {n: {k: br.first_audio_row(v) for k, v in rows.items()}
                                          for n, rows in samples.items()}}


def _external(args: argparse.Namespace, servers: list[Served], report: dict[str, Any]) -> None:
    names = {s.host_port: s.name for s in servers}
    outputs, rows = bench_external.run_passes(list(names), args.replies, args.wb_rounds, 1, args.wb_passes)
    pooled = bench_external.pooled(rows)
    ours_fa = report.get("first_audio", {}).get("rows", {})
    table: list[dict[str, Any]] = []
    for (server, mode), acc in pooled.items():
        name = names.get(server, server)
        mine = [row["ttfa_mean"] for key, row in ours_fa.get(name, {}).items()
                if key.startswith("reply") and key.endswith("one-shot" if mode == "non_streaming" else "/streaming")]
        table.append({"name": name, "mode": mode, **acc,
                      "ours_ttfa_mean_ms": statistics.fmean(mine) if mine else None})
    by: dict[tuple[str, str], float] = {(row["name"], row["mode"]): row["ttft_mean_ms"] for row in table}
    ratio = {name: {mode: value / by[(BASELINE, mode)] for (n, mode), value in by.items()
                    if n == name and (BASELINE, mode) in by}
             for name in {s.name for s in servers} - {BASELINE}}
    report["wyoming_bench"] = {"texts": args.replies, "outputs": outputs, "pooled": table, "ttfa_ratio": ratio}


def _sample_gpu(servers: list[Served], report: dict[str, Any]) -> None:
    """NVML reports current use only, so the peak is the largest of the readings taken after each phase."""
    for s in servers:
        used = s.gpu_bytes()
        if used is not None:
            entry = report["servers"].setdefault(s.name, {})
            entry["gpu_mib"] = max(entry.get("gpu_mib") or 0.0, round(used / (1 << 20), 1))


def _meta(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    import onnxruntime

    from ..backends.memory import probe_gpu

    gpu, _ = probe_gpu(settings.engine.device_id)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    machine = f"{cpu}, {os.cpu_count()} cores" + (f", {gpu.name}" if gpu else "")
    argv = sys.argv[1:] if Path(sys.argv[0]).name in ("wyoming-fasttts", "__main__.py") else None
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine, "python": platform.python_version(),
            "onnxruntime": onnxruntime.__version__, "threads": settings.engine.threads,
            "command": shlex.join(["wyoming-fasttts", *argv]) if argv else "(called from Python)",
            "flags": {k: v for k, v in vars(args).items() if k in _RECORDED_FLAGS}}


def _write(report: dict[str, Any], out: Path) -> None:
    import json

    text = bench_report.markdown(report)
    (out / "bench.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    (out / "bench.md").write_text(text + "\n")
    bench_report.plot(report, out / "bench.png")
    print(text)
    for outputs in report.get("wyoming_bench", {}).get("outputs", []):
        print(outputs)
    print(f"wrote {out / 'bench.json'}, {out / 'bench.md'}, {out / 'bench.png'}", file=sys.stderr)

