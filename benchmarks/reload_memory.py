"""Memory before, during and after engine reloads under load, on the server's own engine, scheduler and watchdog.

In one process: ``create_engine`` (``--engine``, default ``onnxruntime-cuda``) → ``Scheduler`` reporting to the
server's ``Metrics`` and watchdog ``Detector`` → ``Watchdog``. Several clients synthesise continuously; after a
warm phase the engine is reloaded ``--reloads`` times through ``Watchdog.reload`` (what ``POST /admin/reload``
and the watchdog call); a sampler thread records NVML device used/free, this process's GPU memory (where NVML
sees our pid) and RSS every ``--interval`` seconds.

The sentences are phoneme ids drawn from the vocabulary with a fixed seed, 20–160 ids long: the shapes of real
sentences without the text front end (whose dependencies a GPU box may lack); the audio is not for listening.

    python benchmarks/reload_memory.py --engine onnxruntime-cuda --data-dir DIR --out reload.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_fasttts.assets import ensure_assets, load_vocab
from wyoming_fasttts.backends import create_engine
from wyoming_fasttts.backends.base import Engine, SynthesisItem
from wyoming_fasttts.backends.memory import Nvml, process_rss_bytes
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.metrics import Metrics
from wyoming_fasttts.scheduler import Scheduler
from wyoming_fasttts.voices import VoiceBank
from wyoming_fasttts.watchdog import Detector, Watchdog

MIB = 1 << 20


class Sampler(threading.Thread):
    """(time, phase, device used, device free, process GPU, RSS) every ``interval`` seconds."""

    def __init__(self, nvml: Nvml | None, interval: float) -> None:
        super().__init__(daemon=True)
        self.nvml, self.interval, self.phase = nvml, interval, "start"
        self.rows: list[dict] = []
        self._done = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self._done.is_set():
            used = free = mine = None
            if self.nvml is not None:
                used, free, _, mine = self.nvml.read()
            self.rows.append({
                "t": round(time.monotonic() - start, 2), "phase": self.phase, "gpu_used_mib": _mib(used),
                "gpu_free_mib": _mib(free), "process_gpu_mib": _mib(mine), "rss_mib": _mib(process_rss_bytes()),
            })
            self._done.wait(self.interval)

    def stop(self) -> None:
        self._done.set()
        self.join()


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / MIB, 1)


def _items(vocab: dict[str, int], voices: VoiceBank, count: int = 32) -> list[SynthesisItem]:
    rng = np.random.default_rng(7)
    ids = np.array(sorted(set(vocab.values()) - {0}), np.int64)
    items = []
    for n in rng.integers(20, 161, count):
        chosen = rng.choice(ids, int(n))
        items.append(SynthesisItem(chosen, voices.style("zf_xiaobei", len(chosen)), 1.0))
    return items


async def _client(scheduler: Scheduler, items: list[SynthesisItem], stop: asyncio.Event, tally: dict) -> None:
    k = 0
    while not stop.is_set():
        try:
            audio = await scheduler.synthesize(items[k % len(items)])
            tally["done"] += 1
            tally["audio_s"] += len(audio) / 24000
            if len(audio) == 0:
                tally["empty"] += 1
        except Exception as err:  # counted, not hidden: a reload must cause none
            tally["failed"].append(repr(err))
        k += 1


def _int8_on_cuda(settings, assets) -> Engine:
    """The CPU engine's int8 stage graphs on the CUDA provider (for when the float CUDA graphs do not load)."""
    from wyoming_fasttts.backends.onnxruntime import create_onnxruntime_engine

    engine = create_onnxruntime_engine(settings, assets, "onnxruntime-cuda", flavour="int8")
    engine.warmup()
    return engine


def _phase(rows: list[dict], phase: str, key: str, how) -> float | None:
    values = [r[key] for r in rows if r["phase"] == phase and r[key] is not None]
    return how(values) if values else None


async def run(args: argparse.Namespace) -> dict:
    overrides = {"engine.backend": args.engine, "assets.data_dir": args.data_dir, "scheduler.workers": args.workers}
    settings = load_settings(overrides=overrides)
    assets = ensure_assets(settings.assets)
    metrics = Metrics()
    detector = Detector(settings.watchdog)
    nvml = Nvml.open(settings.engine.device_id)
    sampler = Sampler(nvml, args.interval)
    sampler.start()
    sampler.phase = "load engine"
    factory = _int8_on_cuda if args.int8_on_cuda else create_engine
    engine = await asyncio.to_thread(factory, settings, assets)
    scheduler = Scheduler(engine, settings.scheduler, detector)
    scheduler.start()
    watchdog = Watchdog(settings, assets, scheduler, metrics, detector, engine_factory=factory)
    items = _items(load_vocab(assets.vocab), VoiceBank(assets))

    stop, tally = asyncio.Event(), {"done": 0, "audio_s": 0.0, "empty": 0, "failed": []}
    sampler.phase = "warm up"
    clients = [asyncio.create_task(_client(scheduler, items, stop, tally)) for _ in range(args.clients)]
    await asyncio.sleep(args.warm_s)
    sampler.phase = "before"
    await asyncio.sleep(args.settle_s)
    reloads = []
    for n in range(args.reloads):
        sampler.phase = f"reload {n + 1}"
        result = await watchdog.reload("manual", ["benchmark"])
        reloads.append(round(result.seconds, 2))
        sampler.phase = f"after reload {n + 1}"
        await asyncio.sleep(args.settle_s)
    sampler.phase = "after"
    await asyncio.sleep(args.settle_s)
    stop.set()
    await asyncio.gather(*clients)
    sampler.phase = "idle after"
    await asyncio.sleep(args.settle_s)
    sampler.stop()
    await watchdog.stop()
    await scheduler.stop(timeout=30)

    rows = sampler.rows
    phases = list(dict.fromkeys(r["phase"] for r in rows))
    summary = {
        phase: {
            "gpu_used_mib_median": _phase(rows, phase, "gpu_used_mib", statistics.median),
            "gpu_used_mib_max": _phase(rows, phase, "gpu_used_mib", max),
            "gpu_free_mib_min": _phase(rows, phase, "gpu_free_mib", min),
            "process_gpu_mib_max": _phase(rows, phase, "process_gpu_mib", max),
            "rss_mib_median": _phase(rows, phase, "rss_mib", statistics.median),
            "rss_mib_max": _phase(rows, phase, "rss_mib", max),
        }
        for phase in phases
    }
    return {
        "engine": engine.name, "device": engine.device, "clients": args.clients, "reload_seconds": reloads,
        "sentences": tally["done"], "audio_seconds": round(tally["audio_s"], 1), "empty": tally["empty"],
        "failed": tally["failed"], "summary": summary, "samples": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="onnxruntime-cuda")
    parser.add_argument("--data-dir", default="~/.local/share/wyoming-fasttts")
    parser.add_argument("--workers", type=int, default=0, help="engine slots (0 = the engine's choice)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--reloads", type=int, default=3)
    parser.add_argument("--warm-s", type=float, default=10.0)
    parser.add_argument("--settle-s", type=float, default=5.0)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--int8-on-cuda", action="store_true",
                        help="run the int8 stage graphs on ONNX Runtime's CUDA provider instead of --engine")
    parser.add_argument("--out", help="write the full record (every sample) as JSON here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = asyncio.run(run(args))
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))
    print(json.dumps({k: v for k, v in record.items() if k != "samples"}, indent=1))
    return 1 if record["failed"] or record["empty"] else 0


if __name__ == "__main__":
    sys.exit(main())
