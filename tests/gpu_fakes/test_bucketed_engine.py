"""The bucketed graph engine (ONNX Runtime CUDA's, here on the CPU provider): padded rows equal rows alone.

The engine pads every batch to a bucket shape (rows, tokens, frames) and binds every tensor to a fixed
buffer; on CUDA each shape is then captured as a CUDA graph. What the CPU can check is everything but the
capture: the padding, the binding, stage 2 reading stage 1's outputs in place, and the split of a batch
into several stage-2 calls. Each row is compared with the same sentence alone through the plain batched
graphs, unpadded.
"""

from __future__ import annotations

import numpy as np
import pytest

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.buckets import Buckets
from wyoming_fasttts.backends.onnxruntime import BatchedOnnxRuntimeEngine, session_options
from wyoming_fasttts.backends.ort_graphs import GraphOnnxRuntimeEngine
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.graphs.batched import ensure_batched_graphs
from wyoming_fasttts.text import normalize, phonemize
from wyoming_fasttts.voices import VoiceBank

SENTENCES = ["好的。", "打开客厅的灯。", "现在是下午三点二十五分。"]
VOICES = ["zf_xiaobei", "zm_yunxi", "zf_xiaoyi"]
PADDING_DB = 0.5
"""Padding frames changes float32 rounding in stage 2's reductions, which the vocoder's phase amplifies
(measured 0.2-0.3 dB here; rows of one batch vs alone in float64 agree to 1e-8, docs/BATCHING.md). Token
padding alone is bit-exact. For scale: doctor's parity bound is 1 dB, another voice 10-15 dB."""


@pytest.fixture(scope="module")
def setup():
    settings = load_settings(overrides={"engine.backend": "onnxruntime"})
    assets = ensure_assets(settings.assets)
    graphs = ensure_batched_graphs(assets, settings.assets.data_path)
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    items = []
    for text, voice in zip(SENTENCES, VOICES, strict=True):
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids, voices.style(voice, len(ids)), speed=1.0))
    alone = BatchedOnnxRuntimeEngine(graphs.stage1, graphs.stage2, max_batch=4, threads=2, tail_frames=4)
    expected = [alone.synthesize(item) for item in items]
    alone.close()
    return graphs, items, expected


def _engine(graphs, batch_frames: int, batch_tokens: int = 0) -> GraphOnnxRuntimeEngine:
    buckets = Buckets.for_limits(max_batch=4, max_tokens=62, max_frames=192, batch_frames=batch_frames,
                                 batch_tokens=batch_tokens)
    return GraphOnnxRuntimeEngine(graphs.stage1, graphs.stage2, buckets=buckets, providers=["CPUExecutionProvider"],
                                  options=session_options(2), tail_frames=4, name="onnxruntime")


@pytest.mark.parametrize(("batch_frames", "batch_tokens"), [(768, 0), (192, 0), (768, 64)],
                         ids=["one stage-2 call", "split into calls", "stage 1 in two calls"])
def test_padded_rows_equal_rows_alone(setup, monkeypatch, batch_frames: int, batch_tokens: int) -> None:
    """batch_tokens 64: the long sentence (128-token bucket) runs stage 1 alone, the two short ones (32) as a pair."""
    graphs, items, expected = setup
    engine = _engine(graphs, batch_frames, batch_tokens)
    calls: list[tuple[int, ...]] = []
    run = engine.stage1.run

    def noted(shape: tuple[int, ...]) -> object:
        calls.append(shape)
        return run(shape)

    monkeypatch.setattr(engine.stage1, "run", noted)
    try:
        got = engine.synthesize_batch(items)  # 3 rows -> 4 (a repeated row), tokens and frames to buckets
    finally:
        engine.close()
    assert calls == ([(1, 128), (2, 32)] if batch_tokens else [(4, 128)])
    for (audio, frames), (ref_audio, ref_frames) in zip(got, expected, strict=True):
        assert np.array_equal(frames, ref_frames)
        assert len(audio) == len(ref_audio) == frames.sum() * 600
        assert mel_distance_db(ref_audio, audio) < PADDING_DB
