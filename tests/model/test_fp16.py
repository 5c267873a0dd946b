"""Stage 2 in fp16 (``engine.precision: fp16``): finite audio close to float32's, on real sentences, in torch;
and stage 2 planar (``BatchedVocoder(planar=True)``, the compiled GPU engine's: 2-D convolutions on [B, C, 1, T]),
the same sums as the 1-D one.

A plain fp16 vocoder gives NaN (the harmonic phase's sine, the instance-norm sums over ~1e5 steps, ``exp``);
``reference.BatchedVocoder(kmodel, "fp16")`` keeps those in float32 islands. Torch's CPU runs fp16
convolutions (slowly: ~90 s on 2 cores for two short rows), so the module the fp16 graph is exported from is
checked here, masks and padding included (a batch of two lengths); the exported graph itself is checked on the
GPU by ``doctor`` and ``benchmarks/gpu_fp16_torch.py`` / ``gpu_variants.py --part P``.

Bounds: fp16 against float32 measured 0.10 / 0.19 dB log-mel for these two sentences (CPU, 2026-12-01, in a
batch with a longer one, which gave 0.41 dB; 0.12-0.48 dB on the H200), against 0.19-0.22 dB between ONNX
Runtime CUDA fp32 and the CPU reference in ``doctor`` and ~1 dB between float and int8 weights.

Planar against 1-D (float32, here): 0.03-0.05 dB log-mel on three rows of random ids (2026-12-06), where scaling
the style by 1 + 1e-4 gives 0.22 dB: a convolution's sums in another order, through a chaotic vocoder. The fp16
planar stage 2 the engine compiles is held to the CPU reference by ``doctor`` on the GPU (0.24-0.35 dB, twenty-first
pass, docs/BENCHMARKS.md).

Stage 2 with its small products fused (``products``), against the plain one: the style projections to the bit, the
harmonic mix summed in another order 1e-5 / 5e-4 dB (float32, here, 2026-12-07).

Both stages with the LSTMs that reach no duration in float16 (``half_lstms="audio"``, cuDNN's persistent kernel on a
GPU): the durations and stage 1's d to the bit, 0.14-0.16 dB log-mel on three rows (torch's CPU float16 LSTM,
2026-12-07; "all" six gave 0.11-0.22 dB there, its durations equal on those rows).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, STAGE2_INPUTS, stage1_feeds, stage2_feeds
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.parity import mel_distance_db
from wyoming_fasttts.text.g2p import phonemize
from wyoming_fasttts.text.normalize import normalize
from wyoming_fasttts.voices import VoiceBank

SENTENCES = ["好的。", "欢迎使用语音合成系统"]
MEL_DB = 0.35
PLANAR_MEL_DB = 0.15
FUSED_MEL_DB = 0.01
HALF_LSTMS_MEL_DB = 0.3


@pytest.fixture(scope="module")
def audio() -> dict[str, Any]:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("kokoro") is None:
        pytest.skip("the reference model needs the 'export' extra and kokoro (--no-deps)")
    import torch

    from wyoming_fasttts.export import reference

    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei"])
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    items = []
    for text in SENTENCES:
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids, voices.style("zf_xiaobei", len(ids)), speed=1.0))
    kmodel = reference.build_kmodel(assets.model, vocab, deterministic=True)
    feeds1 = stage1_feeds(items)
    stage1 = reference.BatchedDurations(kmodel).eval()
    with torch.inference_mode():
        out = stage1(*(torch.from_numpy(feeds1[n]) for n in STAGE1_INPUTS))
    feeds2 = stage2_feeds(*(x.numpy() for x in out), feeds1, tail_frames=4)
    args = [torch.from_numpy(feeds2[n]) for n in STAGE2_INPUTS]
    result: dict[str, Any] = {"kmodel": kmodel, "held": {"kmodel": _storages(kmodel), "stage1": _storages(stage1)}}
    for name, precision, planar, fused in (("fp32", "fp32", False, False), ("fp16", "fp16", False, False),
                                           ("planar", "fp32", True, False), ("fused", "fp32", False, True)):
        vocoder = reference.BatchedVocoder(kmodel, precision, planar=planar, fused_products=fused).eval()
        with torch.inference_mode():
            samples, lengths = vocoder(*args)
        result[name] = (samples.numpy(), lengths.numpy())
        result["held"][name] = _storages(vocoder)
    half1 = reference.BatchedDurations(kmodel, one_call_lstms=True, half_lstms="audio").eval()
    half2 = reference.BatchedVocoder(kmodel, one_call_lstms=True, half_lstms="audio").eval()
    with torch.inference_mode():
        out_half = half1(*(torch.from_numpy(feeds1[n]) for n in STAGE1_INPUTS))
        feeds_half = stage2_feeds(*(x.numpy() for x in out_half), feeds1, tail_frames=4)
        samples, lengths = half2(*(torch.from_numpy(feeds_half[n]) for n in STAGE2_INPUTS))
    result["half_lstms"] = (samples.numpy(), lengths.numpy())
    result["stage1"] = {"fp32": [x.numpy() for x in out], "half_lstms": [x.numpy() for x in out_half]}
    return result


def _storages(module) -> dict[int, int]:
    """Bytes of each tensor storage the module holds, by address."""
    return {t.data_ptr(): t.numel() * t.element_size() for t in (*module.parameters(), *module.buffers())}


def test_the_two_stages_hold_each_weight_once_in_either_precision(audio) -> None:
    """A GPU holding both stages holds no weight twice: stage 1 and stage 2 share no tensor, and stage 2 in fp16
    copies only its own parts (it used to copy the whole KModel: 625 MB for the pair instead of 248)."""
    held = audio["held"]
    for variant in ("fp32", "fp16", "planar", "fused"):
        assert not held["stage1"].keys() & held[variant].keys()
    assert sum(held["stage1"].values()) + sum(held["fp16"].values()) < sum(held["kmodel"].values())
    # a planar stage 2 holds its own copy, each weight once (its 2-D weights are views of that copy's 1-D ones), and
    # so does one whose style projections are one product (their weights moved into it)
    assert sum(held["planar"].values()) == sum(held["fused"].values()) == sum(held["fp32"].values())


def test_fp16_stage_2_keeps_float32_inputs_and_outputs_and_the_lengths(audio) -> None:
    (ref, ref_lengths), (half, half_lengths) = audio["fp32"], audio["fp16"]
    assert half.dtype == ref.dtype == np.float32
    assert half.shape == ref.shape
    assert np.array_equal(half_lengths, ref_lengths)


def test_fp16_stage_2_is_finite_and_close_to_float32(audio) -> None:
    (ref, lengths), (half, _) = audio["fp32"], audio["fp16"]
    assert np.isfinite(half).all()
    for row, n in enumerate(lengths):
        assert mel_distance_db(ref[row, :n], half[row, :n]) < MEL_DB
        assert not half[row, n:].any(), "padding past a row's end must stay silent"
        assert 0.5 < np.abs(half[row, :n]).max() / np.abs(ref[row, :n]).max() < 2


def test_precision_is_checked() -> None:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("kokoro") is None:
        pytest.skip("the reference model needs the 'export' extra and kokoro (--no-deps)")
    from torch import nn

    from wyoming_fasttts.export import reference

    with pytest.raises(ValueError, match="precision"):
        reference.BatchedVocoder(nn.Module(), "bf16")


def test_planar_stage_2_renders_what_the_1d_one_does(audio) -> None:
    """The compiled engine's stage 2 runs its convolutions as 2-D ones (cuDNN's NHWC without layout transforms):
    the same lengths, silence past each row's end, and the same sound."""
    (ref, ref_lengths), (planar, lengths) = audio["fp32"], audio["planar"]
    assert planar.shape == ref.shape and np.array_equal(lengths, ref_lengths)
    for row, n in enumerate(lengths):
        assert mel_distance_db(ref[row, :n], planar[row, :n]) < PLANAR_MEL_DB
        assert not planar[row, n:].any()


def test_stage_2_with_its_small_products_fused_renders_what_the_plain_one_does(audio) -> None:
    """The torch-cuda engine's stage 2 projects each style half once for all its AdaIN norms and mixes the source's
    harmonics by a sum (``fused_products``): the same sums in another order, so the same lengths, silence past
    each row's end and the same sound (measured 1e-5 and 5e-4 dB on these two rows, 2026-12-07)."""
    (ref, ref_lengths), (fused, lengths) = audio["fp32"], audio["fused"]
    assert fused.shape == ref.shape and np.array_equal(lengths, ref_lengths)
    for row, n in enumerate(lengths):
        assert mel_distance_db(ref[row, :n], fused[row, :n]) < FUSED_MEL_DB
        assert not fused[row, n:].any()


def test_the_lstms_that_reach_no_duration_run_in_float16_to_the_same_durations_and_sound(audio) -> None:
    """``engine.half_lstms: audio``: stage 1's text encoder and stage 2's prosody LSTM in float16 (a persistent
    cuDNN kernel on a GPU), the four LSTMs that decide the durations in float32: durations and d to the bit, the
    text features within float16 rounding, and the same lengths, silence and sound."""
    (durations, d, t_en), (half_durations, half_d, half_t_en) = audio["stage1"]["fp32"], audio["stage1"]["half_lstms"]
    assert np.array_equal(half_durations, durations) and np.array_equal(half_d, d)
    assert half_t_en.dtype == np.float32 and 0 < np.abs(half_t_en - t_en).max() < 1e-2
    (ref, ref_lengths), (half, lengths) = audio["fp32"], audio["half_lstms"]
    assert half.dtype == np.float32 and half.shape == ref.shape and np.array_equal(lengths, ref_lengths)
    for row, n in enumerate(lengths):
        assert mel_distance_db(ref[row, :n], half[row, :n]) < HALF_LSTMS_MEL_DB
        assert not half[row, n:].any()


def test_half_lstms_picks_two_of_the_six_for_audio_and_all_for_all(audio) -> None:
    """The two stages' LSTMs in float16 by ``engine.half_lstms``; float16 needs their directions in one call."""
    import torch

    from wyoming_fasttts.export import reference
    from wyoming_fasttts.export.lstm import OneCallLSTM

    kmodel = audio["kmodel"]

    def half(mode: str) -> list[str]:
        stages = (reference.BatchedDurations(kmodel, one_call_lstms=True, half_lstms=mode),
                  reference.BatchedVocoder(kmodel, one_call_lstms=True, half_lstms=mode))
        return sorted(name for stage in stages for name, m in stage.lstms.items()
                      if isinstance(m, OneCallLSTM) and m.lstm.weight_hh_l0.dtype == torch.float16)

    assert half("none") == []
    assert half("audio") == ["predictor/shared", "text_encoder/lstm"]
    assert len(half("all")) == 6
    with pytest.raises(ValueError, match="one_call_lstms"):
        reference.BatchedDurations(kmodel, half_lstms="audio")
    with pytest.raises(ValueError, match="half_lstms must be one of none, audio, all"):
        reference.BatchedVocoder(kmodel, one_call_lstms=True, half_lstms="some")


def test_the_planar_upsampling_is_the_depthwise_transposed_convolution() -> None:
    """AdainResBlk1d's pool, a depthwise ConvTranspose1d, written as elementwise sums for the planar stage 2."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("kokoro") is None:
        pytest.skip("the reference model needs the 'export' extra and kokoro (--no-deps)")
    import torch
    from torch import nn

    from wyoming_fasttts.export import reference

    torch.manual_seed(0)
    conv = nn.ConvTranspose1d(16, 16, kernel_size=3, stride=2, groups=16, padding=1, output_padding=1)
    x = torch.randn(3, 16, 11)
    with torch.inference_mode():
        expected = conv(x)
        got = reference._PlanarUpsample(conv)(x.unsqueeze(2)).squeeze(2)
    assert got.shape == expected.shape == (3, 16, 22)
    assert torch.allclose(got, expected, atol=1e-6)
