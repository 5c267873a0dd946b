"""Sentences from different requests batched by the scheduler give the audio each gives alone."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends import create_engine
from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.scheduler import Scheduler
from wyoming_fasttts.text import normalize, phonemize
from wyoming_fasttts.voices import VoiceBank

SENTENCES = ["好的。", "打开客厅的灯。", "现在是下午三点二十五分。", "今天天气很好，我们一起去公园散步吧。"]
VOICES = ["zf_xiaobei", "zm_yunxi", "zf_xiaoyi", "zm_yunjian"]


class _BatchSizes:
    def __init__(self) -> None:
        self.sizes: list[int] = []

    def batch_done(self, engine: str, size: int, seconds: float, audio_seconds: float) -> None:
        self.sizes.append(size)

    def batch_failed(self, engine: str, size: int, error: BaseException) -> None:
        raise AssertionError(f"batch of {size} failed: {error}")

    def queue_depth(self, depth: int) -> None:
        pass


@pytest.fixture(scope="module")
def batched():
    """The batched graphs on the CPU (the default there is batch 1; ``always`` forces them)."""
    settings = load_settings(overrides={"engine.backend": "onnxruntime", "engine.batched": "always",
                                        "scheduler.max_queue_delay_ms": 200.0})
    assets = ensure_assets(settings.assets)
    engine = create_engine(settings, assets)
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    items = []
    for text, voice in zip(SENTENCES, VOICES, strict=True):
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids, voices.style(voice, len(ids)), speed=1.0))
    return settings, engine, items


def test_batched_engine_takes_the_configured_batch(batched) -> None:
    settings, engine, _ = batched
    assert engine.max_batch == settings.scheduler.max_batch == 16


def test_scheduler_batches_requests_and_each_row_equals_the_sentence_alone(batched) -> None:
    """Four sentences queued together leave as one batch. (They are queued before the worker starts: a lone
    request on an idle engine leaves at once, so requests racing the worker could split 1 + 3.)"""
    settings, engine, items = batched
    observer = _BatchSizes()
    scheduler = Scheduler(engine, settings.scheduler, observer)

    async def together() -> tuple[list[np.ndarray], list[np.ndarray]]:
        tasks = [asyncio.create_task(scheduler.synthesize(item, order=0)) for item in items]
        while scheduler.depth < len(items):
            await asyncio.sleep(0)
        scheduler.start()
        rows = await asyncio.gather(*tasks)
        alone = [engine.run([item])[0] for item in items]
        await scheduler.stop(timeout=30)  # closes the engine
        return rows, alone

    rows, alone_audio = asyncio.run(together())
    assert observer.sizes == [4], "the four requests should have gone to the engine as one batch"
    for row, alone in zip(rows, alone_audio, strict=True):
        assert len(row) == len(alone)
        assert float(np.abs(row - alone).max()) < 0.05
        assert mel_distance_db(row, alone) < 0.1
