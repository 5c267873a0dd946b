"""Wyoming protocol: describe, one-shot synthesize, and streamed synthesize-start/chunk/stop.

Every failure a client can cause ends in an ``error`` event on that client's connection; the connection
stays usable and no other client notices. Home Assistant reads a one-shot reply only up to the first
``audio-stop``, so a one-shot request gets exactly one audio cycle; a stream gets one cycle per sentence.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

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

from .. import __version__
from ..audio import CHANNELS, SAMPLE_WIDTH, pcm_chunks
from ..core import SAMPLE_RATE
from ..synthesizer import Speech, SpeechCancelled, Synthesizer, TextError, error_code
from ..text import SentenceBuffer

_LOGGER = logging.getLogger(__name__)

KOKORO = Attribution(name="hexgrad (Kokoro-82M, Apache-2.0)", url="https://github.com/hexgrad/kokoro")
PROJECT = Attribution(name="wyoming-fasttts developers", url="")


def build_info(voices: list[str], lang: str) -> Info:
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
                        description=f"Kokoro v1.0 Mandarin voice {name}",
                        attribution=KOKORO,
                        installed=True,
                        version="1.0",
                        languages=[lang],
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
    speech: Speech
    writer: asyncio.Task[None]
    buffer: SentenceBuffer = field(default_factory=SentenceBuffer)
    chars: int = 0
    spoken: bool = False


class FastTtsHandler(AsyncEventHandler):
    def __init__(self, info: Info, synth: Synthesizer, requests: Requests, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._info = info
        self._synth = synth
        self._requests = requests
        self._stream: _Stream | None = None
        self._chunk_ms = synth.settings.server.audio_chunk_ms

    async def run(self) -> None:
        """Like the base loop, but a malformed event gets an error reply instead of a silent hang-up."""
        try:
            while True:
                try:
                    event = await _read_event(self.reader)
                except _MalformedEvent as err:
                    await self._send_error(f"malformed event: {err}", "malformed-event")
                    continue
                except (ConnectionError, asyncio.IncompleteReadError):
                    break
                if event is None or not await self.handle_event(event):
                    break
        finally:
            await self.disconnect()
            self.writer.close()

    async def disconnect(self) -> None:
        if self._stream is not None:
            self._stream.speech.cancel()
            self._stream.writer.cancel()
            self._stream = None
            self._requests.end()

    async def handle_event(self, event: Event) -> bool:
        try:
            await self._dispatch(event)
        except (ConnectionError, asyncio.CancelledError):
            return False
        except Exception as err:  # one bad request must never take the connection down
            if error_code(err) == "internal":
                _LOGGER.exception("error handling %s", event.type)
            await self._send_error(str(err), error_code(err))
        return True

    async def _dispatch(self, event: Event) -> None:
        if event.type in ("synthesize", "synthesize-chunk") and not isinstance(event.data.get("text"), str):
            raise TextError(f"{event.type} needs a 'text' string")
        if Describe.is_type(event.type):
            await self.write_event(self._info.event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif Synthesize.is_type(event.type):
            if self._stream is not None:
                _LOGGER.debug("ignoring synthesize inside a stream (sent for older clients)")
                return
            await self._one_shot(event)
        elif SynthesizeStart.is_type(event.type):
            await self._start_stream(SynthesizeStart.from_event(event), event)
        elif SynthesizeChunk.is_type(event.type):
            await self._stream_chunk(SynthesizeChunk.from_event(event).text)
        elif SynthesizeStop.is_type(event.type):
            await self._stop_stream()
        else:
            raise TextError(f"unexpected event '{event.type}'; this server handles describe and synthesize events")

    def _voice_and_speed(self, voice: SynthesizeVoice | None, event: Event) -> tuple[str | None, float | None]:
        context = event.data.get("context") or {}
        speed = event.data.get("speed", context.get("speed"))
        return (voice.name if voice else None), (None if speed is None else float(speed))

    async def _one_shot(self, event: Event) -> None:
        request = Synthesize.from_event(event)
        name, speed = self._synth.check_request(request.text, *self._voice_and_speed(request.voice, event))
        sentences = await self._synth.prepare(request.text)
        self._requests.begin()
        try:
            started = False
            async with contextlib.aclosing(self._synth.one_shot(sentences, name, speed)) as audio:
                async for pcm in audio:
                    if not started:
                        await self.write_event(_audio_start())
                        started = True
                    await self._write_audio(pcm)
            await self.write_event(AudioStop().event())
        finally:
            self._requests.end()

    async def _start_stream(self, start: SynthesizeStart, event: Event) -> None:
        if self._stream is not None:
            raise TextError("a synthesize stream is already open on this connection")
        name, speed = self._synth.check_request("", *self._voice_and_speed(start.voice, event))
        speech = self._synth.speech(name, speed)
        self._requests.begin()
        self._stream = _Stream(speech, asyncio.create_task(self._stream_writer(speech)))

    async def _stream_chunk(self, text: str) -> None:
        stream = self._require_stream()
        stream.chars += len(text)
        limit = self._synth.settings.server.max_text_chars
        if stream.chars > limit:
            raise TextError(f"stream too long: more than {limit} characters (server.max_text_chars)")
        for sentence in stream.buffer.add(text):
            await self._speak(stream, sentence)

    async def _speak(self, stream: _Stream, sentence: str) -> None:
        pieces = await self._synth.prepare(sentence, first=not stream.spoken)
        stream.spoken = stream.spoken or bool(pieces)
        try:
            await stream.speech.add(pieces)
        except SpeechCancelled:
            _LOGGER.debug("dropping text for a stream whose audio failed or whose client left")

    async def _stop_stream(self) -> None:
        stream = self._require_stream()
        try:
            for sentence in stream.buffer.flush():
                await self._speak(stream, sentence)
            stream.speech.close()
            await stream.writer
            if not stream.spoken:
                await self._send_error("nothing to say: the stream had no readable text", "bad-text")
        finally:
            self._stream = None
            self._requests.end()
        await self.write_event(SynthesizeStopped().event())

    def _require_stream(self) -> _Stream:
        if self._stream is None:
            raise TextError("synthesize-chunk/stop without synthesize-start")
        return self._stream

    async def _stream_writer(self, speech: Speech) -> None:
        """One audio cycle per sentence, each sent as soon as its audio is ready."""
        open_cycle = False
        try:
            async for pcm, last in speech.audio():
                if not open_cycle:
                    await self.write_event(_audio_start())
                    open_cycle = True
                await self._write_audio(pcm)
                if last:
                    await self.write_event(AudioStop().event())
                    open_cycle = False
        except ConnectionError:
            speech.cancel()
        except Exception as err:
            speech.cancel()
            if open_cycle:
                await self.write_event(AudioStop().event())
            await self._send_error(str(err), error_code(err))

    async def _write_audio(self, pcm: bytes) -> None:
        for chunk in pcm_chunks(pcm, self._chunk_ms):
            await self.write_event(
                AudioChunk(rate=SAMPLE_RATE, width=SAMPLE_WIDTH, channels=CHANNELS, audio=chunk).event()
            )

    async def _send_error(self, text: str, code: str) -> None:
        _LOGGER.info("error to client (%s): %s", code, text)
        self._requests.error(code)
        with contextlib.suppress(ConnectionError):
            await async_write_event(Error(text=text, code=code).event(), self.writer)


def _audio_start() -> Event:
    return AudioStart(rate=SAMPLE_RATE, width=SAMPLE_WIDTH, channels=CHANNELS).event()


class _MalformedEvent(ValueError):
    pass


async def _read_event(reader: asyncio.StreamReader) -> Event | None:
    """Read one event; wyoming's reader hangs up on bad JSON without a word, which clients cannot debug."""
    line = await reader.readline()
    if not line:
        return None
    try:
        header = json.loads(line)
        if not isinstance(header, dict) or not isinstance(header.get("type"), str):
            raise _MalformedEvent("header must be a JSON object with a 'type'")
        data = header.get("data") or {}
        if header.get("data_length"):
            extra = json.loads(await reader.readexactly(int(header["data_length"])))
            if not isinstance(extra, dict):
                raise _MalformedEvent("data must be a JSON object")
            data.update(extra)
        payload = None
        if header.get("payload_length"):
            payload = await reader.readexactly(int(header["payload_length"]))
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError) as err:
        if isinstance(err, _MalformedEvent):
            raise
        raise _MalformedEvent(str(err)) from err
    if not isinstance(data, dict):
        raise _MalformedEvent("data must be a JSON object")
    return Event(type=header["type"], data=data, payload=payload)
