"""A request's window of sentences in flight follows the engine serving now, not the one it started on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from wyoming_fasttts.audio import SilenceTrimmer, to_pcm16
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.core import SynthesisItem
from wyoming_fasttts.synthesizer import Sentence, Speech


class HeldScheduler:
    """Holds every sentence until the test answers it; ``engine`` is what a reload swaps."""

    def __init__(self, max_batch: int) -> None:
        self.engine = SimpleNamespace(max_batch=max_batch)
        self.pending: list[asyncio.Future[np.ndarray]] = []
        self.arrived = asyncio.Event()

    async def synthesize(self, item: SynthesisItem, order: int = 0,
                         on_part: Callable[[np.ndarray], None] | None = None,
                         deadline: Callable[[], float] | None = None) -> np.ndarray:
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        self.arrived.set()
        return await future


async def _in_flight(scheduler: HeldScheduler, count: int) -> None:
    async def wait() -> None:
        while len(scheduler.pending) < count:
            scheduler.arrived.clear()
            await scheduler.arrived.wait()

    await asyncio.wait_for(wait(), 10)


def test_the_window_grows_when_a_reload_brings_a_batching_engine() -> None:
    scheduler = HeldScheduler(max_batch=1)
    synth = SimpleNamespace(scheduler=scheduler, settings=load_settings(),
                            voices=SimpleNamespace(style=lambda voice, n: np.zeros(256, np.float32)))
    sentence = Sentence("你好。", np.arange(1, 6, dtype=np.int64))

    async def scenario() -> list[int]:
        speech = Speech(synth, "zf_xiaobei", 1.0)
        adding = asyncio.create_task(speech.add([sentence] * 4))
        audio = speech.audio()
        await _in_flight(scheduler, 1)
        seen = [len(scheduler.pending)]
        scheduler.engine = SimpleNamespace(max_batch=3)  # the watchdog swapped in a batching engine
        scheduler.pending[0].set_result(np.zeros(2400, np.float32))
        await anext(audio)
        await _in_flight(scheduler, 4)  # the other three go out together
        seen.append(len(scheduler.pending))
        for future in scheduler.pending[1:]:
            future.set_result(np.zeros(2400, np.float32))
        await adding
        speech.close()
        async for _ in audio:
            pass
        return seen

    assert asyncio.run(scenario()) == [1, 4]


class PartsScheduler:
    """Hands each sentence over in the parts given, as a streaming engine's worker would: the first at once,
    the others once ``go`` is set (the rest of the sentence still rendering until then)."""

    def __init__(self, parts: list[np.ndarray]) -> None:
        self.engine = SimpleNamespace(max_batch=1)
        self.parts = parts
        self.go = asyncio.Event()
        self.given = 0
        self.streamed: list[bool] = []
        self.deadlines: list[Callable[[], float] | None] = []
        self.asked = asyncio.Event()

    async def synthesize(self, item: SynthesisItem, order: int = 0,
                         on_part: Callable[[np.ndarray], None] | None = None,
                         deadline: Callable[[], float] | None = None) -> np.ndarray:
        self.streamed.append(on_part is not None)
        self.deadlines.append(deadline)
        self.asked.set()
        if on_part is None:
            return np.concatenate(self.parts)
        for k, part in enumerate(self.parts):
            if k:
                await self.go.wait()
            self.given += 1
            on_part(part)
        return np.zeros(0, np.float32)


def _speech_like(seconds: float, pause_at: float, rate: int = 24000) -> np.ndarray:
    """A tone with silence before, after and in the middle, like a sentence with a pause."""
    t = np.arange(int(seconds * rate)) / rate
    tone = 0.3 * np.sin(2 * np.pi * 220 * t).astype(np.float32)
    tone[(t < 0.4) | (t > seconds - 0.8) | ((t > pause_at) & (t < pause_at + 0.3))] = 0.0
    return tone


def test_a_sentence_in_parts_is_heard_part_by_part_and_trimmed_as_if_whole() -> None:
    audio = _speech_like(3.0, 1.2)
    parts = np.split(audio, [36000, 48000, 60000])  # 1.5 s, then 0.5 s each: the pause straddles a seam
    scheduler = PartsScheduler(parts)
    settings = load_settings()
    synth = SimpleNamespace(scheduler=scheduler, settings=settings,
                            voices=SimpleNamespace(style=lambda voice, n: np.zeros(256, np.float32)))

    async def scenario() -> tuple[list[bytes], bytes]:
        speech = Speech(synth, "zf_xiaobei", 1.0)
        await speech.add([Sentence("你好。", np.arange(1, 6, dtype=np.int64))])
        speech.close()
        audio_out = speech.audio()
        pcm, last = await anext(audio_out)
        assert pcm and not last and scheduler.given == 1  # heard before the rest of the sentence is rendered
        scheduler.go.set()
        heard = [pcm] + [pcm async for pcm, _last in audio_out]
        return heard, to_pcm16(SilenceTrimmer(settings.audio).part(audio))

    heard, whole = asyncio.run(scenario())
    assert b"".join(heard) == whole  # the pause inside is kept, the edges trimmed as for the whole
    assert len([pcm for pcm in heard if pcm]) >= 2
    assert scheduler.streamed == [True]


def test_a_piece_whose_listener_is_still_listening_gets_the_time_its_audio_has_left() -> None:
    """The engine plans a later piece's parts to be ready as its listener reaches it (in one where the audio before
    covers its rendering): the first piece has no deadline; the second's is when the audio sent before it, as
    trimmed, has played (the edge silence counted, the next piece came ~1 s late on a slow CPU)."""
    scheduler = PartsScheduler([_speech_like(3.0, 1.2)])
    synth = SimpleNamespace(scheduler=scheduler, settings=load_settings(),
                            voices=SimpleNamespace(style=lambda voice, n: np.zeros(256, np.float32)))

    async def scenario() -> tuple[float, float, float, float]:
        speech = Speech(synth, "zf_xiaobei", 1.0)
        adding = asyncio.create_task(speech.add([Sentence("你好。", np.arange(1, 6, dtype=np.int64))] * 2))
        audio = speech.audio()
        before = time.monotonic()
        pcm, _last = await anext(audio)  # the first piece, trimmed, sent
        after = time.monotonic()
        await adding

        async def second_asked() -> None:  # before its audio is taken
            while len(scheduler.deadlines) < 2:
                scheduler.asked.clear()
                await scheduler.asked.wait()

        await asyncio.wait_for(second_asked(), 10)
        deadline = scheduler.deadlines[1]
        assert deadline is not None
        until = deadline()
        speech.close()
        async for _ in audio:
            pass
        return before, after, len(pcm) / (2 * 24000), until

    before, after, heard, until = asyncio.run(scenario())
    assert scheduler.streamed == [True, True] and scheduler.deadlines[0] is None  # the first: its listener waits
    assert heard < 2.5  # 3 s rendered, its edge silence trimmed
    assert before + heard <= until <= after + heard
