"""The scheduler on a stand-in engine: order, back-pressure, batching, cancellation, several workers."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import numpy as np
import pytest

from wyoming_fasttts.backends.base import EngineMemory, SynthesisItem
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.scheduler import BusyError, Scheduler


class RecordingEngine:
    """Returns each item's ids as 'audio' after a short sleep, and records the batches it was given."""

    name = "recording"
    device = "cpu"

    def __init__(self, max_batch: int = 1, slots: int = 1, seconds: float = 0.02) -> None:
        self.max_batch, self.slots, self._seconds = max_batch, slots, seconds
        self.batches: list[list[int]] = []
        self._lock = threading.Lock()

    def warmup(self) -> None:
        pass

    def run(self, items):
        with self._lock:
            self.batches.append([len(item) for item in items])
        time.sleep(self._seconds)
        return [np.asarray(item.ids, np.float32) for item in items]

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=0)

    def close(self) -> None:
        pass


def _item(n: int) -> SynthesisItem:
    return SynthesisItem(np.arange(n, dtype=np.int64), np.zeros(256, np.float32))


def _settings(**changes):
    return dataclasses.replace(load_settings().scheduler, **changes)


def test_every_requests_first_sentence_goes_before_anyones_second() -> None:
    engine = RecordingEngine(seconds=0.05)
    scheduler = Scheduler(engine, _settings())
    scheduler.start()

    async def go():
        busy = asyncio.create_task(scheduler.synthesize(_item(1), order=0))
        await asyncio.sleep(0.01)  # the engine is now busy; the rest queue up
        later = [asyncio.create_task(scheduler.synthesize(_item(10 + k), order=k)) for k in (3, 2, 1)]
        first = asyncio.create_task(scheduler.synthesize(_item(50), order=0))
        await asyncio.gather(busy, first, *later)
        await scheduler.stop(timeout=5)

    asyncio.run(go())
    assert [b[0] for b in engine.batches] == [1, 50, 11, 12, 13]


def test_a_full_queue_answers_busy_instead_of_growing() -> None:
    engine = RecordingEngine(seconds=0.2)
    scheduler = Scheduler(engine, _settings(max_queue=2))
    scheduler.start()

    async def go():
        running = asyncio.create_task(scheduler.synthesize(_item(1)))
        await asyncio.sleep(0.05)
        queued = [asyncio.create_task(scheduler.synthesize(_item(2))) for _ in range(2)]
        await asyncio.sleep(0.01)
        with pytest.raises(BusyError, match="busy"):
            await scheduler.synthesize(_item(3))
        await asyncio.gather(running, *queued)
        await scheduler.stop(timeout=5)

    asyncio.run(go())


def test_batches_group_similar_lengths_and_prefer_the_configured_sizes() -> None:
    engine = RecordingEngine(max_batch=16, seconds=0.05)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=100.0))
    scheduler.start()

    async def go():
        lengths = [5, 50, 6, 51, 7, 52, 8, 53]
        audio = await asyncio.gather(*(scheduler.synthesize(_item(n)) for n in lengths))
        await scheduler.stop(timeout=5)
        return lengths, audio

    lengths, audio = asyncio.run(go())
    assert [len(a) for a in audio] == lengths, "each caller gets its own item's audio"
    assert sorted(engine.batches) == [[5, 6, 7, 8], [50, 51, 52, 53]] or engine.batches == [sorted(lengths)]
    assert all(len(b) in (4, 8) for b in engine.batches)


def test_several_workers_racing_for_batches_all_survive() -> None:
    """Workers that waited for a batch to fill may find the queue emptied by another worker."""
    engine = RecordingEngine(max_batch=4, slots=3, seconds=0.005)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=20.0))
    scheduler.start()

    async def go():
        done = 0
        for _ in range(20):
            results = await asyncio.gather(scheduler.synthesize(_item(3)), scheduler.synthesize(_item(4)))
            done += len(results)
            await asyncio.sleep(0.001)
        alive = all(t.is_alive() for t in scheduler._threads)
        await scheduler.stop(timeout=5)
        return done, alive

    done, alive = asyncio.run(go())
    assert done == 40
    assert alive, "a worker thread died"


def test_a_cancelled_request_is_never_synthesised() -> None:
    engine = RecordingEngine(seconds=0.1)
    scheduler = Scheduler(engine, _settings())
    scheduler.start()

    async def go():
        running = asyncio.create_task(scheduler.synthesize(_item(1)))
        await asyncio.sleep(0.02)
        gone = asyncio.create_task(scheduler.synthesize(_item(99)))
        await asyncio.sleep(0.01)
        gone.cancel()
        await running
        await scheduler.synthesize(_item(2))
        await scheduler.stop(timeout=5)

    asyncio.run(go())
    assert [b[0] for b in engine.batches] == [1, 2]
