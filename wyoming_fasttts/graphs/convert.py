"""From the shipped int8 model to the stage graphs every engine runs, built once and cached by content.

Two sets come out of one pipeline:

* ``float``: dequantised to standard float32 ops, fixed for TensorRT (NonZero, Resize), the STFT as a
  convolution (ONNX Runtime CUDA lacks the op), split at the duration expansion. TensorRT and
  TensorRT-RTX build their plans from these; ONNX Runtime CUDA runs them.
* ``int8``: the shipped graph split at the same point, for ONNX Runtime on the CPU, where the int8
  kernels are the fast ones and the split lets the host cap the silent edges before the vocoder runs; its
  stage 2 also split once more (``prosody``, ``render``) for rendering in frame windows (``backends.windows``),
  the render's instance norms weighed at a span's edges (``norm_weights``). Where this machine multiplies
  unsigned by signed bytes exactly (VNNI), its convolutions run as signed-weight matrix products
  (``conv_matmul``): the same integers, 2-4x sooner.

The cache directory is named by a hash over the model file, the source of the rewrite modules and whether
the convolutions were rewritten here, so a new model, a changed rewrite or a machine without VNNI can never be
served a stale graph; a manifest written last marks a
directory as complete, so a conversion interrupted half-way is redone rather than loaded.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import onnx

from ..assets import sha256_of
from . import conv_matmul, dequantize, norm_weights, onnx_edit, split, stft_conv, trt_fixes
from .cache import CachedFile, build_once, file_entry, read_manifest, write_manifest

_LOGGER = logging.getLogger(__name__)

STAGES = ("stage1", "stage2")
FLAVOURS = ("float", "int8")
VOCODER_PARTS = ("prosody", "render")
"""Stage 2 of the int8 flavour cut in two (``split.split_vocoder``), stored beside it."""
_FILES = {"float": STAGES, "int8": (*STAGES, *VOCODER_PARTS)}
_PIPELINE_MODULES = (conv_matmul, dequantize, norm_weights, onnx_edit, split, stft_conv, trt_fixes)


class GraphError(RuntimeError):
    """The stage graphs could not be produced; the message is meant for the user."""


@dataclass(frozen=True)
class GraphSet:
    """The cached stage graphs of one model: ``files[flavour][stage]``."""

    key: str
    directory: Path
    files: dict[str, dict[str, CachedFile]]

    def path(self, flavour: str, stage: str) -> Path:
        return self.files[flavour][stage].path

    def sha256(self, flavour: str, stage: str) -> str:
        return self.files[flavour][stage].sha256


def pipeline_key(model_path: Path) -> str:
    """Hash of the model's bytes, of the code that rewrites it and of whether the int8 convolutions are
    rewritten on this machine."""
    digest = hashlib.sha256(sha256_of(model_path).encode())
    for module in _PIPELINE_MODULES:
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(b"int8 convolutions as u8s8 matmuls" if conv_matmul.exact_here() else b"int8 ConvInteger")
    return digest.hexdigest()[:20]


def tensorrt_graph(model_path: Path) -> onnx.ModelProto:
    """The whole model as one float graph TensorRT can parse and ONNX Runtime CUDA runs on the GPU."""
    float_model = dequantize.dequantize(onnx.load(str(model_path)))
    return stft_conv.stft_as_conv(trt_fixes.fix_for_tensorrt(float_model))


def _write_stages(model: onnx.ModelProto, directory: Path, flavour: str) -> dict[str, dict[str, str | int]]:
    stages = split.split(model)
    graphs = {"stage1": stages.stage1, "stage2": stages.stage2}
    if "prosody" in _FILES[flavour]:
        graphs["prosody"], render = split.split_vocoder(stages.stage2)
        graphs["render"] = norm_weights.weighted_norms(render)
    out: dict[str, dict[str, str | int]] = {}
    for stage in _FILES[flavour]:
        graph = graphs[stage]
        if flavour == "int8" and conv_matmul.exact_here():
            graph, count = conv_matmul.convs_as_matmuls(graph)
            _LOGGER.info("int8 %s: %d convolutions as signed-weight matrix products (this CPU has VNNI)", stage, count)
        onnx.checker.check_model(graph)
        path = directory / f"{flavour}-{stage}.onnx"
        onnx.save(graph, str(path))
        out[stage] = file_entry(path)
    return out


def _convert(model_path: Path, directory: Path, key: str) -> None:
    _LOGGER.info("Converting %s into TensorRT-ready stage graphs (once; ~20 s)", model_path.name)
    flavours = {"float": _write_stages(tensorrt_graph(model_path), directory, "float"),
                "int8": _write_stages(onnx.load(str(model_path)), directory, "int8")}
    write_manifest(directory, {"key": key, "source": str(model_path), "flavours": flavours})


def _load(directory: Path, key: str) -> GraphSet | None:
    """The cached set if it is complete and every file still has the hash it was built with."""
    found = read_manifest(
        directory, key,
        lambda manifest: {(flavour, stage): entry for flavour, stages in manifest["flavours"].items()
                          for stage, entry in stages.items()},
        {(flavour, stage) for flavour in FLAVOURS for stage in _FILES[flavour]}, "stage graphs")
    if found is None:
        return None
    files = {flavour: {stage: found[flavour, stage] for stage in _FILES[flavour]} for flavour in FLAVOURS}
    return GraphSet(key, directory, files)


def verify(graphs: GraphSet) -> list[str]:
    """Names of cached graph files whose content no longer matches the manifest (slow: hashes ~420 MB)."""
    return [f"{flavour}-{stage}" for flavour, stages in graphs.files.items() for stage, f in stages.items()
            if sha256_of(f.path) != f.sha256]


def ensure_graphs(model_path: Path, data_path: Path) -> GraphSet:
    """The stage graphs for ``model_path``, converting into ``data_path/graphs/<key>`` on first use."""
    key = pipeline_key(model_path)
    directory = data_path / "graphs" / key
    try:
        result = build_once(directory, lambda d: _load(d, key), lambda tmp: _convert(model_path, tmp, key))
    except (ValueError, onnx.checker.ValidationError) as err:
        raise GraphError(f"cannot convert {model_path} into stage graphs: {err}") from err
    if result is None:
        raise GraphError(f"stage graph cache {directory} is incomplete after conversion")
    return result
