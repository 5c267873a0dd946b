"""The generator's forward STFT as a strided convolution with a windowed DFT basis.

ONNX Runtime's CUDA provider has no STFT kernel, so the op (and a round trip of its input and output
between GPU and host) ran on the CPU in the middle of the vocoder. A real, one-sided STFT with a fixed
window and hop is exactly a Conv1d whose filters are the window times cos / -sin of each bin, which every
GPU runtime (ONNX Runtime CUDA, TensorRT) runs natively.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import NodeProto, helper

from .onnx_edit import GraphEdit, attributes


def _rewrite(edit: GraphEdit, node: NodeProto) -> None:
    signal, step, window, length = (list(node.input) + [""] * 4)[:4]
    if not attributes(node).get("onesided", 1) or not (edit.is_initializer(step) and edit.is_initializer(window)):
        raise ValueError(f"STFT {node.name} is not a one-sided STFT with a constant window and hop")
    hop = int(edit.array(step))
    win = edit.array(window).astype(np.float64)
    n_fft = int(edit.array(length)) if length else len(win)
    if n_fft != len(win):
        raise ValueError(f"STFT {node.name}: window of {len(win)} for frames of {n_fft}")
    bins = n_fft // 2 + 1
    phase = 2 * np.pi * np.arange(bins)[:, None] * np.arange(n_fft)[None, :] / n_fft
    sine = np.sin(phase)
    # DC and Nyquist have no imaginary part. Exact zeros there (not float64 residue like 1e-16) keep their
    # phase where torch.stft, which the model was trained with, puts it: atan2(+0, x<0) = +pi, never -pi.
    sine[np.abs(sine) < 1e-9] = 0.0
    basis = np.concatenate([np.cos(phase) * win, -sine * win])[:, None, :].astype(np.float32)
    p, c = node.name + "/", edit.constant
    edit.replace(node, [
        helper.make_node("Reshape", [signal, c(p + "mono", [0, 1, -1])], [p + "x"]),             # [B, 1, L]
        helper.make_node("Conv", [p + "x", c(p + "basis", basis)], [p + "spec"], strides=[hop]),  # [B, 2*bins, frames]
        helper.make_node("Reshape", [p + "spec", c(p + "shape", [0, 2, bins, -1])], [p + "ri"]),  # [B, 2, bins, frames]
        helper.make_node("Transpose", [p + "ri"], [node.output[0]], perm=[0, 3, 2, 1]),          # [B, frames, bins, 2]
    ])


def stft_as_conv(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite every STFT in place and return the model."""
    edit = GraphEdit(model)
    for node in edit.of_type("STFT"):
        _rewrite(edit, node)
    return edit.apply()
