"""HTTP side server: health, readiness, Prometheus metrics, a plain TTS API and a page to listen.

For clients that do not speak Wyoming (curl, a browser, monitoring). ``/api/tts`` takes the same path as a
Wyoming request (validation, text preparation, the shared scheduler), so what it returns is what Home
Assistant hears. It binds to localhost by default; whatever changes state (``POST /admin/reload``) is refused
from other hosts and from pages of other origins, whatever the bind address.

Synthesis and reloads also answer only requests whose ``Host`` is an address, ``localhost``, this machine's
name or one of ``limits.http_allowed_hosts``: a web page whose name an attacker re-points at 127.0.0.1 (DNS
rebinding) sends its own name as Host. Cross-origin browser requests are refused unless their origin is in
``limits.http_allowed_origins``. A request whose client has gone is cancelled with its synthesis.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any, Protocol
from urllib.parse import urlparse

from aiohttp import web

from ..audio import wav_bytes
from ..backends.base import Engine, engine_peers
from ..config import Settings
from ..core import MAX_SPEED, MIN_SPEED
from ..metrics import CONTENT_TYPE, Metrics
from ..synthesizer import Synthesizer, TextError, error_code
from ..voices import label
from ..watchdog import ReloadInProgress, ReloadResult, ReloadTooSoon

_LOGGER = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_GUARDED = frozenset({"/api/tts", "/admin/reload"})
_STATUS = {"bad-text": 400, "unknown-voice": 400, "busy": 503, "engine": 500, "internal": 500}


class CountedRequests(Protocol):
    """The server's request accounting: metrics by API, and refusal once shutdown has begun."""

    @property
    def closing(self) -> bool: ...

    def begin(self, api: str) -> None: ...

    def end(self) -> None: ...

    def error(self, code: str, api: str) -> None: ...


class Serving(Protocol):
    """What the HTTP side may see of the running server (``runtime.Runtime`` provides it), nothing more."""

    @property
    def synth(self) -> Synthesizer: ...

    @property
    def requests(self) -> CountedRequests: ...

    @property
    def engine(self) -> Engine: ...

    async def sample_memory(self) -> None: ...

    async def reload(self, trigger: str, reason: str) -> ReloadResult: ...


def _json_error(status: int, message: str, code: str) -> web.Response:
    return web.json_response({"error": message, "code": code}, status=status)


def _is_local(request: web.Request) -> bool:
    """Loopback TCP peers and unix-socket peers (no address) are this host."""
    if not request.remote:
        return True
    try:
        address = ipaddress.ip_address(request.remote.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def _same_origin(request: web.Request, allowed: frozenset[str] = frozenset()) -> bool:
    """A browser page from another site may post to localhost; its Origin header gives it away."""
    origin = request.headers.get("Origin")
    if origin is None or origin.rstrip("/").lower() in allowed:
        return True
    return urlparse(origin).netloc.lower() == request.host.lower()


def _host_name(host: str) -> str:
    """``Host`` without its port: ``[::1]:10201`` → ``::1``, ``Name:80`` → ``name``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return True


def known_hosts(settings: Settings) -> frozenset[str]:
    """Names this server answers to besides IP addresses (which DNS rebinding cannot put in ``Host``)."""
    names = {"localhost", socket.gethostname().lower(), *(h.lower() for h in settings.limits.http_allowed_hosts)}
    names |= {f"{name}.local" for name in list(names) if "." not in name}
    bound = urlparse(settings.server.http_uri).hostname
    if bound:
        names.add(bound.lower())
    return frozenset(names)


class HttpServer:
    """The side server; answers health checks from start-up, everything else once a runtime is attached."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self._settings = settings
        self._metrics = metrics
        self._serving: Serving | None = None
        self._hosts = known_hosts(settings)
        self._origins = frozenset(o.rstrip("/").lower() for o in settings.limits.http_allowed_origins)
        self._app = web.Application(client_max_size=settings.limits.http_max_body_bytes,
                                    middlewares=[self._guard])
        self._app.add_routes([
            web.get("/", self._index),
            web.get("/healthz", self._healthz),
            web.get("/readyz", self._readyz),
            web.get("/metrics", self._metrics_page),
            web.get("/api/voices", self._voices),
            web.get("/api/tts", self._tts),
            web.post("/api/tts", self._tts),
            web.post("/admin/reload", self._reload),
        ])
        # handler_cancellation: a client that hangs up cancels its request's synthesis with it.
        self._runner = web.AppRunner(
            self._app, access_log=None, shutdown_timeout=settings.server.shutdown_grace_s, handler_cancellation=True
        )

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Synthesis and reloads only for known Host names and same-origin (or allowed) browser pages."""
        if request.path in _GUARDED:
            name = _host_name(request.host)
            if not (_is_address(name) or name in self._hosts):
                return _json_error(403, f"unknown Host {name!r:.80}: add it to limits.http_allowed_hosts", "forbidden")
            if not _same_origin(request, self._origins):
                return _json_error(403, "cross-origin request refused: add the origin to limits.http_allowed_origins",
                                   "forbidden")
        return await handler(request)

    async def start(self) -> None:
        uri = urlparse(self._settings.server.http_uri)  # tcp://HOST:PORT or unix://PATH (``config.validate``)
        await self._runner.setup()
        site: web.BaseSite = (web.TCPSite(self._runner, uri.hostname, uri.port) if uri.scheme == "tcp"
                              else web.UnixSite(self._runner, uri.path))
        await site.start()
        _LOGGER.info("HTTP server (health, metrics, /api/tts) listening on %s", self._settings.server.http_uri)

    def attach(self, serving: Serving) -> None:
        self._serving = serving

    async def stop(self) -> None:
        """Stop accepting; requests in progress finish (up to the shutdown grace period)."""
        await self._runner.cleanup()

    # -- health -------------------------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def _readyz(self, request: web.Request) -> web.Response:
        serving = self._serving
        if serving is None:
            return web.json_response({"ready": False, "reason": "loading the engine"}, status=503)
        if serving.requests.closing:
            return web.json_response({"ready": False, "reason": "shutting down"}, status=503)
        engine = serving.engine
        body: dict[str, Any] = {"ready": True, "engine": engine.name, "device": engine.device}
        peers = engine_peers(engine)
        if peers:
            # A front end whose Triton servers are all gone cannot serve: take it out of the balancer's rotation.
            body["triton"] = [{"url": p.url, "ready": p.ready, "outstanding": p.outstanding} for p in peers]
            if not any(p.ready for p in peers):
                body.update(ready=False, reason="no Triton server ready")
                return web.json_response(body, status=503)
        return web.json_response(body)

    async def _metrics_page(self, request: web.Request) -> web.Response:
        if self._serving is not None:
            await self._serving.sample_memory()  # fresh memory numbers, not the last interval's
        response = web.Response(body=self._metrics.render())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    # -- API ----------------------------------------------------------------------------------------------

    def _require_serving(self) -> Serving:
        if self._serving is None:
            raise web.HTTPServiceUnavailable(
                text=json.dumps({"error": "the engine is still loading", "code": "busy"}),
                content_type="application/json",
            )
        return self._serving

    async def _voices(self, request: web.Request) -> web.Response:
        synth = self._require_serving().synth
        return web.json_response({"voices": synth.voices.names, "default": synth.settings.voice.default,
                                  "labels": {name: label(name) for name in synth.voices.names}})

    async def _tts(self, request: web.Request) -> web.Response:
        serving = self._require_serving()
        try:
            try:
                params = await _tts_params(request)
            except web.HTTPRequestEntityTooLarge:
                limit = self._settings.limits.http_max_body_bytes
                return _json_error(413, f"the body is over {limit} bytes (limits.http_max_body_bytes)", "too-large")
            except (LookupError, UnicodeDecodeError) as err:  # unknown charset, or bytes not in it
                raise TextError(f"the body cannot be read as text: {err}") from None
            text, voice, speed = _text_voice_speed(params)
            name, speed = serving.synth.check_request(text, voice, speed)
            pcm = await self._speak(serving, text, name, speed)
        except Exception as err:
            code = error_code(err)
            if code == "internal":
                _LOGGER.exception("error handling /api/tts")
            serving.requests.error(code, api="http")
            return _json_error(_STATUS[code], str(err), code)
        return web.Response(body=wav_bytes(pcm), content_type="audio/wav")

    async def _reload(self, request: web.Request) -> web.Response:
        if not (_is_local(request) and _same_origin(request)):
            return _json_error(403, "engine reloads are allowed only from this host", "forbidden")
        serving = self._require_serving()
        try:
            result = await serving.reload("manual", "requested through POST /admin/reload")
        except ReloadTooSoon as err:
            response = _json_error(429, str(err), "too-soon")
            response.headers["Retry-After"] = str(max(1, round(err.retry_after)))
            return response
        except ReloadInProgress as err:
            return _json_error(409, str(err), "reload-in-progress")
        except Exception as err:
            return _json_error(500, f"reload failed, the current engine keeps serving: {err}", "engine")
        return web.json_response(
            {"engine": result.engine, "device": result.device, "seconds": round(result.seconds, 3)}
        )

    async def _speak(self, serving: Serving, text: str, voice: str, speed: float) -> bytes:
        """The whole answer as 16-bit PCM, through the same path as a Wyoming one-shot request."""
        synth = serving.synth
        received = time.monotonic()
        sentences = await synth.prepare(text)
        serving.requests.begin("http")
        parts: list[bytes] = []
        try:
            async with contextlib.aclosing(synth.one_shot(sentences, voice, speed)) as audio:
                async for pcm in audio:
                    if not parts:
                        self._metrics.first_audio_seconds.labels("http").observe(time.monotonic() - received)
                    parts.append(pcm)
        finally:
            serving.requests.end()
        return b"".join(parts)

    async def _index(self, request: web.Request) -> web.Response:
        page = resources.files(__package__).joinpath("static/index.html").read_bytes()
        return web.Response(body=page, content_type="text/html", charset="utf-8")


async def _tts_params(request: web.Request) -> dict[str, Any]:
    """Query parameters, overridden by a JSON object, form fields or a text/plain body on POST."""
    params: dict[str, Any] = dict(request.query)
    if request.method != "POST" or not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise TextError(f"the body is not valid JSON: {err}") from err
        if not isinstance(body, dict):
            raise TextError("the JSON body must be an object with 'text' (and optionally 'voice', 'speed')")
        params.update(body)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        params.update(await request.post())
    else:
        params["text"] = await request.text()
    return params


def _text_voice_speed(params: dict[str, Any]) -> tuple[str, str | None, float | None]:
    text, voice, speed = params.get("text"), params.get("voice") or None, params.get("speed")
    if not isinstance(text, str):
        raise TextError("give the text to speak as 'text' (query, form field, JSON or a text/plain body)")
    if voice is not None and not isinstance(voice, str):
        raise TextError("'voice' must be a voice name (see /api/voices)")
    if speed in (None, ""):
        return text, voice, None
    try:
        return text, voice, float(speed)
    except (TypeError, ValueError):
        raise TextError(f"'speed' must be a number between {MIN_SPEED} and {MAX_SPEED}, not {speed!r}") from None
