"""The running server: assets → engine → scheduler → listeners, and an orderly shutdown on SIGTERM.

Start-up fetches and verifies the model, loads and warms the engine once, then opens the Wyoming port
(and the HTTP side port and zeroconf advertisement when configured). SIGTERM/SIGINT stop new connections
first, let requests in progress finish within ``server.shutdown_grace_s``, then close the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass
from functools import partial
from urllib.parse import urlparse

from ..assets import ModelAssets, ensure_assets, load_vocab
from ..backends import create_engine
from ..config import Settings
from ..scheduler import Scheduler, SchedulerObserver
from ..synthesizer import Synthesizer
from ..voices import VoiceBank
from .wyoming import FastTtsHandler, Requests, build_info

_LOGGER = logging.getLogger(__name__)


@dataclass
class Runtime:
    """Everything a listener needs; built once per process."""

    settings: Settings
    assets: ModelAssets
    synth: Synthesizer
    scheduler: Scheduler
    requests: Requests


async def build_runtime(settings: Settings, observer: SchedulerObserver | None = None) -> Runtime:
    assets = await asyncio.to_thread(ensure_assets, settings.assets)
    voices = VoiceBank(assets)
    voices.check(settings.voice.default)
    engine = await asyncio.to_thread(create_engine, settings, assets)
    scheduler = Scheduler(engine, settings.scheduler, observer)
    scheduler.start()
    synth = Synthesizer(settings, voices, load_vocab(assets.vocab), scheduler)
    # The first request would otherwise pay for jieba's dictionary and wetext's grammar loading.
    await synth.prepare("你好，2024年。")
    return Runtime(settings, assets, synth, scheduler, Requests())


async def start_wyoming(runtime: Runtime) -> asyncio.AbstractServer:
    info = build_info(runtime.synth.voices.names, runtime.settings.voice.lang)

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await FastTtsHandler(info, runtime.synth, runtime.requests, reader, writer).run()

    uri = urlparse(runtime.settings.server.uri)
    if uri.scheme == "tcp":
        server = await asyncio.start_server(on_connect, host=uri.hostname, port=uri.port)
    elif uri.scheme == "unix":
        server = await asyncio.start_unix_server(on_connect, path=uri.path)
    else:
        raise ValueError(f"--uri must be tcp://HOST:PORT or unix://PATH, not {runtime.settings.server.uri}")
    _LOGGER.info("Wyoming server listening on %s", runtime.settings.server.uri)
    return server


async def serve(settings: Settings) -> int:
    runtime = await build_runtime(settings)
    server = await start_wyoming(runtime)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, partial(_request_stop, stop, sig))
    extras = await _start_extras(runtime)
    try:
        await stop.wait()
    finally:
        await shutdown(runtime, server, extras)
    return 0


def _request_stop(stop: asyncio.Event, sig: signal.Signals) -> None:
    _LOGGER.info("%s received: finishing requests in progress, then exiting", sig.name)
    stop.set()


async def _start_extras(runtime: Runtime) -> list:
    """Optional listeners (HTTP side server, zeroconf); each has async ``stop()``."""
    extras = []
    if runtime.settings.server.zeroconf:
        from .discovery import Advertiser

        advertiser = Advertiser(runtime.settings.server.zeroconf, runtime.settings.server.uri)
        await advertiser.start()
        extras.append(advertiser)
    return extras


async def shutdown(runtime: Runtime, server: asyncio.AbstractServer, extras: list) -> None:
    server.close()
    for extra in extras:
        await extra.stop()
    grace = runtime.settings.server.shutdown_grace_s
    try:
        await asyncio.wait_for(runtime.requests.idle.wait(), grace)
    except asyncio.TimeoutError:
        _LOGGER.warning("%d requests still running after %.0f s; stopping anyway", runtime.requests.active, grace)
    await runtime.scheduler.stop(timeout=grace)
    _LOGGER.info("stopped")
