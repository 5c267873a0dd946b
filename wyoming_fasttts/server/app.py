"""The running server: assets → engine → scheduler → listeners, and an orderly shutdown on SIGTERM.

Start-up opens the HTTP side port first (so ``/healthz`` answers and ``/readyz`` says 503 while the model
loads), fetches and verifies the model, loads and warms the engine once, then opens the Wyoming port, the
watchdog and the zeroconf advertisement. SIGTERM/SIGINT stop new connections and refuse new requests on open
ones, let requests in progress finish, and close the engine, all within ``server.shutdown_grace_s``.
SIGHUP reloads the engine (rate-limited like ``/admin/reload``) and SIGUSR1 logs a status line; neither
ends the process or a reply in progress (their default action would kill it mid-audio).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from ..assets import ModelAssets, ensure_assets, load_vocab
from ..backends import create_engine
from ..backends.base import engine_peers
from ..backends.memory import process_rss_bytes
from ..config import Settings
from ..metrics import Metrics
from ..scheduler import BusyError, Scheduler, SchedulerObserver
from ..synthesizer import Synthesizer
from ..voices import VoiceBank
from ..watchdog import Detector, ReloadInProgress, ReloadTooSoon, Watchdog
from .http import HttpServer
from .wyoming import Requests, build_info, serve_wyoming

_LOGGER = logging.getLogger(__name__)


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


async def start_wyoming(runtime: Runtime) -> asyncio.AbstractServer:
    info = build_info(runtime.synth.voices.names, runtime.settings.voice.languages)
    server = await serve_wyoming(runtime.settings.server.uri, info, runtime.synth, runtime.requests)
    _LOGGER.info("Wyoming server listening on %s", runtime.settings.server.uri)
    return server


async def serve(settings: Settings) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, partial(_request_stop, stop, sig))
    for sig in (signal.SIGHUP, signal.SIGUSR1):  # until the engine is up there is nothing to reload
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, _LOGGER.info, "%s ignored while the engine loads", sig.name)
    metrics = Metrics()
    http = await start_http(settings, metrics)
    try:
        runtime = await build_runtime(settings, metrics=metrics)
    except BaseException:
        if http is not None:
            await http.stop()
        raise
    server = await start_wyoming(runtime)
    extras = await _start_extras(runtime, http)
    background: set[asyncio.Task[None]] = set()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGHUP, partial(_reload_on_signal, runtime, background))
        loop.add_signal_handler(signal.SIGUSR1, partial(_log_status, runtime))
    try:
        await stop.wait()
    finally:
        for task in background:
            task.cancel()
        await shutdown(runtime, server, extras)
    return 0


def _reload_on_signal(runtime: Runtime, background: set[asyncio.Task[None]]) -> None:
    """SIGHUP (what service managers send for "reload"): a fresh engine; requests in progress carry on."""

    async def reload() -> None:
        try:
            await runtime.watchdog.reload_manual("signal", "SIGHUP")
        except (ReloadTooSoon, ReloadInProgress) as err:
            _LOGGER.warning("SIGHUP: no reload: %s", err)
        except Exception:  # logged by the watchdog; the current engine keeps serving
            pass

    _LOGGER.info("SIGHUP received: reloading the engine")
    task = asyncio.get_running_loop().create_task(reload())
    background.add(task)
    task.add_done_callback(background.discard)


def _log_status(runtime: Runtime) -> None:
    """SIGUSR1 would end the process by default; here it only logs where the server stands."""
    engine = runtime.scheduler.engine
    _LOGGER.info("SIGUSR1: %d requests in progress; engine %s on %s; RSS %.0f MiB", runtime.requests.active,
                 engine.name, engine.device, process_rss_bytes() / 2**20)


async def start_http(settings: Settings, metrics: Metrics) -> HttpServer | None:
    """The side server, before the model loads (``/readyz`` answers 503 until ``attach``); None if disabled."""
    if not settings.server.http_uri:
        return None
    http = HttpServer(settings, metrics)
    await http.start()
    return http


def _request_stop(stop: asyncio.Event, sig: signal.Signals) -> None:
    _LOGGER.info("%s received: finishing requests in progress, then exiting", sig.name)
    stop.set()


class Stoppable(Protocol):
    """What runs beside the Wyoming server (watchdog, HTTP side server, mDNS advertisement)."""

    async def stop(self) -> None: ...


async def _start_extras(runtime: Runtime, http: HttpServer | None = None) -> list[Stoppable]:
    """The watchdog and the optional listeners (HTTP side server, zeroconf); each has async ``stop()``.

    Shutdown stops them in this order: the advertisement first, then the watchdog (no reload while draining),
    then the HTTP server, which lets its requests in progress finish.
    """
    extras: list[Stoppable] = []
    await runtime.watchdog.start()
    if runtime.settings.server.zeroconf:
        from .discovery import Advertiser

        advertiser = Advertiser(runtime.settings.server.zeroconf, runtime.settings.server.uri)
        await advertiser.start()
        extras.append(advertiser)
    extras.append(runtime.watchdog)
    if http is not None:
        http.attach(runtime)
        extras.append(http)
    return extras


async def shutdown(runtime: Runtime, server: asyncio.AbstractServer, extras: list[Stoppable]) -> None:
    """Stop accepting, finish what is in progress, close the engine; everything within one grace period."""
    deadline = time.monotonic() + runtime.settings.server.shutdown_grace_s
    runtime.requests.closing = True
    runtime.metrics.ready.set(0)
    server.close()
    for extra in extras:
        await extra.stop()
    try:
        await asyncio.wait_for(runtime.requests.idle.wait(), max(0.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        _LOGGER.warning("%d requests still running at the end of the shutdown grace period; stopping anyway",
                        runtime.requests.active)
    await runtime.scheduler.stop(timeout=max(0.0, deadline - time.monotonic()))
    _LOGGER.info("stopped")
