"""Wyoming protocol: describe, one-shot synthesize, and streamed synthesize-start/chunk/stop.

Every request ends the way its client waits for, whatever goes wrong. Home Assistant's integration ignores
``error`` events: it stops reading a one-shot reply at the first ``audio-stop`` (or a closed connection) and a
stream at ``synthesize-stopped``. So a failure sends the ``error`` event (for logs and other clients) and then
ends the exchange: ``audio-stop`` if audio had started, ``synthesize-stopped`` for a stream (in answer to the
client's synthesize-stop, ``_fail_stream`` says why), and a one-shot request that failed before any audio
closes the connection (``_one_shot`` says why). A one-shot request gets
exactly one audio cycle; a stream gets one cycle per sentence. Text with nothing readable is not a failure: it
is answered with a short silence (``synthesizer.NOTHING_TO_SAY_MS``). No other client notices any of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import socket
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from .. import PROJECT_URL, __version__
from ..audio import CHANNELS, SAMPLE_WIDTH, pcm_chunks
from ..config import LimitSettings
from ..core import SAMPLE_RATE
from ..scheduler import BusyError
from ..synthesizer import Speech, SpeechCancelled, Synthesizer, TextError, error_code
from ..text import SentenceBuffer
from ..voices import label

_LOGGER = logging.getLogger(__name__)

KOKORO = Attribution(name="hexgrad (Kokoro-82M, Apache-2.0)", url="https://github.com/hexgrad/kokoro")
PROJECT = Attribution(name="wyoming-fasttts", url=PROJECT_URL)


def build_info(voices: list[str], languages: list[str]) -> Info:
    """What ``describe`` answers: every voice with its Chinese name (``description``) and all language codes.

    Home Assistant's picker shows a voice's description; its exact-match paths (``tts.speak`` with
    ``language:``, the voice list of a pipeline) look a language code up as given, so each voice carries every
    code users type for Mandarin.
    """
    return Info(
        tts=[
            TtsProgram(
                name="fasttts",
                description="Mandarin Chinese text-to-speech (Kokoro-82M) on TensorRT or ONNX Runtime",
                attribution=PROJECT,
                installed=True,
                version=__version__,
                supports_synthesize_streaming=True,
                voices=[
                    TtsVoice(
                        name=name,
                        description=label(name),
                        attribution=KOKORO,
                        installed=True,
                        version="1.0",
                        languages=list(languages),
                    )
                    for name in voices
                ],
            )
        ]
    )


@dataclass
class Requests:
    """Requests in progress across all connections, so shutdown can wait for them."""

    active: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.idle.set()

    def begin(self) -> None:
        self.active += 1
        self.idle.clear()

    def end(self) -> None:
        self.active -= 1
        if self.active == 0:
            self.idle.set()

    def error(self, code: str) -> None:
        """A client was sent an error event; the server's metrics count these by code."""


@dataclass
class _Stream:
    """One synthesize-start … synthesize-stop exchange in progress."""

    speech: Speech
    writer: asyncio.Task[None] | None = None
    buffer: SentenceBuffer = field(default_factory=SentenceBuffer)
    chars: int = 0
    spoken: bool = False
    cycle_open: bool = False  # an audio-start was sent whose audio-stop was not
    ended: bool = False  # no more audio: finished, or failed (``FastTtsHandler._fail_stream``)


class FastTtsHandler(AsyncEventHandler):
    reader: PeerReader

    def __init__(self, info: Info, synth: Synthesizer, requests: Requests, peers: Peers, peer: str,
                 reader: PeerReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self._peers = peers
        self._peer = peer
        self._claimed = False
        self._limits = synth.settings.limits
        self._info = info
        self._synth = synth
        self._requests = requests
        self._stream: _Stream | None = None
        # A stream that ended early (an error) still has the client's chunks, its compatibility synthesize and
        # its synthesize-stop on the way; they are read and dropped until that synthesize-stop.
        self._draining = False
        self._writers: set[asyncio.Task[None]] = set()
        self._chunk_ms = synth.settings.server.audio_chunk_ms

    async def run(self) -> None:
        """The base loop's job, with every wait on the peer bounded and every malformed event answered.

        wyoming's own reader hangs up on bad JSON without a word and reads whatever lengths a header claims;
        this one answers ``malformed-event`` and never buffers more than ``limits`` allow. A header whose
        lengths cannot be honoured leaves the stream unsynchronised, so that error also ends the connection.
        """
        try:
            while True:
                try:
                    event = await self._next_event()
                except _MalformedEvent as err:
                    text = str(err) if err.code != "malformed-event" else f"malformed event: {err}"
                    await self._send_error(text, err.code)
                    if err.fatal:
                        await self._linger()
                        break
                    continue
                except (ConnectionError, asyncio.IncompleteReadError):
                    break
                if event is None or not await self.handle_event(event):
                    break
        finally:
            await self.disconnect()
            self._release_request()
            self.writer.close()

    async def _linger(self) -> None:
        """Let the error reach a client that is still sending: closing with its bytes unread would reset the
        connection and drop the error on its side. Send FIN, discard (never buffer) its input for a moment."""
        with contextlib.suppress(OSError, RuntimeError, asyncio.TimeoutError):
            self.writer.write_eof()
            deadline = asyncio.get_running_loop().time() + self._limits.read_timeout_s
            while await asyncio.wait_for(self.reader.read(65536), deadline - asyncio.get_running_loop().time()):
                pass

    async def _next_event(self) -> Event | None:
        """The next event; None when the peer closed or stayed silent for ``limits.idle_timeout_s``."""
        limits = self._limits
        try:
            await asyncio.wait_for(self.reader.wait_readable(), limits.idle_timeout_s)
        except asyncio.TimeoutError:
            _LOGGER.debug("closing a connection idle for %.0f s (limits.idle_timeout_s)", limits.idle_timeout_s)
            return None
        try:
            return await asyncio.wait_for(_read_event(self.reader, limits), limits.read_timeout_s)
        except asyncio.TimeoutError:
            raise _MalformedEvent(
                f"the event did not arrive whole within {limits.read_timeout_s:g} s (limits.read_timeout_s)",
                fatal=True) from None

    async def disconnect(self) -> None:
        for writer in list(self._writers):
            writer.cancel()
        if self._stream is not None:
            self._stream.ended = True
            self._stream.speech.cancel()
            self._stream = None
            self._requests.end()

    async def handle_event(self, event: Event) -> bool:
        """Dispatch one event; False closes the connection (a one-shot request that failed before any audio).

        The work runs in this task (a request's metrics context lives here), watched for the peer: it is
        cancelled the moment the peer goes, since nobody could hear the audio.
        """
        try:
            watcher = asyncio.ensure_future(_cancel_when_gone(self.reader, asyncio.current_task()))
            try:
                return await self._dispatch(event)
            finally:
                watcher.cancel()
        except ConnectionError:
            return False
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.reader.gone.is_set() and task is not None and hasattr(task, "uncancel"):
                task.uncancel()  # our own watcher's cancel: the connection ends normally, not as cancelled
            return False
        except Exception as err:  # one bad request must never take the connection down
            await self._report(err)
        finally:
            if self._stream is None:
                self._release_request()
        return True

    def _claim_request(self) -> None:
        """Count a request against ``limits.max_requests_per_peer`` (BusyError beyond it)."""
        if not self._claimed:
            self._claimed = self._peers.claim_request(self._peer)

    def _release_request(self) -> None:
        if self._claimed:
            self._claimed = False
            self._peers.release_request(self._peer)

    async def write_event(self, event: Event) -> None:
        """Send an event; a client that takes nothing for ``limits.write_timeout_s`` is dropped."""
        try:
            await asyncio.wait_for(async_write_event(event, self.writer), self._limits.write_timeout_s)
        except asyncio.TimeoutError:
            self.writer.transport.abort()
            raise ConnectionResetError(
                f"client read nothing for {self._limits.write_timeout_s:g} s (limits.write_timeout_s)") from None

    async def _dispatch(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(self._info.event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif Synthesize.is_type(event.type):
            if self._stream is not None or self._draining:
                _LOGGER.debug("ignoring synthesize inside a stream (sent for older clients)")
                return True
            return await self._one_shot(event)
        elif SynthesizeStart.is_type(event.type):
            await self._start_stream(event)
        elif SynthesizeChunk.is_type(event.type):
            await self._stream_chunk(event)
        elif SynthesizeStop.is_type(event.type):
            await self._stop_stream()
        else:
            raise TextError(f"unexpected event '{event.type}'; this server handles describe and synthesize events")
        return True

    def _voice_and_speed(self, voice: SynthesizeVoice | None, event: Event) -> tuple[str | None, float | None]:
        context = event.data.get("context") or {}
        speed = event.data.get("speed", context.get("speed"))
        try:
            return (voice.name if voice else None), (None if speed is None else float(speed))
        except (TypeError, ValueError):
            raise TextError(f"speed must be a number between 0.5 and 2.0, not {speed!r}") from None

    async def _one_shot(self, event: Event) -> bool:
        """One audio cycle. On failure: the error event, then audio-stop if audio had started, else hang up.

        Home Assistant's one-shot reader ignores ``error`` and waits for ``audio-stop`` or a closed connection.
        An empty audio cycle would hand its TTS manager zero bytes as a finished answer, which it caches (on
        disk, across restarts) and gives to the media player; a closed connection is its failure path: it
        logs "No TTS from …", caches nothing, and the next announcement asks again. Hence False: hang up.
        """
        started = False
        try:
            _require_text(event)
            _check_fields(event)
            request = Synthesize.from_event(event)
            name, speed = self._synth.check_request(request.text, *self._voice_and_speed(request.voice, event))
            sentences = await self._synth.prepare(request.text)
            self._claim_request()
            self._requests.begin()
            try:
                async with contextlib.aclosing(self._synth.one_shot(sentences, name, speed)) as audio:
                    async for pcm in audio:
                        if not started:
                            await self.write_event(_audio_start())
                            started = True
                        await self._write_audio(pcm)
            finally:
                self._requests.end()
        except ConnectionError:
            raise
        except Exception as err:
            await self._report(err)
            if not started:
                return False
        await self.write_event(AudioStop().event())
        return True

    async def _start_stream(self, event: Event) -> None:
        """Open a stream; one that cannot start (unknown voice, bad speed, shutting down) fails at once."""
        if self._stream is not None:
            raise TextError("a synthesize stream is already open on this connection")
        self._draining = False
        try:
            _check_fields(event)
            start = SynthesizeStart.from_event(event)
            name, speed = self._synth.check_request("", *self._voice_and_speed(start.voice, event))
            self._claim_request()
            self._requests.begin()
        except Exception as err:
            self._draining = True
            await self._report(err)
            return
        stream = self._stream = _Stream(self._synth.speech(name, speed))
        stream.writer = asyncio.create_task(self._stream_writer(stream))
        self._writers.add(stream.writer)
        stream.writer.add_done_callback(self._writers.discard)

    async def _stream_chunk(self, event: Event) -> None:
        if self._draining:
            return
        stream = self._require_stream()
        try:
            text = _require_text(event)
            _check_fields(event)
            stream.chars += len(text)
            limit = self._synth.settings.server.max_text_chars
            if stream.chars > limit:
                raise TextError(f"stream too long: more than {limit} characters (server.max_text_chars)")
            for sentence in stream.buffer.add(text):
                await self._speak(stream, sentence)
        except ConnectionError:
            raise
        except Exception as err:
            await self._fail_stream(stream, err)

    async def _speak(self, stream: _Stream, sentence: str) -> None:
        pieces = await self._synth.prepare(sentence, first=not stream.spoken)
        stream.spoken = stream.spoken or bool(pieces)
        try:
            await stream.speech.add(pieces)
        except SpeechCancelled:
            _LOGGER.debug("dropping text for a stream whose audio failed or whose client left")

    async def _stop_stream(self) -> None:
        """Every synthesize-stop gets its synthesize-stopped: after the last audio, or at once for a failed stream."""
        stream = self._stream
        if stream is None:
            draining, self._draining = self._draining, False
            if not draining:
                await self._report(TextError("synthesize-stop without synthesize-start"))
            await self.write_event(SynthesizeStopped().event())
            return
        try:
            for sentence in stream.buffer.flush():
                await self._speak(stream, sentence)
            stream.speech.close()
            if stream.writer is not None:
                await stream.writer  # on an audio failure the writer fails the stream itself
        except ConnectionError:
            raise
        except Exception as err:
            await self._fail_stream(stream, err)
        if not stream.ended:
            stream.ended = True
            self._stream = None
            self._requests.end()
        self._draining = False
        await self.write_event(SynthesizeStopped().event())

    def _require_stream(self) -> _Stream:
        if self._stream is None:
            raise TextError("synthesize-chunk without synthesize-start")
        return self._stream

    async def _fail_stream(self, stream: _Stream, err: Exception) -> None:
        """Stop a stream's audio: the error event, then audio-stop for an open cycle; once per stream.

        The client's remaining chunks are read and dropped, and its synthesize-stop gets the synthesize-stopped
        it waits for (``_stop_stream``). Not sooner: Home Assistant's reader ends at synthesize-stopped and
        closes the connection while its writer may still be sending the reply's text; that writer then dies
        with an AssertionError in HA's log. Its writer sends everything it has at once (``tts.speak``) or as
        fast as the LLM writes, so waiting for its synthesize-stop costs no more than the text's own arrival.
        """
        if stream.ended:
            return
        stream.ended = True
        if self._stream is stream:
            self._stream = None
        self._requests.end()
        self._draining = True
        stream.speech.cancel()
        if stream.writer is not None and stream.writer is not asyncio.current_task():
            stream.writer.cancel()
            await asyncio.gather(stream.writer, return_exceptions=True)
        await self._report(err)
        if stream.cycle_open:
            stream.cycle_open = False
            await self.write_event(AudioStop().event())

    async def _stream_writer(self, stream: _Stream) -> None:
        """One audio cycle per sentence, each sent as soon as its audio is ready."""
        try:
            async for pcm, last in stream.speech.audio():
                if not stream.cycle_open:
                    await self.write_event(_audio_start())
                    stream.cycle_open = True
                await self._write_audio(pcm)
                if last:
                    await self.write_event(AudioStop().event())
                    stream.cycle_open = False
        except ConnectionError:
            stream.speech.cancel()
        except Exception as err:
            with contextlib.suppress(ConnectionError):
                await self._fail_stream(stream, err)

    async def _write_audio(self, pcm: bytes) -> None:
        for chunk in pcm_chunks(pcm, self._chunk_ms):
            await self.write_event(
                AudioChunk(rate=SAMPLE_RATE, width=SAMPLE_WIDTH, channels=CHANNELS, audio=chunk).event()
            )

    async def _report(self, err: Exception) -> None:
        """The error event for a failed request (its stack trace in the log if it is our bug, not the client's)."""
        if error_code(err) == "internal":
            _LOGGER.exception("error handling a request", exc_info=err)
        await self._send_error(str(err), error_code(err))

    async def _send_error(self, text: str, code: str) -> None:
        _LOGGER.info("error to client (%s): %s", code, text)
        self._requests.error(code)
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=text, code=code).event())


def _require_text(event: Event) -> str:
    text = event.data.get("text")
    if not isinstance(text, str):
        raise TextError(f"{event.type} needs a 'text' string")
    return text


def _audio_start() -> Event:
    return AudioStart(rate=SAMPLE_RATE, width=SAMPLE_WIDTH, channels=CHANNELS).event()


class _MalformedEvent(ValueError):
    """Input that is not a Wyoming event; ``fatal`` when the rest of the stream can no longer be framed."""

    def __init__(self, message: str, fatal: bool = False, code: str = "malformed-event") -> None:
        super().__init__(message)
        self.fatal = fatal
        self.code = code


async def _cancel_when_gone(reader: PeerReader, task: asyncio.Task[Any] | None) -> None:
    await reader.gone.wait()
    if task is not None:
        _LOGGER.debug("client left: cancelling its request")
        task.cancel()


class PeerReader(asyncio.StreamReader):
    """A stream reader that tells when the peer has gone (EOF or reset) without consuming anything."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit=limit)
        self.gone = asyncio.Event()

    def feed_eof(self) -> None:
        super().feed_eof()
        self.gone.set()

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        self.gone.set()

    async def wait_readable(self) -> None:
        """Return once a byte is buffered or the peer has gone; reads nothing.

        asyncio has no public way to wait for data without taking it; this uses the same private wait its
        own ``read*`` methods use (stable since Python 3.4)."""
        state: Any = self
        while not state._buffer and not self.gone.is_set():
            await state._wait_for_data("wait_readable")


async def _read_event(reader: asyncio.StreamReader, limits: LimitSettings) -> Event | None:
    """One event, each part bounded by ``limits`` before it is read."""
    try:
        line = await reader.readline()
    except ValueError:  # asyncio's line limit (the reader was made with limit=max_header_bytes)
        raise _MalformedEvent(f"header line longer than {limits.max_header_bytes} bytes (limits.max_header_bytes)",
                              fatal=True) from None
    if not line:
        return None
    header = _parse_json(line, limits, "header")
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        # Without a header object there are no lengths to skip, so the next line is the next event.
        raise _MalformedEvent("header must be a JSON object with a 'type' string")
    data_length = _length(header, "data_length", limits.max_data_bytes, "limits.max_data_bytes")
    payload_length = _length(header, "payload_length", limits.max_payload_bytes, "limits.max_payload_bytes")
    oversize = data_length > limits.max_data_bytes or payload_length > limits.max_payload_bytes
    if oversize:  # a careless client's long text: read past it without keeping it, refuse, stay in step
        await _discard(reader, data_length + payload_length)
        if data_length > limits.max_data_bytes and header["type"] in ("synthesize", "synthesize-chunk"):
            # a one-shot that failed before audio ends with a closed connection (what Home Assistant waits for)
            raise _MalformedEvent(f"text too long: {data_length} bytes of event data; the limit is "
                                  f"{limits.max_data_bytes} (limits.max_data_bytes)", code="bad-text",
                                  fatal=header["type"] == "synthesize")
        raise _MalformedEvent(f"event too large: data {data_length} bytes, payload {payload_length} bytes; "
                              f"the limits are {limits.max_data_bytes} and {limits.max_payload_bytes} "
                              "(limits.max_data_bytes, limits.max_payload_bytes)")
    data = header.get("data")
    extra = _parse_json(await reader.readexactly(data_length), limits, "data") if data_length else None
    payload = await reader.readexactly(payload_length) if payload_length else None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(extra, (dict, type(None))):
        raise _MalformedEvent("data must be a JSON object")
    return Event(type=header["type"], data={**data, **(extra or {})}, payload=payload)


# Lengths up to this many times their limit are read past and refused with the connection kept (a long
# text by mistake); larger ones are not read at all: the error is sent and the connection closed (a flood).
_SKIP_FACTOR = 16


def _length(header: dict[str, Any], key: str, limit: int, setting: str) -> int:
    """A declared length, checked before a byte of it is read (a wrong one cannot be skipped safely)."""
    value = header.get(key)
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise _MalformedEvent(f"{key} must be a non-negative integer, not {value!r:.40}", fatal=True)
    if value > _SKIP_FACTOR * limit:
        raise _MalformedEvent(f"{key} {value} is over the limit of {limit} bytes ({setting})", fatal=True)
    return value


async def _discard(reader: asyncio.StreamReader, count: int) -> None:
    while count > 0:
        chunk = await reader.read(min(count, 65536))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", count)
        count -= len(chunk)


def _parse_json(raw: bytes, limits: LimitSettings, what: str) -> Any:
    try:
        value = json.loads(raw)
    except RecursionError:
        raise _MalformedEvent(f"{what} nests deeper than {limits.max_json_depth} (limits.max_json_depth)") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, integers with too many digits
        raise _MalformedEvent(f"{what} is not JSON: {err}") from None
    _check_json(value, limits.max_json_depth, what)
    return value


def _check_json(value: Any, depth: int, what: str) -> None:
    """Bounded nesting and text that can be encoded again (a lone surrogate would break every reply)."""
    if depth < 0:
        raise _MalformedEvent(f"{what} nests too deep (limits.max_json_depth)")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _MalformedEvent(f"{what} holds a string that is not valid Unicode (a lone surrogate)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json(key, depth - 1, what)
            _check_json(item, depth - 1, what)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth - 1, what)


def _check_fields(event: Event) -> None:
    """The fields a synthesize event may carry have the types the protocol gives them (else ``bad-text``)."""
    if event.type not in ("synthesize", "synthesize-start", "synthesize-chunk"):
        return
    data = event.data
    _expect(data, "text", str, optional=event.type == "synthesize-start")
    _expect(data, "text_format", str)
    voice = _expect(data, "voice", dict)
    for key in ("name", "speaker", "language"):
        _expect(voice or {}, key, str, where="voice.")
    context = _expect(data, "context", dict)
    for where, holder in (("", data), ("context.", context or {})):
        speed = holder.get("speed")
        if speed is not None and (type(speed) not in (int, float) or not math.isfinite(speed)):
            raise TextError(f"'{where}speed' must be a number between 0.5 and 2.0, not {speed!r:.40}")


def _expect(data: dict[str, Any], key: str, kind: type, optional: bool = True, where: str = "") -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind):
        raise TextError(f"'{where}{key}' must be a {_KINDS[kind]}, not {value!r:.40}")
    return value


_KINDS: dict[type, str] = {str: "string", dict: "JSON object"}


@dataclass
class Peers:
    """Open connections and requests in progress, in all and per peer address, against ``limits``."""

    limits: LimitSettings
    connections: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)

    def admit(self, peer: str) -> str | None:
        """Count a new connection; the reason it is refused instead, if it is."""
        if self.connections.total() >= self.limits.max_connections:
            return f"too many connections ({self.limits.max_connections}, limits.max_connections)"
        if self.connections[peer] >= self.limits.max_connections_per_peer:
            return (f"too many connections from {peer} "
                    f"({self.limits.max_connections_per_peer}, limits.max_connections_per_peer)")
        self.connections[peer] += 1
        return None

    def leave(self, peer: str) -> None:
        self.connections -= Counter({peer: 1})  # Counter subtraction drops entries that reach zero

    def claim_request(self, peer: str) -> bool:
        if self.requests[peer] >= self.limits.max_requests_per_peer:
            raise BusyError(f"too many requests at once from {peer} "
                            f"({self.limits.max_requests_per_peer}, limits.max_requests_per_peer)")
        self.requests[peer] += 1
        return True

    def release_request(self, peer: str) -> None:
        self.requests -= Counter({peer: 1})


async def serve_wyoming(uri: str, info: Info, synth: Synthesizer, requests: Requests) -> asyncio.AbstractServer:
    """Listen on ``tcp://HOST:PORT`` or ``unix://PATH``; each connection gets a bounded reader and a handler.

    The handler is wyoming's ``AsyncEventHandler``; the listener is not wyoming's ``AsyncServer``, which
    gives every connection asyncio's default reader (no header limit of ours, no way to tell that the peer
    left without reading) and admits any number of connections.
    """
    limits = synth.settings.limits
    peers = Peers(limits)
    loop = asyncio.get_running_loop()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert isinstance(reader, PeerReader)  # made by protocol() below
        address = writer.get_extra_info("peername")
        peer = address[0] if isinstance(address, (tuple, list)) and address else "local"
        refused = peers.admit(peer)
        if refused is not None:
            _LOGGER.info("refusing a connection from %s: %s", peer, refused)
            requests.error("busy")
            with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
                await asyncio.wait_for(async_write_event(Error(text=refused, code="busy").event(), writer), 1.0)
            writer.transport.abort()
            return
        sock = writer.get_extra_info("socket")
        if limits.socket_send_buffer_bytes and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, limits.socket_send_buffer_bytes)
        try:
            await FastTtsHandler(info, synth, requests, peers, peer, reader, writer).run()
        finally:
            peers.leave(peer)

    def protocol() -> asyncio.StreamReaderProtocol:
        return asyncio.StreamReaderProtocol(PeerReader(limits.max_header_bytes), on_connect)

    parsed = urlparse(uri)
    if parsed.scheme == "tcp" and parsed.port is not None:
        return await loop.create_server(protocol, host=parsed.hostname, port=parsed.port)
    if parsed.scheme == "unix":
        return await loop.create_unix_server(protocol, path=parsed.path)
    raise ValueError(f"--uri must be tcp://HOST:PORT or unix://PATH, not {uri}")
