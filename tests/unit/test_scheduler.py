"""The scheduler on a stand-in engine: order, back-pressure, batching, cancellation, workers, engine swaps.

The engine holds every batch at a gate the test opens, so what is queued behind a running batch is decided
by the test, not by timing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence

import numpy as np
import pytest

from wyoming_fasttts.backends.base import EngineMemory, SynthesisItem
from wyoming_fasttts.config import SchedulerSettings, load_settings
from wyoming_fasttts.scheduler import BusyError, Scheduler


class GatedEngine:
    """Returns each item's ids as 'audio' once ``gate`` is open; records batches, threads and concurrency."""

    name = "gated"
    device = "cpu"

    def __init__(self, max_batch: int = 1, slots: int = 1, open_gate: bool = False) -> None:
        self.max_batch, self.slots = max_batch, slots
        self.gate = threading.Event()
        if open_gate:
            self.gate.set()
        self.started = threading.Semaphore(0)
        self.batches: list[list[int]] = []
        self.running = self.peak = 0
        self.closed_on: threading.Thread | None = None
        self.closed = threading.Event()
        self._lock = threading.Lock()

    def warmup(self) -> None:
        pass

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        with self._lock:
            self.batches.append([len(item) for item in items])
            self.running += 1
            self.peak = max(self.peak, self.running)
        self.started.release()
        self.gate.wait()
        with self._lock:
            self.running -= 1
        return [np.asarray(item.ids, np.float32) for item in items]

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=0)

    def close(self) -> None:
        self.closed_on = threading.current_thread()
        self.closed.set()


def _item(n: int) -> SynthesisItem:
    return SynthesisItem(np.arange(n, dtype=np.int64), np.zeros(256, np.float32))


def _settings(**changes: object) -> SchedulerSettings:
    return dataclasses.replace(load_settings().scheduler, **changes)


async def _started(engine: GatedEngine) -> None:
    """Wait until the engine has begun one more batch."""
    assert await asyncio.to_thread(engine.started.acquire, True, 10), "the engine was never called"


async def _queued(scheduler: Scheduler, depth: int) -> None:
    """Let the tasks just created reach the queue (each needs one turn of the event loop)."""
    while scheduler.depth < depth:
        await asyncio.sleep(0)


def _run(scheduler: Scheduler, body: Callable[[], Awaitable[None]]) -> None:
    async def go() -> None:
        try:
            await body()
        finally:
            await scheduler.stop(timeout=5)

    asyncio.run(go())


def test_every_requests_first_sentence_goes_before_anyones_second() -> None:
    engine = GatedEngine()
    scheduler = Scheduler(engine, _settings())
    scheduler.start()

    async def body() -> None:
        busy = asyncio.create_task(scheduler.synthesize(_item(1), order=0))
        await _started(engine)
        later = [asyncio.create_task(scheduler.synthesize(_item(10 + k), order=k)) for k in (3, 2, 1)]
        first = asyncio.create_task(scheduler.synthesize(_item(50), order=0))
        await _queued(scheduler, 4)
        engine.gate.set()
        await asyncio.gather(busy, first, *later)

    _run(scheduler, body)
    assert [b[0] for b in engine.batches] == [1, 50, 11, 12, 13]


def test_a_full_queue_answers_busy_instead_of_growing() -> None:
    engine = GatedEngine()
    scheduler = Scheduler(engine, _settings(max_queue=2))
    scheduler.start()

    async def body() -> None:
        running = asyncio.create_task(scheduler.synthesize(_item(1)))
        await _started(engine)
        queued = [asyncio.create_task(scheduler.synthesize(_item(2))) for _ in range(2)]
        await _queued(scheduler, 2)
        with pytest.raises(BusyError, match="busy"):
            await scheduler.synthesize(_item(3))
        engine.gate.set()
        await asyncio.gather(running, *queued)

    _run(scheduler, body)


def test_batches_group_similar_lengths() -> None:
    """Behind a running batch, eight sentences wait; they leave as two batches of like lengths."""
    engine = GatedEngine(max_batch=4)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=0.0))
    scheduler.start()
    lengths = [5, 50, 6, 51, 7, 52, 8, 53]
    audio: list[np.ndarray] = []

    async def body() -> None:
        blocker = asyncio.create_task(scheduler.synthesize(_item(1)))
        await _started(engine)
        tasks = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in lengths]
        await _queued(scheduler, len(lengths))
        engine.gate.set()
        await blocker
        audio.extend(await asyncio.gather(*tasks))

    _run(scheduler, body)
    assert [len(a) for a in audio] == lengths, "each caller gets its own item's audio"
    assert engine.batches[1:] == [[5, 6, 7, 8], [50, 51, 52, 53]]


def test_several_workers_racing_for_batches_all_survive() -> None:
    """Workers that waited for a batch to fill may find the queue emptied by another worker."""
    engine = GatedEngine(max_batch=4, slots=3, open_gate=True)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=20.0))
    scheduler.start()
    done = 0

    async def body() -> None:
        nonlocal done
        for _ in range(20):
            results = await asyncio.gather(scheduler.synthesize(_item(3)), scheduler.synthesize(_item(4)))
            done += len(results)
        assert scheduler.workers == 3, "a worker thread died"

    _run(scheduler, body)
    assert done == 40


def test_a_cancelled_request_is_never_synthesised() -> None:
    engine = GatedEngine()
    scheduler = Scheduler(engine, _settings())
    scheduler.start()

    async def body() -> None:
        running = asyncio.create_task(scheduler.synthesize(_item(1)))
        await _started(engine)
        gone = asyncio.create_task(scheduler.synthesize(_item(99)))
        await _queued(scheduler, 1)
        gone.cancel()
        engine.gate.set()
        await running
        await scheduler.synthesize(_item(2))

    _run(scheduler, body)
    assert [b[0] for b in engine.batches] == [1, 2]


def test_after_a_swap_the_new_engine_never_gets_more_calls_than_its_slots() -> None:
    """The new engine holds its first batch; the old engine's extra workers must not start a second one."""
    old, new = GatedEngine(slots=3, open_gate=True), GatedEngine(slots=1)
    scheduler = Scheduler(old, _settings())
    scheduler.start()

    async def body() -> None:
        await asyncio.gather(*(scheduler.synthesize(_item(2)) for _ in range(6)))
        assert scheduler.swap_engine(new).wait(10), "the idle old engine was not closed"
        tasks = [asyncio.create_task(scheduler.synthesize(_item(3))) for _ in range(6)]
        await _started(new)
        new.gate.set()
        await asyncio.gather(*tasks)

    _run(scheduler, body)
    assert len(new.batches) == 6
    assert new.peak == 1


def test_a_swap_closes_the_idle_old_engine_off_the_calling_thread() -> None:
    """Closing TensorRT writes files and frees device memory: never on the event loop's thread."""
    old, new = GatedEngine(open_gate=True), GatedEngine(open_gate=True)
    scheduler = Scheduler(old, _settings())
    scheduler.start()

    async def body() -> None:
        await scheduler.synthesize(_item(2))
        closed = scheduler.swap_engine(new)  # on the event loop, as the watchdog calls it
        assert await asyncio.to_thread(closed.wait, 10)

    _run(scheduler, body)
    assert old.closed_on is not None and old.closed_on is not threading.main_thread()


def test_a_lone_request_on_an_idle_engine_does_not_wait_for_company() -> None:
    """max_queue_delay_ms is a minute here: a lone sentence that waited for it would fail the wait_for."""
    engine = GatedEngine(max_batch=4, open_gate=True)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=60_000.0, preferred_batch_sizes=[4]))
    scheduler.start()

    async def body() -> None:
        for n in (3, 4):
            await asyncio.wait_for(scheduler.synthesize(_item(n)), timeout=10)

    _run(scheduler, body)
    assert engine.batches == [[3], [4]]


def test_after_a_batch_of_several_the_next_head_waits_for_company() -> None:
    """Once requests have come together, the head waits (up to the delay) for the preferred size to fill."""
    engine = GatedEngine(max_batch=2)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=60_000.0, preferred_batch_sizes=[2]))
    scheduler.start()

    async def body() -> None:
        blocker = asyncio.create_task(scheduler.synthesize(_item(1)))
        await _started(engine)
        pair = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (5, 6)]
        await _queued(scheduler, 2)
        engine.gate.set()
        await asyncio.gather(blocker, *pair)
        head = asyncio.create_task(scheduler.synthesize(_item(7)))
        await _queued(scheduler, 1)
        company = asyncio.create_task(scheduler.synthesize(_item(8)))
        await asyncio.wait_for(asyncio.gather(head, company), timeout=10)

    _run(scheduler, body)
    assert engine.batches == [[1], [5, 6], [7, 8]]


def test_the_head_waits_only_for_the_sentences_expected_back() -> None:
    """After a batch of three with none queued, three sentences are expected back: the head leaves with
    three, not waiting the whole delay (a minute here, which would fail the wait_for) for the preferred four."""
    engine = GatedEngine(max_batch=4)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=60_000.0, preferred_batch_sizes=[4]))
    scheduler.start()

    async def body() -> None:
        blocker = asyncio.create_task(scheduler.synthesize(_item(1)))
        await _started(engine)
        trio = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (5, 6, 7)]
        await _queued(scheduler, 3)
        engine.gate.set()
        await asyncio.gather(blocker, *trio)
        again = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (8, 9, 10)]
        await asyncio.wait_for(asyncio.gather(*again), timeout=10)

    _run(scheduler, body)
    assert engine.batches == [[1], [5, 6, 7], [8, 9, 10]]


async def _pair_with_two_behind(scheduler: Scheduler, engine: GatedEngine,
                                before_end: Callable[[], Awaitable[object]] | None = None
                                ) -> list[asyncio.Task[np.ndarray]]:
    """A batch of several ([1], then [5, 6]), then the pair [20, 21] running with [22, 23] queued behind it; the
    pair ends (after ``before_end``) and its results are in. Returns the two queued sentences' tasks."""
    blocker = asyncio.create_task(scheduler.synthesize(_item(1)))
    await _started(engine)
    first = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (5, 6)]
    await _queued(scheduler, 2)
    engine.gate.set()
    await asyncio.gather(blocker, *first)  # [1], then [5, 6]: a batch of several
    await _started(engine)  # [5, 6]'s start, so the next wait is for the pair's
    engine.gate.clear()
    pair = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (20, 21)]
    await _started(engine)
    queued = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (22, 23)]
    await _queued(scheduler, 2)
    if before_end is not None:
        await before_end()
    engine.gate.set()
    await asyncio.gather(*pair)
    return queued


def test_sentences_queued_behind_a_batch_wait_for_its_clients_from_its_end() -> None:
    """Two sentences queue behind a running pair for longer than the delay; when the pair ends, they wait (up
    to the delay, counted from that end) for the pair's clients to come back, and the four leave together.
    Counted from their own arrival they would leave at once as a second pair."""
    engine = GatedEngine(max_batch=4)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=500.0, preferred_batch_sizes=[4]))
    scheduler.start()

    async def body() -> None:
        # the queued pair is past its delay when the running one ends
        queued = await _pair_with_two_behind(scheduler, engine, lambda: asyncio.sleep(0.6))
        back = [asyncio.create_task(scheduler.synthesize(_item(n))) for n in (24, 25)]
        await asyncio.wait_for(asyncio.gather(*queued, *back), timeout=10)

    _run(scheduler, body)
    assert engine.batches[-1] == [22, 23, 24, 25]


def test_sentences_that_waited_through_a_batch_leave_at_once_as_a_preferred_size() -> None:
    """Two sentences queue behind a running pair; when it ends they already make a preferred size (2) and leave at
    once, without waiting (a minute here: the wait_for would fail) for the pair's clients, who are not back: as
    16 GPU clients run in two groups of 8, one queued while the other renders."""
    engine = GatedEngine(max_batch=4)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=60_000.0, preferred_batch_sizes=[2, 4]))
    scheduler.start()

    async def body() -> None:
        queued = await _pair_with_two_behind(scheduler, engine)
        await asyncio.wait_for(asyncio.gather(*queued), timeout=10)

    _run(scheduler, body)
    assert engine.batches[-2:] == [[20, 21], [22, 23]]


@pytest.mark.parametrize(("slots", "batches"), [(1, [16]), (2, [8, 8])])
def test_a_pipelined_engine_takes_a_full_queue_as_two_halves_at_once(slots: int, batches: list[int]) -> None:
    """Sixteen sentences queued on an idle engine: one batch at a time takes them whole; an engine that runs two at
    once (one per stage) gets a preferred half in each slot, the second without waiting (a minute here: the
    wait_for would fail) for company that cannot come, since every client is in the queue."""
    engine = GatedEngine(max_batch=16, slots=slots)
    scheduler = Scheduler(engine, _settings(max_queue_delay_ms=60_000.0, preferred_batch_sizes=[4, 8, 16]))

    async def body() -> None:
        tasks = [asyncio.create_task(scheduler.synthesize(_item(20))) for _ in range(16)]
        await _queued(scheduler, 16)
        scheduler.start()
        for _ in batches:  # every batch is taken while the first is still running
            await _started(engine)
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)

    _run(scheduler, body)
    assert sorted(map(len, engine.batches)) == batches


class StreamingGatedEngine(GatedEngine):
    """Also streams: each item's ids as three parts, the later two once ``gate`` is open."""

    def __init__(self) -> None:
        super().__init__()
        self.streams: list[int] = []
        self.deadlines: list[Callable[[], float] | None] = []
        self.stopped = threading.Event()

    def stream(self, item: SynthesisItem, deadline: Callable[[], float] | None = None) -> Iterator[np.ndarray]:
        self.streams.append(len(item))
        self.deadlines.append(deadline)
        self.started.release()
        audio = np.asarray(item.ids, np.float32)
        try:
            for k, part in enumerate(np.array_split(audio, 3)):
                if k:
                    self.gate.wait()
                yield part
        finally:
            self.stopped.set()


async def _first_part(scheduler: Scheduler, parts: list[np.ndarray]
                      ) -> tuple[asyncio.Task[np.ndarray], Callable[[np.ndarray], None]]:
    """A 30-id sentence sent with an ``on_part`` that keeps its parts, once the first has come; and that on_part."""
    got = asyncio.Event()

    def on_part(part: np.ndarray) -> None:
        parts.append(part)
        got.set()

    task = asyncio.create_task(scheduler.synthesize(_item(30), on_part=on_part))
    await asyncio.wait_for(got.wait(), 10)
    return task, on_part


def test_a_sentence_alone_streams_its_parts_and_one_with_company_comes_whole() -> None:
    engine = StreamingGatedEngine()
    scheduler = Scheduler(engine, _settings())
    scheduler.start()
    parts: list[np.ndarray] = []

    async def body() -> None:
        first, on_part = await _first_part(scheduler, parts)
        assert len(parts) == 1  # the gate is shut: the rest is still rendering
        behind = [asyncio.create_task(scheduler.synthesize(_item(n), on_part=on_part, deadline=lambda: 42.0))
                  for n in (12, 9)]
        await _queued(scheduler, 2)
        engine.gate.set()
        assert len(await first) == 0  # every sample went to on_part
        whole = await asyncio.gather(*behind)
        # 12 is taken while 9 still waits: rendered whole; 9 comes alone after it: in parts again.
        assert [len(a) for a in whole] == [12, 0]
        assert len(await scheduler.synthesize(_item(5))) == 5  # no on_part: whole

    _run(scheduler, body)
    np.testing.assert_array_equal(np.concatenate(parts[:3]), np.arange(30, dtype=np.float32))
    assert engine.streams == [30, 9]
    first, later = engine.deadlines
    assert first is None and later is not None and later() == 42.0  # each one's listener's deadline reaches it


def test_a_client_that_goes_stops_the_rendering_of_its_parts() -> None:
    engine = StreamingGatedEngine()
    scheduler = Scheduler(engine, _settings())
    scheduler.start()
    parts: list[np.ndarray] = []

    async def body() -> None:
        task, _on_part = await _first_part(scheduler, parts)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        engine.gate.set()
        assert await asyncio.to_thread(engine.stopped.wait, 10)

    _run(scheduler, body)
    assert len(parts) == 1
