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
import io
import logging
import socket
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.event import write_event as frame_event
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
from .wire import MalformedEvent, PeerReader, check_fields, read_event

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
                except MalformedEvent as err:
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
            return await asyncio.wait_for(read_event(self.reader, limits), limits.read_timeout_s)
        except asyncio.TimeoutError:
            raise MalformedEvent(
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
        await self.write_events(event)

    async def write_events(self, *events: Event) -> None:
        """Send events in one write (wyoming's own framing, into one buffer); a client that takes nothing for
        ``limits.write_timeout_s`` is dropped.

        One write: a reply's audio-start, chunks and audio-stop had been a socket send per header, data and
        payload and a timed drain per event, 13 sends and five timers a sentence on the event loop that serves
        every client. The timer is set only where the transport kept bytes back: where the kernel took them all
        the drain cannot wait (it still raises for a connection that is gone)."""
        if not events:  # a sentence's end mark inside a one-shot reply, or a part all silence
            return
        buffer = io.BytesIO()
        for event in events:
            frame_event(event, buffer)
        self.writer.write(buffer.getvalue())
        if self.writer.transport.get_write_buffer_size() == 0:
            await self.writer.drain()
            return
        try:
            await asyncio.wait_for(self.writer.drain(), self._limits.write_timeout_s)
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
            check_fields(event)
            request = Synthesize.from_event(event)
            name, speed = self._synth.check_request(request.text, *self._voice_and_speed(request.voice, event))
            sentences = await self._synth.prepare(request.text)
            self._claim_request()
            self._requests.begin()
            try:
                async with contextlib.aclosing(self._synth.one_shot(sentences, name, speed)) as audio:
                    async for pcm in audio:
                        events = self._audio_events(pcm, start=not started, stop=False)
                        started = True
                        await self.write_events(*events)
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
            check_fields(event)
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
            check_fields(event)
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
                events = self._audio_events(pcm, start=not stream.cycle_open, stop=last)
                stream.cycle_open = not last
                await self.write_events(*events)
        except ConnectionError:
            stream.speech.cancel()
        except Exception as err:
            with contextlib.suppress(ConnectionError):
                await self._fail_stream(stream, err)

    def _audio_events(self, pcm: bytes, start: bool, stop: bool) -> list[Event]:
        """A piece's audio chunks, after audio-start where it opens a cycle and before audio-stop where it ends one."""
        chunks = [AudioChunk(rate=SAMPLE_RATE, width=SAMPLE_WIDTH, channels=CHANNELS, audio=chunk).event()
                  for chunk in pcm_chunks(pcm, self._chunk_ms)]
        return [*([_audio_start()] if start else []), *chunks, *([AudioStop().event()] if stop else [])]

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


async def _cancel_when_gone(reader: PeerReader, task: asyncio.Task[Any] | None) -> None:
    await reader.gone.wait()
    if task is not None:
        _LOGGER.debug("client left: cancelling its request")
        task.cancel()


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


def check_address(uri: str) -> None:
    """Raise ``OSError`` now where ``uri``'s TCP address is taken or not this machine's: the server listens there
    only once the engine is loaded (a connection before would wait unanswered), which is seconds on the CPU and
    minutes for a GPU engine that compiles, so a port in use is found before that, not after. Each address is bound
    as asyncio's server will bind it (``SO_REUSEADDR``, IPv6 sockets IPv6 only), then let go."""
    parsed = urlparse(uri)
    if parsed.scheme != "tcp":
        return
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(parsed.hostname, parsed.port, flags=socket.AI_PASSIVE,
                                                                  type=socket.SOCK_STREAM):
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                probe.bind(address)
    except OSError as err:  # taken, not this machine's, or a host name that does not resolve
        raise OSError(err.errno, f"cannot listen on {uri}: {err.strerror}") from None


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

    parsed = urlparse(uri)  # tcp://HOST:PORT or unix://PATH (``config.validate``)
    if parsed.scheme == "unix":
        return await loop.create_unix_server(protocol, path=parsed.path)
    assert parsed.port is not None, uri
    return await loop.create_server(protocol, host=parsed.hostname, port=parsed.port)
