"""Batched graphs re-exported from the reference model: a padded row must give the audio of the row alone.

Costs: one export into the data dir's graph cache (~45 s on 2 cores, then shared by later runs) and ~25 s
of CPU inference (a batch of four sentences, each alone). Host helpers are tested without the model.
Exact per-row equality is proven in float64 eager (rows differ by <= 2e-8); in float32 the vocoder turns
reduction-order rounding over padded lengths into audio differences of ~1e-3..2e-2 (log-mel <= 0.04 dB),
against ~1 dB between float and int8 weights: the tolerances below sit between the two.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, STAGE2_INPUTS, stage1_feeds, stage2_feeds, unpad_audio
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.graphs.batched import ensure_batched_graphs
from wyoming_fasttts.text.g2p import phonemize
from wyoming_fasttts.text.normalize import normalize

SENTENCES = [("好的。", 1.0), ("欢迎使用语音合成系统", 1.1), ("现在是下午三点二十五分。", 0.9),
             ("今天天气很好，我们一起去公园散步吧。", 1.0)]
ROW_MAX_ABS = 0.05
ROW_MEL_DB = 0.1
_FORBIDDEN = {"Resize", "NonZero", "ScatterND", "Loop", "If"}  # TensorRT(-RTX) cannot build these here


def test_host_feeds_pad_and_unpad() -> None:
    items = [SynthesisItem(np.array([5, 6, 7]), np.full(256, 0.1, np.float32), 1.2),
             SynthesisItem(np.array([9]), np.full(256, 0.2, np.float32))]
    feeds1 = stage1_feeds(items)
    assert feeds1["tokens"].tolist() == [[0, 5, 6, 7, 0], [0, 9, 0, 0, 0]]
    assert feeds1["lengths"].tolist() == [5, 3]
    assert feeds1["speed"].tolist() == pytest.approx([1.2, 1.0])
    durations = np.array([[9, 2, 1, 3, 9], [4, 2, 4, 0, 0]], np.float32)
    d, t_en = np.zeros((2, 5, 640), np.float32), np.zeros((2, 512, 5), np.float32)
    feeds2 = stage2_feeds(durations, d, t_en, feeds1, 3)
    assert feeds2["frames"].tolist() == [9 + 2 + 1 + 3 + 3, 4 + 2 + 3]
    aln = feeds2["alignment"]
    assert aln.shape == (2, 5, 18)
    assert aln[1, :3, :9].sum(axis=1).tolist() == [4, 2, 3] and not aln[1, 3:].any() and not aln[1, :, 9:].any()
    assert (aln[0].sum(axis=0) == 1).all()
    clips = unpad_audio(np.arange(12, dtype=np.float32).reshape(2, 6), np.array([6, 2]))
    assert [c.tolist() for c in clips] == [[0, 1, 2, 3, 4, 5], [6, 7]]


@pytest.fixture(scope="module")
def setup():
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("kokoro") is None:
        pytest.skip("exporting needs the 'export' extra and kokoro (--no-deps)")
    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei"])
    graphs = ensure_batched_graphs(assets, settings.assets.data_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    sessions = [ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"])
                for p in (graphs.stage1, graphs.stage2)]
    vocab = load_vocab(assets.vocab)
    voice = np.fromfile(assets.voice("zf_xiaobei"), np.float32).reshape(510, 256)
    items = []
    for text, speed in SENTENCES:
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids, voice[len(ids) - 1], speed))
    return settings, assets, graphs, sessions, items


def _run(sessions, items, tail_frames):
    feeds1 = stage1_feeds(items)
    durations, d, t_en = sessions[0].run(None, feeds1)
    audio, lengths = sessions[1].run(None, stage2_feeds(durations, d, t_en, feeds1, tail_frames))
    return [durations[row, :n] for row, n in enumerate(feeds1["lengths"])], audio, lengths


def test_graphs_are_standard_and_dynamic(setup) -> None:
    _, _, graphs, _, _ = setup
    for path, inputs in ((graphs.stage1, STAGE1_INPUTS), (graphs.stage2, STAGE2_INPUTS)):
        model = onnx.load(str(path), load_external_data=False)
        assert [i.name for i in model.graph.input] == list(inputs)
        assert {n.domain for n in model.graph.node} <= {"", "ai.onnx"}
        assert not {n.op_type for n in model.graph.node} & _FORBIDDEN
        batch_dims = {i.type.tensor_type.shape.dim[0].dim_param for i in model.graph.input}
        assert batch_dims == {"B"}


def test_cache_is_reused(setup) -> None:
    settings, assets, graphs, _, _ = setup
    again = ensure_batched_graphs(assets, settings.assets.data_path)
    assert again == graphs
    assert graphs.directory.parent == settings.assets.data_path / "graphs"


@pytest.mark.parametrize("tail_frames", [0, 3])
def test_padded_rows_equal_rows_alone(setup, tail_frames: int) -> None:
    _, _, _, sessions, items = setup
    durations, audio, lengths = _run(sessions, items, tail_frames)
    assert len({len(item) for item in items}) == len(items)
    for row, item in enumerate(items):
        alone_durations, alone_audio, alone_lengths = _run(sessions, [item], tail_frames)
        assert np.array_equal(durations[row], alone_durations[0])
        assert lengths[row] == alone_lengths[0] == alone_audio.shape[1]
        assert not audio[row, lengths[row]:].any(), "padding past a row's end must be silent"
        ours, alone = audio[row, :lengths[row]], alone_audio[0]
        max_abs, mel = float(np.abs(ours - alone).max()), mel_distance_db(ours, alone)
        print(f"row {row}: {len(item)} ids, {lengths[row]} samples, max |diff| {max_abs:.1e}, log-mel {mel:.4f} dB")
        assert max_abs < ROW_MAX_ABS
        assert mel < ROW_MEL_DB


def test_batched_graph_matches_reference(setup) -> None:
    """The exported graph computes the reference model (not only itself consistently)."""
    from wyoming_fasttts.export.reference import ReferenceModel

    _, assets, _, sessions, items = setup
    reference = ReferenceModel(assets)
    for item in items[:2]:
        durations, audio, lengths = _run(sessions, [item], 0)
        expected = reference.synthesize(item.ids, item.style, item.speed)
        assert np.array_equal(durations[0].astype(np.int64), expected.durations)
        assert lengths[0] == len(expected.audio)
        assert mel_distance_db(audio[0], expected.audio) < 0.5  # measured 0.05-0.1 dB
