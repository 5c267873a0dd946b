"""The int8 graphs' 1-D ``ConvInteger`` as ``MatMulInteger`` with signed weights: the same integers, 2-4x sooner.

The shipped model was quantised with unsigned weights, and ONNX Runtime's CPU ``ConvInteger`` takes only those:
its u8 x u8 products cannot use the VNNI dot-product instructions (``vpdpbusd`` multiplies unsigned by
signed bytes), and the convolutions were 59% of the frame-window render (``ConvInteger`` 356 ms of a 75-frame
window's 600 on a 2-core Xeon with AVX-512 VNNI, 2026-12-02). Shifting the weights and their zero point by 128
gives signed bytes with the same differences ``w - zp``, so the products and their int32 sums are unchanged;
the convolution is then an im2col on the time-major input (``Pad`` with the activation's zero point, as
``ConvInteger`` pads, one ``Slice`` per tap, ``Concat``) and a u8 x s8 ``MatMulInteger``. Stage 2 of a 267-frame
sentence: 1830 -> 1134 ms, its audio equal to the bit, its peak memory within ~10 MiB (built channel-major, with
the K-fold columns transposed, it was 1244 ms and took up to 120 MiB more; ``benchmarks/conv_matmul.py``).

Equal only where the machine multiplies u8 x s8 exactly. Without VNNI, ONNX Runtime's x86 kernels add pairs of
products in 16 bits with saturation (``vpmaddubsw``): 255 x 127 twice overflows. So ``exact_here`` runs
both forms on the products that overflow first, and the rewrite is made only where they agree; the graph cache
is keyed by that answer (``convert.pipeline_key``), so a cache moved to a machine without VNNI is rebuilt.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime as ort
from onnx import NodeProto, TensorProto, helper, numpy_helper

from .onnx_edit import GraphEdit, attributes

_I64_MAX = np.iinfo(np.int64).max


def convs_as_matmuls(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """``model`` with every 1-D, ungrouped, unit-stride ``ConvInteger`` over constant u8 weights and one constant
    zero point rewritten (the model's are all of that kind); the count rewritten. Other convolutions are left as
    they are."""
    edit = GraphEdit(model)
    count = 0
    for node in edit.of_type("ConvInteger"):
        if (rewrite := _rewrite(edit, node)) is not None:
            edit.replace(node, rewrite)
            count += 1
    return (edit.apply() if count else model), count


def _rewrite(edit: GraphEdit, node: NodeProto) -> list[NodeProto] | None:
    att = attributes(node)
    inputs = list(node.input) + [""] * (4 - len(node.input))
    x, w, x_zp, w_zp = inputs[:4]
    if not edit.is_initializer(w) or (w_zp and (not edit.is_initializer(w_zp) or edit.array(w_zp).size != 1)):
        return None  # ONNX Runtime's ConvInteger takes one weight zero point; a graph with more is not the model's
    weight = edit.array(w)
    if weight.dtype != np.uint8 or weight.ndim != 3 or att.get("group", 1) != 1 \
            or any(s != 1 for s in att.get("strides", [1])) or att.get("auto_pad", b"NOTSET") not in (b"NOTSET", b""):
        return None
    out, k = node.output[0], weight.shape[2]
    dilation = int(att.get("dilations", [1])[0])
    begin, end = list(att.get("pads", [0, 0]))
    zp = edit.array(w_zp) if w_zp else np.zeros((), np.uint8)
    # w - zp is unchanged by taking 128 from both; the weights then fit a signed byte.
    signed = (weight.astype(np.int16) - 128).astype(np.int8)
    b = edit.constant(f"{out}/b", np.ascontiguousarray(signed.transpose(2, 1, 0).reshape(-1, weight.shape[0])))
    b_zp = edit.constant(f"{out}/b_zp", (zp.astype(np.int16) - 128).astype(np.int8))
    if not x_zp:
        x_zp = edit.constant(f"{out}/x_zp", np.zeros((), np.uint8))
    # Time-major from the start ([N, T, C]: a copy of the input, not of its K-fold columns), so the stacked taps are
    # already the matrix product's rows.
    nodes = [helper.make_node("Transpose", [x], [f"{out}/time_major"], perm=[0, 2, 1])]
    rows = f"{out}/time_major"
    if begin or end:
        pads = edit.constant(f"{out}/pads", [0, int(begin), 0, 0, int(end), 0])
        nodes.append(helper.make_node("Pad", [rows, pads, x_zp], [f"{out}/padded"], mode="constant"))
        rows = f"{out}/padded"
    if k > 1:  # tap j reads steps j*d .. j*d + T_out of the padded input: one slice each, side by side
        axis, span = edit.constant(f"{out}/axis", [1]), dilation * (k - 1)
        taps = []
        for j in range(k):
            start = edit.constant(f"{out}/start{j}", [j * dilation])
            stop = edit.constant(f"{out}/stop{j}", [j * dilation - span if j * dilation < span else _I64_MAX])
            taps.append(f"{out}/tap{j}")
            nodes.append(helper.make_node("Slice", [rows, start, stop, axis], [taps[-1]]))
        nodes.append(helper.make_node("Concat", taps, [f"{out}/columns"], axis=2))
        rows = f"{out}/columns"
    nodes += [
        helper.make_node("MatMulInteger", [rows, b, x_zp, b_zp], [f"{out}/product"]),
        helper.make_node("Transpose", [f"{out}/product"], [out], perm=[0, 2, 1]),
    ]
    return nodes


def one_conv(weights: np.ndarray, weight_zero: int, *, pads: tuple[int, int], dilation: int = 1, group: int = 1,
             activation_zero: int | None = None, frames: int | str = "T") -> onnx.ModelProto:
    """A graph of one ``ConvInteger`` over constant u8 ``weights`` [out, in / group, taps], as the model has them,
    from ``x`` [1, in, frames] to ``y``: the case ``exact_here``, the unit tests and ``benchmarks/conv_matmul.py``
    hold the rewrite to. ``x`` is u8 with ``activation_zero`` as its zero point, or with ``activation_zero`` None
    float32 quantised in the graph (``DynamicQuantizeLinear``, as the model quantises its activations)."""
    initializers = [numpy_helper.from_array(weights, "w"),
                    numpy_helper.from_array(np.array(weight_zero, np.uint8), "wz")]
    if activation_zero is None:
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"])]
        source, quantised = TensorProto.FLOAT, "xq"
    else:
        nodes, source, quantised = [], TensorProto.UINT8, "x"
        initializers.append(numpy_helper.from_array(np.array(activation_zero, np.uint8), "xz"))
    nodes.append(helper.make_node("ConvInteger", [quantised, "w", "xz", "wz"], ["y"], kernel_shape=[weights.shape[2]],
                                  dilations=[dilation], pads=list(pads), group=group))
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", source, [1, weights.shape[1] * group, frames])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, weights.shape[0], "F"])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@functools.cache
def exact_here() -> bool:
    """Whether this machine's ONNX Runtime gives the rewrite the same integers as ``ConvInteger``, on inputs
    where 16-bit pair sums saturate (every activation 255 against weights of +127) and on random ones."""
    rng = np.random.default_rng(0)
    channels, taps, frames = 64, 3, 96
    cases = [(np.full((1, channels, frames), 255, np.uint8), np.full((32, channels, taps), 255, np.uint8)),
             (rng.integers(0, 256, (1, channels, frames), dtype=np.uint8),
              rng.integers(0, 256, (32, channels, taps), dtype=np.uint8))]
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for activations, weights in cases:
        model = one_conv(weights, 128, pads=(1, 1), activation_zero=0, frames=frames)
        rewritten, _ = convs_as_matmuls(onnx.ModelProto.FromString(model.SerializeToString()))
        results = [ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
                   .run(None, {"x": activations})[0] for m in (model, rewritten)]
        if not np.array_equal(*results):
            return False
    return True
