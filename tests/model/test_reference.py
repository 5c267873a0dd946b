"""The reference PyTorch model (KModel + weights recovered from the shipped int8 graph) against that graph.

Costs: ~10 s to build the model from the int8 file, ~10-30 s of eager CPU inference for three sentences.
Needs the 'export' extra (torch, transformers, kokoro --no-deps); without it the module reports a skip.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import onnxruntime as ort
import pytest

pytest.importorskip("torch", reason="the reference model needs the 'export' extra")
if importlib.util.find_spec("kokoro") is None:  # not imported: its __init__ pulls the English G2P stack
    pytest.skip("the reference model needs kokoro (pip install --no-deps kokoro==0.9.4)", allow_module_level=True)

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.export.reference import ReferenceModel
from wyoming_fasttts.text.g2p import phonemize
from wyoming_fasttts.text.normalize import normalize

SENTENCES = ["欢迎使用语音合成系统", "好的。", "今天天气很好，我们一起去公园散步吧。"]
INT8_NOISE_DB = 2.5
"""Float weights vs the int8 graph at equal durations: measured 0.67-1.26 dB; another voice is ~10-15 dB."""
_INT8_DURATIONS = "/encoder/Clip_output_0"  # the shipped graph's rounded durations, at the expansion


@pytest.fixture(scope="module")
def setup() -> tuple[ReferenceModel, ort.InferenceSession, dict[str, int], np.ndarray]:
    assets = ensure_assets(load_settings().assets, voices=["zf_xiaobei"])
    graph = onnx.load(str(assets.model))
    graph.graph.output.append(onnx.helper.make_empty_tensor_value_info(_INT8_DURATIONS))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(graph.SerializeToString(), options, providers=["CPUExecutionProvider"])
    voice = np.fromfile(assets.voice("zf_xiaobei"), np.float32).reshape(510, 256)
    return ReferenceModel(assets), session, load_vocab(assets.vocab), voice


def test_matches_shipped_int8_graph(setup) -> None:
    model, session, vocab, voice = setup
    compared = []
    for text in SENTENCES:
        ids = phoneme_ids(phonemize(normalize(text)), vocab).tolist()
        style = voice[len(ids) - 1]
        ours = model.synthesize(ids, style)
        audio, durations = session.run(None, {"tokens": np.array([[0, *ids, 0]], np.int64), "style": style[None],
                                              "speed": np.array([1.0], np.float32)})
        durations = durations.reshape(-1).astype(np.int64)
        assert np.isfinite(ours.audio).all()
        # int8 activation noise may move a rounded duration by one frame, nothing more
        assert np.abs(ours.durations - durations).max() <= 1, text
        assert (ours.durations == durations).mean() >= 0.9, text
        assert len(ours.audio) == 600 * ours.durations.sum()
        if np.array_equal(ours.durations, durations):
            distance = mel_distance_db(ours.audio, audio)
            print(f"{text}: {len(ids)} ids, durations identical, log-mel distance to int8 {distance:.2f} dB")
            assert len(ours.audio) == len(audio)
            assert distance < INT8_NOISE_DB, text
            compared.append(text)
    assert compared, "int8 noise moved a duration in every sentence: no audio was compared at equal length"


def test_eager_is_deterministic(setup) -> None:
    """The deterministic source makes eager output repeatable (parity tests and benchmarks rely on it)."""
    model, _, vocab, voice = setup
    ids = phoneme_ids(phonemize(normalize(SENTENCES[1])), vocab).tolist()
    first, second = (model.synthesize(ids, voice[len(ids) - 1], speed=1.2) for _ in range(2))
    assert np.array_equal(first.audio, second.audio)
    assert np.array_equal(first.durations, second.durations)
