"""int8 Kokoro graph -> float32 graph of standard ONNX ops, which TensorRT and every runtime can parse.

The shipped model was quantised with ONNX Runtime's dynamic quantiser, so most of its compute sits in
ORT-only operators (MatMulInteger fed by DynamicQuantizeLinear, ConvInteger, DynamicQuantizeLSTM, the
contrib fusions FastGelu / SkipLayerNormalization / FusedMatMul). Each has an exact float rewrite: weights
are dequantised once here, and the activation quantisation is simply dropped (it only added noise).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import NodeProto, helper

from .onnx_edit import GraphEdit, attributes

OPSET = 20
_GELU_C0 = 0.7978845608028654  # sqrt(2/pi)
_GELU_C1 = 0.044715


def _dequant(w: np.ndarray, zero_point: np.ndarray, scale: np.ndarray, axis: int) -> np.ndarray:
    """(w - zp) * scale with per-tensor or per-``axis`` parameters."""
    shape = [1] * w.ndim
    if zero_point.ndim or scale.ndim:
        shape[axis] = -1
    zp = zero_point.astype(np.float32).reshape(shape if zero_point.ndim else ())
    sc = scale.astype(np.float32).reshape(shape if scale.ndim else ())
    return ((w.astype(np.float32) - zp) * sc).astype(np.float32)


def _activation(edit: GraphEdit, node: NodeProto) -> str:
    """The float activation behind the DynamicQuantizeLinear that feeds an integer op."""
    return str(edit.source(node.input[0], "DynamicQuantizeLinear").input[0])


def _weight_scale(edit: GraphEdit, scale_product: str) -> str:
    """Integer ops are rescaled by Mul(x_scale, w_scale); the weight's scale is the constant factor."""
    mul = edit.source(scale_product, "Mul")
    found = [i for i in mul.input if edit.is_initializer(i)]
    if len(found) != 1:
        raise ValueError(f"cannot find the weight scale behind {scale_product}")
    return str(found[0])


def _rescale_tail(edit: GraphEdit, int_output: str) -> tuple[list[NodeProto], NodeProto, str | None]:
    """The Cast+Mul (and optional int32 bias Add) after an integer op: nodes to drop, the Mul, the bias."""
    first = edit.only_consumer(int_output)
    dropped, bias = [], None
    if first.op_type == "Add":
        chain = edit.source(first.input[1], "Reshape")
        for op in ("Cast", "Floor", "Div"):
            chain = edit.source(chain.input[0], op)
        bias = chain.input[0]
        dropped.append(first)
        first = edit.only_consumer(first.output[0])
    if first.op_type != "Cast":
        raise ValueError(f"unexpected {first.op_type} after {int_output}")
    mul = edit.only_consumer(first.output[0], "Mul")
    dropped += [first, mul]
    return dropped, mul, bias


def _matmul_integer(edit: GraphEdit, node: NodeProto) -> None:
    dropped, mul, _ = _rescale_tail(edit, node.output[0])
    weight = _dequant(edit.array(node.input[1]), edit.array(node.input[3]),
                      edit.array(_weight_scale(edit, mul.input[1])), axis=1)
    w = edit.constant(node.input[1] + "/f32", weight)
    edit.replace(node, [helper.make_node("MatMul", [_activation(edit, node), w], [mul.output[0]], name=node.name)])
    edit.drop(*dropped)


def _conv_integer(edit: GraphEdit, node: NodeProto) -> None:
    dropped, mul, bias = _rescale_tail(edit, node.output[0])
    weight = _dequant(edit.array(node.input[1]), edit.array(node.input[3]),
                      edit.array(_weight_scale(edit, mul.input[1])), axis=0)
    inputs = [_activation(edit, node), edit.constant(node.input[1] + "/f32", weight)] + ([bias] if bias else [])
    attrs = attributes(node)
    if attrs.get("auto_pad") == b"NOTSET":
        del attrs["auto_pad"]
    edit.replace(node, [helper.make_node("Conv", inputs, [mul.output[0]], name=node.name, **attrs)])
    edit.drop(*dropped)


def _gather_dequantize(edit: GraphEdit, node: NodeProto) -> None:
    gather = edit.source(node.input[0], "Gather")
    table = _dequant(edit.array(gather.input[0]), edit.array(node.input[2]), edit.array(node.input[1]), axis=0)
    t = edit.constant(gather.input[0] + "/f32", table)
    edit.replace(node, [helper.make_node("Gather", [t, gather.input[1]], [node.output[0]], name=gather.name,
                                         **attributes(gather))])
    edit.drop(gather)


def _dynamic_quantize_lstm(edit: GraphEdit, node: NodeProto) -> None:
    x, wq, rq, b, seq_lens, h0, c0, peep, w_scale, w_zp, r_scale, r_zp = (list(node.input) + [""] * 12)[:12]
    # ORT stores W/R as [D, I, 4H]; ONNX LSTM wants [D, 4H, I]. The gate order (i, o, f, c) is the same.
    w = _dequant(edit.array(wq), edit.array(w_zp), edit.array(w_scale), axis=0).transpose(0, 2, 1)
    r = _dequant(edit.array(rq), edit.array(r_zp), edit.array(r_scale), axis=0).transpose(0, 2, 1)
    inputs = [x, edit.constant(wq + "/W", w), edit.constant(rq + "/R", r), b, seq_lens, h0, c0]
    if peep:
        inputs.append(peep)
    edit.replace(node, [helper.make_node("LSTM", inputs, list(node.output), name=node.name, **attributes(node))])


def _fast_gelu(edit: GraphEdit, node: NodeProto) -> None:
    """tanh-approximated GELU from elementary ops (TensorRT fuses the pattern; every parser knows it)."""
    p, y = node.name + "/", node.output[0]
    nodes: list[NodeProto] = []
    x = node.input[0]
    if len(node.input) > 1 and node.input[1]:
        nodes.append(helper.make_node("Add", [x, node.input[1]], [p + "xb"]))
        x = p + "xb"
    c = {k: edit.constant("gelu/" + k, np.float32(v)) for k, v in
         (("c0", _GELU_C0), ("c1", _GELU_C1), ("one", 1.0), ("half", 0.5))}
    steps = [("Mul", [x, x], "x2"), ("Mul", ["x2", c["c1"]], "x2c"), ("Add", ["x2c", c["one"]], "poly"),
             ("Mul", [x, "poly"], "xp"), ("Mul", ["xp", c["c0"]], "u"), ("Tanh", ["u"], "t"),
             ("Add", ["t", c["one"]], "t1"), ("Mul", [x, "t1"], "xt"), ("Mul", ["xt", c["half"]], None)]
    locals_ = {"x2", "x2c", "poly", "xp", "u", "t", "t1", "xt"}
    for op, ins, out in steps:
        ins = [p + i if i in locals_ else i for i in ins]
        nodes.append(helper.make_node(op, ins, [p + out if out else y]))
    edit.replace(node, nodes)


def _skip_layer_norm(edit: GraphEdit, node: NodeProto) -> None:
    if len(node.output) != 1 or len(node.input) != 4:
        raise ValueError(f"unsupported SkipLayerNormalization form at {node.name}")
    eps = attributes(node)["epsilon"]
    s = node.name + "/sum"
    edit.replace(node, [
        helper.make_node("Add", [node.input[0], node.input[1]], [s]),
        helper.make_node("LayerNormalization", [s, node.input[2], node.input[3]], [node.output[0]],
                         axis=-1, epsilon=eps),
    ])


def _fused_matmul(edit: GraphEdit, node: NodeProto) -> None:
    a = attributes(node)
    if a.get("transB", 0) or a.get("transBatchA", 0) or a.get("transBatchB", 0):
        raise ValueError(f"unsupported FusedMatMul form at {node.name}")
    nodes: list[NodeProto] = []
    lhs = node.input[0]
    if a.get("transA", 0):
        nodes.append(helper.make_node("Transpose", [lhs], [node.name + "/At"], perm=[0, 2, 1]))
        lhs = node.name + "/At"
    alpha = float(a.get("alpha", 1.0))
    out = node.output[0] if alpha == 1.0 else node.name + "/mm"
    nodes.append(helper.make_node("MatMul", [lhs, node.input[1]], [out]))
    if alpha != 1.0:
        nodes.append(helper.make_node("Mul", [out, edit.constant(node.name + "/alpha", np.float32(alpha))],
                                      [node.output[0]]))
    edit.replace(node, nodes)


_REWRITES = {
    "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer,
    "DequantizeLinear": _gather_dequantize,
    "DynamicQuantizeLSTM": _dynamic_quantize_lstm,
    "FastGelu": _fast_gelu,
    "SkipLayerNormalization": _skip_layer_norm,
    "FusedMatMul": _fused_matmul,
}


def dequantize(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite in place and return the model; raises if a non-standard op would remain."""
    edit = GraphEdit(model)
    for node in edit.nodes:
        rewrite = _REWRITES.get(node.op_type)
        if rewrite:
            rewrite(edit, node)
    model = edit.apply()
    left = sorted({n.op_type for n in model.graph.node if n.domain not in ("", "ai.onnx")})
    if left:
        raise ValueError(f"non-standard operators left after dequantisation: {left}")
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", OPSET))
    return model
