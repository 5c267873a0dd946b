"""The composition root: assets → engine → scheduler → synthesizer and watchdog, built once per process.

The listeners see only what they need of it: the Wyoming side a synthesizer and a request counter, the HTTP
side the ``http.Serving`` view (readiness, synthesis, memory sampling, reloads), which ``Runtime`` provides.
"""

from __future__ import annotations

import asyncio
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

from ..assets import ModelAssets, ensure_assets, load_vocab
from ..backends import create_engine
from ..backends.base import Engine, engine_peers
from ..config import Settings
from ..metrics import Metrics
from ..scheduler import BusyError, Scheduler, SchedulerObserver
from ..synthesizer import Synthesizer
from ..voices import VoiceBank
from ..watchdog import Detector, ReloadResult, Watchdog
from .wyoming import Requests

# (api, start) of the request in progress; each Wyoming connection and each HTTP request runs in its own task,
# and has at most one request at a time, so begin() and end() of one request see the same value.
_REQUEST: ContextVar[tuple[str, float] | None] = ContextVar("request", default=None)


@dataclass
class ServerRequests(Requests):
    """Requests that feed the metrics and, once shutdown has begun, refuse new work on open connections."""

    metrics: Metrics = field(default_factory=Metrics)
    closing: bool = False

    def begin(self, api: str = "wyoming") -> None:
        if self.closing:
            raise BusyError("server is shutting down")
        super().begin()
        _REQUEST.set((api, time.monotonic()))
        self.metrics.requests.labels(api).inc()
        self.metrics.active.inc()

    def end(self) -> None:
        super().end()
        self.metrics.active.dec()
        entry = _REQUEST.get()
        if entry is not None:
            self.metrics.request_seconds.labels(entry[0]).observe(time.monotonic() - entry[1])

    def error(self, code: str, api: str = "wyoming") -> None:
        self.metrics.errors.labels(api, code).inc()


class _Observers:
    """Fans the scheduler's reports out to the metrics, the watchdog's detector and any caller's observer."""

    def __init__(self, *observers: SchedulerObserver) -> None:
        self._observers = observers

    def batch_done(self, engine: str, size: int, seconds: float, audio_seconds: float) -> None:
        for observer in self._observers:
            observer.batch_done(engine, size, seconds, audio_seconds)

    def batch_failed(self, engine: str, size: int, error: BaseException) -> None:
        for observer in self._observers:
            observer.batch_failed(engine, size, error)

    def queue_depth(self, depth: int) -> None:
        for observer in self._observers:
            observer.queue_depth(depth)


@dataclass
class Runtime:
    """Everything a listener needs; built once per process."""

    settings: Settings
    assets: ModelAssets
    synth: Synthesizer
    scheduler: Scheduler
    requests: ServerRequests
    metrics: Metrics
    watchdog: Watchdog

    @property
    def engine(self) -> Engine:
        """The engine serving now (a reload swaps it)."""
        return self.scheduler.engine

    async def sample_memory(self) -> None:
        """Fresh memory numbers into the metrics, not the last watchdog interval's."""
        await self.watchdog.sample()

    async def reload(self, trigger: str, reason: str) -> ReloadResult:
        """A reload someone asked for; rate-limited by the watchdog (``ReloadTooSoon``, ``ReloadInProgress``)."""
        return await self.watchdog.reload_manual(trigger, reason)


async def build_runtime(
    settings: Settings, observer: SchedulerObserver | None = None, metrics: Metrics | None = None
) -> Runtime:
    """Assets, the warmed engine, the scheduler and the watchdog (whose loop ``Watchdog.start`` begins)."""
    metrics = metrics or Metrics()
    assets = await asyncio.to_thread(ensure_assets, settings.assets)
    voices = VoiceBank(assets)
    voices.check(settings.voice.default)
    engine = await asyncio.to_thread(create_engine, settings, assets)
    detector = Detector(settings.watchdog, Watchdog.fault_injection_requested(settings.watchdog))
    observers = (metrics, detector) if observer is None else (metrics, detector, observer)
    scheduler = Scheduler(engine, settings.scheduler, _Observers(*observers))
    scheduler.start()
    metrics.peers.source = lambda: engine_peers(scheduler.engine)
    synth = Synthesizer(settings, voices, load_vocab(assets.vocab), scheduler)
    # The first request would otherwise pay for loading jieba's dictionary and the front end's tables.
    await synth.prepare("你好，2024年。")
    watchdog = Watchdog(settings, assets, scheduler, metrics, detector)
    metrics.ready.set(1)
    return Runtime(settings, assets, synth, scheduler, ServerRequests(metrics=metrics), metrics, watchdog)
