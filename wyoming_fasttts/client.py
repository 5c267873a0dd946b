"""The ``say`` client: speak text through a running server with the real Wyoming client."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from sentence_stream import stream_to_sentences
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped, SynthesizeVoice

from .audio import wav_bytes


class ServerError(RuntimeError):
    """The server answered with a Wyoming error event."""

    def __init__(self, text: str, code: str | None) -> None:
        super().__init__(f"{text} ({code})" if code else text)
        self.code = code


@dataclass
class Reply:
    """What came back: PCM, the format, how many audio cycles, when the first audio arrived, and how long a
    player that starts with the first chunk and plays each as it comes would have run dry (``stall_s``)."""

    pcm: bytearray = field(default_factory=bytearray)
    rate: int = 24000
    width: int = 2
    channels: int = 1
    cycles: int = 0
    first_audio_s: float | None = None
    stall_s: float = 0.0
    _heard_until: float = field(default=0.0, repr=False)

    @property
    def seconds(self) -> float:
        return len(self.pcm) / (self.rate * self.width * self.channels)

    def add(self, audio: bytes, at: float) -> None:
        """A chunk arrived at ``at`` (seconds since the request): append it; a chunk that comes after the audio
        before it has played out is a gap the listener hears (a stall), counted from when the audio ran out."""
        if self.first_audio_s is None:
            self.first_audio_s = self._heard_until = at
        elif at > self._heard_until:
            self.stall_s += at - self._heard_until
            self._heard_until = at
        self._heard_until += len(audio) / (self.rate * self.width * self.channels)
        self.pcm += audio


async def say(uri: str, text: str, voice: str | None = None, stream: bool = False, speed: float | None = None) -> Reply:
    """Synthesise ``text``; with ``stream`` the text goes as synthesize-chunk events, one per sentence."""
    start = time.perf_counter()
    reply = Reply()
    voice_obj = SynthesizeVoice(name=voice) if voice else None
    async with AsyncClient.from_uri(uri) as client:
        if stream:
            await client.write_event(_with_speed(SynthesizeStart(voice=voice_obj).event(), speed))
            for piece in stream_to_sentences([text]):
                await client.write_event(SynthesizeChunk(text=piece).event())
            await client.write_event(SynthesizeStop().event())
        else:
            await client.write_event(_with_speed(Synthesize(text=text, voice=voice_obj).event(), speed))
        while True:
            event = await client.read_event()
            if event is None:
                raise ConnectionError("server closed the connection")
            if Error.is_type(event.type):
                err = Error.from_event(event)
                raise ServerError(err.text, err.code)
            if AudioStart.is_type(event.type):
                fmt = AudioStart.from_event(event)
                reply.rate, reply.width, reply.channels = fmt.rate, fmt.width, fmt.channels
            elif AudioChunk.is_type(event.type):
                reply.add(AudioChunk.from_event(event).audio, time.perf_counter() - start)
            elif AudioStop.is_type(event.type):
                reply.cycles += 1
                if not stream:
                    return reply
            elif SynthesizeStopped.is_type(event.type):
                return reply


def _with_speed(event: Event, speed: float | None) -> Event:
    if speed is not None:
        event.data["speed"] = speed
    return event


def write_output(reply: Reply, output: str) -> None:
    data = bytes(reply.pcm)
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        Path(output).write_bytes(wav_bytes(data, reply.rate))
