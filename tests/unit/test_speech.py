"""A request's window of sentences in flight follows the engine serving now, not the one it started on."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np

from wyoming_fasttts.config import load_settings
from wyoming_fasttts.core import SynthesisItem
from wyoming_fasttts.synthesizer import Sentence, Speech


class HeldScheduler:
    """Holds every sentence until the test answers it; ``engine`` is what a reload swaps."""

    def __init__(self, max_batch: int) -> None:
        self.engine = SimpleNamespace(max_batch=max_batch)
        self.pending: list[asyncio.Future[np.ndarray]] = []
        self.arrived = asyncio.Event()

    async def synthesize(self, item: SynthesisItem, order: int = 0) -> np.ndarray:
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
