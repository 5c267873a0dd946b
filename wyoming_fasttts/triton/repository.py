"""A Triton model repository for the engine (the ``triton-repo`` command is ``cli/triton_repo.py``).

One ensemble, ``fasttts``, is what clients call (one sentence per request: ``tokens`` [T] with the boundary
pads, ``lengths`` [1], ``style`` [256], ``speed`` [1] -> ``audio`` [S], ``audio_lengths`` [1]); its steps are
the batched stage graphs (``graphs/batched.py``) with the host alignment step between them, the same cut and
the same host code as the in-process engines:

    fasttts_stage1 (tokens -> durations, d, t_en) -> fasttts_align (durations -> alignment, frames)
    -> fasttts_stage2 (alignment, d, t_en, style, frames -> audio, audio_lengths)

The stages batch on Triton (``max_batch_size``, preferred sizes and queue delay from config.yaml's
``scheduler``), with ``--instances`` copies per GPU (``--gpus``) or on the CPU. Backends:

* ``python`` runs anywhere (CI runs it; ``scripts/triton-local`` serves it): Python-backend models on ONNX
  Runtime, ragged batches padded inside the model, the Python environment linked in by the server script.
* ``onnxruntime`` / ``tensorrt``: NVIDIA's Triton container on GPU boxes. Those backends batch only equal
  shapes, so the client pads tokens to ``token_bucket`` and the alignment step pads frames to
  ``frame_bucket`` (the graphs mask each row to its true length). TensorRT plans are built inside that
  container from the ONNX graphs written here (``build-plans.sh``; a plan is tied to its TensorRT version).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..backends import alignment
from ..config import Settings

_LOGGER = logging.getLogger(__name__)

ENSEMBLE = "fasttts"
BACKENDS = ("python", "onnxruntime", "tensorrt")
PYTHON_ENV = "python-env"
"""Each Python-backend model reads its environment from ``<model dir>/python-env`` (``scripts/triton-local``
links its virtualenv there; in a container, mount or unpack one there)."""
MODELS_DIR = Path(__file__).with_name("models")
D_CHANNELS, T_EN_CHANNELS, STYLE_DIM = 640, 512, 256
TOKEN_BUCKET = 16
FRAME_BUCKET = 32
"""Shape buckets for backends without ragged batching: 16 tokens, 32 frames (0.8 s of audio)."""


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    dims: tuple[int, ...]
    flat: bool = False
    """[1] per request in Triton, [B] in the graph (``reshape { shape: [] }`` for native backends)."""

    def pbtxt(self, ragged: bool, output: bool = False) -> str:
        extra = " allow_ragged_batch: true" if ragged and not output and -1 in self.dims else ""
        reshape = " reshape: { shape: [ ] }" if self.flat and not ragged else ""
        dims = ", ".join(map(str, self.dims))
        return f'  {{ name: "{self.name}" data_type: {self.dtype} dims: [ {dims} ]{extra}{reshape} }}'


STAGE1_IN = (Tensor("tokens", "TYPE_INT64", (-1,)), Tensor("lengths", "TYPE_INT64", (1,), True),
             Tensor("style", "TYPE_FP32", (STYLE_DIM,)), Tensor("speed", "TYPE_FP32", (1,), True))
STAGE1_OUT = (Tensor("durations", "TYPE_FP32", (-1,)), Tensor("d", "TYPE_FP32", (-1, D_CHANNELS)),
              Tensor("t_en", "TYPE_FP32", (T_EN_CHANNELS, -1)))
ALIGN_IN = (Tensor("durations", "TYPE_FP32", (-1,)), Tensor("lengths", "TYPE_INT64", (1,)))
ALIGN_OUT = (Tensor("alignment", "TYPE_FP32", (-1, -1)), Tensor("frames", "TYPE_INT64", (1,)))
STAGE2_IN = (Tensor("alignment", "TYPE_FP32", (-1, -1)), Tensor("d", "TYPE_FP32", (-1, D_CHANNELS)),
             Tensor("t_en", "TYPE_FP32", (T_EN_CHANNELS, -1)), Tensor("style", "TYPE_FP32", (STYLE_DIM,)),
             Tensor("frames", "TYPE_INT64", (1,), True))
STAGE2_OUT = (Tensor("audio", "TYPE_FP32", (-1,)), Tensor("audio_lengths", "TYPE_INT64", (1,), True))
ENSEMBLE_IN = tuple(Tensor(t.name, t.dtype, t.dims) for t in STAGE1_IN)
ENSEMBLE_OUT = tuple(Tensor(t.name, t.dtype, t.dims) for t in STAGE2_OUT)


class RepositoryError(RuntimeError):
    """The repository could not be written; the message is meant for the user."""


@dataclass(frozen=True)
class Layout:
    backend: str
    instances: int
    gpus: tuple[int, ...]
    max_batch: int
    preferred: tuple[int, ...]
    delay_us: int
    tail_frames: int

    @property
    def ragged(self) -> bool:
        return self.backend == "python"

    def instance_group(self) -> str:
        if self.backend == "python" and not self.gpus:
            return f"instance_group [ {{ count: {self.instances} kind: KIND_CPU }} ]"
        gpus = f" gpus: [ {', '.join(map(str, self.gpus))} ]" if self.gpus else ""
        return f"instance_group [ {{ count: {self.instances} kind: KIND_GPU{gpus} }} ]"

    def batching(self) -> str:
        sizes = ", ".join(str(b) for b in self.preferred if b <= self.max_batch)
        preferred = f"preferred_batch_size: [ {sizes} ] " if sizes else ""
        return f"dynamic_batching {{ {preferred}max_queue_delay_microseconds: {self.delay_us} }}"


def _params(**values: object) -> str:
    return "\n".join(f'parameters: {{ key: "{k}" value: {{ string_value: "{v}" }} }}' for k, v in values.items())


def _io(kind: str, tensors: tuple[Tensor, ...], ragged: bool) -> str:
    return f"{kind} [\n" + ",\n".join(t.pbtxt(ragged, kind == "output") for t in tensors) + "\n]"


def _config(name: str, head: str, layout: Layout, inputs: tuple[Tensor, ...], outputs: tuple[Tensor, ...],
            *tail: str, ragged: bool | None = None) -> str:
    ragged = layout.ragged if ragged is None else ragged
    parts = [f'name: "{name}"', head, f"max_batch_size: {layout.max_batch}",
             _io("input", inputs, ragged), _io("output", outputs, ragged), *tail]
    return "\n".join(p for p in parts if p) + "\n"


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _stage(out: Path, layout: Layout, stage: str, graph: Path, inputs: tuple[Tensor, ...],
           outputs: tuple[Tensor, ...]) -> None:
    name = f"{ENSEMBLE}_{stage}"
    directory = out / name
    common = (layout.batching(), layout.instance_group())
    if layout.backend == "python":
        _link_or_copy(graph, directory / "1" / f"{stage}.onnx")
        shutil.copy2(MODELS_DIR / "stage.py", directory / "1" / "model.py")
        params = _params(stage=stage, graph=f"{stage}.onnx", threads=0,
                         EXECUTION_ENV_PATH=f"$$TRITON_MODEL_DIRECTORY/{PYTHON_ENV}")
        _write(directory / "config.pbtxt", _config(name, 'backend: "python"', layout, inputs, outputs, *common, params))
    elif layout.backend == "onnxruntime":
        _link_or_copy(graph, directory / "1" / "model.onnx")
        _write(directory / "config.pbtxt", _config(name, 'backend: "onnxruntime"', layout, inputs, outputs, *common))
    else:
        _link_or_copy(graph, directory / f"{stage}.onnx")
        (directory / "1").mkdir(parents=True, exist_ok=True)
        _write(directory / "config.pbtxt", _config(name, 'platform: "tensorrt_plan"', layout, inputs, outputs,
                                                   *common))


def _align(out: Path, layout: Layout) -> None:
    name = f"{ENSEMBLE}_align"
    directory = out / name
    (directory / "1").mkdir(parents=True, exist_ok=True)
    shutil.copy2(MODELS_DIR / "align.py", directory / "1" / "model.py")
    shutil.copy2(alignment.__file__, directory / "1" / "alignment.py")
    env = {"EXECUTION_ENV_PATH": f"$$TRITON_MODEL_DIRECTORY/{PYTHON_ENV}"} if layout.backend == "python" else {}
    bucket = 1 if layout.ragged else FRAME_BUCKET
    # The host step is cheap: it runs each request as it comes (no queue delay), on the CPU.
    _write(directory / "config.pbtxt", _config(
        name, 'backend: "python"', layout, ALIGN_IN, ALIGN_OUT, "dynamic_batching { }",
        f"instance_group [ {{ count: {max(1, layout.instances)} kind: KIND_CPU }} ]",
        _params(tail_frames=layout.tail_frames, frame_bucket=bucket, **env), ragged=True))


def _ensemble(out: Path, layout: Layout) -> None:
    def step(model: str, inputs: tuple[Tensor, ...], outputs: tuple[Tensor, ...]) -> str:
        maps = [f'input_map {{ key: "{t.name}" value: "{t.name}" }}' for t in inputs]
        maps += [f'output_map {{ key: "{t.name}" value: "{t.name}" }}' for t in outputs]
        return f'    {{ model_name: "{ENSEMBLE}_{model}" model_version: -1\n      ' + "\n      ".join(maps) + " }"

    steps = ",\n".join((step("stage1", STAGE1_IN, STAGE1_OUT), step("align", ALIGN_IN, ALIGN_OUT),
                        step("stage2", STAGE2_IN, STAGE2_OUT)))
    bucket = 1 if layout.ragged else TOKEN_BUCKET
    (out / ENSEMBLE / "1").mkdir(parents=True, exist_ok=True)
    _write(out / ENSEMBLE / "config.pbtxt", _config(
        ENSEMBLE, 'platform: "ensemble"', layout, ENSEMBLE_IN, ENSEMBLE_OUT,
        f"ensemble_scheduling {{\n  step [\n{steps}\n  ]\n}}", _params(token_bucket=bucket), ragged=False))


def _build_plans_script(out: Path, settings: Settings, layout: Layout) -> None:
    """trtexec commands for NVIDIA's Triton container: plans must come from the TensorRT that serves them."""
    eng, b = settings.engine, layout.max_batch
    t_max, f_max = eng.max_tokens + 2 + TOKEN_BUCKET, eng.max_frames
    t_opt, f_opt = eng.opt_tokens, eng.opt_frames
    # An fp16 stage 2 carries its float32 islands in the graph's own types; --fp16 would let TensorRT move
    # them to fp16 too (NaN), strong typing keeps each op in the type the export gave it.
    precision = " --stronglyTyped" if eng.precision == "fp16" else ""
    stage1 = f"tokens:{{}}x{{}},lengths:{{}},style:{{}}x{STYLE_DIM},speed:{{}}"
    stage2 = (f"alignment:{{}}x{{}}x{{}},d:{{}}x{{}}x{D_CHANNELS},t_en:{{}}x{T_EN_CHANNELS}x{{}},"
              f"style:{{}}x{STYLE_DIM},frames:{{}}")

    def shapes(template: str, rows: int, tokens: int, frames: int | None = None) -> str:
        if frames is None:
            return template.format(rows, tokens, rows, rows, rows)
        return template.format(rows, tokens, frames, rows, tokens, rows, tokens, rows, rows)

    lines = [
        "#!/usr/bin/env bash",
        "# Build the TensorRT plans inside NVIDIA's Triton container (the TensorRT that will run them):",
        "#   docker run --gpus all --rm -v \"$PWD\":/models nvcr.io/nvidia/tritonserver:<tag>-py3 "
        "bash /models/build-plans.sh",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
        f"trtexec --onnx={ENSEMBLE}_stage1/stage1.onnx --saveEngine={ENSEMBLE}_stage1/1/model.plan "
        f"--minShapes={shapes(stage1, 1, 3)} --optShapes={shapes(stage1, 4, t_opt)} "
        f"--maxShapes={shapes(stage1, b, t_max)} --noTF32",
        f"trtexec --onnx={ENSEMBLE}_stage2/stage2.onnx --saveEngine={ENSEMBLE}_stage2/1/model.plan "
        f"--minShapes={shapes(stage2, 1, 3, 1)} --optShapes={shapes(stage2, 4, t_opt, f_opt)} "
        f"--maxShapes={shapes(stage2, b, t_max, f_max)}{precision}",
    ]
    script = out / "build-plans.sh"
    _write(script, "\n".join(lines) + "\n")
    script.chmod(0o755)


def write_repository(out: Path, settings: Settings, stage1: Path, stage2: Path, *, backend: str = "python",
                     instances: int = 1, gpus: tuple[int, ...] = ()) -> Layout:
    """Write the repository into ``out`` (created; the models' folders in it replaced)."""
    if backend not in BACKENDS:
        raise RepositoryError(f"--backend must be one of {', '.join(BACKENDS)}")
    if instances < 1:
        raise RepositoryError("--instances must be at least 1")
    sched = settings.scheduler
    layout = Layout(backend, instances, tuple(gpus), sched.max_batch, tuple(sched.preferred_batch_sizes),
                    round(sched.max_queue_delay_ms * 1000), settings.engine.tail_frames)
    out.mkdir(parents=True, exist_ok=True)
    for model in (ENSEMBLE, *(f"{ENSEMBLE}_{m}" for m in ("stage1", "align", "stage2"))):
        # Keep a linked Python environment (scripts/triton-local's) across regenerations.
        for child in (out / model).glob("*") if (out / model).is_dir() else ():
            if child.name != PYTHON_ENV:
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    _stage(out, layout, "stage1", stage1, STAGE1_IN, STAGE1_OUT)
    _align(out, layout)
    _stage(out, layout, "stage2", stage2, STAGE2_IN, STAGE2_OUT)
    _ensemble(out, layout)
    if backend == "tensorrt":
        _build_plans_script(out, settings, layout)
    return layout
