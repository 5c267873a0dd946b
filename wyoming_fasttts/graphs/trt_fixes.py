"""Rewrites of the two constructs TensorRT cannot take, each exact to float rounding.

* The iSTFT normalises by a window sum through NonZero + ScatterND (TensorRT's parser has no NonZero).
  The export baked the window sum as a constant, so only its first few samples are ever rescaled: a
  constant per-sample scale on that head, concatenated with the untouched tail, is the same function.
* The decoder's six Resize ops (nearest x2 / x300, linear /300 and x300 on the last axis) fail TensorRT's
  Myelin compiler; each becomes Unsqueeze/Expand/Reshape, a strided mean, or a 3-tap blend.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import NodeProto, helper

from .onnx_edit import GraphEdit, attributes

_BIG = 2**62  # "to the end" for Slice


def _window_sum_scale(edit: GraphEdit, scatter: NodeProto) -> None:
    nonzero = edit.of_type("NonZero")
    if len(nonzero) != 1:
        raise ValueError("expected exactly one NonZero (the iSTFT window-sum normalisation)")
    greater = edit.source(nonzero[0].input[0], "Greater")
    window_slice = edit.source(greater.input[0], "Slice")
    window = edit.array(window_slice.input[0]).astype(np.float64).ravel()
    threshold = float(edit.array(greater.input[1]))
    scale = np.where(window > threshold, 1.0 / np.where(window > threshold, window, 1.0), 1.0)
    head = len(window)
    x, p = scatter.input[0], "ws_fix/"
    c = edit.constant
    edit.replace(scatter, [
        helper.make_node("Slice", [x, c(p + "0", [0]), c(p + "k", [head]), c(p + "ax", [1])], [p + "head"]),
        helper.make_node("Mul", [p + "head", c(p + "scale", scale[None, :].astype(np.float32))], [p + "head_n"]),
        helper.make_node("Slice", [x, c(p + "k", [head]), c(p + "end", [_BIG]), c(p + "ax", [1])], [p + "tail"]),
        helper.make_node("Concat", [p + "head_n", p + "tail"], [scatter.output[0]], axis=1),
    ])


def _resize_nearest(edit: GraphEdit, node: NodeProto, factor: int) -> list[NodeProto]:
    p, c = node.name + "/", edit.constant
    return [
        helper.make_node("Unsqueeze", [node.input[0], c("rz/ax3", [3])], [p + "u"]),
        helper.make_node("Expand", [p + "u", c(p + "rep", [1, 1, 1, factor])], [p + "e"]),
        helper.make_node("Reshape", [p + "e", c("rz/flat3", [0, 0, -1])], [node.output[0]]),
    ]


def _resize_down(edit: GraphEdit, node: NodeProto, factor: int) -> list[NodeProto]:
    """Linear half-pixel 1/S downsampling with even S samples the two middle elements of each block."""
    if factor % 2:
        raise ValueError(f"odd linear downsampling factor {factor} at {node.name}")
    p, c = node.name + "/", edit.constant
    mid = factor // 2
    return [
        helper.make_node("Reshape", [node.input[0], c(p + "blocks", [0, 0, -1, factor])], [p + "r"]),
        helper.make_node("Slice", [p + "r", c(p + "s", [mid - 1]), c(p + "e", [mid + 1]), c("rz/ax3", [3])],
                         [p + "mid"]),
        helper.make_node("ReduceMean", [p + "mid", c("rz/ax3", [3])], [node.output[0]], keepdims=0),
    ]


def _resize_up(edit: GraphEdit, node: NodeProto, factor: int) -> list[NodeProto]:
    """Linear half-pixel xS upsampling with edge clamping: per output phase a blend of x[j-1], x[j], x[j+1]."""
    p, c = node.name + "/", edit.constant
    offset = (np.arange(factor) + 0.5) / factor - 0.5
    before = np.where(offset < 0, -offset, 0.0)
    after = np.where(offset >= 0, offset, 0.0)
    weights = {"wb": before, "wc": 1.0 - before - after, "wa": after}
    x, ax2, ax3 = node.input[0], c("rz/ax2", [2]), c("rz/ax3", [3])
    nodes = [
        helper.make_node("Slice", [x, c("rz/0", [0]), c("rz/1", [1]), ax2], [p + "first"]),
        helper.make_node("Slice", [x, c("rz/-1", [-1]), c("rz/end", [_BIG]), ax2], [p + "last"]),
        helper.make_node("Concat", [p + "first", x, p + "last"], [p + "padded"], axis=2),
    ]
    taps = (("wb", "rz/0", "rz/-2"), ("wc", "rz/1", "rz/-1"), ("wa", "rz/2", "rz/end"))
    values = {"rz/-2": [-2], "rz/2": [2]}
    for w, start, end in taps:
        for name in (start, end):
            if name in values:
                c(name, values[name])
        nodes += [
            helper.make_node("Slice", [p + "padded", start, end, ax2], [p + w + "/x"]),
            helper.make_node("Unsqueeze", [p + w + "/x", ax3], [p + w + "/u"]),
            helper.make_node("Mul", [p + w + "/u", c(p + w, weights[w].astype(np.float32))], [p + w + "/m"]),
        ]
    nodes += [
        helper.make_node("Add", [p + "wb/m", p + "wc/m"], [p + "s1"]),
        helper.make_node("Add", [p + "s1", p + "wa/m"], [p + "s"]),
        helper.make_node("Reshape", [p + "s", c("rz/flat3", [0, 0, -1])], [node.output[0]]),
    ]
    return nodes


def _resize(edit: GraphEdit, node: NodeProto) -> None:
    scales = edit.array(node.input[2]).astype(np.float64)
    a = attributes(node)
    if len(scales) != 3 or list(scales[:2]) != [1.0, 1.0]:
        raise ValueError(f"Resize {node.name} is not a last-axis resize of a rank-3 tensor")
    s = scales[2]
    if a.get("mode") == b"nearest":
        if a.get("coordinate_transformation_mode") != b"asymmetric" or abs(s - round(s)) > 1e-6:
            raise ValueError(f"unsupported nearest Resize at {node.name}")
        edit.replace(node, _resize_nearest(edit, node, round(s)))
    elif a.get("mode") == b"linear" and a.get("coordinate_transformation_mode") != b"half_pixel":
        raise ValueError(f"unsupported linear Resize at {node.name}: only half_pixel is rewritten")
    elif a.get("mode") == b"linear" and s < 1:
        edit.replace(node, _resize_down(edit, node, round(1 / s)))
    elif a.get("mode") == b"linear":
        edit.replace(node, _resize_up(edit, node, round(s)))
    else:
        raise ValueError(f"unsupported Resize mode at {node.name}: {a.get('mode')!r}")


def fix_for_tensorrt(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite in place and return the model; no NonZero, ScatterND or Resize remains."""
    edit = GraphEdit(model)
    for scatter in edit.of_type("ScatterND"):
        _window_sum_scale(edit, scatter)
    for node in edit.of_type("Resize"):
        _resize(edit, node)
    model = edit.apply()
    left = {n.op_type for n in model.graph.node} & {"NonZero", "ScatterND", "Resize"}
    if left:
        raise ValueError(f"TensorRT fixes left {sorted(left)} in the graph")
    return model
