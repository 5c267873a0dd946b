"""TensorRT and TensorRT-RTX engine: both stage plans resident, one pool of device memory, no per-request allocation.

One code path serves both flavours; they differ only in the module imported and in features probed here
(TensorRT-RTX's runtime cache of JIT-compiled kernels). Each slot (``trt_lane.Lane``) owns its execution
contexts, a CUDA stream and pinned host buffers; all device memory (context scratch and tensors for every
slot) is carved out of a single allocation made at start-up, sized for the plans' maximum shapes, so
nothing is allocated while serving and nothing can fragment. Stage-1 outputs (d, t_en) never leave the
GPU: stage 2 reads them where stage 1 wrote them; only the durations make the round trip to the host,
where the alignment is built (and the silent edges capped) exactly as on the CPU path.

Batch-1 plans get the lane below (``max_batch`` 1, one sentence per call); batched plans get
``trt_batched.BatchedLane`` (``max_batch`` from the plans' profile: one stage-1 call per batch).
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..assets import ModelAssets
from ..config import Settings
from ..core import EngineError, SynthesisItem
from .alignment import SAMPLES_PER_FRAME, alignment, frame_counts
from .base import BatchSynthesis, EngineMemory
from .batching import D_CHANNELS, STYLE_DIM, T_EN_CHANNELS
from .cuda import Cuda
from .memory import process_rss_bytes
from .plans import Plan, import_tensorrt
from .trt_batched import BatchedLane, BatchLimits, batched_tensor_bytes
from .trt_lane import Lane, lane_layout

_LOGGER = logging.getLogger(__name__)


class PlanLoadError(EngineError):
    """A cached plan passed its checks but this GPU or driver will not load it."""


@dataclass(frozen=True)
class Limits:
    """Largest token count (pads included) and frame count a slot's buffers hold."""

    tokens: int
    frames: int


def tensor_bytes(limits: Limits) -> dict[str, int]:
    """Bytes of each stage tensor at the limits: the device buffers every slot owns."""
    t, f = limits.tokens, limits.frames
    return {
        "tokens": t * 8,
        "style": STYLE_DIM * 4,
        "speed": 4,
        "durations": t * 4,
        "d": t * D_CHANNELS * 4,
        "t_en": T_EN_CHANNELS * t * 4,
        "alignment": t * f * 4,
        "audio": f * SAMPLES_PER_FRAME * 4,
    }


HOST_TENSORS = ("tokens", "style", "speed", "durations", "alignment", "audio")
"""What crosses between host and GPU, hence gets a pinned host buffer."""


def slot_bytes(context_bytes: dict[str, int], tensors: dict[str, int]) -> int:
    """Device bytes one slot needs: the largest context's scratch (its contexts share it) plus its tensors."""
    return lane_layout(max(context_bytes.values()), tensors)[1]


def choose_slots(requested: int, budget_bytes: int, weights_bytes: int, per_slot_bytes: int) -> int:
    """Slots to create: as requested, or (0 = engine's choice) as many as fit the budget, at least one."""
    fit = max(0, (budget_bytes - weights_bytes) // per_slot_bytes) if per_slot_bytes else 1
    if requested > 0:
        if requested > fit:
            _LOGGER.warning("%d slots need %.0f MB beyond the %.0f MB budget", requested,
                            (weights_bytes + requested * per_slot_bytes - budget_bytes) / 1e6, budget_bytes / 1e6)
        return requested
    if fit < 1:
        raise EngineError(
            f"one slot needs {(weights_bytes + per_slot_bytes) / 1e6:.0f} MB of GPU memory, more than the "
            f"{budget_bytes / 1e6:.0f} MB budget (engine.memory_budget_mb); lower engine.max_frames or raise the budget"
        )
    return int(min(fit, 4))


def _output_allocator(trt: Any, ptr: int, capacity: int) -> Any:
    """Hands TensorRT the preallocated buffer for a data-dependent output, never new memory."""

    class _Fixed(trt.IOutputAllocator):  # type: ignore[misc]  # TensorRT's classes are untyped
        def __init__(self) -> None:
            trt.IOutputAllocator.__init__(self)
            self.shape: tuple[int, ...] | None = None

        def reallocate_output(self, name: str, memory: int, size: int, alignment: int) -> int:
            return ptr if size <= capacity else 0

        def reallocate_output_async(self, name: str, memory: int, size: int, alignment: int, stream: int) -> int:
            return self.reallocate_output(name, memory, size, alignment)

        def notify_shape(self, name: str, shape: Any) -> None:
            self.shape = tuple(shape)

    return _Fixed()


class _Slot(Lane):
    """A batch-1 lane: a stage-1 and a stage-2 context sharing the lane's scratch, one sentence per call."""

    def __init__(self, trt: ModuleType, engines: dict[str, Any], cuda: Cuda, base: int, limits: Limits,
                 runtime_cache: Any, tail_frames: int) -> None:
        super().__init__(trt, engines, cuda, base, tensor_bytes(limits), HOST_TENSORS, runtime_cache, tail_frames)
        self.limits = limits
        self.contexts = {stage: self.context(engine) for stage, engine in engines.items()}
        s1, s2 = self.contexts["stage1"], self.contexts["stage2"]
        for name in ("tokens", "style", "speed", "durations", "d", "t_en"):
            s1.set_tensor_address(name, self.dev[name])
        for name in ("alignment", "d", "t_en", "style"):
            s2.set_tensor_address(name, self.dev[name])
        self.audio_allocator = None
        if _audio_is_data_dependent(s2):
            self.audio_allocator = _output_allocator(trt, self.dev["audio"], tensor_bytes(limits)["audio"])
            s2.set_output_allocator("audio", self.audio_allocator)
        else:
            s2.set_tensor_address("audio", self.dev["audio"])

    def run(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.synthesize(item) for item in items]

    def synthesize(self, item: SynthesisItem) -> tuple[np.ndarray, np.ndarray]:
        """Audio and the frames per token it was rendered with."""
        n = len(item.ids) + 2
        if n > self.limits.tokens:
            raise EngineError(f"{len(item.ids)} phoneme ids exceed the engine's {self.limits.tokens - 2}")
        tokens = self.host["tokens"].view(np.int64)
        tokens[0], tokens[1:n - 1], tokens[n - 1] = 0, item.ids, 0
        self.host["style"].view(np.float32)[:] = np.asarray(item.style, np.float32).ravel()
        self.host["speed"].view(np.float32)[0] = item.speed
        for name, nbytes in (("tokens", n * 8), ("style", STYLE_DIM * 4), ("speed", 4)):
            self.upload(name, nbytes)
        self.contexts["stage1"].set_input_shape("tokens", (1, n))
        self.execute(self.contexts["stage1"], self.stream, "stage 1")
        self.download("durations", n * 4)
        self.cuda.synchronize(self.stream)

        frames = frame_counts(self.host["durations"].view(np.float32)[:n], self.tail_frames)
        total = int(frames.sum())
        if total > self.limits.frames:
            raise EngineError(f"sentence needs {total} frames, the engine holds {self.limits.frames} "
                              "(engine.max_frames); split the text further")
        alignment(frames, out=self.view("alignment", np.float32, (1, n, total)))
        self.upload("alignment", n * total * 4)
        s2 = self.contexts["stage2"]
        for name, shape in (("alignment", (1, n, total)), ("d", (1, n, D_CHANNELS)), ("t_en", (1, T_EN_CHANNELS, n))):
            s2.set_input_shape(name, shape)
        self.execute(s2, self.stream, "stage 2")
        samples = _audio_samples(s2, self.audio_allocator, total)
        self.download("audio", samples * 4)
        self.cuda.synchronize(self.stream)
        return self.host["audio"].view(np.float32)[:samples].copy(), frames

    def close(self) -> None:
        self.contexts.clear()
        super().close()


def _audio_is_data_dependent(context: Any) -> bool:
    """Whether the audio length is unknown until stage 2 has run (then it needs an output allocator)."""
    for name, shape in (("alignment", (1, 3, 4)), ("d", (1, 3, D_CHANNELS)), ("t_en", (1, T_EN_CHANNELS, 3))):
        context.set_input_shape(name, shape)
    return -1 in tuple(context.get_tensor_shape("audio"))


def _audio_samples(context: Any, allocator: Any, frames: int) -> int:
    if allocator is not None and allocator.shape:
        return int(np.prod(allocator.shape))
    shape = tuple(context.get_tensor_shape("audio"))
    return int(np.prod(shape)) if -1 not in shape else frames * SAMPLES_PER_FRAME


class TensorRTEngine(BatchSynthesis):
    """Both stage plans on one GPU behind the Engine protocol; ``slots`` runs may be in flight at once."""

    def __init__(self, backend: str, plans: dict[str, Plan], *, device_id: int, limits: Limits, slots: int,
                 budget_bytes: int, tail_frames: int, runtime_cache_path: Path | None = None) -> None:
        self.name = backend
        self.device = f"cuda:{device_id}"
        self._trt = trt = import_tensorrt(backend)
        self._cuda = Cuda(device_id)
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._runtime = trt.Runtime(self._logger)
        self._engines = {}
        for stage, plan in plans.items():
            engine = self._runtime.deserialize_cuda_engine(plan.data)
            if engine is None:
                raise PlanLoadError(f"{backend} could not load the {stage} plan {plan.key.filename}; "
                                  "run build-engine --force (driver or GPU changed?)")
            self._engines[stage] = engine
        self._cache_path = runtime_cache_path
        self._runtime_cache = self._load_runtime_cache()
        ctx_bytes = {s: int(e.device_memory_size_v2) for s, e in self._engines.items()}
        self.weights_bytes = sum(p.record.weights_bytes or len(p.data) for p in plans.values())
        lane_limits: Limits | BatchLimits
        if plans["stage1"].key.batched:
            lane_limits = batch_limits = BatchLimits.from_keys(plans["stage1"].key, plans["stage2"].key)
            tensors, self.max_batch = batched_tensor_bytes(batch_limits), batch_limits.max_batch

            def lane(base: int) -> _Slot | BatchedLane:
                return BatchedLane(trt, self._engines, self._cuda, base, batch_limits, self._runtime_cache, tail_frames)
        else:
            lane_limits, tensors, self.max_batch = limits, tensor_bytes(limits), 1

            def lane(base: int) -> _Slot | BatchedLane:
                return _Slot(trt, self._engines, self._cuda, base, limits, self._runtime_cache, tail_frames)
        per_slot = slot_bytes(ctx_bytes, tensors)
        self.slots = choose_slots(slots, budget_bytes, self.weights_bytes, per_slot)
        self.pool_bytes = per_slot * self.slots
        self._pool = self._cuda.malloc(self.pool_bytes)
        self._lanes = [lane(self._pool + i * per_slot) for i in range(self.slots)]
        self._free: queue.SimpleQueue[_Slot | BatchedLane] = queue.SimpleQueue()
        for each in self._lanes:
            self._free.put(each)
        _LOGGER.info("%s %s: %d slot(s) of batch %d, %.0f MB context+tensor pool, %.0f MB weights, up to %d frames",
                     backend, trt.__version__, self.slots, self.max_batch, self.pool_bytes / 1e6,
                     self.weights_bytes / 1e6, lane_limits.frames)

    def _load_runtime_cache(self) -> Any:
        """TensorRT-RTX's cache of kernels it compiled for this GPU; absent on full TensorRT."""
        engine = self._engines["stage1"]
        if self._cache_path is None or not hasattr(engine, "create_runtime_config"):
            return None
        config = engine.create_runtime_config()
        if not hasattr(config, "create_runtime_cache"):
            return None
        cache = config.create_runtime_cache()
        if self._cache_path.is_file():
            cache.deserialize(self._cache_path.read_bytes())
        return cache

    def _save_runtime_cache(self) -> None:
        if self._runtime_cache is not None and self._cache_path is not None:
            tmp = self._cache_path.with_suffix(".tmp")
            tmp.write_bytes(bytes(self._runtime_cache.serialize()))
            tmp.replace(self._cache_path)

    def warmup(self) -> None:
        """Every slot on a few batch sizes and lengths, so JIT compilation happens now, not live. Batched
        lanes meet every bucket shape (and capture its CUDA graph) instead."""
        self._cuda.bind()
        rng = np.random.default_rng(0)
        style = rng.standard_normal(STYLE_DIM).astype(np.float32) * 0.1
        for lane in self._lanes:
            if isinstance(lane, BatchedLane):
                started = time.perf_counter()
                shapes = lane.warm(style)
                _LOGGER.info("warm-up: %d bucket shapes planned and captured in %.1f s", shapes,
                             time.perf_counter() - started)
            else:
                for n in (24, 96):
                    lane.run([SynthesisItem(ids=np.full(n, 16, np.int64), style=style)])
        self._save_runtime_cache()

    @property
    def replay(self) -> str:
        """How the lanes run, for doctor."""
        lane = self._lanes[0]
        if isinstance(lane, BatchedLane):
            return f"CUDA graphs captured around enqueue: {len(lane.replay.graphs)} per lane"
        return "no CUDA graphs (batch-1 plans)"

    def synthesize_batch(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``synthesize`` for each item, as one batch on batched plans (doctor checks its rows)."""
        self._cuda.bind()
        lane = self._free.get()
        try:
            return lane.run(items)
        finally:
            self._free.put(lane)

    def memory(self) -> EngineMemory:
        self._cuda.bind()
        free, total = self._cuda.mem_info()
        return EngineMemory(
            host_rss_bytes=process_rss_bytes(), weights_bytes=self.weights_bytes, workspace_bytes=self.pool_bytes,
            device_used_bytes=total - free, device_free_bytes=free, device_total_bytes=total,
        )

    def close(self) -> None:
        self._cuda.bind()
        self._save_runtime_cache()
        for lane in self._lanes:
            lane.close()
        self._lanes.clear()
        self._engines.clear()
        self._cuda.free(self._pool)


def create_tensorrt_engine(settings: Settings, assets: ModelAssets, backend: str) -> TensorRTEngine:
    """Graphs and plans from the caches (building what is missing), then the resident engine."""
    from .plans import ensure_plans, gpu_stage_graphs, runtime_cache_path

    graphs = gpu_stage_graphs(settings, assets)
    eng = settings.engine

    def load(plans: dict[str, Plan]) -> TensorRTEngine:
        return TensorRTEngine(
            backend, plans, device_id=eng.device_id, limits=Limits(eng.max_tokens + 2, eng.max_frames),
            slots=settings.scheduler.workers, budget_bytes=eng.memory_budget_mb * 2**20,
            tail_frames=eng.tail_frames, runtime_cache_path=runtime_cache_path(settings, plans["stage1"].key),
        )

    try:
        return load(ensure_plans(settings, graphs, backend))
    except PlanLoadError as err:
        _LOGGER.warning("%s; rebuilding the plans once", err)
        return load(ensure_plans(settings, graphs, backend, rebuild=True))
