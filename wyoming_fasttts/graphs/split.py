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


def _renamed(nodes: list[NodeProto], names: dict[str, str]) -> list[NodeProto]:
    out = []
    for node in nodes:
        copy = NodeProto()
        copy.CopyFrom(node)
        for seq in (copy.input, copy.output):
            for i, name in enumerate(seq):
                seq[i] = names.get(name, name)
        out.append(copy)
    return out


def _extract(model: onnx.ModelProto, name: str, inputs: list[onnx.ValueInfoProto],
             outputs: list[onnx.ValueInfoProto], names: dict[str, str] = _CUT) -> onnx.ModelProto:
    """The part of ``model`` from ``inputs`` to ``outputs``, its cut tensors renamed by ``names`` (old -> new)."""
    old = {v: k for k, v in names.items()}
    in_names = [old.get(i.name, i.name) for i in inputs]
    nodes = prune(model.graph.node, [old.get(o.name, o.name) for o in outputs], stop=in_names)
    used = used_names(nodes)
    weights = [t for t in model.graph.initializer if t.name in used]
    known = set(in_names) | {t.name for t in weights} | {o for n in nodes for o in n.output}
    missing = used - known
    if missing:
        raise ValueError(f"{name} would need tensors from the other stage: {sorted(missing)[:5]}")
    graph = helper.make_graph(_renamed(nodes, names), name, inputs, outputs, weights)
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


# Tensors of the v1.0 export where stage 2 splits into its sentence-wide prosody and its frame-local render
# (``backends.windows``), and the plain names the two graphs use for them.
_VOCODER_CUT: dict[str, tuple[str, list[int | str]]] = {
    "/encoder/MatMul_1_output_0": ("asr", [1, T_EN_CHANNELS, "F"]),               # t_en aligned to frames
    "/encoder/Reshape_output_0": ("f0", [1, "F2"]),                                 # F0 curve, 2 steps a frame
    "/encoder/Reshape_1_output_0": ("energy", [1, "F2"]),                           # energy curve, likewise
    "/decoder/decoder/generator/m_source/l_tanh/Tanh_output_0": ("source", [1, "S", 1]),  # harmonic source, 600 a frame
}


def split_vocoder(stage2: onnx.ModelProto) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """Stage 2 as (prosody, render): alignment, d, t_en, style -> asr, f0, energy, source; and those (any span
    of frames of them) with style -> audio. Everything that sees the whole sentence at once (the prosody LSTM,
    the source's accumulated phase) is in the first; the second is local but for its instance norms.
    Rendered over all frames, render(prosody(x)) is stage2(x) to the bit (the same nodes, cut in two)."""
    names = {old: new for old, (new, _) in _VOCODER_CUT.items()}
    cut = [_info(new, shape) for new, shape in _VOCODER_CUT.values()]
    style = next(i for i in stage2.graph.input if i.name == "style")
    prosody = _extract(stage2, "prosody", list(stage2.graph.input), cut, names)
    render = _extract(stage2, "render", [*cut, style], list(stage2.graph.output), names)
    return prosody, render
