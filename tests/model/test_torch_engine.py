"""The torch-cuda engine's batch path (buckets, flat buffers, stage-2 calls split by frames) on the CPU, eager,
against the reference model alone: each row must be what its sentence is alone.

The CUDA parts (inductor, graph capture into one pool) run only on a GPU: benchmarks/h200_torch.sh there, and
doctor on a user's card. Here the engine runs eagerly on the CPU, which is everything but those two.
Costs: ~10 s to build the model, ~1 min to warm four shapes and render, ~35 s for dynamo to trace the paired stages.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the torch-cuda engine needs the 'torch' extra")
if importlib.util.find_spec("kokoro") is None:  # not imported: its __init__ pulls the English G2P stack
    pytest.skip("the torch-cuda engine needs kokoro (pip install --no-deps kokoro==0.9.4)", allow_module_level=True)

import torch

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends import create_engine
from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.torch_cuda import TorchGraphEngine, _memory_environment, create_torch_engine
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.core import EngineError
from wyoming_fasttts.doctor.checks import MEL_LIMIT_DB
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.export.reference import ReferenceModel
from wyoming_fasttts.text import normalize, phonemize
from wyoming_fasttts.voices import VoiceBank

# Stage 2 takes at most 256 row-frames a call: two short rows share one call at the 128-frame bucket, a long row
# (over 128 frames) takes a call of its own, so a batch of one of each is split in two and gathered. Short rows take
# the 64-token bucket in stage 1 and are padded to 128 tokens for stage 2.
SMALL = {"engine.buckets.rows": [1, 2], "engine.buckets.tokens": [64, 128], "engine.buckets.frames": [128, 256],
         "engine.max_tokens": 126, "engine.max_frames": 256, "engine.batch_frames": 256, "engine.tail_frames": 0,
         "scheduler.max_batch": 2, "scheduler.preferred_batch_sizes": [2]}
SHORT = [("好的。", "zf_xiaobei"), ("打开客厅的灯。", "zm_yunxi")]
LONG = ("今天天气很好，我们一起去公园散步吧。", "zf_xiaoyi")


@pytest.fixture(scope="module")
def setup() -> tuple[TorchGraphEngine, ReferenceModel, dict[str, SynthesisItem]]:
    settings = load_settings(overrides=SMALL)
    assets = ensure_assets(settings.assets)
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    items = {}
    for text, voice in (*SHORT, LONG):
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items[text] = SynthesisItem(ids, voices.style(voice, len(ids)))
    engine = create_torch_engine(settings, assets, device="cpu")
    engine.warmup()
    return engine, ReferenceModel(assets), items


@pytest.fixture(scope="module")
def one_slot(setup) -> TorchGraphEngine:
    """The same stages as an engine of one slot: a batch at a time, stage 2 reading d, t_en and style where stage 1
    left them (no hand-over copies)."""
    engine = setup[0]
    return TorchGraphEngine(*engine._stages, buckets=engine.buckets, tail_frames=0, device="cpu", compile=False,
                            slots=1)


def _same_as_alone(reference: ReferenceModel, item: SynthesisItem, audio: np.ndarray, frames: np.ndarray) -> None:
    alone = reference.synthesize(item.ids, item.style)
    assert np.array_equal(frames, alone.durations)
    assert len(audio) == len(alone.audio)
    assert mel_distance_db(audio, alone.audio) < MEL_LIMIT_DB


def test_the_cpu_build_runs_every_bucket_shape_eagerly(setup) -> None:
    engine, _, _ = setup
    assert (engine.device, engine.compiled, engine.graphs) == ("cpu", False, False)
    # Stage 2's shapes do not multiply by the token buckets: it takes every row at the largest.
    assert len(engine.warm_shapes()) == len(engine.shapes1) + len(engine.shapes2) == 4 + 3
    assert {tokens for _, tokens, _ in engine.shapes2} == {engine.stage2_tokens} == {128}
    assert engine.memory().extra["cuda_graphs"] == 0


@pytest.mark.parametrize("slots", [2, 1])
def test_rows_of_one_call_are_each_their_sentence_alone(setup, one_slot, slots) -> None:
    engine, reference, items = setup
    engine = engine if slots == 2 else one_slot
    batch = [items[text] for text, _ in SHORT]
    for item, (audio, frames) in zip(batch, engine.synthesize_batch(batch), strict=True):
        _same_as_alone(reference, item, audio, frames)


@pytest.mark.parametrize("slots", [2, 1])
def test_a_batch_split_over_two_stage_2_calls_keeps_each_row(setup, one_slot, slots) -> None:
    """The long row goes first in a call of its own; the short one's d, t_en and style are gathered to the
    front of stage 2's inputs for the second call."""
    engine, reference, items = setup
    engine = engine if slots == 2 else one_slot
    batch = [items[SHORT[0][0]], items[LONG[0]]]
    frames_long = reference.synthesize(items[LONG[0]].ids, items[LONG[0]].style).durations.sum()
    assert 128 < frames_long <= 256
    for item, (audio, frames) in zip(batch, engine.synthesize_batch(batch), strict=True):
        _same_as_alone(reference, item, audio, frames)


def test_with_the_lstms_that_reach_no_duration_in_float16_each_row_keeps_its_durations_and_sound(setup) -> None:
    """``engine.half_lstms: audio`` (cuDNN's persistent kernel on a GPU, torch's float16 LSTM here): each row's
    durations are its sentence's alone to the frame and its sound within doctor's limit; the engine says so."""
    _, reference, items = setup
    settings = load_settings(overrides={**SMALL, "engine.half_lstms": "audio"})
    engine = create_torch_engine(settings, ensure_assets(settings.assets), device="cpu")
    assert engine.replay.endswith("; 2 of the LSTMs in float16")
    batch = [items[text] for text, _ in SHORT]
    for item, (audio, frames) in zip(batch, engine.synthesize_batch(batch), strict=True):
        _same_as_alone(reference, item, audio, frames)


def test_a_batch_s_stage_1_runs_while_another_s_stage_2_does_and_each_keeps_its_rows(setup, monkeypatch) -> None:
    """Two slots: the second batch's stage 1 overwrites stage 1's outputs and inbox while the first batch's stage 2
    runs on its hand-over copy. The first stage 2 is held until the second stage 1 has run, so the test fails (by
    its timeout) if the stages cannot overlap, and each row must still be its sentence alone."""
    engine, reference, items = setup
    assert engine.slots == 2
    stage1, stage2 = engine._stages
    second_stage1_ran, first_stage2_began = threading.Event(), threading.Event()

    def held_stage2(*inputs: torch.Tensor) -> object:
        if not first_stage2_began.is_set():
            first_stage2_began.set()
            assert second_stage1_ran.wait(120), "the second batch's stage 1 did not run beside the first's stage 2"
        return stage2(*inputs)

    def noted_stage1(*inputs: torch.Tensor) -> object:
        outputs = stage1(*inputs)
        if first_stage2_began.is_set():
            second_stage1_ran.set()
        return outputs

    monkeypatch.setattr(engine, "_stages", (noted_stage1, held_stage2))
    first, second = [items[LONG[0]]], [items[text] for text, _ in SHORT]
    with ThreadPoolExecutor(2) as pool:
        done_first = pool.submit(engine.synthesize_batch, first)
        assert first_stage2_began.wait(120)
        done_second = pool.submit(engine.synthesize_batch, second)
        results = [*done_first.result(timeout=300), *done_second.result(timeout=300)]
    assert second_stage1_ran.is_set()
    for item, (audio, frames) in zip([*first, *second], results, strict=True):
        _same_as_alone(reference, item, audio, frames)


def test_a_batch_over_batch_tokens_runs_stage_1_in_calls_within_it_and_keeps_each_row(setup, monkeypatch) -> None:
    """``engine.batch_tokens`` 128: a pair at the 128-token bucket is over it, so a batch of the long sentence (128
    tokens) and a short one (64) runs as two, the long one first; each row is still its sentence alone, in order."""
    engine, reference, items = setup
    capped = TorchGraphEngine(*engine._stages, buckets=replace(engine.buckets, batch_tokens=128), tail_frames=0,
                              device="cpu", compile=False)
    assert (2, 128) not in capped.shapes1 and {(1, 128), (2, 64)} <= set(capped.shapes1)
    calls: list[tuple[int, int]] = []
    stage1 = capped._stage1

    def noted(feeds: dict[str, np.ndarray], rows: int, tokens: int) -> np.ndarray:
        calls.append((rows, tokens))
        return stage1(feeds, rows, tokens)

    monkeypatch.setattr(capped, "_stage1", noted)
    batch = [items[SHORT[0][0]], items[LONG[0]]]
    results = capped.synthesize_batch(batch)
    assert calls == [(1, 128), (1, 64)]
    for item, (audio, frames) in zip(batch, results, strict=True):
        _same_as_alone(reference, item, audio, frames)


def test_a_batch_over_the_largest_bucket_is_refused(setup) -> None:
    engine, _, items = setup
    with pytest.raises(EngineError, match="exceeds"):
        engine.run([items[LONG[0]]] * 3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_cuda_the_engine_says_so() -> None:
    settings = load_settings(overrides={"engine.backend": "torch-cuda"})
    with pytest.raises(EngineError, match="no CUDA device"):
        create_engine(settings, ensure_assets(settings.assets))


def test_a_compiled_engine_renders_a_lone_sentence_as_a_pair(setup, monkeypatch) -> None:
    """``paired_rows``: with inductor on there is no one-row bucket (dynamo would specialise a size of one into a
    second, slower compile), so a lone sentence runs as a pair, its row repeated and the copy dropped, through
    dynamo's tracing of the stages (its eager backend here: inductor's kernels are the GPU's, measured there). The
    long sentence's 2 x 256 row-frames exceed ``batch_frames`` (256), yet its pair has a shape of its own. Stage 2
    as the compiled GPU engine builds it, planar (2-D convolutions, compiled channels-last there), traces and
    renders the same way, with the two LSTMs that reach no duration in float16 (``engine.half_lstms: audio``: rows
    padded to 8 inside the traced stages)."""
    from torch._dynamo.utils import counters

    from wyoming_fasttts.backends import torch_cuda
    from wyoming_fasttts.export import reference as ref

    engine, reference, items = setup
    layouts: list[bool] = []

    def traced(module: torch.nn.Module, channels_last: bool = False) -> object:
        layouts.append(channels_last)
        return torch.compile(module, backend="eager", dynamic=True)

    monkeypatch.setattr(torch_cuda, "_compiled", traced)
    assets = ensure_assets(load_settings(overrides=SMALL).assets)
    kmodel = ref.build_kmodel(assets.model, load_vocab(assets.vocab), deterministic=True)
    for planar, half in ((False, "none"), (True, "audio")):
        compiled = TorchGraphEngine(ref.BatchedDurations(kmodel, one_call_lstms=True, half_lstms=half),
                                    ref.BatchedVocoder(kmodel, "fp32", planar=planar, one_call_lstms=True,
                                                       fused_products=True, half_lstms=half),
                                    buckets=engine.buckets, tail_frames=0, device="cpu", compile=True, graphs=False)
        assert engine.buckets.rows == (1, 2) and compiled.buckets.rows == (2,) and compiled.max_batch == 2
        assert (2, 128, 256) in compiled.shapes2 and (2, 128, 256) not in engine.shapes2
        counters.clear()
        for text in (SHORT[1][0], LONG[0]):
            [(audio, frames)] = compiled.synthesize_batch([items[text]])
            _same_as_alone(reference, items[text], audio, frames)
        assert counters["stats"]["unique_graphs"] > 0  # dynamo traced the stages: the pair ran the compiled path
    assert layouts == [False, False, False, True]  # only a planar stage 2 is compiled channels-last


def test_an_lstm_s_two_directions_in_one_call_give_its_two_calls_outputs() -> None:
    """The torch-cuda engine's stages run each bidirectional LSTM as one LSTM of twice the width (``OneCallLSTM``,
    block-diagonal weights); the exported graphs run the two directions one after the other. Every valid step of
    every row, full-length, short and one step long, must be the same (the zero blocks add exact zeros)."""
    from wyoming_fasttts.export.lstm import LengthAwareLSTM, OneCallLSTM

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(40, 16, batch_first=True, bidirectional=True)
    two, one = LengthAwareLSTM(lstm), OneCallLSTM(lstm)
    x, lengths = torch.randn(3, 12, 40), torch.tensor([12, 5, 1])
    with torch.no_grad():
        expected, got = two(x, lengths), one(x, lengths)
    for row, length in enumerate(lengths.tolist()):
        torch.testing.assert_close(got[row, :length], expected[row, :length], rtol=0, atol=1e-6)
    assert got.shape == expected.shape == (3, 12, 32)


def test_the_shipped_example_s_memory_keys_reach_the_environment_and_the_user_s_own_win(monkeypatch, caplog) -> None:
    """The README starts examples/torch-cuda.yaml with no variables: its keys must become the ones the twenty-sixth
    pass measured (the libraries read them once, so only the process environment carries them), and a value the
    user exported is theirs to keep."""
    example = Path(__file__).parents[2] / "examples" / "torch-cuda.yaml"
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False")
    with caplog.at_level("INFO", logger="wyoming_fasttts.backends.torch_cuda"):
        _memory_environment(load_settings(example).engine)
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:1"
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:False"
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False (the environment's)" in caplog.text
