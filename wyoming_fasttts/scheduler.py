"""One queue for every client's sentences; batches formed from it; the engine run on worker threads.

Why a scheduler instead of a lock around the engine: with a lock, one client's ten-sentence answer makes
everyone else wait for all ten. Here sentences are ordered by their position in their request (every
request's first sentence before anyone's second), so a new request waits at most for the batches already
running; engines that take batches get sentences of similar length grouped together; and the server's event
loop never blocks on inference.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .backends.base import Engine, StreamingEngine
from .config import SchedulerSettings
from .core import SAMPLE_RATE, AllocationError, SynthesisItem

_LOGGER = logging.getLogger(__name__)


class BusyError(RuntimeError):
    """The queue is full; the client should retry later rather than the server growing without bound."""


class SchedulerObserver(Protocol):
    """What the scheduler reports; metrics and the watchdog listen."""

    def batch_done(self, engine: str, size: int, seconds: float, audio_seconds: float) -> None: ...

    def batch_failed(self, engine: str, size: int, error: BaseException) -> None: ...

    def queue_depth(self, depth: int) -> None: ...


@dataclass(order=True)
class _Job:
    key: tuple[int, int]
    item: SynthesisItem = field(compare=False)
    future: asyncio.Future[np.ndarray] = field(compare=False)
    loop: asyncio.AbstractEventLoop = field(compare=False)
    enqueued: float = field(compare=False)
    on_part: Callable[[np.ndarray], None] | None = field(compare=False, default=None)
    deadline: Callable[[], float] | None = field(compare=False, default=None)


class _EngineLease:
    """Counts batches in flight on one engine so a replaced engine is closed only once it is idle."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.in_flight = 0
        self.retired = False
        self.closed = threading.Event()

    def close(self) -> None:
        try:
            self.engine.close()
        finally:
            self.closed.set()


class Scheduler:
    def __init__(self, engine: Engine, settings: SchedulerSettings, observer: SchedulerObserver | None = None):
        self._settings = settings
        self._observer = observer
        self._cond = threading.Condition()
        self._queue: list[_Job] = []
        self._seq = itertools.count()
        self._lease = _EngineLease(engine)
        self._workers: dict[int, threading.Thread] = {}
        """Worker threads by index; indices below the engine's ``slots`` run, the others finish and exit."""
        self._exited: list[threading.Thread] = []
        self._stopping = False
        self._last_batch = 0
        """Size of the batch taken last: more than one means requests are arriving together."""
        self._last_end = 0.0
        """When the last batch finished (monotonic): its clients' next sentences come back from then on."""
        self._last_taken = 0.0
        """When the last batch was taken (monotonic): what was queued then and is still queued was left behind."""
        self._expected = 0
        """Sentences likely to be back soon after the last batch: its own size plus what was queued then."""

    # -- client side (event loop) -------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self._lease.engine

    @property
    def depth(self) -> int:
        return len(self._queue)

    async def synthesize(self, item: SynthesisItem, order: int = 0,
                         on_part: Callable[[np.ndarray], None] | None = None,
                         deadline: Callable[[], float] | None = None) -> np.ndarray:
        """Audio for one sentence; ``order`` is its position in its request (0 = the first, heard first).

        With ``on_part``, an engine that streams (``StreamingEngine``), given the sentence while nothing else
        runs or waits, hands its audio over in parts as it renders them, each in time for a listener whose audio
        before it runs out when ``deadline()`` says (``StreamingEngine.stream``): each goes to ``on_part`` on the event
        loop, in order, and the result is what is left (empty). Otherwise the result is the whole audio and
        ``on_part`` is not called.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[np.ndarray] = loop.create_future()
        with self._cond:
            if self._stopping:
                raise BusyError("server is shutting down")
            if len(self._queue) >= self._settings.max_queue:
                raise BusyError(f"server busy: {len(self._queue)} sentences queued; try again shortly")
            job = _Job((order, next(self._seq)), item, future, loop, time.monotonic(), on_part, deadline)
            heapq.heappush(self._queue, job)
            self._cond.notify()
        self._report_depth()
        return await future

    @property
    def workers(self) -> int:
        """Worker threads alive now (after a swap to fewer slots, the extra ones exit after their batch)."""
        with self._cond:
            return sum(thread.is_alive() for thread in self._workers.values())

    def start(self) -> None:
        with self._cond:
            self._ensure_workers(self._lease.engine.slots)

    def swap_engine(self, engine: Engine) -> threading.Event:
        """New batches go to ``engine``; the old one finishes what it holds and is then closed.

        The worker threads follow the new engine's ``slots``: more are started, or the extra ones exit after
        their current batch, so no more than ``slots`` calls ever reach ``engine``. The old engine is closed
        on a thread (closing TensorRT writes its cache and frees device memory; the caller is usually the
        event loop); the returned event is set once it is closed, so a caller can measure what it freed.
        """
        with self._cond:
            old = self._lease
            self._lease = _EngineLease(engine)
            old.retired = True
            idle = old.in_flight == 0
            self._ensure_workers(engine.slots)
            self._cond.notify_all()  # idle workers above the new slot count wake up and exit
        if idle:
            threading.Thread(target=old.close, name=f"close-{old.engine.name}", daemon=True).start()
        return old.closed

    async def stop(self, timeout: float) -> None:
        """Refuse new work, let queued and running sentences finish (up to ``timeout``), close the engine."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads = [*self._workers.values(), *self._exited]
        deadline = time.monotonic() + timeout
        for thread in threads:
            await asyncio.to_thread(thread.join, max(0.0, deadline - time.monotonic()))
        with self._cond:
            for job in self._queue:
                job.loop.call_soon_threadsafe(_fail, job.future, BusyError("server shut down"))
            self._queue.clear()
        if not any(t.is_alive() for t in threads):
            await asyncio.to_thread(self._lease.close)

    # -- worker side (threads) ----------------------------------------------------------------------------

    def _ensure_workers(self, count: int) -> None:
        """Start the missing workers below ``count``; called with ``_cond`` held."""
        for index in range(count):
            if index not in self._workers:
                thread = threading.Thread(target=self._work, args=(index,), name=f"engine-{index}", daemon=True)
                self._workers[index] = thread
                thread.start()

    def _work(self, index: int) -> None:
        while True:
            taken = self._take_batch(index)
            if taken is None:
                return
            lease, batch = taken
            self._run(lease, batch)

    def _take_batch(self, index: int) -> tuple[_EngineLease, list[_Job]] | None:
        with self._cond:
            while True:
                if index >= self._lease.engine.slots:  # the engine now has fewer slots
                    self._exited = [t for t in self._exited if t.is_alive()]
                    self._exited.append(self._workers.pop(index))
                    return None
                self._drop_cancelled()
                if not self._queue:
                    if self._stopping:
                        return None
                    self._cond.wait()
                    continue
                lease = self._lease
                limit = min(lease.engine.max_batch, self._settings.max_batch)
                if limit > 1 and self._company_likely():
                    # Waiting releases the lock: another worker may take the jobs, or the engine change.
                    self._wait_for_batch(limit)
                    self._drop_cancelled()
                    if lease is not self._lease:
                        continue
                if self._queue:
                    break
            split = lease.engine.slots > 1 and lease.in_flight == 0
            batch = self._pick(limit, split)
            self._last_batch, self._last_taken = len(batch), time.monotonic()
            lease.in_flight += 1
            if split and self._queue:
                self._cond.notify()  # the rest is the other slot's
        self._report_depth()
        return lease, batch

    def _company_likely(self) -> bool:
        """Whether holding the head job for company can pay: a batch is running elsewhere or the last one held
        several sentences. A lone request on an idle engine (one client speaking) gains nothing by waiting and
        would pay all of ``max_queue_delay_ms`` (5 ms of a ~30 ms GPU request); under load the last batch was
        a group, so the wait still gathers the clients whose answers just went out. Called with ``_cond``."""
        return self._last_batch > 1 or self._lease.in_flight > 0

    def _wait_for_batch(self, limit: int) -> None:
        """Hold the head job up to max_queue_delay_ms while a preferred batch size fills up.

        The wait counts from the head's arrival or from the end of the last batch, whichever is later, and
        stops once the queue holds the sentences expected back (the last batch's clients plus those that were
        already waiting; ``_expected``). Counted from the head's arrival alone, sentences that queued behind a
        running batch were past their delay when it ended and left without the clients just answered: four
        closed-loop clients ran as batches of two and two, each paying for the four-row bucket.

        No wait at all where the sentences that waited through the last batch (queued before it ended, or left
        behind when it was taken: ``_pick``'s split) already make a preferred size (as Triton's dynamic batcher sends
        a preferred size at once): 16 clients on the GPU settle as two groups of 8,
        one queued while the other runs, and each batch of 8 had idled the engine for the whole delay waiting for
        the group just answered, which comes back spread over more than the delay. Before a stand-in engine with an
        H100's costs (a batch of 8 in 22.6 ms), on that machine's host, 16 clients went from 279-293 to 340-341 QPS
        and their p99 from 64-75 to 49-50 ms (three alternating pairs, ``benchmarks/host_ceiling.py``; on the GPU
        305-320 QPS; docs/BENCHMARKS.md, twenty-second pass). Four clients cannot meet the rule there (three queued
        behind a batch make no preferred size of [4, 8, 16]) and ran as batches of 4 either way.
        """
        passed = max(self._last_end, self._last_taken)
        held = min(sum(job.enqueued < passed for job in self._queue), limit)
        if any(size <= held for size in self._settings.preferred_batch_sizes):
            return
        delay = self._settings.max_queue_delay_ms / 1000.0
        target = min(limit, max(self._settings.preferred_batch_sizes, default=limit), max(1, self._expected))
        while len(self._queue) < target and not self._stopping:
            # The head may change while waiting (cancelled, or a worker took it), so its deadline is read anew.
            remaining = max(self._queue[0].enqueued, self._last_end) + delay - time.monotonic()
            if remaining <= 0:
                break
            self._cond.wait(remaining)
            self._drop_cancelled()
            if not self._queue:
                return

    def _pick(self, limit: int, split: bool = False) -> list[_Job]:
        """The head job plus the queued jobs closest to it in length (less padding).

        ``split``: the engine runs two batches at once, one in each stage (torch-cuda's pipelined stages), and none
        is running. Where the queue holds two preferred sizes, this batch takes the largest one in half of it and
        leaves the rest to the other slot, at once (``_wait_for_batch``: the rest was left behind), so the second
        half's stage 1 runs while the first half's stage 2 does. Taken whole, 16 clients that came back together
        stayed in lock-step as one batch of 16 each time, where the pipeline does nothing: 256.6 QPS against 255.9
        one batch at a time, and 340.4 on another H100 where they had fallen into groups of 4 and 8. With the split,
        on a third H100 (one run), 16 clients in the server's process, which had always run in lock-step, ran as
        batches of 8 at 354.7 QPS, and 16 in another process at 367.7 (2026-12-06, docs/BENCHMARKS.md, twenty-third
        pass)."""
        head = heapq.heappop(self._queue)
        available = len(self._queue) + 1
        size = min(limit, available)
        fitting = [b for b in self._settings.preferred_batch_sizes if b <= size]
        if size < limit and fitting:
            size = max(fitting)
        if split:
            halves = [b for b in self._settings.preferred_batch_sizes if b <= available // 2]
            size = min(size, max(halves, default=size))
        if size == 1:
            return [head]
        self._queue.sort(key=lambda job: (abs(len(job.item) - len(head.item)), job.key))
        batch = [head, *self._queue[: size - 1]]
        del self._queue[: size - 1]
        heapq.heapify(self._queue)
        return batch

    def _drop_cancelled(self) -> None:
        if any(job.future.cancelled() for job in self._queue):
            self._queue = [job for job in self._queue if not job.future.cancelled()]
            heapq.heapify(self._queue)

    def _run(self, lease: _EngineLease, batch: list[_Job]) -> None:
        engine = lease.engine
        started = time.perf_counter()
        with self._cond:
            # In parts only while it has the engine to itself: windows render their context twice (~30-50% more
            # work for the sentence), which pays for a listener waiting alone, not for clients queued behind it.
            alone = lease.in_flight == 1 and not self._queue
        streaming = engine if isinstance(engine, StreamingEngine) and alone and len(batch) == 1 \
            and batch[0].on_part is not None else None
        try:
            if streaming is not None:  # the parts go to the client; what is left: nothing
                rendered, audio = self._stream(streaming, batch[0]), [np.zeros(0, np.float32)]
            else:
                audio = engine.run([job.item for job in batch])
                rendered = sum(map(len, audio))
        except BaseException as err:  # every failure must reach its waiting clients
            if not isinstance(err, AllocationError):
                _LOGGER.exception("engine %s failed on a batch of %d", engine.name, len(batch))
            if self._observer:
                self._observer.batch_failed(engine.name, len(batch), err)
            self._mark_end(batch)
            for job in batch:
                job.loop.call_soon_threadsafe(_fail, job.future, err)
        else:
            seconds = time.perf_counter() - started
            if self._observer:
                self._observer.batch_done(engine.name, len(batch), seconds, rendered / SAMPLE_RATE)
            self._mark_end(batch)
            for job, samples in zip(batch, audio, strict=True):
                job.loop.call_soon_threadsafe(_resolve, job.future, samples)
        finally:
            with self._cond:
                lease.in_flight -= 1
                close = lease.retired and lease.in_flight == 0
            if close:
                _LOGGER.info("closing replaced engine %s", engine.name)
                lease.close()

    def _mark_end(self, batch: list[_Job]) -> None:
        """The batch has ended: from now its clients' next sentences come back. Marked before its results go out,
        so no client can be back (and counted twice, as queued and as the batch's) before it is counted."""
        with self._cond:
            self._last_end, self._expected = time.monotonic(), len(batch) + len(self._queue)

    @staticmethod
    def _stream(engine: StreamingEngine, job: _Job) -> int:
        """Hand ``job``'s parts to its client as they come; the samples rendered. A client that has gone
        stops the rendering at the next part."""
        assert job.on_part is not None
        on_part, rendered = job.on_part, 0
        stream = engine.stream(job.item, job.deadline)
        try:
            for part in stream:
                if job.future.done():
                    break
                rendered += len(part)
                job.loop.call_soon_threadsafe(_deliver, job.future, on_part, part)
        finally:
            stream.close()
        return rendered

    def _report_depth(self) -> None:
        if self._observer:
            self._observer.queue_depth(len(self._queue))


def _resolve(future: asyncio.Future[np.ndarray], value: np.ndarray) -> None:
    if not future.done():
        future.set_result(value)


def _deliver(future: asyncio.Future[np.ndarray], on_part: Callable[[np.ndarray], None], part: np.ndarray) -> None:
    if not future.done():
        on_part(part)


def _fail(future: asyncio.Future[np.ndarray], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

