"""The int8 convolutions as signed-weight matrix products (``graphs.conv_matmul``) against ``ConvInteger`` itself.

ConvInteger over constant u8 weights, as the model has it, at the model's kinds of convolution: taps 1, 3, 7, 11 and
12, dilations 1, 3 and 5, padding that keeps the length or not (ONNX Runtime's ConvInteger takes one weight zero
point, not one per channel).
Activations (and the activation zero point the padding takes) below 128 keep every pair of u8 x s8 products inside 16
bits, so the two forms must agree to the integer on any x86 or ARM machine, VNNI or not; where larger ones may not
(``exact_here``), the cache does not rewrite.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from wyoming_fasttts.graphs.conv_matmul import convs_as_matmuls, one_conv

CHANNELS, FRAMES = 16, 50


def _model(taps: int, dilation: int, pads: tuple[int, int], group: int = 1) -> onnx.ModelProto:
    rng = np.random.default_rng(taps * 100 + dilation)
    weights = rng.integers(0, 256, (8, CHANNELS // group, taps), dtype=np.uint8)
    return one_conv(weights, int(rng.integers(100, 156)), pads=pads, dilation=dilation, group=group, activation_zero=3)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize(("taps", "dilation", "pads"), [
    (1, 1, (0, 0)), (3, 1, (1, 1)), (7, 3, (9, 9)), (11, 5, (25, 25)), (12, 1, (0, 0)), (3, 1, (2, 0)),
])
def test_the_rewrite_gives_convintegers_integers(taps: int, dilation: int, pads: tuple[int, int]) -> None:
    model = _model(taps, dilation, pads)
    rewritten, count = convs_as_matmuls(_model(taps, dilation, pads))
    assert count == 1 and not [n for n in rewritten.graph.node if n.op_type == "ConvInteger"]
    onnx.checker.check_model(rewritten)
    x = np.random.default_rng(1).integers(0, 128, (1, CHANNELS, FRAMES), dtype=np.uint8)
    expected = _run(model, x)
    assert expected.shape[2] == FRAMES + sum(pads) - dilation * (taps - 1)
    np.testing.assert_array_equal(_run(rewritten, x), expected)


def test_grouped_convolutions_are_left_as_they_are() -> None:
    rewritten, count = convs_as_matmuls(_model(3, 1, (1, 1), group=2))
    assert count == 0 and [n.op_type for n in rewritten.graph.node] == ["ConvInteger"]

