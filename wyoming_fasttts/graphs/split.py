"""Cut the model at the duration expansion into two graphs with an alignment built on the host between.

Everything data-dependent in Kokoro happens at one point: predicted durations become a token-to-frame
alignment matrix whose size depends on their values. Left inside the graph it forces TensorRT into
data-dependent shapes (an output allocator, no fixed profile); cut there, stage 1 (text -> durations and
features) has shapes set by the token count and stage 2 (aligned features -> audio) by the frame count.
The host gets the durations between the stages, which is also where edge silence can be capped.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import NodeProto, TensorProto, helper

from ..backends.batching import D_CHANNELS, T_EN_CHANNELS
from .onnx_edit import prune, used_names

# Tensor names of the v1.0 export at the cut, and the plain names the stage graphs use instead.
_CUT = {
    "/encoder/Clip_output_0": "durations",                          # [1, T] float, rounded, >= 1
    "/encoder/predictor/text_encoder/Concat_4_output_0": "d",       # [1, T, 640]
    "/encoder/text_encoder/Transpose_2_output_0": "t_en",           # [1, 512, T]
    "/encoder/Cast_4_output_0": "alignment",                        # [1, T, F] one-hot rows per token
}


@dataclass(frozen=True)
class StageGraphs:
    stage1: onnx.ModelProto
    stage2: onnx.ModelProto


def _info(name: str, shape: list[int | str], elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _renamed(nodes: list[NodeProto]) -> list[NodeProto]:
    out = []
    for node in nodes:
        copy = NodeProto()
        copy.CopyFrom(node)
        for seq in (copy.input, copy.output):
            for i, name in enumerate(seq):
                seq[i] = _CUT.get(name, name)
        out.append(copy)
    return out


def _extract(model: onnx.ModelProto, name: str, inputs: list[onnx.ValueInfoProto],
             outputs: list[onnx.ValueInfoProto]) -> onnx.ModelProto:
    old = {v: k for k, v in _CUT.items()}
    in_names = [old.get(i.name, i.name) for i in inputs]
    nodes = prune(model.graph.node, [old.get(o.name, o.name) for o in outputs], stop=in_names)
    used = used_names(nodes)
    weights = [t for t in model.graph.initializer if t.name in used]
    known = set(in_names) | {t.name for t in weights} | {o for n in nodes for o in n.output}
    missing = used - known
    if missing:
        raise ValueError(f"{name} would need tensors from the other stage: {sorted(missing)[:5]}")
    graph = helper.make_graph(_renamed(nodes), name, inputs, outputs, weights)
    return helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)


def split(model: onnx.ModelProto) -> StageGraphs:
    """Both stages of ``model`` (float or int8: the cut tensors carry the same names in each)."""
    graph_inputs = {i.name: i for i in model.graph.input}
    style = graph_inputs["style"]
    stage1 = _extract(model, "stage1", [graph_inputs["tokens"], style, graph_inputs["speed"]], [
        _info("durations", [1, "T"]),
        _info("d", [1, "T", D_CHANNELS]),
        _info("t_en", [1, T_EN_CHANNELS, "T"]),
    ])
    stage2 = _extract(model, "stage2", [
        _info("alignment", [1, "T", "F"]),
        _info("d", [1, "T", D_CHANNELS]),
        _info("t_en", [1, T_EN_CHANNELS, "T"]),
        style,
    ], list(model.graph.output))
    return StageGraphs(stage1, stage2)
