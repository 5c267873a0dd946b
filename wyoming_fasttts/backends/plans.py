"""TensorRT / TensorRT-RTX plans: build them from the stage graphs, cache them, hand back only sound ones.

A plan is only valid for the exact graph, TensorRT flavour and version, GPU architecture and shape
profile it was built with, so all of these form its key and a plan whose key differs is never loaded: it
is rebuilt. Each plan has a JSON record written after it (the plan's sha256, size, and the weight and
activation memory the builder reported); a plan without a record, or whose bytes no longer match it, is
corrupt and rebuilt too. Full TensorRT keeps a timing cache beside the plans, so rebuilding after a
driver or package update is fast; TensorRT-RTX has no timing cache (it compiles kernels on the GPU at
first run and keeps those in a runtime cache, which the runtime stores beside the plans).

Two sets of graphs can be built: the batch-1 stage graphs (``graphs.convert``) and the batched ones
(``graphs.batched``), chosen by ``engine.batched`` (anything but ``never`` means batched on a GPU). A batched
stage-2 plan carries several optimisation profiles, each a (rows, frames) pair with rows x frames at most
``engine.batch_frames``: its activations grow with rows x frames (~0.66 MB each), so one profile spanning
16 rows and 1024 frames would need ~11 GB, while these share one ~1.35 GB scratch (docs/TENSORRT.md).

This module is also the ``build-engine`` command.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..assets import ModelAssets
from ..config import Settings
from ..core import EngineError
from ..graphs.convert import STAGES, GraphSet
from .batching import D_CHANNELS, STYLE_DIM, T_EN_CHANNELS
from .memory import probe_gpu

_LOGGER = logging.getLogger(__name__)

TENSORRT_BACKENDS = {"tensorrt": "tensorrt", "tensorrt-rtx": "tensorrt_rtx"}
"""Backend name as the user selects it -> the Python module of that TensorRT flavour."""
_EXTRA = {"tensorrt": "tensorrt", "tensorrt-rtx": "tensorrt-rtx"}
_STAT_PATTERNS = {
    "weights_bytes": re.compile(r"Total Weights Memory: (\d+) bytes"),
    "activation_bytes": re.compile(r"Total Activation Memory: (\d+) bytes"),
}

Shape = tuple[int, ...]


def import_tensorrt(backend: str) -> ModuleType:
    """The TensorRT module for ``backend``, or an EngineError that says which extra installs it."""
    if backend not in TENSORRT_BACKENDS:
        raise EngineError(f"'{backend}' is not a TensorRT backend ({', '.join(TENSORRT_BACKENDS)})")
    try:
        return __import__(TENSORRT_BACKENDS[backend])
    except ImportError as err:
        raise EngineError(
            f"{backend} is not installed: pip install 'wyoming-fasttts[{_EXTRA[backend]}]' ({err})"
        ) from err


@dataclass(frozen=True)
class StageProfile:
    """min / opt / max shape of each dynamic input of one stage."""

    shapes: dict[str, tuple[Shape, Shape, Shape]]

    def describe(self) -> dict[str, list[list[int]]]:
        return {name: [list(s) for s in mmm] for name, mmm in sorted(self.shapes.items())}


Profiles = tuple[StageProfile, ...]


def stage_profiles(settings: Settings, max_frames: int | None = None) -> dict[str, Profiles]:
    """Batch-1 profiles from the configured limits; T counts the two boundary pads, F the alignment frames."""
    eng = settings.engine
    t_max, f_max = eng.max_tokens + 2, max_frames or eng.max_frames
    t_opt, f_opt = min(eng.opt_tokens, t_max), min(eng.opt_frames, f_max)
    return {
        "stage1": (StageProfile({"tokens": ((1, 1), (1, t_opt), (1, t_max))}),),
        "stage2": (StageProfile({
            "alignment": ((1, 1, 1), (1, t_opt, f_opt), (1, t_max, f_max)),
            "d": ((1, 1, D_CHANNELS), (1, t_opt, D_CHANNELS), (1, t_max, D_CHANNELS)),
            "t_en": ((1, T_EN_CHANNELS, 1), (1, T_EN_CHANNELS, t_opt), (1, T_EN_CHANNELS, t_max)),
        }),),
    }


def batch_shapes(max_batch: int, max_frames: int, batch_frames: int) -> list[tuple[int, int]]:
    """(rows, frames) maxima of the batched stage-2 profiles: powers of two up to ``max_batch``, each with as
    many frames as ``batch_frames`` allows (at most ``max_frames``), dropping any another one covers."""
    sizes = sorted({min(1 << i, max_batch) for i in range(max_batch.bit_length() + 1)})
    shapes = [(b, min(max_frames, batch_frames // b)) for b in sizes if batch_frames // b >= 1]
    return [(b, f) for b, f in shapes if not any(b2 >= b and f2 >= f and (b2, f2) != (b, f) for b2, f2 in shapes)]


def batched_stage_profiles(settings: Settings, max_frames: int | None = None) -> dict[str, Profiles]:
    """Stage 1: one profile over B and T (its scratch, ~0.75 GB at 16 x 512, fits under stage 2's, which it
    shares); stage 2: one profile per ``batch_shapes`` entry, T always up to the model's limit."""
    eng = settings.engine
    max_batch = settings.scheduler.max_batch
    t_max, f_max = eng.max_tokens + 2, max_frames or eng.max_frames
    t_opt = min(eng.opt_tokens, t_max)
    b_opt = min([b for b in settings.scheduler.preferred_batch_sizes if b <= max_batch] or [1])

    def batch(b_hi: int, b_mid: int, **dims: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
              ) -> StageProfile:
        shapes = {name: ((1, *lo), (b_mid, *opt), (b_hi, *hi)) for name, (lo, opt, hi) in dims.items()}
        return StageProfile({**shapes, "style": ((1, STYLE_DIM), (b_mid, STYLE_DIM), (b_hi, STYLE_DIM))})

    stage1 = batch(max_batch, b_opt, tokens=((1,), (t_opt,), (t_max,)), lengths=((), (), ()), speed=((), (), ()))
    stage2 = tuple(
        batch(b, b, alignment=((1, 1), (t_opt, min(eng.opt_frames, f)), (t_max, f)), frames=((), (), ()),
              d=((1, D_CHANNELS), (t_opt, D_CHANNELS), (t_max, D_CHANNELS)),
              t_en=((T_EN_CHANNELS, 1), (T_EN_CHANNELS, t_opt), (T_EN_CHANNELS, t_max)))
        for b, f in batch_shapes(max_batch, f_max, eng.batch_frames)
    )
    return {"stage1": (stage1,), "stage2": stage2}


@dataclass(frozen=True)
class PlanKey:
    """Everything a plan depends on; any change gives another digest, hence another file."""

    stage: str
    graph_sha256: str
    backend: str
    backend_version: str
    compute_capability: str
    precision: str
    profiles: Profiles
    batched: bool = False

    def fields(self) -> dict[str, Any]:
        data = asdict(self)
        data["profiles"] = [p.describe() for p in self.profiles]
        return data

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.fields(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def family(self) -> str:
        """Plans that replace each other: the same stage of the same graphs (batched or not) and flavour."""
        return f"{'batched-' if self.batched else ''}{self.stage}-{self.backend}"

    @property
    def filename(self) -> str:
        return f"{self.family}-sm{self.compute_capability.replace('.', '')}-{self.digest()}.plan"


@dataclass
class PlanRecord:
    """What is known about a built plan; stored as JSON beside it."""

    key: dict[str, Any]
    plan_sha256: str
    plan_bytes: int
    build_seconds: float
    weights_bytes: int | None = None
    activation_bytes: int | None = None
    built_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


class PlanCache:
    """Plans and their records in one directory (``engine.engine_dir``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _paths(self, key: PlanKey) -> tuple[Path, Path]:
        plan = self.directory / key.filename
        return plan, plan.with_suffix(".json")

    def load(self, key: PlanKey) -> tuple[bytes, PlanRecord] | None:
        """The plan for ``key`` if present and intact; a corrupt one is deleted so it gets rebuilt."""
        plan_path, record_path = self._paths(key)
        if not plan_path.exists():
            return None
        try:
            record = PlanRecord(**json.loads(record_path.read_text()))
            data = plan_path.read_bytes()
        except (OSError, ValueError, TypeError) as err:
            self._discard(key, f"its record is unreadable ({err})")
            return None
        if record.key != key.fields():
            self._discard(key, "its record belongs to another key")
            return None
        if len(data) != record.plan_bytes or hashlib.sha256(data).hexdigest() != record.plan_sha256:
            self._discard(key, "its bytes do not match its record (truncated or corrupted)")
            return None
        return data, record

    def _discard(self, key: PlanKey, why: str) -> None:
        _LOGGER.warning("Plan %s is corrupt: %s; it will be rebuilt", key.filename, why)
        self.invalidate(key)

    def invalidate(self, key: PlanKey) -> None:
        for path in self._paths(key):
            path.unlink(missing_ok=True)

    def store(self, key: PlanKey, plan: bytes, build_seconds: float, stats: dict[str, int]) -> PlanRecord:
        """Write plan then record, each atomically; older plans of the same stage and backend are removed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        plan_path, record_path = self._paths(key)
        record = PlanRecord(key=key.fields(), plan_sha256=hashlib.sha256(plan).hexdigest(), plan_bytes=len(plan),
                            build_seconds=round(build_seconds, 2), weights_bytes=stats.get("weights_bytes"),
                            activation_bytes=stats.get("activation_bytes"))
        for path, payload in ((plan_path, plan), (record_path, json.dumps(asdict(record), indent=2).encode())):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(payload)
            os.replace(tmp, path)
        for old in self.directory.glob(f"{key.family}-*.plan"):
            if old != plan_path:
                _LOGGER.info("Removing superseded plan %s", old.name)
                old.unlink(missing_ok=True)
                old.with_suffix(".json").unlink(missing_ok=True)
        return record


def target_compute_capability(settings: Settings, backend: str) -> str:
    """The GPU architecture plans are built for: configured, else this GPU's, else (TensorRT-RTX only) the fallback."""
    wanted = settings.engine.compute_capability
    if wanted != "auto":
        return wanted
    gpu, why = probe_gpu(settings.engine.device_id)
    if gpu is not None:
        return gpu.cc
    if backend == "tensorrt-rtx":
        fallback = settings.engine.fallback_compute_capability
        _LOGGER.info("No GPU here (%s): building TensorRT-RTX plans for compute capability %s", why, fallback)
        return fallback
    raise EngineError(f"full TensorRT builds plans on the GPU they run on, and none is usable: {why}")


def _logger(trt: Any) -> Any:
    """A TensorRT logger forwarding warnings to logging and keeping INFO lines (memory statistics)."""

    class _Logger(trt.ILogger):  # type: ignore[misc]  # TensorRT's classes are untyped
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.lines: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            if severity <= trt.ILogger.WARNING:
                level = logging.ERROR if severity <= trt.ILogger.ERROR else logging.WARNING
                _LOGGER.log(level, "TensorRT: %s", msg)
            elif severity <= trt.ILogger.INFO:
                self.lines.append(msg)

    return _Logger()


def _progress(trt: Any, label: str) -> Any:
    """Prints the builder's top-level phases with elapsed time, so a minute-long build is not silent."""

    class _Progress(trt.IProgressMonitor):  # type: ignore[misc]  # TensorRT's classes are untyped
        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)
            self.start = time.monotonic()
            self.depth: dict[str, int] = {}

        def phase_start(self, phase: str, parent: str | None, steps: int) -> None:
            self.depth[phase] = self.depth.get(parent, -1) + 1 if parent else 0
            if self.depth[phase] <= 1:
                indent = "  " * self.depth[phase]
                print(f"  [{time.monotonic() - self.start:6.1f}s] {label}: {indent}{phase}", file=sys.stderr)

        def step_complete(self, phase: str, step: int) -> bool:
            return True

        def phase_finish(self, phase: str) -> None:
            self.depth.pop(phase, None)

    return _Progress()


def _compute_capability_enum(trt: ModuleType, cc: str) -> Any:
    name = "SM" + cc.replace(".", "")
    value = getattr(trt.ComputeCapability, name, None)
    if value is None:
        supported = [n for n in trt.ComputeCapability.__members__ if n.startswith("SM")]
        raise EngineError(f"TensorRT-RTX cannot build for compute capability {cc} (it knows {', '.join(supported)})")
    return value


def _side_cache(directory: Path, kind: str, key: PlanKey) -> Path:
    """Caches beside the plans that depend on the flavour, its version and the GPU, not on the graphs."""
    return directory / f"{kind}-{key.backend}-{key.backend_version}-sm{key.compute_capability}.cache"


def runtime_cache_path(settings: Settings, key: PlanKey) -> Path:
    """Where TensorRT-RTX keeps the kernels it compiled on this GPU between runs."""
    return _side_cache(settings.engine.engine_path, "runtime", key)


def build_plan(trt: ModuleType, graph: Path, key: PlanKey, cache: PlanCache, progress: bool = True
               ) -> tuple[bytes, dict[str, int]]:
    """Parse and build one stage; returns the serialized plan and the memory the builder reported."""
    logger = _logger(trt)
    builder = trt.Builder(logger)
    network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(graph)):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise EngineError(f"TensorRT cannot parse {graph.name}: {errors}")
    config = builder.create_builder_config()
    for stage_profile in key.profiles:
        profile = builder.create_optimization_profile()
        for name, (lo, opt, hi) in stage_profile.shapes.items():
            profile.set_shape(name, lo, opt, hi)
        config.add_optimization_profile(profile)
    if key.stage == "stage1":
        config.clear_flag(trt.BuilderFlag.TF32)  # durations are rounded: keep full fp32 so they match the CPU
    if key.backend == "tensorrt-rtx":
        config.num_compute_capabilities = 1
        config.set_compute_capability(_compute_capability_enum(trt, key.compute_capability), 0)
        timing_path = None
    else:
        timing_path = _side_cache(cache.directory, "timing", key)
        previous = timing_path.read_bytes() if timing_path.is_file() else b""
        config.set_timing_cache(config.create_timing_cache(previous), False)
    if progress:
        config.progress_monitor = _progress(trt, key.stage)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise EngineError(f"TensorRT could not build {key.stage} (see the TensorRT errors above)")
    if timing_path is not None:
        cache.directory.mkdir(parents=True, exist_ok=True)
        timing_path.write_bytes(bytes(config.get_timing_cache().serialize()))
    stats = {}
    for name, pattern in _STAT_PATTERNS.items():  # activations are logged once per profile: keep the largest
        found = [int(m.group(1)) for line in logger.lines if (m := pattern.search(line))]
        if found:
            stats[name] = max(found)
    return bytes(plan), stats


@dataclass(frozen=True)
class Plan:
    key: PlanKey
    data: bytes
    record: PlanRecord
    built: bool


@dataclass(frozen=True)
class StageGraphs:
    """The ONNX graph of each stage that plans are built from, with its content hash."""

    paths: dict[str, Path]
    sha256: dict[str, str]
    batched: bool


def batch1_stage_graphs(graphs: GraphSet) -> StageGraphs:
    return StageGraphs({s: graphs.path("float", s) for s in STAGES}, {s: graphs.sha256("float", s) for s in STAGES},
                       batched=False)


def gpu_stage_graphs(settings: Settings, assets: ModelAssets) -> StageGraphs:
    """The batched graphs unless ``engine.batched`` is ``never``; under ``auto`` the batch-1 graphs when the
    batched ones are not exported yet and cannot be here (no torch), with a warning; ``always`` insists."""
    from ..graphs.batched import ExportError, ensure_batched_graphs
    from ..graphs.convert import ensure_graphs

    mode = settings.engine.batched
    if mode != "never":
        try:
            batched = ensure_batched_graphs(assets, settings.assets.data_path, settings.engine.precision)
        except ExportError as err:
            if mode == "always":
                raise EngineError(str(err)) from err
            _LOGGER.warning("TensorRT: batch-1 plans instead of batched ones: %s", err)
        else:
            return StageGraphs({"stage1": batched.stage1, "stage2": batched.stage2}, batched.sha256, batched=True)
    return batch1_stage_graphs(ensure_graphs(assets.model, settings.assets.data_path))


def plan_keys(settings: Settings, graphs: StageGraphs, backend: str, version: str, cc: str,
              max_frames: int | None = None) -> dict[str, PlanKey]:
    profiles = (batched_stage_profiles if graphs.batched else stage_profiles)(settings, max_frames)
    return {stage: PlanKey(stage, graphs.sha256[stage], backend, version, cc, settings.engine.precision,
                           profiles[stage], graphs.batched) for stage in STAGES}


def ensure_plans(settings: Settings, graphs: StageGraphs, backend: str, *, max_frames: int | None = None,
                 rebuild: bool = False, progress: bool = True) -> dict[str, Plan]:
    """Plans for both stages from the cache, building what is missing, stale or corrupt."""
    trt = import_tensorrt(backend)
    cc = target_compute_capability(settings, backend)
    cache = PlanCache(settings.engine.engine_path)
    plans = {}
    for stage, key in plan_keys(settings, graphs, backend, trt.__version__, cc, max_frames).items():
        found = None if rebuild else cache.load(key)
        if found:
            plans[stage] = Plan(key, *found, built=False)
            continue
        _LOGGER.info("Building %s plan %s (%s %s, sm %s)", stage, key.filename, backend, trt.__version__, cc)
        started = time.monotonic()
        data, stats = build_plan(trt, graphs.paths[stage], key, cache, progress)
        record = cache.store(key, data, time.monotonic() - started, stats)
        plans[stage] = Plan(key, data, record, built=True)
    return plans
