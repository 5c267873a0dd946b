"""Kokoro-82M v1.0 as a PyTorch model again: the reference code, with the weights of the shipped int8 graph.

The model ships only as an int8 ONNX export whose batch is fixed at 1. Batched graphs, eager GPU
inference and any future re-export need the model as code; the code is ``kokoro.model.KModel`` (PyPI
``kokoro``, Apache-2.0), and its weights are the export's initializers, dequantised by the same rewrite
the stage graphs use (``dequantize``) and matched to parameter names through the exporting node's scope.
Weight norm was folded by the export, so it is removed from the module here and the folded weight loaded
as is. Two parts are replaced so that the eager model computes what the shipped graph computes: the
iSTFT (the export's own basis and gain, 1.5x ``torch.istft``, so every engine has one loudness) and,
optionally, the source's random phase and noise (``deterministic``, which parity tests need).

Torch and kokoro are build-time tools (the ``export`` extra); nothing in the server imports this module.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import re
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

from ..assets import ModelAssets, load_vocab
from ..core import HALF_LSTMS, check_precision
from ..graphs.dequantize import dequantize
from .lstm import LengthAwareLSTM, OneCallLSTM
from .products import HarmonicMix, StyleProjections

KOKORO_V1: dict[str, Any] = {
    "dim_in": 64, "dropout": 0.2, "hidden_dim": 512, "max_conv_dim": 512, "max_dur": 50,
    "multispeaker": True, "n_layer": 3, "n_mels": 80, "n_token": 178, "style_dim": 128,
    "text_encoder_kernel_size": 5,
    "istftnet": {
        "upsample_kernel_sizes": [20, 12], "upsample_rates": [10, 6], "gen_istft_hop_size": 5,
        "gen_istft_n_fft": 20, "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
        "resblock_kernel_sizes": [3, 7, 11], "upsample_initial_channel": 512,
    },
    "plbert": {
        "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 2048,
        "max_position_embeddings": 512, "num_hidden_layers": 12, "dropout": 0.1,
    },
}
"""Kokoro-82M v1.0's architecture (its published config.json less the vocabulary, which is an asset)."""

STYLE_SPLIT = 128
"""``style[:128]`` conditions the decoder, ``style[128:]`` the prosody predictor."""

_REPO_ID = "hexgrad/Kokoro-82M"  # only names the architecture to KModel; nothing is downloaded


def kokoro_modules() -> types.SimpleNamespace:
    """``kokoro.model`` and ``kokoro.istftnet`` without ``kokoro/__init__``, which imports the G2P pipeline."""
    if "kokoro" not in sys.modules:
        spec = importlib.util.find_spec("kokoro")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("the reference model needs the 'export' extra: pip install 'wyoming-fasttts[export]'"
                              " (kokoro itself with --no-deps)")
        sys.modules["kokoro"] = importlib.util.module_from_spec(spec)  # the package, its __init__ not run
    from kokoro import istftnet, model

    return types.SimpleNamespace(KModel=model.KModel, SineGen=istftnet.SineGen, AdaIN1d=istftnet.AdaIN1d)


# ----------------------------------------------------------------------------------------------- weights

def _module_path(node_name: str) -> str:
    """Exporting node name -> KModel module path.

    Node names are the traced module scopes, each spelled with its parent's list index
    (``/encoder/text_encoder/cnn.0/cnn.0.0/Conv`` is ``text_encoder.cnn.0.0``); KModel sat under
    ``encoder`` and the decoder under ``decoder.decoder``, and F0Ntrain's blocks lost ``predictor``.
    """
    path: list[str] = []
    for scope in node_name.strip("/").split("/")[:-1]:
        parts = scope.split(".")
        overlap = next((k for k in range(min(len(path), len(parts)), 0, -1) if path[-k:] == parts[:k]), 0)
        path += parts[overlap:]
    joined = ".".join(path)
    if joined.startswith("decoder.decoder."):
        return joined[len("decoder."):]
    joined = joined.removeprefix("encoder.")
    if re.match(r"(F0|N)(\.\d+|_proj)(\.|$)|shared(\.|$)", joined):
        joined = "predictor." + joined
    return joined


def _lstm_gates(x: np.ndarray) -> np.ndarray:
    """ONNX gate blocks (i, o, f, c) along axis 0 -> torch's (i, f, g, o)."""
    i, o, f, c = np.split(x, 4, axis=0)
    return np.concatenate([i, f, c, o], axis=0)


def recover_state_dict(model_path: Path, expected: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Weights for a weight-norm-free KModel whose state dict keys/shapes are ``expected``.

    Raises if any key is left unfilled or a shape disagrees, so a different export fails loudly.
    """
    graph = dequantize(onnx.load(str(model_path))).graph
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    found: dict[str, np.ndarray] = {}

    def put(key: str, value: np.ndarray) -> None:
        if key in found and not np.array_equal(found[key], value):
            raise ValueError(f"two different weights for {key}")
        found[key] = value

    for node in graph.node:
        heavy = [i for i in node.input if i in weights and weights[i].ndim >= 2]
        path = _module_path(node.name)
        if not heavy or (f"{path}.weight" not in expected and f"{path}.weight_ih_l0" not in expected):
            continue  # ALBERT's 11 repeated calls of its one shared layer, the iSTFT basis
        if node.op_type in ("Conv", "ConvTranspose"):
            put(f"{path}.weight", weights[node.input[1]])
            if len(node.input) > 2 and node.input[2]:
                put(f"{path}.bias", weights[node.input[2]])
        elif node.op_type == "MatMul":
            put(f"{path}.weight", weights[node.input[1]].T)
        elif node.op_type == "Gather":
            put(f"{path}.weight", weights[node.input[0]])
        elif node.op_type == "LSTM":
            w, r, b = (weights[node.input[k]] for k in (1, 2, 3))
            for direction, suffix in enumerate(("", "_reverse")):
                put(f"{path}.weight_ih_l0{suffix}", _lstm_gates(w[direction]))
                put(f"{path}.weight_hh_l0{suffix}", _lstm_gates(r[direction]))
                bias_ih, bias_hh = np.split(b[direction], 2)
                put(f"{path}.bias_ih_l0{suffix}", _lstm_gates(bias_ih))
                put(f"{path}.bias_hh_l0{suffix}", _lstm_gates(bias_hh))
    for key, like in expected.items():
        if key in found:
            continue
        scope = "decoder." if key.startswith("decoder.") else "encoder."
        if scope + key in weights:
            found[key] = weights[scope + key]
        elif re.search(r"\.norm\.(weight|bias)$", key):
            # AdaIN's InstanceNorm is affine only to dodge an old exporter bug: identity, not in the export
            found[key] = np.ones(like.shape, np.float32) if key.endswith("weight") else np.zeros(like.shape, np.float32)
        elif key.startswith("bert.pooler."):
            found[key] = np.zeros(like.shape, np.float32)  # ALBERT's pooler: KModel never uses it
    missing = sorted(set(expected) - set(found))
    if missing:
        raise ValueError(f"{len(missing)} parameters not found in {model_path.name}: {missing[:5]}")
    state = {}
    for key, like in expected.items():
        value = torch.from_numpy(np.array(found[key], dtype=np.float32))
        if value.shape != like.shape:
            raise ValueError(f"{key}: export has {tuple(value.shape)}, model wants {tuple(like.shape)}")
        state[key] = value
    return state


def _remove_weight_norm(model: nn.Module) -> None:
    """The export folded weight norm into plain weights; computing it again per call would only cost time."""
    for module in model.modules():
        if hasattr(module, "weight_g"):
            torch.nn.utils.remove_weight_norm(module)
        elif torch.nn.utils.parametrize.is_parametrized(module, "weight"):
            torch.nn.utils.parametrize.remove_parametrizations(module, "weight")


# ----------------------------------------------------------------------------------- shipped-graph parts

def _phase(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    """atan2 spelled out, so torch and every ONNX runtime agree where it is discontinuous.

    Silent stretches feed the STFT a constant, whose bins have a zero (+0 or -0) imaginary part: there
    ``torch.atan2`` and the exporter's Atan/Where rewrite disagree (+pi vs -pi), and the vocoder hears it.
    Here a zero of either sign on the negative real axis is +pi (what eager KModel gives for silence).
    """
    base = torch.atan(im / re)
    phase = torch.where(re < 0, torch.where(im >= 0, base + torch.pi, base - torch.pi), base)
    on_axis = torch.where(im > 0, torch.pi / 2, torch.where(im < 0, -torch.pi / 2, 0.0))
    return torch.where(re == 0, on_axis, phase)


class ShippedSTFT(nn.Module):
    """The generator's STFT and iSTFT exactly as the shipped graph computes them (standard conv ops).

    Forward: reflect-padded, periodic Hann, as ``torch.stft``. Inverse: a transposed convolution with the
    export's pseudo-inverse basis times 4 (= n_fft / hop), i.e. 1.5x ``torch.istft`` with no window-envelope
    division, except that the export divides its first 20 samples by one frame's squared window (a baked
    trace-time envelope), which after trimming scales the first 10 output samples; kept so both agree.
    """

    def __init__(self, n_fft: int, hop: int) -> None:
        super().__init__()
        self.n_fft, self.hop, self.pad = n_fft, hop, n_fft // 2
        window = torch.hann_window(n_fft, periodic=True, dtype=torch.float64).numpy()
        k, n = np.arange(n_fft // 2 + 1), np.arange(n_fft)
        angle = 2 * np.pi * np.outer(k, n) / n_fft
        fourier = np.concatenate([np.cos(angle), -np.sin(angle)])            # [2K, n_fft]
        forward = fourier * window
        inverse = np.linalg.pinv(n_fft / hop * fourier).T * window
        head = np.full(self.pad, n_fft / hop) / window[self.pad:] ** 2          # first output samples' gain
        self.register_buffer("forward_basis", torch.tensor(forward[:, None, :], dtype=torch.float32))
        self.register_buffer("inverse_basis", torch.tensor(inverse[:, None, :], dtype=torch.float32))
        self.register_buffer("head_gain", torch.tensor(head, dtype=torch.float32))
        self.gain = n_fft / hop

    def spectrum(self, padded: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Magnitude and phase [B, K, frames] of an already padded signal [B, N]."""
        re, im = F.conv1d(padded.unsqueeze(1), self.forward_basis, stride=self.hop).chunk(2, dim=1)
        return torch.sqrt(re * re + im * im), _phase(re, im)

    def transform(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.spectrum(F.pad(x.unsqueeze(1), (self.pad, self.pad), mode="reflect").squeeze(1))

    def overlap_add(self, magnitude: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        """[B, K, frames] -> [B, 1, (frames - 1) * hop] before the head gain (shared with batched graphs)."""
        parts = torch.cat([magnitude * torch.cos(phase), magnitude * torch.sin(phase)], dim=1)
        return F.conv_transpose1d(parts, self.inverse_basis, stride=self.hop)[..., self.pad:-self.pad]

    def inverse(self, magnitude: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        audio = self.overlap_add(magnitude, phase)
        return torch.cat([audio[..., :self.pad] * self.head_gain, audio[..., self.pad:] * self.gain], dim=-1)


def deterministic_sine(sine_gen: nn.Module, f0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """SineGen without its random initial phase and additive noise, as the export computes it.

    ``f0`` is [B, N, 1] at the sample rate; returns the 9 harmonics [B, N, 9] and the voicing [B, N, 1].
    """
    harmonics = torch.arange(1, sine_gen.dim + 1, dtype=f0.dtype, device=f0.device)
    rad = torch.remainder(f0 * harmonics / sine_gen.sampling_rate, 1.0)
    scale = sine_gen.upsample_scale
    rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / scale, mode="linear")
    phase = torch.cumsum(rad, dim=2) * (2 * torch.pi * scale)
    phase = F.interpolate(phase, scale_factor=scale, mode="linear").transpose(1, 2)
    uv = (f0 > sine_gen.voiced_threshold).to(f0.dtype)
    return torch.sin(phase) * sine_gen.sine_amp * uv, uv


class _DeterministicSineGen(nn.Module):
    """Drop-in for ``SineGen`` inside ``SourceModuleHnNSF`` (same three outputs, noise all zero)."""

    def __init__(self, original: nn.Module) -> None:
        super().__init__()
        self.original = original

    def forward(self, f0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        sine, uv = deterministic_sine(self.original, f0)
        return sine, uv, torch.zeros_like(sine)


# ----------------------------------------------------------------------------------------------- model

def build_kmodel(model_path: Path, vocab: dict[str, int], deterministic: bool = True) -> nn.Module:
    """KModel (cpu, eval) with the shipped weights, the shipped iSTFT and optionally a deterministic source."""
    KModel = kokoro_modules().KModel
    empty = io.BytesIO()
    torch.save({}, empty)
    empty.seek(0)
    model = KModel(repo_id=_REPO_ID, config={**KOKORO_V1, "vocab": vocab}, model=empty).eval()
    _remove_weight_norm(model)
    model.load_state_dict(recover_state_dict(model_path, model.state_dict()), strict=True)
    generator = model.decoder.generator
    ist = KOKORO_V1["istftnet"]
    generator.stft = ShippedSTFT(ist["gen_istft_n_fft"], ist["gen_istft_hop_size"])
    if deterministic:
        generator.m_source.l_sin_gen = _DeterministicSineGen(generator.m_source.l_sin_gen)
    return model.requires_grad_(False)


@dataclass(frozen=True)
class Synthesis:
    audio: np.ndarray
    """float32 mono at 24 kHz."""
    durations: np.ndarray
    """int64 frames per token of ``[0, *ids, 0]``."""


class ReferenceModel:
    """Eager PyTorch Kokoro: the yardstick for every graph and the 'PyTorch eager' benchmark row."""

    def __init__(self, assets: ModelAssets, device: str = "cpu", deterministic: bool = True) -> None:
        self.device = torch.device(device)
        self.kmodel = build_kmodel(assets.model, load_vocab(assets.vocab), deterministic).to(self.device)

    @torch.inference_mode()
    def synthesize(self, ids: Sequence[int], style: np.ndarray, speed: float = 1.0) -> Synthesis:
        """One sentence: ``ids`` without the boundary pads, ``style`` its voice row [256]."""
        tokens = torch.tensor([[0, *ids, 0]], dtype=torch.long, device=self.device)
        ref = torch.as_tensor(np.asarray(style, np.float32).reshape(1, -1), device=self.device)
        audio, durations = self.kmodel.forward_with_tokens(tokens, ref, speed)
        return Synthesis(audio.float().cpu().numpy().reshape(-1), durations.cpu().numpy().reshape(-1))


# --------------------------------------------------------------------------------------- batched forward
# The same model over a padded batch, written so that each row computes exactly what the row computes
# alone: every reduction over time is masked to the row's length, every convolution sees zeros past the
# row's end (as it would see its zero padding), LSTMs run per row length (the reverse direction on rows
# reversed within their length), and resampling clamps at the row's own last frame. It uses only ops
# every ONNX parser knows (no Resize, NonZero, ScatterND or LSTM sequence_lens).

_MASK_BIAS = -1e4
"""Attention logit added for padded keys: exp() underflows to exactly 0, and it stays finite in fp16."""


def _mask(lengths: torch.Tensor, size: int | torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """[B, 1, size] of ``dtype``: 1 inside each row's length (the activations' dtype: fp16 stage 2 masks in fp16)."""
    return (torch.arange(size, device=lengths.device)[None, :] < lengths[:, None]).unsqueeze(1).to(dtype)


def _instance_norm(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """InstanceNorm1d (biased variance) over each row's valid steps; zero past them."""
    count = mask.sum(dim=-1, keepdim=True)
    mean = (x * mask).sum(dim=-1, keepdim=True) / count
    centred = (x - mean) * mask
    return centred / torch.sqrt((centred * centred).sum(dim=-1, keepdim=True) / count + eps)


def _per_channel(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A per-channel value ([B, C] or [1, C, 1]) broadcastable against ``x``: [B, C, T], or [B, C, 1, T] in a
    planar stage 2 (``BatchedVocoder``'s ``planar``). Unsqueezed, as the export always traced it."""
    for _ in range(x.dim() - v.dim()):
        v = v.unsqueeze(-1)
    return v


def _adain(norm: nn.Module, x: torch.Tensor, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    gamma, beta = _per_channel(norm.fc(s), x).chunk(2, dim=1)
    if x.dtype == torch.float32:
        return ((1 + gamma) * _instance_norm(x, mask) + beta) * mask
    return _adain_half(x, gamma, beta, mask)


def _adain_half(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, mask: torch.Tensor,
                eps: float = 1e-5) -> torch.Tensor:
    """``_adain`` on fp16 activations: the statistics in float32, applied in fp16.

    The sums run over up to 2F x 60 steps (~123k at 1024 frames), which overflow fp16 (65504) and lose
    its 11-bit mantissa long before; mean and variance are therefore taken in float32 (the style's ``fc``
    stays float32 too). Applying them is elementwise and stays in fp16: ``x - mean`` of two nearby fp16
    values is exact, so the result is as precise as ``x`` itself, at half the memory traffic of float32.
    """
    xf, m = x.float(), mask.float()
    count = m.sum(dim=-1, keepdim=True)
    mean = (xf * m).sum(dim=-1, keepdim=True) / count
    centred = (xf - mean) * m
    scale = (1 + gamma) / torch.sqrt((centred * centred).sum(dim=-1, keepdim=True) / count + eps)
    return ((x - mean.to(x.dtype)) * scale.to(x.dtype) + beta.to(x.dtype)) * mask


def _upsample2(x: torch.Tensor) -> torch.Tensor:
    """Nearest-neighbour x2 along time (the last axis) without Resize."""
    return x.unsqueeze(-1).expand(*[-1] * x.dim(), 2).reshape(*x.shape[:-1], -1)


def _adain_resblk(block: nn.Module, x: torch.Tensor, s: torch.Tensor, mask_in: torch.Tensor,
                  mask_out: torch.Tensor) -> torch.Tensor:
    """``AdainResBlk1d`` (prosody F0/N and decoder blocks)."""
    upsample = block.upsample_type != "none"
    r = block.actv(_adain(block.norm1, x, s, mask_in))
    if upsample:
        r = block.pool(r) * mask_out
    r = block.conv1(r)
    r = block.conv2(block.actv(_adain(block.norm2, r, s, mask_out)))
    shortcut = _upsample2(x) if upsample else x
    if block.learned_sc:
        shortcut = block.conv1x1(shortcut)
    return (r + shortcut) * 2 ** -0.5


def _snake(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    if alpha.dtype != x.dtype:  # fp16 stage 2: the export folds this cast of a parameter into the constant
        alpha = alpha.to(x.dtype)
    alpha = _per_channel(alpha, x)
    return x + (1 / alpha) * torch.sin(alpha * x) ** 2


def _adain_resblock1(block: nn.Module, x: torch.Tensor, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``AdaINResBlock1`` (generator resblocks and noise_res)."""
    for c1, c2, n1, n2, a1, a2 in zip(block.convs1, block.convs2, block.adain1, block.adain2,
                                      block.alpha1, block.alpha2, strict=True):
        xt = c1(_snake(_adain(n1, x, s, mask), a1))
        x = x + c2(_snake(_adain(n2, xt, s, mask), a2))
    return x


# The KModel parts each stage runs (``_parts``); the two lists cover the whole KModel but its stand-alone LSTMs,
# which the stages hold only as length-aware copies (``lstm.LengthAwareLSTM``).
_STAGE1_PARTS = ("bert", "bert_encoder", "predictor.text_encoder", "predictor.duration_proj", "text_encoder")
_STAGE2_PARTS = ("predictor.F0", "predictor.N", "predictor.F0_proj", "predictor.N_proj", "decoder")
_STAGE2_LSTMS = ("predictor.shared",)


def _parts(kmodel: nn.Module, paths: Sequence[str],
           convert: Callable[[nn.Module], nn.Module] | None = None) -> nn.Module:
    """A tree holding only the KModel submodules at ``paths``, each at its own path (``k.predictor.F0``).

    Why: each stage holds what it runs and nothing else, so a device holding both stages holds every weight once
    (the stages share the submodules; ``convert`` gives a stage its own converted copies instead) and neither
    stage carries the other's (stage 1 never runs the decoder, stage 2 never runs the text encoders).
    """
    root = nn.Module()
    for path in paths:
        *parents, leaf = path.split(".")
        node = root
        for name in parents:
            if name not in node._modules:
                node.add_module(name, nn.Module())
            node = node.get_submodule(name)
        part = kmodel.get_submodule(path)
        node.add_module(leaf, convert(part) if convert else part)
    return root


_AUDIO_LSTMS = ("text_encoder.lstm", "predictor.shared")
"""``HALF_LSTMS``' "audio": stage 1's text encoder (its features t_en only go to stage 2) and stage 2's prosody LSTM.
The other four (the duration encoder's three and the duration LSTM) decide the durations: in float16 on this CPU
they changed 2 of 6233 over 57 sentences (2026-12-07, docs/BENCHMARKS.md, thirty-first pass)."""


class _Batched(nn.Module):
    """Shared by both stages: the KModel parts a stage runs (``k``) and length-aware copies of its LSTMs, each with
    its directions in one call where ``one_call_lstms`` (``lstm.OneCallLSTM``: the torch-cuda engine's; the
    exported graphs keep two, the LSTM every ONNX parser knows), those ``half_lstms`` picks (``HALF_LSTMS``) in
    float16 (one call only: ``OneCallLSTM(half=True)``, cuDNN's persistent kernel)."""

    def __init__(self, kmodel: nn.Module, parts: Sequence[str], lstms: Sequence[str],
                 convert: Callable[[nn.Module], nn.Module] | None = None, one_call_lstms: bool = False,
                 half_lstms: str = "none") -> None:
        super().__init__()
        if half_lstms not in HALF_LSTMS:
            raise ValueError(f"half_lstms must be one of {', '.join(HALF_LSTMS)}, not {half_lstms!r}")
        if half_lstms != "none" and not one_call_lstms:
            raise ValueError("half_lstms needs one_call_lstms (cuDNN's persistent kernel runs one direction)")
        self.k = _parts(kmodel, parts, convert)

        def form(name: str) -> nn.Module:
            lstm: nn.LSTM = kmodel.get_submodule(name)  # type: ignore[assignment]
            half = half_lstms == "all" or (half_lstms == "audio" and name in _AUDIO_LSTMS)
            return OneCallLSTM(lstm, half=half) if one_call_lstms else LengthAwareLSTM(lstm)

        self.lstms = nn.ModuleDict({name.replace(".", "/"): form(name) for name in lstms})

    def lstm(self, name: str, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.lstms[name.replace(".", "/")](x, lengths)


class BatchedDurations(_Batched):
    """Stage 1: padded tokens -> per-token frame counts and the features stage 2 aligns."""

    def __init__(self, kmodel: nn.Module, fused_attention: bool = False, one_call_lstms: bool = False,
                 half_lstms: str = "none") -> None:
        super().__init__(kmodel, _STAGE1_PARTS, [name for name, m in kmodel.named_modules()
                                                 if isinstance(m, nn.LSTM) and name not in _STAGE2_LSTMS],
                         one_call_lstms=one_call_lstms, half_lstms=half_lstms)
        self.fused_attention = fused_attention
        """ALBERT's attention as one ``scaled_dot_product_attention`` call instead of the matrix products and softmax
        the ONNX export writes (``export.batched``): the same arithmetic (durations equal, d within 1e-4 on the CPU)
        without the [B, heads, T, T] scores in memory, 96 MiB each at 8 rows of 512 tokens in fp32. Those set the
        peak of the torch-cuda engine's stage-1 graphs, which have a pool of their own with two slots: fused, the
        server of examples/torch-cuda.yaml holds 1644-1650 MiB of device memory instead of 1708-1710, its speed
        and doctor's parity unchanged (an H100, 2026-12-06, side by side, docs/BENCHMARKS.md, twenty-fifth pass)."""

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor, style: torch.Tensor,
                speed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """tokens [B, T] int64 (``[0, *ids, 0]`` then zeros), lengths [B], style [B, 256], speed [B] ->
        durations [B, T] float (rounded, >= 1; 0 on padding), d [B, T, 640], t_en [B, 512, T]."""
        k = self.k
        mask = _mask(lengths, tokens.shape[1])
        d_en = k.bert_encoder(self._albert(tokens, mask)).transpose(-1, -2)
        s = style[:, STYLE_SPLIT:]
        d = self._duration_encoder(d_en, s, lengths, mask)
        x = self.lstm("predictor.lstm", d, lengths)
        durations = torch.sigmoid(k.predictor.duration_proj(x)).sum(dim=-1) / speed[:, None]
        durations = torch.clamp(torch.round(durations), min=1) * mask[:, 0]
        return durations, d, self._text_encoder(tokens, lengths, mask)

    def _albert(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        bert = self.k.bert
        emb = bert.embeddings
        x = (emb.word_embeddings(tokens) + emb.token_type_embeddings.weight[0]
             + emb.position_embeddings.weight[: tokens.shape[1]])
        x = bert.encoder.embedding_hidden_mapping_in(emb.LayerNorm(x))
        layer = bert.encoder.albert_layer_groups[0].albert_layers[0]
        att = layer.attention
        bias = (1 - mask[:, None]) * _MASK_BIAS                                 # [B, 1, 1, T]

        def heads(y: torch.Tensor) -> torch.Tensor:
            return y.reshape(y.shape[0], y.shape[1], att.num_attention_heads, -1).transpose(1, 2)

        for _ in range(bert.config.num_hidden_layers):
            q, key, v = heads(att.query(x)), heads(att.key(x)), heads(att.value(x))
            if self.fused_attention:
                context = F.scaled_dot_product_attention(q, key, v, attn_mask=bias, scale=att.scaling)
            else:
                probs = torch.softmax(torch.matmul(q, key.transpose(2, 3)) * att.scaling + bias, dim=-1)
                context = torch.matmul(probs, v)
            context = context.transpose(1, 2).reshape(x.shape)
            x = att.LayerNorm(x + att.dense(context))
            x = layer.full_layer_layer_norm(layer.ffn_output(layer.activation(layer.ffn(x))) + x)
        return x

    def _duration_encoder(self, x: torch.Tensor, s: torch.Tensor, lengths: torch.Tensor,
                          mask: torch.Tensor) -> torch.Tensor:
        encoder = self.k.predictor.text_encoder
        styles = s.unsqueeze(-1).expand(-1, -1, x.shape[2])
        x = torch.cat([x, styles], dim=1) * mask
        for i, block in enumerate(encoder.lstms):
            if i % 2:   # AdaLayerNorm
                x = torch.cat([block(x.transpose(-1, -2), s).transpose(-1, -2), styles], dim=1) * mask
            else:
                x = self.lstm(f"predictor.text_encoder.lstms.{i}", x.transpose(-1, -2), lengths)
                x = x.transpose(-1, -2) * mask
        return x.transpose(-1, -2)

    def _text_encoder(self, tokens: torch.Tensor, lengths: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        encoder = self.k.text_encoder
        x = encoder.embedding(tokens).transpose(1, 2) * mask
        for block in encoder.cnn:
            x = block(x) * mask
        x = self.lstm("text_encoder.lstm", x.transpose(1, 2), lengths)
        return x.transpose(1, 2) * mask


def _half_convolutions(part: nn.Module) -> nn.Module:
    """A copy of a stage-2 part whose convolutions (and transposed ones) hold fp16 weights; the rest unchanged.

    A copy, because the KModel it comes from may build a float32 stage 2 too (doctor, the fp16 tests), and
    only the parts stage 2 runs are copied (``_STAGE2_PARTS``; stage 1 shares none of them). Linear layers
    (the AdaIN style projections, the source's ``l_linear``) and the STFT bases keep float32: they run in the
    float32 islands.
    """
    half = copy.deepcopy(part)
    for module in half.modules():
        if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)):
            module.half()
    return half


class _PlanarConv(nn.Module):
    """A Conv1d or ConvTranspose1d as its 2-D twin over [B, C, 1, T] (a kernel one step high): the same sums."""

    def __init__(self, conv: nn.Conv1d | nn.ConvTranspose1d) -> None:
        super().__init__()
        if not isinstance(conv.padding, tuple) or conv.padding_mode != "zeros":
            raise ValueError(f"{conv}: only zero padding of fixed size has a planar twin here")
        self.transposed = isinstance(conv, nn.ConvTranspose1d)
        self.weight = nn.Parameter(conv.weight.detach().unsqueeze(2), requires_grad=False)
        self.bias = None if conv.bias is None else nn.Parameter(conv.bias.detach(), requires_grad=False)
        self.stride, self.padding, self.dilation = (1, conv.stride[0]), (0, conv.padding[0]), (1, conv.dilation[0])
        self.groups, self.output_padding = conv.groups, (0, conv.output_padding[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.transposed:
            return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                      self.groups, self.dilation)
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _PlanarUpsample(nn.Module):
    """``AdainResBlk1d``'s ``pool`` (a depthwise ConvTranspose1d: kernel 3, stride 2, padding 1, output padding 1)
    as the elementwise sums it is: y[2m] = w1 x[m] + b, y[2m + 1] = w0 x[m + 1] + w2 x[m] + b.

    Why: a depthwise convolution is one of cuDNN's grouped ones, which have no tensor-core kernels, while this is
    three multiply-adds that inductor fuses into the elementwise work around it."""

    def __init__(self, conv: nn.ConvTranspose1d) -> None:
        super().__init__()
        weight = conv.weight.detach()[:, 0]                                             # [C, 3]
        self.taps = nn.Parameter(weight.T.reshape(3, 1, -1, 1, 1).contiguous(), requires_grad=False)
        bias = conv.bias.detach() if conv.bias is not None else torch.zeros_like(weight[:, 0])
        self.bias = nn.Parameter(bias.reshape(1, -1, 1, 1), requires_grad=False)

    @staticmethod
    def fits(conv: nn.Module) -> bool:
        return (isinstance(conv, nn.ConvTranspose1d) and conv.kernel_size == (3,) and conv.stride == (2,)
                and conv.padding == (1,) and conv.output_padding == (1,) and conv.dilation == (1,)
                and conv.groups == conv.in_channels == conv.out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w0, w1, w2 = self.taps
        following = F.pad(x[..., 1:], (0, 1))
        even = x * w1 + self.bias
        odd = following * w0 + x * w2 + self.bias
        return torch.stack([even, odd], dim=-1).reshape(*x.shape[:-1], -1)


_FEW_CHANNELS = 32
"""A convolution with fewer channels than this on either side stays 1-D in a planar stage 2 (``_FlatConv``)."""


class _FlatConv(nn.Module):
    """A Conv1d left 1-D inside a planar stage 2: [B, C, 1, T] in and out, the convolution itself on [B, C, T].

    For the convolutions with a side of few channels (the F0 and noise convolutions, 1 and 22 channels;
    ``conv_post``'s 22; the prosody projections' 1), which cuDNN's NHWC tensor-core kernels cannot take (they need
    channels in multiples of 8). They were kept 1-D first for a generic kernel cuDNN chose at 8 rows (95 of 109 ms),
    which this did not move: it was a wide convolution's, gone once cuDNN times its algorithms. Kept because the
    planar stage 2 was measured and checked with them so (stage 2 of 16 rows 0.92 x the 1-D one, against 0.88 with
    every convolution planar on another machine: not told apart; doctor, the server runs; an H100, 2026-12-06,
    docs/BENCHMARKS.md, twenty-first pass). They are a small share of the work."""

    def __init__(self, conv: nn.Conv1d) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x.squeeze(2)).unsqueeze(2)


def _planar_convolutions(part: nn.Module) -> nn.Module:
    """``part`` with every Conv1d / ConvTranspose1d replaced by its 2-D twin (``_PlanarConv``, ``_PlanarUpsample``)
    or, where it has few channels, wrapped (``_FlatConv``), in place (a part that is one, e.g.
    ``predictor.F0_proj``, is returned replaced); ``BatchedVocoder(planar=True)`` runs it on [B, C, 1, T]
    activations."""
    def planar(module: nn.Module) -> nn.Module | None:
        if _PlanarUpsample.fits(module):
            return _PlanarUpsample(module)  # type: ignore[arg-type]
        if not isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)):
            return None
        if isinstance(module, nn.Conv1d) and min(module.in_channels, module.out_channels) < _FEW_CHANNELS:
            return _FlatConv(module)
        return _PlanarConv(module)

    for module in list(part.modules()):
        for name, child in list(module.named_children()):
            if (twin := planar(child)) is not None:
                setattr(module, name, twin)
    return planar(part) or part


def _stage2_copy(precision: str, planar: bool, own: bool) -> Callable[[nn.Module], nn.Module] | None:
    """How stage 2 takes its parts from the KModel: shared as they are (float32, 1-D, nothing replaced: not
    ``own``), else a converted copy."""
    converted = _half_convolutions if precision == "fp16" else None
    if not planar:
        return converted or (copy.deepcopy if own else None)
    first = converted or copy.deepcopy
    return lambda part: _planar_convolutions(first(part))


class BatchedVocoder(_Batched):
    """Stage 2: host-built alignment and stage-1 features -> audio of every row, with its length.

    ``precision="fp16"`` runs the vocoder's convolutions and elementwise work in fp16 (half the memory
    traffic, tensor-core convolutions) with float32 islands where fp16 fails: the prosody LSTM, the
    instance-norm statistics (``_adain_half``), the harmonic source (a cumulative phase reaching ~1e5
    radians, whose sine fp16 cannot resolve) with its STFT and atan phase, and the tail (``exp`` of the
    log-magnitude overflows fp16 past 11, the iSTFT). Inputs and outputs stay float32 either way, so
    engines, buffers and TensorRT profiles are the same for both.

    ``planar=True`` runs the vocoder's convolutions as 2-D ones on [B, C, 1, T] activations (the source and the
    STFT stay 1-D): the same sums, for inductor, whose layout optimisation makes only 2-D convolutions and the
    elementwise work around them channels-last (NHWC, cuDNN's layout for fp16 tensor cores). With 1-D
    convolutions cuDNN wraps each call in an NCHW->NHWC and an NHWC->NCHW transform: 6.3 of the 22.6 ms of a
    fused fp16 stage 2 of 16 rows (an H100, 2026-12-06, docs/BENCHMARKS.md, twentieth pass). Not exported.

    ``fused_products=True`` projects each style half once for all its AdaIN norms and mixes the source's harmonics
    by a sum inductor fuses (``products``: two cuBLAS calls where there were 71). Not exported.
    """

    def __init__(self, kmodel: nn.Module, precision: str = "fp32", planar: bool = False,
                 one_call_lstms: bool = False, fused_products: bool = False, half_lstms: str = "none") -> None:
        check_precision(precision)
        super().__init__(kmodel, _STAGE2_PARTS, _STAGE2_LSTMS, _stage2_copy(precision, planar, fused_products),
                         one_call_lstms, half_lstms)
        self.dtype = torch.float16 if precision == "fp16" else torch.float32
        self.planar = planar
        self.styles: nn.ModuleDict | None = None
        if fused_products:  # the parts are this stage's own copy (_stage2_copy): their fc and l_linear are replaced
            k, adain = self.k, kokoro_modules().AdaIN1d
            self.styles = nn.ModuleDict({"predictor": StyleProjections([k.predictor.F0, k.predictor.N], adain),
                                         "decoder": StyleProjections([k.decoder], adain)})
            source = k.decoder.generator.m_source
            source.l_linear = HarmonicMix(source.l_linear)

    def forward(self, alignment: torch.Tensor, d: torch.Tensor, t_en: torch.Tensor, style: torch.Tensor,
                frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """alignment [B, T, F] (row b: one-hot columns for its first ``frames[b]`` frames, zeros after),
        d [B, T, 640], t_en [B, 512, T], style [B, 256], frames [B] int64 ->
        audio [B, 600 F] (zeros past each row's end), audio_lengths [B] = 600 frames."""
        k = self.k
        n_frames = alignment.shape[2]
        m1, m2 = self._mask(frames, n_frames), self._mask(2 * frames, 2 * n_frames)
        s_pred, s_dec = style[:, STYLE_SPLIT:], style[:, :STYLE_SPLIT]
        if self.styles is not None:  # each half projected for all its norms: they read their columns (StyleColumns)
            s_pred, s_dec = self.styles["predictor"](s_pred), self.styles["decoder"](s_dec)
        en = torch.matmul(d.transpose(-1, -2), alignment)
        shared = self.lstm("predictor.shared", en.transpose(-1, -2), frames).transpose(-1, -2)
        shared = self._lift(self._to(shared))
        f0 = self._prosody(k.predictor.F0, k.predictor.F0_proj, shared, s_pred, m1, m2)
        noise = self._prosody(k.predictor.N, k.predictor.N_proj, shared, s_pred, m1, m2)
        dec = k.decoder
        asr = self._lift(self._to(torch.matmul(t_en, alignment)))   # one-hot columns: the same as casting t_en first
        f0_down = dec.F0_conv(self._lift(f0.unsqueeze(1))) * m1
        noise_down = dec.N_conv(self._lift(noise.unsqueeze(1))) * m1
        x = _adain_resblk(dec.encode, torch.cat([asr, f0_down, noise_down], dim=1), s_dec, m1, m1)
        asr_res = dec.asr_res(asr)
        mask = m1
        for block in dec.decode:
            if mask is m1:
                x = torch.cat([x, asr_res, f0_down, noise_down], dim=1)
            out_mask = m2 if block.upsample_type != "none" else mask
            x = _adain_resblk(block, x, s_dec, mask, out_mask)
            mask = out_mask
        return self._generator(x, s_dec, f0, 2 * frames)

    def _to(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` in the activations' dtype (no op, and no graph node, in float32)."""
        return x if x.dtype == self.dtype else x.to(self.dtype)

    def _lift(self, x: torch.Tensor) -> torch.Tensor:
        """[B, C, T] -> the activations' rank: [B, C, 1, T] where ``planar``."""
        return x.unsqueeze(2) if self.planar else x

    def _lower(self, x: torch.Tensor) -> torch.Tensor:
        """The activations' rank -> [B, C, T]."""
        return x.squeeze(2) if self.planar else x

    def _mask(self, lengths: torch.Tensor, size: int | torch.Tensor) -> torch.Tensor:
        """``_mask`` in the activations' dtype and rank."""
        return self._lift(_mask(lengths, size, self.dtype))

    def _prosody(self, blocks: nn.ModuleList, proj: nn.Module, x: torch.Tensor, s: torch.Tensor,
                 m1: torch.Tensor, m2: torch.Tensor) -> torch.Tensor:
        mask = m1
        for block in blocks:
            out_mask = m2 if block.upsample_type != "none" else mask
            x = _adain_resblk(block, x, s, mask, out_mask)
            mask = out_mask
        return self._lower(proj(x) * m2).squeeze(1)

    def _generator(self, x: torch.Tensor, s: torch.Tensor, f0: torch.Tensor,
                   steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``Generator.forward`` from [B, 512, 2F] features and the F0 curve [B, 2F] (``steps`` = 2 frames).

        The source, its STFT and the tail from ``exp`` on run in float32 whatever ``self.dtype`` is.
        """
        gen = self.k.decoder.generator
        stft: ShippedSTFT = gen.stft
        upsample = gen.m_source.l_sin_gen.original.upsample_scale
        n_samples = steps * upsample
        source = self._source(f0 if f0.dtype == torch.float32 else f0.float(), steps)
        har = torch.cat(stft.spectrum(self._reflect_pad(source, n_samples, stft.pad)), dim=1)
        n_spec = n_samples // stft.hop + 1
        har = self._lift(self._to(har * _mask(n_spec, har.shape[2])))
        lengths = steps
        for i in range(gen.num_upsamples):
            x = F.leaky_relu(x, 0.1) * self._mask(lengths, x.shape[-1])
            last = i == gen.num_upsamples - 1   # its output gains one step of reflection padding
            stride = gen.ups[i].stride[-1]
            lengths = n_spec if last else lengths * stride
            mask = self._mask(lengths, x.shape[-1] * stride + (1 if last else 0))
            x_source = _adain_resblock1(gen.noise_res[i], gen.noise_convs[i](har), s, mask)
            x = gen.ups[i](x)
            if last:
                x = F.pad(x, (1, 0, 0, 0), mode="reflect") if self.planar else gen.reflection_pad(x)
            x = x + x_source
            blocks = gen.resblocks[i * gen.num_kernels:(i + 1) * gen.num_kernels]
            x = sum(_adain_resblock1(b, x, s, mask) for b in blocks) / gen.num_kernels
        x, mask = self._lower(gen.conv_post(F.leaky_relu(x) * mask)), self._lower(mask)
        if x.dtype != torch.float32:
            x, mask = x.float(), mask.float()
        bins = gen.post_n_fft // 2 + 1
        audio = stft.overlap_add(torch.exp(x[:, :bins]) * mask, torch.sin(x[:, bins:]))[:, 0]
        audio = torch.cat([audio[:, :stft.pad] * stft.head_gain, audio[:, stft.pad:] * stft.gain], dim=1)
        return audio * _mask(n_samples, audio.shape[1])[:, 0], n_samples

    def _source(self, f0: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Harmonic source [B, 2F x 300]: ``deterministic_sine`` + ``l_linear`` + tanh, per row length.

        The export's linear x1/300 resampling of a nearest-x300 signal returns each step's own value, so
        phase increments are taken per step; the x300 linear upsampling (half-pixel, clamped at the row's
        last step) is written as a blend of each step with its neighbours, 150 samples each side.
        """
        source = self.k.decoder.generator.m_source
        gen = source.l_sin_gen.original
        scale = gen.upsample_scale
        harmonics = torch.arange(1, gen.dim + 1, dtype=f0.dtype, device=f0.device)
        rad = torch.remainder(f0.unsqueeze(-1) * harmonics / gen.sampling_rate, 1.0)       # [B, S, 9]
        phase = torch.cumsum(rad, dim=1) * (2 * torch.pi * scale)
        inside = _mask(steps - 1, f0.shape[1])[:, 0].unsqueeze(-1)               # a next step exists
        previous = torch.cat([phase[:, :1], phase[:, :-1]], dim=1)
        following = torch.cat([phase[:, 1:], phase[:, -1:]], dim=1) * inside + phase * (1 - inside)
        half = scale // 2
        r = torch.arange(scale, dtype=f0.dtype, device=f0.device)
        w_prev = ((half - 0.5 - r) / scale).clamp(min=0)[None, None, :, None]   # weight of the step before
        w_next = ((r - half + 0.5) / scale).clamp(min=0)[None, None, :, None]   # weight of the step after
        p, prev, nxt = phase.unsqueeze(2), previous.unsqueeze(2), following.unsqueeze(2)
        up = p + w_prev * (prev - p) + w_next * (nxt - p)                         # [B, S, scale, 9]
        up = up.reshape(f0.shape[0], -1, gen.dim)
        uv = (f0 > gen.voiced_threshold).to(f0.dtype).unsqueeze(-1).expand(-1, -1, scale).reshape(f0.shape[0], -1)
        sine = torch.sin(up) * gen.sine_amp * uv.unsqueeze(-1)
        return torch.tanh(source.l_linear(sine)).squeeze(-1)

    @staticmethod
    def _reflect_pad(x: torch.Tensor, lengths: torch.Tensor, pad: int) -> torch.Tensor:
        """Reflect padding by ``pad`` at both ends of each row's own length (as ``F.pad(mode='reflect')``)."""
        t = torch.arange(x.shape[1] + 2 * pad, device=x.device)[None, :] - pad
        last = lengths[:, None] - 1
        t = torch.where(t < 0, -t, torch.where(t > last, 2 * last - t, t))
        return torch.gather(x, 1, t.clamp(min=0, max=x.shape[1] - 1))
