"""How a request ends when the engine fails part-way, with the real handler and the real Wyoming client.

The engine is a stand-in that fails on the sentences we choose (a real one cannot be made to fail on demand);
everything else is the server's own path: text front end, scheduler, handler. Home Assistant ignores
``error`` events, so each failure must still end with what its client waits for.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from wyoming_fasttts.assets import VOICES
from wyoming_fasttts.backends.base import EngineMemory
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.core import SAMPLE_RATE, EngineError
from wyoming_fasttts.scheduler import Scheduler
from wyoming_fasttts.server.wyoming import Requests, build_info, serve_wyoming
from wyoming_fasttts.synthesizer import Synthesizer
from wyoming_fasttts.voices import STYLE_DIM, STYLE_ROWS, VoiceBank

SENTENCES = ["今天天气很好。", "我们一起去公园散步吧！", "你觉得怎么样？"]


class FailingEngine:
    """0.3 s of tone per sentence; the sentences whose number (0, 1, ...) is in ``fail`` raise EngineError."""

    name = "failing"
    device = "cpu"
    max_batch = 1
    slots = 1

    def __init__(self, fail: set[int]) -> None:
        self._fail = fail
        self._count = 0
        self._lock = threading.Lock()

    def warmup(self) -> None:
        pass

    def run(self, items):
        with self._lock:
            number, self._count = self._count, self._count + 1
        if number in self._fail:
            raise EngineError(f"stand-in engine failed on sentence {number}")
        tone = 0.3 * np.sin(np.arange(int(0.3 * SAMPLE_RATE)) * 0.05).astype(np.float32)
        return [tone for _ in items]

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=0)

    def close(self) -> None:
        pass


class _AnyVocab(dict):
    """Every phoneme has an id: the ids only have to reach the stand-in engine."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> int:
        self[key] = len(self) + 1
        return self[key]


class _Voices:
    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def voice(self, name: str) -> Path:
        path = self._folder / f"{name}.bin"
        if not path.exists():
            np.zeros((STYLE_ROWS, STYLE_DIM), np.float32).tofile(path)
        return path


async def _serve(engine: FailingEngine, folder: Path, exchange) -> tuple[list[Event], Requests]:
    """Run ``exchange(client)`` against a handler on a free port; the server is gone when this returns."""
    settings = load_settings()
    scheduler = Scheduler(engine, settings.scheduler)
    scheduler.start()
    voices = VoiceBank(_Voices(folder))  # type: ignore[arg-type]
    synth = Synthesizer(settings, voices, _AnyVocab(), scheduler)
    requests = Requests()
    info = build_info(voices.names, settings.voice.languages)

    server = await serve_wyoming("tcp://127.0.0.1:0", info, synth, requests)  # the server's own listener
    port = server.sockets[0].getsockname()[1]
    try:
        async with AsyncClient.from_uri(f"tcp://127.0.0.1:{port}") as client:
            events = await asyncio.wait_for(exchange(client), 60)
        await asyncio.wait_for(requests.idle.wait(), 10)  # nothing left counted as running
    finally:
        server.close()
        await scheduler.stop(timeout=5)
    return events, requests


async def _through(client: AsyncClient, done: str) -> list[Event]:
    events: list[Event] = []
    while not events or events[-1].type != done:
        event = await client.read_event()
        assert event is not None, f"connection closed after {[e.type for e in events]}"
        events.append(event)
    return events


def _types(events: list[Event]) -> list[str]:
    """Event types with runs of audio chunks folded into one 'audio'."""
    out: list[str] = []
    for event in events:
        kind = "audio" if event.type == "audio-chunk" else event.type
        if not (kind == "audio" and out and out[-1] == "audio"):
            out.append(kind)
    return out


def test_a_one_shot_failing_after_audio_started_sends_the_error_then_audio_stop(tmp_path):
    async def exchange(client):
        await client.write_event(Synthesize(text="".join(SENTENCES)).event())
        events = await _through(client, "audio-stop")
        await client.write_event(Describe().event())  # the connection is still usable
        return events + await _through(client, "info")

    events, _ = asyncio.run(_serve(FailingEngine(fail={1}), tmp_path, exchange))
    assert _types(events) == ["audio-start", "audio", "error", "audio-stop", "info"]
    assert Error.from_event(events[-3]).code == "engine"


def test_a_one_shot_failing_before_any_audio_sends_the_error_then_hangs_up(tmp_path):
    async def exchange(client):
        await client.write_event(Synthesize(text="".join(SENTENCES)).event())
        return [await client.read_event(), await client.read_event()]

    events, _ = asyncio.run(_serve(FailingEngine(fail={0}), tmp_path, exchange))
    assert events[0] is not None and Error.from_event(events[0]).code == "engine"
    assert events[1] is None


@pytest.mark.parametrize("fail", [0, 1], ids=["first-sentence", "second-sentence"])
def test_a_stream_whose_audio_fails_ends_once_home_assistant_stops_writing(tmp_path, fail):
    """HA keeps writing chunks, the compatibility synthesize and synthesize-stop; then it gets stopped."""

    async def exchange(client):
        await client.write_event(SynthesizeStart().event())
        for sentence in SENTENCES:
            await client.write_event(SynthesizeChunk(text=sentence).event())
        await client.write_event(Synthesize(text="".join(SENTENCES)).event())
        await client.write_event(SynthesizeStop().event())
        events = await _through(client, "synthesize-stopped")
        await client.write_event(Describe().event())  # nothing else was queued behind synthesize-stopped
        return events + await _through(client, "info")

    events, _ = asyncio.run(_serve(FailingEngine(fail={fail}), tmp_path, exchange))
    spoken = ["audio-start", "audio", "audio-stop"] * fail
    assert _types(events) == [*spoken, "error", "synthesize-stopped", "info"]
    assert [e.type for e in events].count("synthesize-stopped") == 1


def test_a_client_leaving_mid_stream_leaves_no_request_or_writer_behind(tmp_path):
    async def exchange(client):
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="".join(SENTENCES)).event())
        return await _through(client, "audio-start")  # then the client disconnects

    events, requests = asyncio.run(_serve(FailingEngine(fail=set()), tmp_path, exchange))
    assert events[-1].type == "audio-start" and requests.active == 0


def test_every_voice_is_announced_with_every_mandarin_code():
    info = build_info(list(VOICES), load_settings().voice.languages)
    for code in ("zh-cn", "zh-CN", "zh-Hans", "zh", "zh_CN"):
        assert all(code in voice.languages for voice in info.tts[0].voices), code
