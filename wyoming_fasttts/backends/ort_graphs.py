"""ONNX Runtime CUDA at the speed of graph replay: bucketed shapes, I/O bound to fixed device buffers, one
CUDA graph per shape.

On this model a sentence is ~3000 small kernels; launching them one by one from Python-driven ONNX Runtime
costs more than running them (an H200 ran the two stages captured as CUDA graphs in 15.8 ms against 44.8 ms
eager, issue 13). ONNX Runtime's CUDA provider can capture and replay a session's whole run
(``enable_cuda_graph``), several graphs per session told apart by the ``gpu_graph_id`` run option, provided
every input and output sits at the same device address on every replay and no node needs a host copy. So:

* every batch is padded to a bucket shape (``buckets``; exact up to float32 rounding: the graphs take
  per-row lengths);
* every tensor has one flat device buffer sized for its largest bucket, and each shape's I/O binding views
  its start at that shape (replays run one after another, so they share); stage 2 reads stage 1's d, t_en
  and style where they lie (only tokens, durations, alignment and audio cross the bus); the alignment has a
  buffer of exactly each stage-2 shape's size and the audio is read back at its bound size, so a request
  moves its own bytes, not the largest bucket's (~4 + 5 MB: ~3 ms of a request on an H200 host);
* at start-up every shape runs twice, so a request only replays (ONNX Runtime's first call at a graph id runs
  the graph and then captures it, within that call; the second call is the first replay);
* stage 2 is kept whole on the GPU (``graphs.cuda_fixes``): its Atan has no CUDA kernel, and a Clip bound
  computed from a shape needed a host copy, which made ONNX Runtime refuse capture (measured on an H200).

Measured there (2026-12-01, docs/BENCHMARKS.md): the benchmark sentence in 26.8 ms (std 0.13 ms) against
62.2 ms (std 11 ms) for the same engine without graphs; 17 ms at the shipped buckets. Device memory at the
shipped buckets, 3.4 GiB (seventh pass, 2026-12-02): ONNX Runtime's arena, 2 GiB of regions that grew by
doubling (1, 2, 4 ... 512 MiB for the 425 MiB of weights and the I/O buffers, then 1 GiB for the largest
run, which needs 842 MiB); the 85 captured graphs, 1.06 GiB (~12.5 MiB each); 0.3 GiB of handles. The arena
grows with the order shapes first run in, so both stages share one arena (``engine.shared_arena``) and the
largest shapes warm up first (4.5 GiB before, fifth pass); ``memory`` reports what the engine took by the
end of warm-up.

Where a stage cannot be captured (ONNX Runtime refuses at session creation when a node would need a host
copy, or a capture fails), that stage runs the same bucketed, bound shapes without a graph, and the reason
is logged and reported (``replay``): fixed shapes still spare it the per-shape re-planning.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from ..core import EngineError, SynthesisItem
from ..graphs.cuda_fixes import replace_atan, shape_bounds_on_gpu
from .base import BatchSynthesis, EngineMemory
from .batching import STAGE1_INPUTS, STAGE1_OUTPUTS, STAGE2_INPUTS, STAGE2_OUTPUTS
from .buckets import (
    TENSOR_DTYPES,
    Buckets,
    bucket_feeds,
    call_rows,
    in_stage1_groups,
    run_groups,
    stage2_plan,
    tensor_dims,
    warm_alignment,
)
from .memory import device_used_bytes, process_rss_bytes

_LOGGER = logging.getLogger(__name__)


class _Stage:
    """One session; per shape an I/O binding (every tensor at its fixed buffer's address) and a graph id."""

    def __init__(self, name: str, model: Path | bytes, options: ort.SessionOptions, providers: list[Any],
                 graphs: bool, device_id: int) -> None:
        self.name, self.device_id = name, device_id
        self._source = model if isinstance(model, bytes) else str(model)
        self._options, self._providers = options, providers
        self.graphs = False
        self.why = "graph capture off"
        self.bindings: dict[tuple[int, ...], tuple[Any, Any]] = {}
        self._bound: dict[tuple[int, ...], tuple[dict[str, tuple[Any, tuple[int, ...]]], tuple[str, ...]]] = {}
        session = None
        if graphs:
            try:
                session = ort.InferenceSession(self._source, options, providers=_with_graphs(providers))
                self.graphs, self.why = True, "CUDA graphs"
            except Exception as err:  # ORT refuses capture for graphs with host copies: say why, run without
                self.why = _no_graph(name, f"session refused capture: {err}")
        self.session: Any = session or ort.InferenceSession(self._source, options, providers=providers)

    def without_graphs(self, why: str) -> None:
        """Fall back to plain runs at the same bound shapes (a new session: capture cannot be switched off)."""
        self.why = _no_graph(self.name, why)
        self.graphs = False
        self.session = ort.InferenceSession(self._source, self._options, providers=self._providers)
        bound, self.bindings = self._bound, {}
        for shape, (tensors, outputs) in bound.items():
            self.bind(shape, tensors, outputs)

    def bind(self, shape: tuple[int, ...], tensors: dict[str, tuple[ort.OrtValue, tuple[int, ...]]],
             outputs: tuple[str, ...]) -> None:
        """``tensors``: name -> (flat buffer, shape to see it as); ``outputs`` names the outputs among them."""
        io = self.session.io_binding()
        for name, (buffer, dims) in tensors.items():
            bind = io.bind_output if name in outputs else io.bind_input
            bind(name, buffer.device_name(), self.device_id, _NUMPY[buffer.data_type()], list(dims),
                 buffer.data_ptr())
        self._bound[shape] = (tensors, outputs)
        options = ort.RunOptions()
        if self.graphs:
            options.add_run_config_entry("gpu_graph_id", str(len(self.bindings) + 1))
        self.bindings[shape] = (io, options)

    def run(self, shape: tuple[int, ...]) -> None:
        io, options = self.bindings[shape]
        self.session.run_with_iobinding(io, options)

    def outputs(self, shape: tuple[int, ...]) -> list[np.ndarray]:
        """The outputs of the last run at ``shape``, copied to the host at their bound size (not the whole
        flat buffer: for one sentence a few hundred kB instead of the largest bucket's ~5 MB of audio)."""
        arrays: list[np.ndarray] = self.bindings[shape][0].copy_outputs_to_cpu()
        return arrays


_NUMPY = {"tensor(float)": np.float32, "tensor(int64)": np.int64}


def _no_graph(stage: str, why: str) -> str:
    text = f"no CUDA graph ({' '.join(why.split())[:240]})"
    _LOGGER.warning("%s: %s", stage, text)
    return text


def _with_graphs(providers: list[Any]) -> list[Any]:
    out = []
    for p in providers:
        if isinstance(p, tuple) and p[0] == "CUDAExecutionProvider":
            p = (p[0], {**p[1], "enable_cuda_graph": "1"})
        out.append(p)
    return out


class GraphOnnxRuntimeEngine(BatchSynthesis):
    """The batched graphs on ONNX Runtime (CUDA, or the CPU for tests) at bucket shapes, replayed as CUDA
    graphs where the provider can capture them. One batch at a time: replays share the session's buffers.

    Every tensor has one flat device buffer sized for its largest bucket; each shape's binding views its
    start at that shape (graphs replay strictly one after another, so they can share). Host inputs are
    staged in a flat host array and copied whole (the alignment: its shape's own buffer); stage 2 reads
    stage 1's d, t_en and style in place.
    """

    slots = 1

    def __init__(self, stage1: Path, stage2: Path, *, buckets: Buckets, providers: list[Any],
                 options: ort.SessionOptions, tail_frames: int, name: str = "onnxruntime-cuda",
                 graphs: bool = True, device_id: int = 0, arena: Mapping[str, int] | None = None,
                 largest_first: bool = True) -> None:
        """``arena``: None, each session its own device arena (ONNX Runtime's default); a mapping, one arena
        for both sessions with these ``OrtArenaCfg`` keys ({} = ONNX Runtime's defaults), see ``shared_arena``.
        ``largest_first``: the warm-up order (``warmup``); off, the order before: stage 1 then 2, smallest first."""
        self.name, self.buckets, self.tail_frames = name, buckets, tail_frames
        self.largest_first = largest_first
        self.max_batch = buckets.rows[-1]
        cuda = any((p[0] if isinstance(p, tuple) else p) == "CUDAExecutionProvider" for p in providers)
        self.device = f"cuda:{device_id}" if cuda else "cpu"
        self._lock = threading.Lock()
        self._weights = stage1.stat().st_size + stage2.stat().st_size
        self._device_id = device_id
        self._used_before = device_used_bytes(device_id) if cuda else None
        self.pool_bytes: int | None = None
        self.arena = "shared" if cuda and arena is not None else "per session"
        if self.arena == "shared":
            shared_arena(device_id, arena or {})
            options.add_session_config_entry("session.use_env_allocators", "1")
        model2 = onnx.load(str(stage2))
        if cuda:
            _LOGGER.info("stage 2 for the CUDA provider: %d Atan rewritten, %d shape-derived Clip bounds on the GPU",
                         replace_atan(model2), shape_bounds_on_gpu(model2))
        self.stage1 = _Stage("stage 1", stage1, options, providers, graphs and cuda, device_id)
        if cuda and self.stage1.session.get_providers()[0] != "CUDAExecutionProvider":
            raise EngineError("ONNX Runtime could not load its CUDA provider (its log above names the missing "
                              "library); pip install 'wyoming-fasttts[gpu]' brings CUDA 13, cuBLAS and cuDNN 9")
        self.stage2 = _Stage("stage 2", model2.SerializeToString(), options, providers, graphs and cuda, device_id)
        del model2
        self.shapes1, self.shapes2 = buckets.stage1_shapes(), buckets.stage2_shapes()
        dims1 = {(b, t): tensor_dims(b, t, 1) for b, t in self.shapes1}
        dims2 = {(b, t, f): tensor_dims(b, t, f) for b, t, f in self.shapes2}
        largest = {name: max(int(np.prod(d[name])) for d in (*dims1.values(), *dims2.values()) if name in d)
                   for name in _DTYPES if name != "alignment"}
        where = "cuda" if cuda else "cpu"
        self._buf = {name: ort.OrtValue.ortvalue_from_shape_and_type([n], _DTYPES[name], where, device_id)
                     for name, n in largest.items()}
        # The alignment is the one large input written per request: each stage-2 shape has its own buffer of
        # exactly its size, so a request copies its (rows, tokens, frames), not the largest bucket's (~4 MB).
        self._alignment = {shape: ort.OrtValue.ortvalue_from_shape_and_type(list(shape), _DTYPES["alignment"], where,
                                                                            device_id) for shape in dims2}
        self._host: dict[str, np.ndarray] = {name: np.zeros(largest[name], _DTYPES[name]) for name in _FROM_HOST}
        self.buffer_bytes = sum(n * np.dtype(_DTYPES[k]).itemsize for k, n in largest.items()) + \
            sum(int(np.prod(shape)) * np.dtype(_DTYPES["alignment"]).itemsize for shape in dims2)
        for shape1, dims in dims1.items():
            self.stage1.bind(shape1, {k: (self._buf[k], dims[k]) for k in _STAGE1}, _STAGE1[4:])
        for shape2, dims in dims2.items():
            tensors = {k: (self._buf[k], dims[k]) for k in _STAGE2[1:]}
            self.stage2.bind(shape2, {"alignment": (self._alignment[shape2], shape2), **tensors}, _STAGE2[5:])
        self.warmup_s = 0.0
        _LOGGER.info("ONNX Runtime %s %s: %d stage-1 and %d stage-2 bucket shapes, %.0f MB of I/O buffers; "
                     "%s", ort.__version__, self.device, len(dims1), len(dims2), self.buffer_bytes / 1e6, self.replay)

    @property
    def replay(self) -> str:
        """How each stage runs, for logs and doctor."""
        return (f"stage 1: {self.stage1.why}; stage 2: {self.stage2.why}; "
                f"{len(self.shapes1)} + {len(self.shapes2)} bucket shapes")

    def _put(self, name: str, array: np.ndarray) -> None:
        """Host -> the tensor's device buffer (the flat staging array is copied whole)."""
        flat = self._host[name]
        flat[: array.size] = array.reshape(-1)
        self._buf[name].update_inplace(flat)

    def _get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        view: np.ndarray = self._buf[name].numpy()[: int(np.prod(shape))].reshape(shape)
        return view

    def warm_stages(self) -> tuple[_Stage, _Stage]:
        return (self.stage2, self.stage1) if self.largest_first else (self.stage1, self.stage2)

    def warm_shapes(self, stage: _Stage) -> list[tuple[int, ...]]:
        """``stage``'s shapes in warm-up order: the largest first (rows x frames, then tokens, for stage 2)."""
        shapes: list[tuple[int, ...]] = list(self.shapes1 if stage is self.stage1 else self.shapes2)
        if not self.largest_first:
            return shapes
        return sorted(shapes, key=lambda s: (int(np.prod(s[:1] + s[2:])), s[1]), reverse=True)

    def warmup(self) -> None:
        """Every bucket shape twice (ONNX Runtime runs and captures a shape's graph within the first call,
        the second replays it), stage 2 first and the largest shapes first (``largest_first``).

        The order sets how much device memory the arenas end up holding. ONNX Runtime's arena never hands
        memory back and cannot join its regions: grown shape by shape from the smallest, each larger run finds
        its tensors no room in the regions the smaller ones left and adds another. Started with the largest
        run, the regions are as large as the largest run needs, and every smaller run fits in them; stage 2
        first, so that with one arena for both stages (``shared_arena``) stage 1 fits in stage 2's regions."""
        start = time.perf_counter()
        with self._lock:
            self._put("style", np.full(self._host["style"].size, 0.1, np.float32))
            self._put("speed", np.ones(self._host["speed"].size, np.float32))
            self._put("tokens", np.full(self._host["tokens"].size, 16, np.int64))
            for name in ("d", "t_en"):  # what stage 2 reads when it warms up before stage 1 has run
                self._put(name, np.zeros(self._host[name].size, np.float32))
            for capture in (False, True):
                for stage in self.warm_stages():
                    try:
                        self._warm(stage)
                    except Exception as err:  # a kernel that cannot be captured: run this stage uncaptured
                        if not (capture and stage.graphs):
                            raise
                        stage.without_graphs(f"capture failed: {err}")
                        self._warm(stage)
        self.warmup_s = time.perf_counter() - start
        used = device_used_bytes(self._device_id) if self._used_before is not None else None
        if used is not None and self._used_before is not None:
            # Every shape has now run: the provider's arenas hold what the largest needs, and no request grows
            # them further. This is the engine's pool: weights, arenas, captured graphs, I/O buffers.
            self.pool_bytes = used - self._used_before
        _LOGGER.info("warm-up: %d shapes in %.1f s; device memory taken by the engine: %s MiB",
                     len(self.shapes1) + len(self.shapes2), self.warmup_s,
                     "?" if self.pool_bytes is None else f"{self.pool_bytes / 2**20:.0f}")

    def _warm(self, stage: _Stage) -> None:
        """One run of every shape of ``stage`` (its first replays it, the next captures with graphs on)."""
        if stage is self.stage1:
            for b, t in self.warm_shapes(stage):
                self._put("lengths", np.full(b, t, np.int64))
                stage.run((b, t))
            return
        for b, t, f in self.warm_shapes(stage):
            self._alignment[(b, t, f)].update_inplace(warm_alignment(b, t, f))
            self._put("frames", np.full(b, f, np.int64))
            stage.run((b, t, f))

    def synthesize_batch(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each item's audio and the frames per token it was rendered with, in item order (a batch over the
        largest row bucket is refused by ``bucket_feeds``), as one batch or, over ``engine.batch_tokens``, several."""
        return in_stage1_groups(items, self.buckets, self._batch)

    def _batch(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        feeds, real = bucket_feeds(items, self.buckets)
        rows, tokens = feeds["tokens"].shape
        with self._lock:
            for name in _STAGE1[:4]:
                self._put(name, feeds[name])
            self.stage1.run((rows, tokens))
            durations = self._get("durations", (rows, tokens))
            counts, frames, groups = stage2_plan(durations, feeds["lengths"], real, tokens, self.buckets,
                                                 self.tail_frames)
            staged: dict[str, np.ndarray] = {}
            if len(groups) > 1:  # each call's rows must lie first in d, t_en, style: gather them on the host
                staged = {k: self._get(k, tensor_dims(rows, tokens, 1)[k]).copy() for k in ("d", "t_en", "style")}
            audio = run_groups(groups, real, lambda group, b, f: self._stage2(group, b, tokens, f, counts, frames,
                                                                              staged))
        return [(audio[row], counts[row]) for row in range(real)]

    def _stage2(self, group: np.ndarray, b: int, tokens: int, f: int, counts: list[np.ndarray],
                frames: np.ndarray, staged: dict[str, np.ndarray]) -> list[np.ndarray]:
        """One stage-2 call (``call_rows``)."""
        fill, aligned = call_rows(group, b, tokens, f, counts, frames)
        for name, array in staged.items():
            self._put(name, array[fill])
        self._alignment[(b, tokens, f)].update_inplace(aligned)
        self._put("frames", frames[fill])
        self.stage2.run((b, tokens, f))
        audio, lengths = self.stage2.outputs((b, tokens, f))
        return [audio[j, :lengths[j]].copy() for j in range(len(group))]

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=process_rss_bytes(), weights_bytes=self._weights,
                            workspace_bytes=self.pool_bytes,
                            extra={"bucket_shapes": float(len(self.shapes1) + len(self.shapes2)),
                                   "cuda_graph_stages": float(self.stage1.graphs + self.stage2.graphs),
                                   "shared_arena": float(self.arena == "shared"),
                                   "io_buffer_bytes": float(self.buffer_bytes), "warmup_s": self.warmup_s})

    def close(self) -> None:
        with self._lock:
            self.stage1.bindings.clear()
            self.stage2.bindings.clear()
            self._buf.clear()
            self._alignment.clear()


_SHARED: dict[int, dict[str, int]] = {}


def shared_arena(device_id: int, config: Mapping[str, int]) -> None:
    """One CUDA arena for every session of this process that sets ``session.use_env_allocators``, registered
    with ONNX Runtime's environment once per device (a second engine in the process must ask for the same).

    Each session otherwise grows an arena of its own: stage 1's and stage 2's then add up, although their runs
    never overlap (the engine runs one stage at a time and each run ends synchronised). Captured graphs point
    into the arena, which never hands memory back, so replays stay valid; graphs of both stages share its
    chunks the way graphs of one stage already do. ``config``: ``OrtArenaCfg`` keys (``max_mem``,
    ``arena_extend_strategy`` 0 = next power of two, 1 = same as requested, ``initial_chunk_size_bytes``,
    ``max_dead_bytes_per_chunk``, ``initial_growth_chunk_size_bytes``; ``config.ARENA_KEYS``).
    """
    wanted = {k: int(v) for k, v in config.items()}
    if device_id in _SHARED:
        if _SHARED[device_id] != wanted:
            raise EngineError(f"a shared CUDA arena for device {device_id} is already registered with "
                              f"{_SHARED[device_id]}, not {wanted}")
        return
    info = ort.OrtMemoryInfo("Cuda", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, device_id, ort.OrtMemType.DEFAULT)
    ort.create_and_register_allocator_v2("CUDAExecutionProvider", info, {"device_id": str(device_id)},
                                         ort.OrtArenaCfg(wanted))
    _SHARED[device_id] = wanted
    _LOGGER.info("one CUDA arena for both stages on device %d: %s", device_id, wanted or "ONNX Runtime's defaults")


_STAGE1 = STAGE1_INPUTS + STAGE1_OUTPUTS
_STAGE2 = STAGE2_INPUTS + STAGE2_OUTPUTS
_DTYPES = TENSOR_DTYPES
_FROM_HOST = ("tokens", "lengths", "style", "speed", "frames", "d", "t_en")
