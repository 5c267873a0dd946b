"""Rewrites that keep a graph whole on ONNX Runtime's CUDA provider, so it can be captured as a CUDA graph.

ONNX Runtime captures a CUDA graph only when no node needs a copy between host and device. The batched
stage 2 has one op the CUDA provider lacks: the ``Atan`` of the harmonic source's phase (~17k values per
sentence). Left alone it runs on the CPU with a copy either side (docs/TENSORRT.md, node placement), which
both costs two synchronisations per call and forbids capture. Here it becomes elementwise ops the CUDA
provider has: fold |x| > 1 onto 1/|x|, halve the angle once (|w| <= tan(pi/8)), an odd Taylor polynomial to
w^15 (truncation < 4e-8, under float32 rounding), restore sign and quadrant. NaN stays NaN and +-inf gives
+-pi/2, as ``Atan`` does.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

_TERMS = 8
"""w, w^3 ... w^15: the next term is below 1.8e-8 for |w| <= tan(pi/8) = 0.414."""


def atan_nodes(x: str, out: str, prefix: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes computing ``out = atan(x)`` (float32) with CUDA-provider ops only, and the constants they use."""
    consts = {"one": 1.0, "half_pi": float(np.pi / 2), "two": 2.0,
              **{f"c{k}": (-1.0) ** k / (2 * k + 1) for k in range(_TERMS)}}
    init = [numpy_helper.from_array(np.array(v, np.float32), f"{prefix}/{k}") for k, v in consts.items()]

    def c(name: str) -> str:
        return f"{prefix}/{name}"

    nodes = []

    def op(kind: str, *inputs: str) -> str:
        name = f"{prefix}/{kind.lower()}{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [name], name=name))
        return name

    a = op("Abs", x)
    folded = op("Greater", a, c("one"))
    z = op("Where", folded, op("Reciprocal", a), a)           # in [0, 1]; inf -> 0, NaN stays NaN
    w = op("Div", z, op("Add", c("one"), op("Sqrt", op("Add", c("one"), op("Mul", z, z)))))   # tan(atan(z) / 2)
    w2 = op("Mul", w, w)
    poly = c(f"c{_TERMS - 1}")
    for k in range(_TERMS - 2, -1, -1):                       # Horner in w^2
        poly = op("Add", op("Mul", poly, w2), c(f"c{k}"))
    half = op("Mul", op("Mul", w, poly), c("two"))            # atan(z)
    angle = op("Where", folded, op("Sub", c("half_pi"), half), half)
    nodes.append(helper.make_node("Mul", [angle, op("Sign", x)], [out], name=f"{prefix}/out"))
    return nodes, init


def replace_atan(model: onnx.ModelProto) -> int:
    """Replace every ``Atan`` node in place; returns how many there were."""
    graph = model.graph
    kept, count = [], 0
    for node in graph.node:
        if node.op_type != "Atan":
            kept.append(node)
            continue
        nodes, init = atan_nodes(node.input[0], node.output[0], f"atan_poly{count}")
        kept.extend(nodes)
        graph.initializer.extend(init)
        count += 1
    del graph.node[:]
    graph.node.extend(kept)
    return count
