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

import importlib.util
import io
import re
import sys
import types
from collections.abc import Sequence
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
from .dequantize import dequantize

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
        package = types.ModuleType("kokoro")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["kokoro"] = package
    from kokoro import istftnet, model

    return types.SimpleNamespace(KModel=model.KModel, SineGen=istftnet.SineGen)


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
        return torch.sqrt(re * re + im * im), torch.atan2(im, re)

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
