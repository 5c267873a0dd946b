"""The render half's instance norms with weighed edges: a short first window whose statistics stand for more.

A sentence's first frame window (``backends.windows``) is normalised by statistics over the frames it renders,
and those are not the sentence's: that alone is what makes its audio differ from the whole render (eager float32,
``benchmarks/window_norms.py``). Which frames the window holds, and how many of each kind, is what the statistics
follow: the start pad's silence (~20 frames, all of which the first window used to render for them) and the
sentence's close (its last frames, joined after the window for the norms alone, ``closing_frames``). With a
weight per frame at the two edges of the rendered span, the window can render a few of the pad's frames and count
each several times, and count the close more than once; the statistics are then a weighted mean and variance.

Every instance norm of the render graph is ReduceMean over time of ``x``, then of ``(x - mean)^2``; each such
ReduceMean ``m`` over a tensor of ``L`` steps (``r = L // F`` steps per rendered frame) becomes

    m + (a * (sum(lead) - P * m) + b * (sum(tail) - Q * m)) / (L + a * P + b * Q)
      = m + alpha * sum(lead) + beta * sum(tail) - gamma * m

where ``lead`` and ``tail`` are the first ``P = p * r`` and last ``Q = q * r`` steps and ``a``, ``b`` the extra
weight of each (a frame of weight 3 has ``a = 2``). Inputs ``norm_frames`` = [p, q] and ``norm_weights`` = [a, b];
with both weights 0 the correction is exactly zero and the graph gives the unweighted render to the bit. The sums
run over the edge slices only (a few frames), so the rewrite costs small reductions, not passes over every step;
alpha, beta and gamma are computed once per tensor length (a norm's two means share theirs): +0.4-0.9% render
time with the weights on (a block per mean cost +2.2%; 2-core EPYC, docs/BENCHMARKS.md "Frame windows, third pass").
"""

from __future__ import annotations

import onnx
from onnx import NodeProto, TensorProto, helper

from ..backends.windows import NORM_FRAMES as FRAMES
from ..backends.windows import NORM_WEIGHTS as WEIGHTS
from .onnx_edit import GraphEdit, attributes


def _time_mean(edit: GraphEdit, node: NodeProto) -> bool:
    axes = edit.array(node.input[1]).tolist() if len(node.input) > 1 and edit.is_initializer(node.input[1]) else None
    return axes == [2] and attributes(node).get("keepdims", 1) == 1


def _length_source(edit: GraphEdit, name: str, known: dict[str, str]) -> str:
    """The tensor whose length block ``name``'s can share: a norm's ``(x - mean)^2`` has its ``x``'s length."""
    node = edit.producer.get(name)
    while node is not None and node.op_type in ("Mul", "Sub", "Pow") and node.input[0] not in known:
        node = edit.producer.get(node.input[0])
    return node.input[0] if node is not None and node.op_type in ("Mul", "Sub", "Pow") else name


def weighted_norms(render: onnx.ModelProto, frames_of: str = "asr") -> onnx.ModelProto:
    """``render`` with every time-axis ReduceMean weighed at its edges; ``frames_of``: an input [1, C, F]."""
    edit = GraphEdit(render)
    c, n = edit.constant, helper.make_node
    means = [node for node in edit.of_type("ReduceMean") if _time_mean(edit, node)]
    if not means:
        raise ValueError("no instance norm (ReduceMean over time) in the render graph")
    axes, zero = c("nw/axes", [2]), c("nw/zero", [0])
    shared = [
        n("Shape", [frames_of], ["nw/F"], start=2, end=3),
        n("Slice", [FRAMES, zero, c("nw/1", [1])], ["nw/p"]),
        n("Slice", [FRAMES, c("nw/1", [1]), c("nw/2", [2])], ["nw/q"]),
        n("Slice", [WEIGHTS, zero, c("nw/1", [1])], ["nw/a"]),
        n("Slice", [WEIGHTS, c("nw/1", [1]), c("nw/2", [2])], ["nw/b"]),
    ]
    blocks: dict[str, str] = {}  # a norm's input -> the prefix of its length block
    for k, node in enumerate(means):
        z, out, p = node.input[0], node.output[0], f"nw/{k}/"
        new = list(shared) if k == 0 else []
        source = _length_source(edit, z, blocks)
        if source not in blocks:
            # Per length: the edge slices' bounds and the weights as shares of the weighted count, so that
            # mean = m + alpha * sum(lead) + beta * sum(tail) - gamma * m, all three exactly 0 without weights.
            b = blocks[source] = p
            new += [
                n("Shape", [z], [b + "L"], start=2, end=3),
                n("Div", [b + "L", "nw/F"], [b + "r"]),
                n("Mul", ["nw/p", b + "r"], [b + "P"]),
                n("Mul", ["nw/q", b + "r"], [b + "Q"]),
                n("Sub", [b + "L", b + "Q"], [b + "tail0"]),
                n("Cast", [b + "P"], [b + "Pf"], to=TensorProto.FLOAT),
                n("Cast", [b + "Q"], [b + "Qf"], to=TensorProto.FLOAT),
                n("Cast", [b + "L"], [b + "Lf"], to=TensorProto.FLOAT),
                n("Mul", ["nw/a", b + "Pf"], [b + "aP"]),
                n("Mul", ["nw/b", b + "Qf"], [b + "bQ"]),
                n("Add", [b + "aP", b + "bQ"], [b + "extra"]),
                n("Add", [b + "Lf", b + "extra"], [b + "n"]),
                n("Div", ["nw/a", b + "n"], [b + "alpha"]),
                n("Div", ["nw/b", b + "n"], [b + "beta"]),
                n("Div", [b + "extra", b + "n"], [b + "gamma"]),
            ]
        b = blocks[z] = blocks[source]
        new += [
            n("ReduceMean", [z, node.input[1]], [p + "m"], keepdims=1),
            n("Slice", [z, zero, b + "P", axes], [p + "lead"]),
            n("Slice", [z, b + "tail0", b + "L", axes], [p + "tail"]),
            n("ReduceSum", [p + "lead", axes], [p + "Sp"], keepdims=1),
            n("ReduceSum", [p + "tail", axes], [p + "Sq"], keepdims=1),
            n("Mul", [b + "alpha", p + "Sp"], [p + "ap"]),
            n("Mul", [b + "beta", p + "Sq"], [p + "bq"]),
            n("Add", [p + "ap", p + "bq"], [p + "edges"]),
            n("Mul", [b + "gamma", p + "m"], [p + "gm"]),
            n("Sub", [p + "edges", p + "gm"], [p + "shift"]),
            n("Add", [p + "m", p + "shift"], [out]),
        ]
        edit.replace(node, new)
    graph = edit.model.graph
    graph.input.extend([helper.make_tensor_value_info(FRAMES, TensorProto.INT64, [2]),
                        helper.make_tensor_value_info(WEIGHTS, TensorProto.FLOAT, [2])])
    return edit.apply()
