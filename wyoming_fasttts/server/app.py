"""The running server: the runtime (``runtime.py``) and its listeners, and an orderly shutdown on SIGTERM.

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
from functools import partial
from typing import Protocol

from ..backends.memory import process_rss_bytes
from ..config import Settings
from ..metrics import Metrics
from ..watchdog import ReloadInProgress, ReloadTooSoon
from .http import HttpServer
from .runtime import Runtime, build_runtime
from .wyoming import build_info, check_address, serve_wyoming

_LOGGER = logging.getLogger(__name__)


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
    check_address(settings.server.uri)
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
            await runtime.reload("signal", "SIGHUP")
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
    engine = runtime.engine
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
