"""The server's host-side ceiling: our real server (text front end, Wyoming, scheduler) in front of a stand-in
engine that takes a fixed time per call, so what is left is the host's share of a request (issue 13).

Why. On the GPU, a batch of 8 sentences costs the GPU ~24 ms as graphs (docs/BENCHMARKS.md, fourteenth pass), so
16 clients in turn could get ~330 QPS, but the server served 190-239. Whether the rest is the host's per-request
work or the in-process load clients of ``gpu_table.py`` sharing the server's event loop can be asked without a
GPU: the stand-in returns real audio (the sentence's, rendered once by the CPU engine) after sleeping
``--base-ms`` + ``--row-ms`` per row, the GIL released as it is while a CUDA call waits, with the GPU engines'
``slots`` (1) and ``max_batch`` (16). Load levels run with the clients in this process (as ``gpu_table.py``
does), then in a child process (as real clients are).

A measured engine's own costs by row bucket (``--costs``, from ``gpu_table.py``'s engine-alone timings) ask
whether the server would serve 16 clients at the rate that engine allows (fifteenth pass: 294 QPS against the
real engine's 220); ``--waits`` and ``--hops`` split a call into several GIL take-backs as PyTorch calls make
them; ``--set`` changes a server setting (e.g. the scheduler's preferred batch sizes). ``--stage2-costs`` makes the
stand-in the torch-cuda engine's pipeline (twenty-third pass): two slots, each call's cost split into a first part
under one lock (stage 1 and the host step) and its stage-2 part under another, so a call's first part runs while the
last call's stage 2 does: the scheduler's rules for two batches in flight, measured off the GPU. Those two parts
overlap for free there, which the GPU's do not (thirty-second pass: a batch of 8, 20.0 ms alone, took 31.4 in the
busy server, and a batch of 4 28.5): ``--gpu-share S`` runs both parts on one simulated GPU whose work is shared
between the calls on it (the first part's host step too, a simplification), two at a time getting S times one
call's speed together (1: one after the other; 2: free); at S 1.0-1.15 it splits 16 clients into batches of 4 and 8
at about those costs, as that GPU did (thirty-third pass).

    python benchmarks/host_ceiling.py [--base-ms 15 --row-ms 1.5 | --costs 1:19.6,4:21,8:27.1,16:50.2]
        [--stage2-costs 2:7.9,8:14.7,16:23 [--gpu-share 1.3]] [--waits N --hops N] [--set KEY=VALUE ...]
        [--clients 1,4,16] [--requests 256] [--out F]
    bash benchmarks/h200_torch.sh HC      # on the GPU machine, its host (the pack's data, no GPU used)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import platform
import resource
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_fasttts.backends.base import EngineMemory
from wyoming_fasttts.backends.memory import process_rss_bytes
from wyoming_fasttts.bench.load import BatchLog, load, load_from_child, one
from wyoming_fasttts.bench.report import summary_ms
from wyoming_fasttts.bench.run import WELCOME
from wyoming_fasttts.bench.servers import free_port
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.core import SynthesisItem
from wyoming_fasttts.voices import VoiceBank


class SharedGPU:
    """One GPU's work shared between the calls on it (processor sharing): alone a call's work runs at full speed,
    two at a time run at ``share / 2`` each (``share`` 1: strictly in turn; 2: side by side at no cost), as two
    streams' kernels share the SMs and memory bandwidth. Each caller sleeps until its own work is done, its finish
    recomputed whenever a call joins or leaves."""

    def __init__(self, share: float) -> None:
        self.share = share
        self._cond = threading.Condition()
        self._left: dict[int, float] = {}  # each running call's seconds of work left at full speed
        self._stamp = time.perf_counter()

    def _rate(self) -> float:
        return 1.0 if len(self._left) <= 1 else self.share / len(self._left)

    def _advance(self) -> None:
        now = time.perf_counter()
        done, self._stamp = (now - self._stamp) * self._rate(), now
        for key in self._left:
            self._left[key] -= done

    def work(self, seconds: float) -> None:
        key = threading.get_ident()
        with self._cond:
            self._advance()
            self._left[key] = seconds
            self._cond.notify_all()  # the other call slows down
            while True:
                self._advance()
                if self._left[key] <= 1e-5:
                    del self._left[key]
                    self._cond.notify_all()  # the other call speeds up
                    return
                self._cond.wait(self._left[key] / self._rate())


class StandIn:
    """A GPU engine's shape (one call at a time, batches up to 16) with a fixed cost per call; ``audio`` by
    phoneme count (one sentence is all it is asked for). With ``stage2`` costs, two calls at a time, pipelined as
    the torch-cuda engine's stages are."""

    name, device, max_batch = "stand-in", "none", 16

    def __init__(self, audio: dict[int, np.ndarray], base_s: float, row_s: float, costs: dict[int, float],
                 waits: int = 1, hops: int = 0, stage2: dict[int, float] | None = None,
                 gpu: SharedGPU | None = None) -> None:
        self.audio, self.base_s, self.row_s, self.waits, self.hops = audio, base_s, row_s, waits, hops
        self.costs = costs
        """Seconds a call costs by row bucket (a measured engine's); rows above the largest: base + row cost."""
        self.stage2 = stage2 or {}
        """Seconds of a call's cost that are its stage 2, by row bucket (the rest: stage 1 and the host step)."""
        self.slots = 2 if self.stage2 else 1
        self._locks = (threading.Lock(), threading.Lock())
        self._sleep = gpu.work if gpu else time.sleep

    def warmup(self) -> None:
        pass

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        bucket = min([b for b in self.costs if b >= len(items)], default=0)
        cost = self.costs[bucket] if bucket else self.base_s + self.row_s * len(items)
        if self.stage2:  # stage 1 and the host step, then stage 2 once the last call's has ended (the engine's locks)
            second = self.stage2[min(b for b in self.stage2 if b >= len(items))]
            with self._locks[0]:
                self._sleep(cost - second)
                self._locks[1].acquire()
            try:
                self._sleep(second)
            finally:
                self._locks[1].release()
            return [self.audio[len(item)].copy() for item in items]
        for part in range(self.waits):  # each wait ends by taking the GIL back, as each CUDA sync does
            for _ in range(self.hops * (part + 1) // self.waits - self.hops * part // self.waits):
                time.sleep(0)  # a short call that lets the GIL go (a PyTorch op does), then needs it back
            time.sleep(cost / self.waits)
        return [self.audio[len(item)].copy() for item in items]

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=process_rss_bytes())

    def close(self) -> None:
        pass


def process_cpu_s() -> float:
    """This process's CPU seconds, all threads: with the clients in a child, the server's own share of a request
    (front end, Wyoming, scheduler; the stand-in sleeps), the host work a GPU engine's batches wait behind for the
    GIL; with the clients in-process, theirs too (``gpu_table.py`` reads it around its load levels)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(args: argparse.Namespace) -> dict:
    from wyoming_fasttts.server.app import start_wyoming
    from wyoming_fasttts.server.runtime import build_runtime

    uri = f"tcp://127.0.0.1:{free_port()}"
    overrides = {"engine.backend": "onnxruntime", "server.uri": uri, "server.http_uri": ""}
    if args.data_dir:  # the GPU machine: the data carried in the pack (benchmarks/h200_torch.sh HC)
        overrides |= {"assets.data_dir": args.data_dir, "assets.model_path": args.model}
    for pair in args.set:
        key, _, value = pair.partition("=")
        overrides[key] = yaml.safe_load(value)
    settings = load_settings(None, overrides)
    batches = BatchLog()
    runtime = await build_runtime(settings, observer=batches)
    voices = VoiceBank(runtime.assets)
    items = [SynthesisItem(s.ids, voices.style(settings.voice.default, len(s.ids)))
             for s in await asyncio.to_thread(runtime.synth.sentences, WELCOME)]
    audio = dict(zip(map(len, items), await asyncio.to_thread(runtime.engine.run, items), strict=True))
    costs, stage2 = ({int(b): float(ms) / 1e3 for b, ms in (c.split(":") for c in spec.split(",") if c)}
                     for spec in (args.costs, args.stage2_costs))
    stand_in = StandIn(audio, args.base_ms / 1e3, args.row_ms / 1e3, costs, args.waits, args.hops, stage2,
                       SharedGPU(args.gpu_share) if args.gpu_share else None)
    if args.switch_ms:
        sys.setswitchinterval(args.switch_ms / 1e3)
    await asyncio.to_thread(runtime.scheduler.swap_engine(stand_in).wait)  # the CPU engine closed
    server = await start_wyoming(runtime)
    report: dict = {"machine": platform.node(), "cpus": mp.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M"),
                    "text": WELCOME, "base_ms": args.base_ms, "row_ms": args.row_ms, "costs": args.costs,
                    "waits": args.waits, "hops": args.hops, "set": args.set, "stage2_costs": args.stage2_costs,
                    "gpu_share": args.gpu_share,
                    "switch_ms": sys.getswitchinterval() * 1e3, "levels": []}
    try:
        for _ in range(10):
            await one(uri, WELCOME)
        for where in args.where.split(","):
            for clients in (int(c) for c in args.clients.split(",")):
                batches.take()
                requests = max(args.requests, 2 * clients)
                cpu = process_cpu_s()
                result = await (load if where == "in-process" else load_from_child)(uri, WELCOME, clients, requests)
                cpu_ms = (process_cpu_s() - cpu) * 1e3 / len(result.samples)
                qps, latencies = result.qps, [s.latency_s for s in result.samples]
                row = {"clients": clients, "where": where, "qps": qps, **summary_ms(latencies),
                       "cpu_ms_per_request": cpu_ms, "batches": batches.take()}
                report["levels"].append(row)
                sizes = {k: (v["batches"], round(v["engine_p50_ms"], 1)) for k, v in row["batches"].items()}
                print(f"{where} c={clients}: {qps:.1f} QPS, p50 {row['p50']:.1f} ms, p99 {row['p99']:.1f} ms, "
                      f"CPU {cpu_ms:.2f} ms a request, "
                      f"batches (count, engine p50 ms) {sizes}", flush=True)
    finally:
        server.close()
        await runtime.scheduler.stop(timeout=10)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-ms", type=float, default=15.0, help="the stand-in's cost per call")
    parser.add_argument("--row-ms", type=float, default=1.5, help="and per row")
    parser.add_argument("--waits", type=int, default=1, help="the call's time in this many waits (CUDA syncs)")
    parser.add_argument("--costs", default="", help="ms a call costs by row bucket, e.g. 1:19.6,4:21,8:27.1,16:50.2")
    parser.add_argument("--stage2-costs", default="", help="ms of each bucket's cost that is stage 2, e.g. "
                        "2:7.9,8:14.7,16:23: two slots, pipelined as torch-cuda's stages (needs --costs)")
    parser.add_argument("--gpu-share", type=float, help="with --stage2-costs: both parts on one simulated GPU, two "
                        "calls at a time running at this multiple of one call's speed together (1: in turn)")
    parser.add_argument("--set", action="append", default=[], help="a setting for the server, e.g. "
                        "scheduler.max_queue_delay_ms=10 (the value read as YAML)")
    parser.add_argument("--hops", type=int, default=0, help="short GIL releases per call (PyTorch ops)")
    parser.add_argument("--switch-ms", type=float, help="the interpreter's GIL switch interval (default 5 ms)")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--where", default="in-process,child process",
                        help="where clients run ('child process' alone: the process is the server's, for a profiler)")
    parser.add_argument("--requests", type=int, default=256, help="timed requests per level")
    parser.add_argument("--data-dir", help="assets.data_dir, where the data is not fetched (the GPU machine)")
    parser.add_argument("--model", help="assets.model_path, with --data-dir")
    parser.add_argument("--out", help="the report as JSON")
    args = parser.parse_args()
    if args.gpu_share and not args.stage2_costs:
        parser.error("--gpu-share needs --stage2-costs (the two parts it shares one GPU between)")
    report = asyncio.run(measure(args))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
