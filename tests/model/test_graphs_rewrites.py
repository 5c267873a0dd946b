"""Each TensorRT rewrite, alone on random data, against ONNX Runtime's own operator (no model needed, <2 s)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME, alignment, frame_counts
from wyoming_fasttts.graphs.stft_conv import stft_as_conv
from wyoming_fasttts.graphs.trt_fixes import fix_for_tensorrt


def _resize_model(scale: float, mode: str, transform: str) -> onnx.ModelProto:
    scales = numpy_helper.from_array(np.array([1.0, 1.0, scale], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rz", mode=mode,
                            coordinate_transformation_mode=transform, nearest_mode="floor")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "M"])], [scales])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize(("scale", "mode", "transform", "length"), [
    (2.0, "nearest", "asymmetric", 37),
    (300.0, "nearest", "asymmetric", 5),
    (1 / 300, "linear", "half_pixel", 300 * 7),
    (300.0, "linear", "half_pixel", 6),
])
def test_resize_rewrite_matches_onnxruntime(scale: float, mode: str, transform: str, length: int) -> None:
    x = np.random.default_rng(1).standard_normal((1, 3, length)).astype(np.float32)
    expected = _run(_resize_model(scale, mode, transform), x)
    fixed = fix_for_tensorrt(_resize_model(scale, mode, transform))
    assert {n.op_type for n in fixed.graph.node}.isdisjoint({"Resize"})
    got = _run(fixed, x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1234, 1), (1, 1234)])
def test_stft_as_convolution_matches_onnxruntime_stft(shape: tuple[int, ...]) -> None:
    window = np.hanning(22)[1:-1].astype(np.float32)  # 20 taps, like the generator's
    consts = [numpy_helper.from_array(np.array(5, np.int64), "hop"), numpy_helper.from_array(window, "win"),
              numpy_helper.from_array(np.array(20, np.int64), "n")]
    node = helper.make_node("STFT", ["x", "hop", "win", "n"], ["y"], name="stft", onesided=1)
    signal = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "L", 1][: len(shape)])
    graph = helper.make_graph([node], "g", [signal], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              consts)
    make = lambda: helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)  # noqa: E731
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    expected = _run(make(), x)
    got = _run(stft_as_conv(make()), x)
    assert got.shape == expected.shape
    # ORT's STFT rounds its float32 twiddles (its Nyquist bin is ~1e-5, not 0): compare at that scale.
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_resize_rewrite_refuses_what_it_cannot_reproduce() -> None:
    with pytest.raises(ValueError, match="half_pixel"):
        fix_for_tensorrt(_resize_model(2.0, "linear", "align_corners"))


def test_frame_counts_cap_only_the_silent_end() -> None:
    durations = np.array([[18.0, 3.2, 0.4, 5.0, 12.0]], np.float32)
    assert frame_counts(durations, 3).tolist() == [18, 3, 1, 5, 3]
    assert frame_counts(durations, 0).tolist() == [18, 3, 1, 5, 12]
    assert frame_counts(np.array([2.0, 9.0]), 4).tolist() == [2, 4]


def test_alignment_rows_cover_each_tokens_frames_in_place() -> None:
    frames = np.array([2, 1, 3])
    out = np.full((1, 3, 6), 7.0, np.float32)
    aln = alignment(frames, out=out)
    assert aln is out
    expected = np.array([[1, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], np.float32)
    np.testing.assert_array_equal(out[0], expected)
    with pytest.raises(ValueError):
        alignment(frames, out=np.zeros((1, 3, 5), np.float32))
    assert SAMPLES_PER_FRAME * 147 == 88200  # 欢迎使用语音合成系统: 147 frames, 3.675 s
