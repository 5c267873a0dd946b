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

    nodes: list[onnx.NodeProto] = []

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


def shape_bounds_on_gpu(model: onnx.ModelProto) -> int:
    """Clip bounds computed from tensor shapes, recomputed on the GPU; returns how many.

    ONNX Runtime keeps shape arithmetic on the CPU, and the CUDA ``Clip`` reads its bounds from device
    memory, so a bound like ``n - 1`` (the harmonic source clamping its interpolation index to the row) needs
    a host-to-device copy, which forbids CUDA graph capture (measured on an H200: the one copy left in stage
    2). The bound's value is a length-derived count >= 0: ``ConstantOfShape`` (shape read on the host) makes
    that many ones on the GPU and ``ReduceSum`` counts them there, exactly (< 2^24).
    """
    graph = model.graph
    constants = {t.name for t in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    constants |= {o for n in graph.node if n.op_type == "Constant" for o in n.output}

    def from_shape(name: str, depth: int = 0) -> bool:
        node = producer.get(name)
        if node is None or depth > 12:
            return False
        return node.op_type == "Shape" or any(from_shape(i, depth + 1) for i in node.input if i not in constants)

    before: dict[int, list[onnx.NodeProto]] = {}
    count = 0
    for clip in [n for n in graph.node if n.op_type == "Clip"]:
        for k in (1, 2):
            if len(clip.input) <= k or not clip.input[k] or clip.input[k] in constants or not from_shape(clip.input[k]):
                continue
            name, p = clip.input[k], f"gpu_bound{count}"
            cast = producer.get(name)
            to = next((a.i for a in cast.attribute if a.name == "to"), onnx.TensorProto.INT64) \
                if cast is not None and cast.op_type == "Cast" else onnx.TensorProto.INT64
            before.setdefault(id(clip), []).extend([
                helper.make_node("Unsqueeze", [name, "gpu_bound/axes0"], [f"{p}/len"], name=f"{p}/len"),
                helper.make_node("ConstantOfShape", [f"{p}/len"], [f"{p}/ones"], name=f"{p}/ones",
                                 value=numpy_helper.from_array(np.array([1.0], np.float32))),
                helper.make_node("ReduceSum", [f"{p}/ones"], [f"{p}/count"], name=f"{p}/count", keepdims=0),
                helper.make_node("Cast", [f"{p}/count"], [f"{p}/value"], name=f"{p}/value", to=to),
            ])
            clip.input[k] = f"{p}/value"
            count += 1
    if count:  # each Clip's new nodes just before it: the graph stays topologically sorted
        graph.initializer.extend([numpy_helper.from_array(np.array([0], np.int64), "gpu_bound/axes0")])
        nodes = list(graph.node)
        del graph.node[:]
        for node in nodes:
            graph.node.extend(before.get(id(node), []))
            graph.node.append(node)
    return count
