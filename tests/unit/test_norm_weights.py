"""The render graph's weighed instance norms (``graphs.norm_weights``), on a graph of one norm as the model writes it.

The norm is the v1.0 export's pattern (ReduceMean over time of x, then of (x - mean)^2) over a tensor of three steps
a frame, as the generator's norms run at several steps a frame. Checked against a weighted mean and variance
computed here, and, with no extra weight, against the graph before the rewrite to the bit.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from wyoming_fasttts.backends.windows import NORM_FRAMES, NORM_WEIGHTS
from wyoming_fasttts.graphs.norm_weights import weighted_norms

STEPS = 3  # steps a frame at the norm


def _norm_graph() -> bytes:
    """asr [1, C, F] -> upsampled to 3 steps a frame -> instance norm over time."""
    n = helper.make_node
    nodes = [
        n("Resize", ["asr", "", "scales"], ["z"], mode="nearest"),
        n("ReduceMean", ["z", "axes"], ["m"], keepdims=1),
        n("Sub", ["z", "m"], ["zc"]),
        n("Mul", ["zc", "zc"], ["sq"]),
        n("ReduceMean", ["sq", "axes"], ["v"], keepdims=1),
        n("Add", ["v", "eps"], ["ve"]),
        n("Sqrt", ["ve"], ["sd"]),
        n("Div", ["zc", "sd"], ["y"]),
    ]
    weights = [numpy_helper.from_array(np.array([1, 1, STEPS], np.float32), "scales"),
               numpy_helper.from_array(np.array([2], np.int64), "axes"),
               numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
    graph = helper.make_graph(nodes, "norm", [helper.make_tensor_value_info("asr", TensorProto.FLOAT, [1, 4, "F"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, None])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model.SerializeToString()


def _sessions() -> tuple[ort.InferenceSession, ort.InferenceSession]:
    from onnx import ModelProto

    plain = _norm_graph()
    weighed = weighted_norms(ModelProto.FromString(plain)).SerializeToString()
    return ort.InferenceSession(plain), ort.InferenceSession(weighed)


def _feeds(x: np.ndarray, lead: int, tail: int, a: float, b: float) -> dict[str, np.ndarray]:
    return {"asr": x, NORM_FRAMES: np.array([lead, tail], np.int64), NORM_WEIGHTS: np.array([a, b], np.float32)}


@pytest.mark.parametrize(("lead", "tail", "a", "b"), [(3, 2, 1.5, 1.0), (4, 0, 2.0, 0.0), (0, 5, 0.0, 3.0)])
def test_the_edges_count_with_their_weights(lead: int, tail: int, a: float, b: float) -> None:
    x = np.random.default_rng(7).standard_normal((1, 4, 20)).astype(np.float32) * 2 + 1
    _plain, weighed = _sessions()
    got = weighed.run(None, _feeds(x, lead, tail, a, b))[0]
    z = np.repeat(x, STEPS, axis=2).astype(np.float64)
    w = np.ones(z.shape[2])
    w[:lead * STEPS] += a
    w[z.shape[2] - tail * STEPS:] += b
    mean = (z * w).sum(-1, keepdims=True) / w.sum()
    var = (((z - mean) ** 2) * w).sum(-1, keepdims=True) / w.sum()
    np.testing.assert_allclose(got, (z - mean) / np.sqrt(var + 1e-5), rtol=2e-4, atol=2e-4)


def test_no_extra_weight_is_the_plain_norm_to_the_bit() -> None:
    x = np.random.default_rng(8).standard_normal((1, 4, 17)).astype(np.float32)
    plain, weighed = _sessions()
    expected = plain.run(None, {"asr": x})[0]
    for lead, tail in ((0, 0), (5, 4)):
        np.testing.assert_array_equal(weighed.run(None, _feeds(x, lead, tail, 0.0, 0.0))[0], expected)
