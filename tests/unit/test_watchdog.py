"""The watchdog's judgement, backoff and in-place reload, on the real Scheduler with a stand-in engine.

A stand-in engine (instant, checkable output, records close) makes it cheap to reload many times and to
prove the ordering guarantees; tests/integration/test_reload.py does the same against the real model and server.
Runs in about a second.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from wyoming_fasttts import watchdog as wd
from wyoming_fasttts.assets import ModelAssets
from wyoming_fasttts.backends.base import AllocationError, EngineError, EngineMemory, SynthesisItem
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.metrics import Metrics
from wyoming_fasttts.scheduler import Scheduler
from wyoming_fasttts.watchdog import Detector, MemorySample, Watchdog

MB = 1 << 20


class StandInEngine:
    """Answers each item with samples equal to its first id, after a short pause; refuses to run once closed."""

    name = "stand-in"
    device = "cpu"
    max_batch = 1
    slots = 2
    made: ClassVar[list[StandInEngine]] = []

    def __init__(self) -> None:
        self.closed = False
        self.closed_event = threading.Event()
        self.runs_after_close = 0
        self.runs = 0
        StandInEngine.made.append(self)

    def warmup(self) -> None:
        pass

    def run(self, items):
        if self.closed:
            self.runs_after_close += 1
        time.sleep(0.002)
        self.runs += 1
        return [np.full(240 * len(item.ids), float(item.ids[0]), np.float32) for item in items]

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=0, weights_bytes=10 * MB)

    def close(self) -> None:
        assert not self.closed, "closed twice"
        self.closed = True
        self.closed_event.set()


def _settings(**watchdog):
    return load_settings(overrides={f"watchdog.{key}": value for key, value in watchdog.items()})


def _sample(in_use: int = 500 * MB, free: int | None = 8000 * MB, on_gpu: bool = False) -> MemorySample:
    return MemorySample(
        rss_bytes=in_use, host_available_bytes=free, working_set_bytes=100 * MB, on_gpu=on_gpu,
        gpu_used_bytes=in_use if on_gpu else None, gpu_free_bytes=free if on_gpu else None,
    )


def _kinds(evidence) -> list[str]:
    return [item.kind for item in evidence]


# -- Detector --------------------------------------------------------------------------------------------


def test_healthy_engine_gives_no_evidence():
    detector = Detector(_settings().watchdog)
    for _ in range(60):
        detector.batch_done("e", 1, 0.1, 1.0)
    assert detector.check(_sample()) == []
    assert detector.check(_sample()) == []


def test_fault_injection_is_always_evidence():
    assert _kinds(Detector(_settings().watchdog, fault_injection=True).check(_sample())) == ["fault_injection"]


def test_fault_injection_from_config_or_environment(monkeypatch):
    monkeypatch.delenv(wd.FAULT_INJECTION_ENV, raising=False)
    assert not Watchdog.fault_injection_requested(_settings().watchdog)
    assert Watchdog.fault_injection_requested(_settings(fault_injection=True).watchdog)
    monkeypatch.setenv(wd.FAULT_INJECTION_ENV, "1")
    assert Watchdog.fault_injection_requested(_settings().watchdog)


def test_allocation_failures_count_other_failures_do_not():
    detector = Detector(_settings(alloc_failures=2).watchdog)
    detector.batch_failed("e", 1, EngineError("shape"))
    detector.batch_failed("e", 1, AllocationError("out of memory"))
    assert detector.check(_sample()) == []
    detector.batch_failed("e", 1, AllocationError("out of memory"))
    evidence = detector.check(_sample())
    assert _kinds(evidence) == ["allocation_failures"] and "2 allocation failure" in evidence[0].detail


def test_memory_growth_counts_only_under_a_steady_workload():
    detector = Detector(_settings(memory_growth_mb=100).watchdog)
    detector.batch_done("e", 1, 0.1, 2.0)
    assert detector.check(_sample(500 * MB)) == []  # baseline
    assert detector.check(_sample(590 * MB)) == []  # within the threshold
    detector.batch_done("e", 1, 0.5, 9.0)  # a longer sentence than ever: more memory is legitimate
    assert detector.check(_sample(700 * MB)) == []  # new baseline
    detector.batch_done("e", 1, 0.1, 2.0)
    evidence = detector.check(_sample(850 * MB))
    assert _kinds(evidence) == ["memory_growth"] and "150 MiB" in evidence[0].detail


def test_memory_growth_is_judged_on_gpu_memory_for_a_gpu_engine():
    detector = Detector(_settings(memory_growth_mb=100).watchdog)
    assert detector.check(_sample(1000 * MB, on_gpu=True)) == []
    grown = MemorySample(rss_bytes=100 * MB, host_available_bytes=None, working_set_bytes=0, on_gpu=True,
                         gpu_used_bytes=1200 * MB, gpu_free_bytes=8000 * MB)
    assert _kinds(detector.check(grown)) == ["memory_growth"]


@pytest.mark.parametrize("on_gpu", [True, False])
def test_free_memory_that_cannot_hold_the_working_set(on_gpu):
    detector = Detector(_settings(min_free_mb=256).watchdog)
    assert detector.check(_sample(free=400 * MB, on_gpu=on_gpu)) == []  # 100 MiB working set + 256 fits
    evidence = detector.check(_sample(free=300 * MB, on_gpu=on_gpu))
    assert _kinds(evidence) == ["low_free_memory"] and ("GPU" if on_gpu else "host") in evidence[0].detail


def test_latency_drift_against_the_warm_baseline():
    detector = Detector(_settings(latency_window=4, latency_drift_ratio=2.0).watchdog)
    for _ in range(4):
        detector.batch_done("e", 1, 0.1, 1.0)  # baseline: 100 ms per second of audio
    for _ in range(4):
        detector.batch_done("e", 1, 0.19, 1.0)
    assert detector.check(_sample()) == []
    for _ in range(4):
        detector.batch_done("e", 1, 0.25, 1.0)
    evidence = detector.check(_sample())
    assert _kinds(evidence) == ["latency_drift"] and "250 ms" in evidence[0].detail
    detector.reset()  # a fresh engine gets a fresh baseline
    for _ in range(8):
        detector.batch_done("e", 1, 0.25, 1.0)
    assert detector.check(_sample()) == []


# -- Watchdog on the real scheduler ----------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _stand_in(settings, assets) -> StandInEngine:
    return StandInEngine()


def _watchdog(clock=time.monotonic, factory=_stand_in, **settings) -> tuple[Watchdog, Scheduler, Metrics]:
    StandInEngine.made.clear()
    config = _settings(**settings)
    metrics = Metrics()
    detector = Detector(config.watchdog, Watchdog.fault_injection_requested(config.watchdog))
    scheduler = Scheduler(StandInEngine(), config.scheduler, detector)
    scheduler.start()
    assets = ModelAssets(Path("model.onnx"), Path("vocab.json"), Path("voices"))
    return Watchdog(config, assets, scheduler, metrics, detector, clock, factory), scheduler, metrics


def _count(metrics: Metrics, name: str, **labels) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_degradation_reloads_with_backoff_that_doubles_while_it_does_not_cure():
    clock = _Clock()
    watchdog, scheduler, metrics = _watchdog(clock, fault_injection=True, backoff_s=10.0, backoff_max_s=40.0)

    async def scenario() -> list[float]:
        reload_times = []
        for _ in range(200):  # a check every second for 200 s, degraded every time
            if await watchdog.check() is not None:
                reload_times.append(clock.now)
            clock.now += 1.0
        await watchdog.stop()
        await scheduler.stop(timeout=5)
        return reload_times

    times = asyncio.run(scenario())
    gaps = np.diff(times).tolist()
    assert gaps[:3] == [10.0, 20.0, 40.0] and set(gaps[3:]) == {40.0}  # doubling, capped at backoff_max_s
    assert _count(metrics, "fasttts_engine_reloads_total", trigger="watchdog") == len(times)
    assert _count(metrics, "fasttts_watchdog_degraded_total", evidence="fault_injection") == 200
    # one engine per reload plus the first, each closed exactly once (the last by the scheduler's stop)
    assert len(StandInEngine.made) == len(times) + 1 and all(e.closed for e in StandInEngine.made)


def test_reload_under_load_loses_nothing_and_closes_each_engine_after_its_last_batch():
    watchdog, scheduler, metrics = _watchdog()
    style = np.zeros(256, np.float32)

    async def client(n: int) -> list[bool]:
        results = []
        for k in range(40):
            ident = n * 1000 + k + 1
            audio = await scheduler.synthesize(SynthesisItem(np.array([ident, 5, 6], np.int64), style), k)
            results.append(len(audio) == 720 and bool(np.all(audio == ident)))
        return results

    async def scenario():
        clients = asyncio.gather(*(client(n) for n in range(4)))
        for _ in range(6):
            await watchdog.reload("manual", ["test"])
            await asyncio.sleep(0.01)
        results = await clients
        replaced = StandInEngine.made[:-1]  # each closes once its last batch is done
        assert await asyncio.to_thread(lambda: all(e.closed_event.wait(10) for e in replaced))
        await watchdog.stop()
        await scheduler.stop(timeout=5)
        return results

    results = asyncio.run(scenario())
    assert all(all(r) for r in results) and sum(map(len, results)) == 160
    assert _count(metrics, "fasttts_engine_reloads_total", trigger="manual") == 6
    assert len(StandInEngine.made) == 7 and all(e.closed for e in StandInEngine.made)
    assert sum(e.runs_after_close for e in StandInEngine.made) == 0
    assert sum(e.runs for e in StandInEngine.made) == 160


def _broken(settings, assets):
    raise AllocationError("CUDA failed to allocate 900 MiB on the GPU: cudaErrorMemoryAllocation")


def test_a_failed_reload_keeps_the_old_engine_serving():
    watchdog, scheduler, metrics = _watchdog(factory=_broken, fault_injection=True, backoff_s=3600.0)
    first = scheduler.engine

    async def scenario():
        assert await watchdog.check() is None  # tried, failed, logged
        assert await watchdog.check() is None  # backing off: not tried again
        audio = await scheduler.synthesize(SynthesisItem(np.array([7], np.int64), np.zeros(256, np.float32)))
        assert scheduler.engine is first and not first.closed
        await watchdog.stop()
        await scheduler.stop(timeout=5)
        return audio

    audio = asyncio.run(scenario())
    assert np.all(audio == 7)
    assert _count(metrics, "fasttts_engine_reload_failures_total") == 1
    assert _count(metrics, "fasttts_engine_reloads_total", trigger="watchdog") == 0


def test_a_second_reload_while_one_runs_is_refused():
    gate = threading.Event()

    building = threading.Event()

    def slow(settings, assets):
        building.set()
        gate.wait(5)
        return StandInEngine()

    watchdog, scheduler, _ = _watchdog(factory=slow)

    async def scenario():
        first = asyncio.create_task(watchdog.reload("manual"))
        assert await asyncio.to_thread(building.wait, 10)
        with pytest.raises(wd.ReloadInProgress):
            await watchdog.reload("manual")
        gate.set()
        result = await first
        await watchdog.stop()
        await scheduler.stop(timeout=5)
        return result

    assert asyncio.run(scenario()).trigger == "manual"


def test_a_cancelled_reload_closes_the_engine_it_was_building():
    gate, building, finished = threading.Event(), threading.Event(), threading.Event()
    built: list[StandInEngine] = []

    def slow(settings, assets):
        building.set()
        gate.wait(10)
        built.append(StandInEngine())
        finished.set()
        return built[0]

    watchdog, scheduler, _ = _watchdog(factory=slow)
    first = scheduler.engine

    async def scenario() -> None:
        reload = asyncio.create_task(watchdog.reload("manual"))
        assert await asyncio.to_thread(building.wait, 10)
        reload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reload
        gate.set()  # the build finishes after its reload was cancelled
        assert await asyncio.to_thread(finished.wait, 10)
        assert await asyncio.to_thread(built[0].closed_event.wait, 10)
        await watchdog.stop()
        await scheduler.stop(timeout=5)

    asyncio.run(scenario())
    assert built[0].closed and scheduler.engine is first


def test_memory_sample_without_a_gpu():
    sample = wd.sample_memory(StandInEngine(), None)
    assert sample.rss_bytes > 10 * MB and sample.in_use == sample.rss_bytes
    assert sample.gpu_used_bytes is None and sample.free == sample.host_available_bytes
    assert sample.working_set_bytes == 10 * MB
