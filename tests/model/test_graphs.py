"""The stage graphs from the real model against the ONNX Runtime reference (the shipped int8 graph).

Costs: one conversion into the data dir's graph cache (~10 s, then shared by every later test and run)
and ~15 s of CPU inference for four sentences.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME, alignment, frame_counts
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.graphs.conv_matmul import exact_here
from wyoming_fasttts.graphs.convert import GraphSet, ensure_graphs, verify
from wyoming_fasttts.graphs.convert import _load as load_cached
from wyoming_fasttts.text.g2p import phonemize
from wyoming_fasttts.text.normalize import normalize

SENTENCES = ["欢迎使用语音合成系统", "今天天气很好，我们一起去公园散步吧。", "现在是下午三点二十五分。"]
FLOAT_VS_INT8_DB = 3.5
"""Measured 2.3-2.8 dB: int8 weight noise plus the STFT rewrite, whose exact-zero Nyquist bin keeps that
bin's phase at +pi like torch.stft where ONNX Runtime's STFT leaves float noise that flips it to -pi at
random (ORT STFT float graph: 1.0-1.2 dB). Another voice on the same text is 9.8-15 dB away."""


@pytest.fixture(scope="module")
def setup() -> tuple[GraphSet, dict, dict[str, ort.InferenceSession]]:
    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei", "zm_yunxi"])
    graphs = ensure_graphs(assets.model, settings.assets.data_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    paths = {"full": assets.model, **{f"{f}-{s}": graphs.path(f, s) for f in ("float", "int8")
                                      for s in ("stage1", "stage2")}}
    sessions = {k: ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"]) for k, p in paths.items()}
    voices = {v: np.fromfile(assets.voice(v), np.float32).reshape(510, 256) for v in ("zf_xiaobei", "zm_yunxi")}
    return graphs, {"vocab": load_vocab(assets.vocab), "voices": voices}, sessions


def _inputs(text: str, data: dict, voice: str = "zf_xiaobei") -> dict[str, np.ndarray]:
    ids = phoneme_ids(phonemize(normalize(text)), data["vocab"])
    return {"tokens": np.array([[0, *ids, 0]], np.int64), "style": data["voices"][voice][len(ids) - 1][None],
            "speed": np.array([1.0], np.float32)}


def _two_stage(sessions: dict, flavour: str, feeds: dict, tail_frames: int,
               durations: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Audio and stage-1 durations; ``durations`` overrides stage 1's to compare stage 2 at equal lengths."""
    own, d, t_en = sessions[f"{flavour}-stage1"].run(None, feeds)
    frames = frame_counts(own if durations is None else durations, tail_frames)
    audio = sessions[f"{flavour}-stage2"].run(None, {"alignment": alignment(frames), "d": d, "t_en": t_en,
                                                     "style": feeds["style"]})[0]
    return audio, own


def test_float_stages_are_standard_onnx_tensorrt_can_take(setup) -> None:
    graphs, _, _ = setup
    for stage in ("stage1", "stage2"):
        model = onnx.load(str(graphs.path("float", stage)), load_external_data=False)
        ops = {n.op_type for n in model.graph.node}
        assert {n.domain for n in model.graph.node} <= {"", "ai.onnx"}
        assert ops.isdisjoint({"NonZero", "ScatterND", "Resize", "MatMulInteger", "ConvInteger", "DynamicQuantizeLSTM"})
    s1 = onnx.load(str(graphs.path("float", "stage1")), load_external_data=False).graph
    s2 = onnx.load(str(graphs.path("float", "stage2")), load_external_data=False).graph
    assert [i.name for i in s1.input] == ["tokens", "style", "speed"]
    assert [o.name for o in s1.output] == ["durations", "d", "t_en"]
    assert [i.name for i in s2.input] == ["alignment", "d", "t_en", "style"]
    assert [o.name for o in s2.output] == ["audio"]


def test_int8_convolutions_are_matrix_products_where_this_machine_multiplies_them_exactly(setup) -> None:
    # Where they are, test_stages_match_the_reference holds the rewritten stages to the shipped model's audio
    # to the bit; where they are not (no VNNI), the stages keep every ConvInteger (84 in stage 2; 3 of them,
    # strided (F0_conv, N_conv, noise_convs.0), stay in any case).
    graphs, _, _ = setup
    for stage in ("stage1", "stage2", "prosody", "render"):
        nodes = onnx.load(str(graphs.path("int8", stage))).graph.node
        convs = sum(n.op_type == "ConvInteger" for n in nodes)
        products = sum(n.op_type == "MatMulInteger" and n.output[0].endswith("/product") for n in nodes)
        assert (products > convs) == exact_here() and (products > 0) == exact_here(), (stage, convs, products)


@pytest.mark.parametrize("text", SENTENCES)
def test_stages_match_the_reference(setup, text: str) -> None:
    _, data, sessions = setup
    feeds = _inputs(text, data)
    reference = sessions["full"].run(None, feeds)[0]
    int8_audio, int8_durations = _two_stage(sessions, "int8", feeds, tail_frames=0)
    np.testing.assert_array_equal(int8_audio, reference)  # the cut itself changes nothing
    # Float and int8 predictors differ by int8 noise (28-31 dB SNR): a rounded duration may move by one frame.
    _, float_durations = _two_stage(sessions, "float", feeds, tail_frames=0)
    moved = np.abs(float_durations - int8_durations)
    assert moved.max() <= 1 and (moved > 0).mean() <= 0.1
    # With equal durations the float vocoder renders the same spectrum as the int8 reference.
    float_audio, _ = _two_stage(sessions, "float", feeds, tail_frames=0, durations=int8_durations)
    assert len(float_audio) == len(reference) == int(frame_counts(int8_durations, 0).sum()) * SAMPLES_PER_FRAME
    assert np.isfinite(float_audio).all()
    other_voice = sessions["full"].run(None, _inputs(text, data, "zm_yunxi"))[0]
    assert mel_distance_db(reference, float_audio) < FLOAT_VS_INT8_DB < mel_distance_db(reference, other_voice)


def test_tail_capping_removes_silence_not_speech(setup) -> None:
    _, data, sessions = setup
    feeds = _inputs(SENTENCES[0], data)
    reference = sessions["full"].run(None, feeds)[0]
    capped, durations = _two_stage(sessions, "int8", feeds, tail_frames=3)
    frames = frame_counts(durations, 0)
    assert len(capped) == len(reference) - (frames[-1] - 3) * SAMPLES_PER_FRAME
    other_voice = sessions["full"].run(None, _inputs(SENTENCES[0], data, "zm_yunxi"))[0]
    same_span = reference[: len(capped)]
    assert mel_distance_db(same_span, capped) < 6.0 < mel_distance_db(reference, other_voice)


def test_graph_cache_is_reused_and_checked(setup, tmp_path: Path) -> None:
    graphs, _, _ = setup
    assert verify(graphs) == []
    assert load_cached(graphs.directory, graphs.key) == graphs
    assert load_cached(graphs.directory, "another-key") is None
    # A copy whose manifest points at a truncated file is not a usable cache.
    broken = tmp_path / graphs.key
    broken.mkdir()
    manifest = json.loads((graphs.directory / "manifest.json").read_text())
    (broken / "manifest.json").write_text(json.dumps(manifest))
    for stages in manifest["flavours"].values():
        for entry in stages.values():
            (broken / entry["file"]).write_bytes(b"truncated")
    assert load_cached(broken, graphs.key) is None


WINDOWED_DB = 5.0
"""A windowed sentence against the same sentence rendered whole: measured 1.9-3.7 dB over the speech (12-30
frames of the first window alone: 3-5 dB; docs/BENCHMARKS.md, "stage 2 in frame windows"), about the int8
graphs' distance from the float ones; another voice is 9.8-15 dB away."""


def test_stage2_halves_render_it_exactly_and_in_windows_closely(setup) -> None:
    from wyoming_fasttts.backends.onnxruntime import Windowed, _Vocoder

    graphs, data, sessions = setup
    settings = dataclasses.replace(load_settings().engine.windows, frame_ms=8.0)  # pinned: no warm-up measures it
    windowed = Windowed(graphs.path("int8", "prosody"), graphs.path("int8", "render"), settings)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    vocoder = _Vocoder(graphs.path("int8", "stage2"), options, ["CPUExecutionProvider"], windowed)
    run_options = ort.RunOptions()
    text = "洗衣机已经完成了本次的洗涤程序，请及时晾晒衣物以免产生异味。"  # long enough for several windows
    durations, d, t_en = sessions["int8-stage1"].run(None, _inputs(text, data))
    frames = frame_counts(durations, 4)
    feeds = {"alignment": alignment(frames), "d": d, "t_en": t_en, "style": _inputs(text, data)["style"]}
    stage2 = sessions["int8-stage2"].run(None, feeds)[0].reshape(-1)
    np.testing.assert_array_equal(vocoder.whole(feeds, run_options), stage2)  # the same nodes, cut in two
    parts = list(vocoder.parts(feeds, frames, run_options))
    assert len(parts) >= 2 and len(parts[0]) == (int(frames[0]) + settings.first_frames) * SAMPLES_PER_FRAME
    joined = np.concatenate(parts)
    assert len(joined) == len(stage2)
    speech = int(frames[0]) * SAMPLES_PER_FRAME
    assert mel_distance_db(stage2[speech:], joined[speech:]) < WINDOWED_DB
