"""Watchdog: notice on evidence that the resident engine has degraded, and replace it without dropping work.

A TTS box runs for months. GPU memory fragments, allocations start failing, latency creeps up; a restart
would cut off whoever is speaking. Instead the watchdog samples memory and latency, and when the evidence
says the engine has degraded it builds a fresh engine from the cached plan or model, sends new work to it and
lets the old one finish what it holds before it is freed (``Scheduler.swap_engine``).

Evidence (thresholds in ``defaults.yaml`` under ``watchdog``):

* allocation failures reported by the engine;
* memory in use growing while the workload is steady (no longer sentence than before the growth);
* free memory that can no longer hold the engine's working set;
* latency per second of audio drifting above the baseline measured after the engine warmed up.

Reloads back off (doubling while a reload does not cure the problem) so a persistent fault cannot make it
reload in a loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .assets import ModelAssets
from .backends import create_engine
from .backends.base import Engine
from .backends.memory import Nvml, host_available_bytes, process_rss_bytes
from .config import Settings, WatchdogSettings
from .core import AllocationError
from .metrics import Metrics
from .scheduler import Scheduler

_LOGGER = logging.getLogger(__name__)

FAULT_INJECTION_ENV = "FASTTTS_FAULT_INJECTION"
_MB = 1 << 20


@dataclass(frozen=True)
class Evidence:
    """One reason to think the engine has degraded: a metric label and a sentence for the log."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class MemorySample:
    """One reading of the memory the engine lives in; GPU fields are None where there is no GPU."""

    rss_bytes: int
    host_available_bytes: int | None
    working_set_bytes: int
    on_gpu: bool
    gpu_used_bytes: int | None = None
    gpu_free_bytes: int | None = None
    gpu_total_bytes: int | None = None
    gpu_process_bytes: int | None = None

    @property
    def in_use(self) -> int:
        """What growth is judged on: this process's GPU memory where the engine is on a GPU, else RSS."""
        if self.on_gpu:
            for value in (self.gpu_process_bytes, self.gpu_used_bytes):
                if value is not None:
                    return value
        return self.rss_bytes

    @property
    def free(self) -> int | None:
        return self.gpu_free_bytes if self.on_gpu else self.host_available_bytes


def sample_memory(engine: Engine, nvml: Nvml | None) -> MemorySample:
    """Blocking (NVML and the engine's CUDA runtime query): call from a thread."""
    mem = engine.memory()
    on_gpu = engine.device.startswith("cuda")
    working_set = mem.workspace_bytes or mem.weights_bytes or 0
    used = free = total = mine = None
    if nvml is not None:
        used, free, total, mine = nvml.read()
    if mem.device_free_bytes is not None:  # the CUDA runtime's view from inside the engine's own context
        used, free, total = mem.device_used_bytes, mem.device_free_bytes, mem.device_total_bytes
    return MemorySample(
        rss_bytes=process_rss_bytes(), host_available_bytes=host_available_bytes(), working_set_bytes=working_set,
        on_gpu=on_gpu, gpu_used_bytes=used, gpu_free_bytes=free, gpu_total_bytes=total, gpu_process_bytes=mine,
    )


def release_freed_heap() -> None:
    """Hand memory freed by a closed engine back to the OS; glibc keeps it otherwise and RSS never drops."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class Detector:
    """Judges degradation from what the scheduler reports and from memory samples; thread-safe, no I/O.

    Baselines are taken afresh after every reload: the first ``latency_window`` batches give the warm
    latency, and memory is measured again whenever a longer sentence than any before has been synthesised
    (larger shapes legitimately need more memory; growth without them is what counts).
    """

    def __init__(self, settings: WatchdogSettings, fault_injection: bool = False) -> None:
        self._settings = settings
        self._fault_injection = fault_injection
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._alloc_failures = 0
            self._baseline_rtf: float | None = None
            self._warmup: list[float] = []
            self._recent: deque[float] = deque(maxlen=max(1, self._settings.latency_window))
            self._longest = 0.0
            self._longest_at_baseline = -1.0
            self._memory_baseline: int | None = None

    # -- SchedulerObserver ----------------------------------------------------------------------------------

    def batch_done(self, engine: str, size: int, seconds: float, audio_seconds: float) -> None:
        if audio_seconds <= 0:
            return
        rtf = seconds / audio_seconds
        with self._lock:
            self._longest = max(self._longest, audio_seconds / size)
            if self._baseline_rtf is None:
                self._warmup.append(rtf)
                if len(self._warmup) >= (self._recent.maxlen or 1):
                    self._baseline_rtf = statistics.median(self._warmup)
            else:
                self._recent.append(rtf)

    def batch_failed(self, engine: str, size: int, error: BaseException) -> None:
        if isinstance(error, AllocationError):
            with self._lock:
                self._alloc_failures += 1

    def queue_depth(self, depth: int) -> None:
        """Not evidence: a deep queue is load, not degradation."""

    # -- verdict --------------------------------------------------------------------------------------------

    def check(self, sample: MemorySample) -> list[Evidence]:
        """Why the engine looks degraded (empty when it does not)."""
        cfg = self._settings
        found = []
        if self._fault_injection:
            found.append(Evidence("fault_injection", f"watchdog.fault_injection / {FAULT_INJECTION_ENV} is on"))
        with self._lock:
            if self._alloc_failures >= cfg.alloc_failures:
                found.append(Evidence(
                    "allocation_failures", f"{self._alloc_failures} allocation failure(s) since the engine was loaded"
                ))
            found.extend(self._memory_growth(sample))
            if self._baseline_rtf and len(self._recent) == self._recent.maxlen:
                now = statistics.median(self._recent)
                if now > self._baseline_rtf * cfg.latency_drift_ratio:
                    found.append(Evidence(
                        "latency_drift",
                        f"{now * 1000:.0f} ms per second of audio (median of the last {len(self._recent)} batches) "
                        f"against a warm baseline of {self._baseline_rtf * 1000:.0f} ms",
                    ))
        free = sample.free
        need = sample.working_set_bytes + cfg.min_free_mb * _MB
        if free is not None and free < need:
            found.append(Evidence(
                "low_free_memory",
                f"{'GPU' if sample.on_gpu else 'host'} free memory {free / _MB:.0f} MiB cannot hold the engine's "
                f"working set ({sample.working_set_bytes / _MB:.0f} MiB) plus {cfg.min_free_mb:.0f} MiB",
            ))
        return found

    def _memory_growth(self, sample: MemorySample) -> list[Evidence]:
        in_use = sample.in_use
        if self._memory_baseline is None or self._longest > self._longest_at_baseline:
            self._memory_baseline = in_use
            self._longest_at_baseline = self._longest
            return []
        grown = in_use - self._memory_baseline
        if grown <= self._settings.memory_growth_mb * _MB:
            return []
        return [Evidence(
            "memory_growth",
            f"memory in use grew by {grown / _MB:.0f} MiB to {in_use / _MB:.0f} MiB with no sentence longer than "
            f"{self._longest:.1f} s of audio since it was measured",
        )]


@dataclass(frozen=True)
class ReloadResult:
    engine: str
    device: str
    seconds: float
    trigger: str
    reasons: tuple[str, ...]


class ReloadTooSoon(RuntimeError):
    """A manual reload asked for within ``limits.reload_min_interval_s`` of the last one."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"the engine was reloaded moments ago; try again in {retry_after:.0f} s "
                         "(limits.reload_min_interval_s)")
        self.retry_after = retry_after


def _close_unused(build: asyncio.Future[Engine]) -> None:
    """A reload was cancelled while its engine was being built: close that engine once built, off the loop."""
    if not build.cancelled() and build.exception() is None:
        engine = build.result()
        _LOGGER.info("reload cancelled; closing the engine it built (%s)", engine.name)
        threading.Thread(target=engine.close, name=f"close-{engine.name}", daemon=True).start()


class ReloadInProgress(RuntimeError):
    """A reload is already running; a second one would only build the same engine again."""


class Watchdog:
    """Samples on an interval, decides with a ``Detector``, reloads the engine in place, with backoff."""

    def __init__(
        self, settings: Settings, assets: ModelAssets, scheduler: Scheduler, metrics: Metrics, detector: Detector,
        clock: Callable[[], float] = time.monotonic,
        engine_factory: Callable[[Settings, ModelAssets], Engine] = create_engine,
    ) -> None:
        self._clock = clock  # backoff time; replaceable so months of backoff can be checked in a test
        self._engine_factory = engine_factory
        self._settings = settings
        self._cfg = settings.watchdog
        self._assets = assets
        self._scheduler = scheduler
        self._metrics = metrics
        self.detector = detector
        self._nvml = Nvml.open(settings.engine.device_id)
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._backoff = self._cfg.backoff_s
        self._last_auto: float | None = None
        self._next_allowed = 0.0
        self._last_manual: float | None = None
        self._cleanups: set[asyncio.Task[None]] = set()

    @staticmethod
    def fault_injection_requested(settings: WatchdogSettings) -> bool:
        return settings.fault_injection or os.environ.get(FAULT_INJECTION_ENV, "") not in ("", "0")

    async def start(self) -> None:
        engine = self._scheduler.engine
        self._metrics.engine_changed(engine.name, engine.device)
        sample = await self.sample()
        _LOGGER.info("watchdog: sampling every %.0f s; RSS %.0f MiB at start", self._cfg.interval_s,
                     sample.rss_bytes / _MB)
        self._task = asyncio.create_task(self._loop(), name="watchdog")

    async def stop(self) -> None:
        for task in [self._task, *self._cleanups]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._nvml is not None:
            self._nvml.close()

    async def sample(self) -> MemorySample:
        sample = await asyncio.to_thread(sample_memory, self._scheduler.engine, self._nvml)
        self._metrics.memory(sample.rss_bytes, sample.gpu_used_bytes, sample.gpu_free_bytes, sample.gpu_total_bytes,
                             sample.working_set_bytes)
        return sample

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._cfg.interval_s)
            try:
                await self.check()
            except Exception:  # the watchdog must outlive any one bad reading
                _LOGGER.exception("watchdog check failed")

    async def check(self) -> ReloadResult | None:
        """One round: sample, judge, and reload if degraded and the backoff allows it."""
        evidence = self.detector.check(await self.sample())
        if not evidence:
            return None
        for item in evidence:
            self._metrics.degraded.labels(item.kind).inc()
        reasons = [str(item) for item in evidence]
        now = self._clock()
        if now < self._next_allowed or self._lock.locked():
            _LOGGER.info("engine degraded (%s); next reload allowed in %.0f s",
                         "; ".join(reasons), max(0.0, self._next_allowed - now))
            return None
        if self._last_auto is not None and now - self._last_auto < 2 * self._backoff:
            self._backoff = min(self._backoff * 2, self._cfg.backoff_max_s)  # the last reload did not cure it
        else:
            self._backoff = self._cfg.backoff_s
        self._last_auto = now
        _LOGGER.warning("engine degraded, reloading: %s", "; ".join(reasons))
        try:
            return await self.reload("watchdog", reasons)
        except Exception:  # already logged and counted; the current engine keeps serving
            return None

    async def reload_manual(self, trigger: str, reason: str) -> ReloadResult:
        """A reload someone asked for (``/admin/reload``, SIGHUP): no backoff, but at most one per
        ``limits.reload_min_interval_s``, so a page or a script cannot keep the cores busy reloading."""
        now = self._clock()
        interval = self._settings.limits.reload_min_interval_s
        if self._last_manual is not None and now - self._last_manual < interval:
            raise ReloadTooSoon(interval - (now - self._last_manual))
        if self._lock.locked():
            raise ReloadInProgress("an engine reload is already in progress")
        self._last_manual = now
        return await self.reload(trigger, [reason])

    async def reload(self, trigger: str, reasons: list[str] | tuple[str, ...] = ()) -> ReloadResult:
        """Build a fresh engine off the event loop, send new work to it, free the old one once it is idle.

        Raises ``ReloadInProgress`` if one is running, and the build's error if it fails (the old engine then
        keeps serving). Either way the next automatic reload waits for the backoff.
        """
        if self._lock.locked():
            raise ReloadInProgress("an engine reload is already in progress")
        async with self._lock:
            started = time.perf_counter()
            build = asyncio.ensure_future(asyncio.to_thread(self._engine_factory, self._settings, self._assets))
            try:
                # Shielded: cancelling the reload cannot stop the thread building the engine, so the engine
                # it returns is closed instead of left holding memory (device memory, on a GPU).
                engine = await asyncio.shield(build)
            except asyncio.CancelledError:
                build.add_done_callback(_close_unused)
                raise
            except Exception:
                self._metrics.reload_failures.inc()
                _LOGGER.exception("engine reload (%s) failed; the current engine keeps serving", trigger)
                raise
            finally:
                self._next_allowed = self._clock() + self._backoff
            seconds = time.perf_counter() - started
            old_closed = self._scheduler.swap_engine(engine)
            self.detector.reset()
            self._metrics.reload_seconds.observe(seconds)
            self._metrics.reloads.labels(trigger).inc()
            self._metrics.engine_changed(engine.name, engine.device)
            task = asyncio.create_task(self._after_old_engine(old_closed))
            self._cleanups.add(task)
            task.add_done_callback(self._cleanups.discard)
            _LOGGER.info("engine reloaded (%s) in %.1f s: %s on %s", trigger, seconds, engine.name, engine.device)
            return ReloadResult(engine.name, engine.device, seconds, trigger, tuple(reasons))

    async def _after_old_engine(self, closed: threading.Event) -> None:
        """Once the replaced engine has finished its last batch and closed, give its memory back."""
        while not closed.is_set():  # polled, not waited in a thread, so shutdown can cancel it
            await asyncio.sleep(0.1)
        await asyncio.to_thread(release_freed_heap)
        sample = await self.sample()
        _LOGGER.info("replaced engine freed; RSS %.0f MiB%s", sample.rss_bytes / _MB,
                     "" if sample.gpu_used_bytes is None else f", GPU used {sample.gpu_used_bytes / _MB:.0f} MiB")
