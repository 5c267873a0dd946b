"""ONNX Runtime engine: the CPU path every machine has, ONNX Runtime CUDA where TensorRT is not installed,
and the reference the TensorRT engines are checked against.

It runs the two stage graphs with the same host step as TensorRT (``alignment``), so the silent
edges are capped before the vocoder runs: on the CPU that removes ~20-40% of the work per sentence. The CPU
uses the int8 stages (its fast kernels); CUDA uses the float stages, the graphs TensorRT builds from.
One resident session per stage serves every slot: ``InferenceSession.run`` is thread-safe, so concurrent
requests share the weights instead of each loading a copy.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import EngineError, SynthesisItem
from .base import EngineMemory, InspectableEngine

try:
    import onnxruntime as ort
except ImportError as err:  # the base install carries no ONNX Runtime: the extras pick exactly one
    raise EngineError("ONNX Runtime is not installed: install the server with one ONNX Runtime extra, "
                      "'wyoming-fasttts[cpu]' (any machine) or 'wyoming-fasttts[gpu]' (ONNX Runtime CUDA)") from err

from ..assets import ModelAssets
from ..config import Settings, WindowSettings
from .alignment import SAMPLES_PER_FRAME, alignment, frame_counts
from .batching import stage1_feeds, stage2_feeds, unpad_audio
from .windows import NORM_FRAMES, NORM_WEIGHTS, Render, Span, least_first_frames, render_windows, slow_machine

if TYPE_CHECKING:
    from ..graphs.batched import BatchedGraphs
from .memory import process_rss_bytes

_LOGGER = logging.getLogger(__name__)

CUDA_PROVIDER = "CUDAExecutionProvider"


def session_options(threads: int, spin: bool = True) -> ort.SessionOptions:
    """``spin`` off for GPU sessions: their few CPU ops do not need it, and idle spinning threads of one
    session steal the cores another session (or the server) needs next (seen on an H200: +150 ms)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def run_options(shrink_arena: bool) -> ort.RunOptions:
    """Run options that hand the CPU arena's unused chunks back after each run (``engine.arena_shrinkage``).

    Without it, each session's arena keeps what its longest sentence needed, for good, and the watchdog's
    memory rule sees arenas instead of degradation: 947 -> 1333 MiB after one long sentence per slot, against
    594 -> 657 MiB with it, at no measurable latency cost (``benchmarks/arena_memory.py``, docs/OPERATIONS.md).
    """
    options = ort.RunOptions()
    if shrink_arena:
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def cuda_providers(device_id: int, options: Mapping[str, str] | None = None) -> list[Any]:
    """CUDA first, then the CPU; ``options`` are the provider's own (``engine.cuda_provider_options``, whose
    defaults in defaults.yaml are the one place the shipped choices live: without them ONNX Runtime's own
    defaults apply, as in the one-node probe below).

    The CUDA and cuDNN libraries the provider links against come as wheels with the ``gpu`` extra; they are
    not on the loader's path, so ``preload_dlls`` loads them first (it also finds PyTorch's copies)."""
    if CUDA_PROVIDER not in ort.get_available_providers():
        raise EngineError("ONNX Runtime has no CUDA provider here: pip install 'wyoming-fasttts[gpu]'")
    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    chosen = {"device_id": device_id, **(options or {})}
    return [(CUDA_PROVIDER, chosen), "CPUExecutionProvider"]


def cuda_provider_problem(device_id: int = 0) -> str | None:
    """None when ONNX Runtime runs a session on CUDA here, else why not (a one-node graph, ~1 s)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # what every ONNX Runtime since 1.16 reads (a newer onnx writes one ORT may refuse)
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=cuda_providers(device_id))
    except Exception as err:  # every failure here is the answer, not a crash
        return f"{type(err).__name__}: {err}"
    if session.get_providers()[0] != CUDA_PROVIDER:
        return "the CUDA provider's libraries did not load (CUDA 13 runtime, cuBLAS or cuDNN 9; see the log above)"
    return None


def pad_tokens(ids: np.ndarray) -> np.ndarray:
    """[0, *ids, 0] as the model's int64 [1, T] input."""
    return np.concatenate([[0], np.asarray(ids, np.int64), [0]]).astype(np.int64)[None, :]


@dataclass(frozen=True)
class Windowed:
    """Stage 2 as its two halves (``graphs.split.split_vocoder``), rendered in frame windows."""

    prosody: Path
    render: Path
    settings: WindowSettings


class _Vocoder:
    """Stage 2 of one session pair: one graph, or the prosody and render halves rendered in windows."""

    def __init__(self, stage2: Path, options: ort.SessionOptions, providers: list[Any],
                 windows: Windowed | None = None) -> None:
        """``stage2`` alone, or with ``windows`` its two halves instead (``stage2`` is then not loaded)."""
        first = windows.prosody if windows is not None else stage2
        self._first = ort.InferenceSession(str(first), options, providers=providers)
        self._render = (ort.InferenceSession(str(windows.render), options, providers=providers)
                        if windows is not None else None)
        self._windows = windows

    @property
    def session(self) -> ort.InferenceSession:
        """The one stage-2 graph (the batched engine runs it with its own feeds), or the prosody half."""
        return self._first

    def whole(self, feeds: dict[str, np.ndarray], options: ort.RunOptions) -> np.ndarray:
        if self._render is None:
            return np.asarray(self._first.run(None, feeds, options)[0]).reshape(-1)
        halves = self._halves(feeds, options)
        return halves(Span(0, feeds["alignment"].shape[2]))

    def parts(self, feeds: dict[str, np.ndarray], frames: np.ndarray, options: ort.RunOptions,
              deadline: Callable[[], float] | None = None) -> Iterator[np.ndarray]:
        """The sentence in windows; ``deadline()`` (monotonic) is when its listener runs out of audio."""
        if self._windows is None:
            yield self.whole(feeds, options)
            return
        render = self._halves(feeds, options)
        ahead = max(0.0, deadline() - time.monotonic()) if deadline is not None else 0.0
        yield from render_windows(render, frames, self._windows.settings, ahead)

    @property
    def windowed(self) -> bool:
        return self._windows is not None

    def warm(self, feeds: dict[str, np.ndarray], options: ort.RunOptions) -> float:
        """Run both halves once over all frames, then time a first window's worth of frames (three times where
        ``engine.windows.frame_ms`` is 0, to be measured): the seconds a frame took, the fastest run's (what the
        machine can do; whatever else ran then only added time: 12.3-15.1 ms single runs on a 2-core EPYC)."""
        assert self._windows is not None
        render = self._halves(feeds, options)
        render(Span(0, feeds["alignment"].shape[2]))
        frames = min(64, int(feeds["alignment"].shape[2]))  # about a first window
        seconds = math.inf
        for _ in range(3 if self._windows.settings.frame_ms <= 0 else 1):
            started = time.perf_counter()
            render(Span(0, frames))
            seconds = min(seconds, time.perf_counter() - started)
        return seconds / frames

    @property
    def window_settings(self) -> WindowSettings | None:
        return self._windows.settings if self._windows is not None else None

    def size_windows(self, frame_ms: float) -> None:
        """Size the later windows for ``frame_ms`` a frame (measured at start-up)."""
        assert self._windows is not None
        self._windows = replace(self._windows, settings=replace(self._windows.settings, frame_ms=frame_ms))

    def _halves(self, feeds: dict[str, np.ndarray], options: ort.RunOptions) -> Render:
        """The prosody run once; a function rendering any span of the sentence's frames from it."""
        assert self._render is not None
        render = self._render
        asr, f0, energy, source = self._first.run(None, feeds, options)
        style, total = feeds["style"], asr.shape[2]

        def span(s: Span) -> np.ndarray:
            opened = s.opening[1] - s.opening[0]  # frames joined before the span: their audio is dropped
            spans = [s.opening] if opened else []
            spans += [(s.lo, s.hi), (total - s.closing, total)] if s.closing else [(s.lo, s.hi)]

            def cut(x: np.ndarray, per_frame: int, axis: int) -> np.ndarray:
                return np.concatenate([x.take(range(per_frame * a, per_frame * b), axis) for a, b in spans], axis)

            out = render.run(None, {
                "asr": cut(asr, 1, 2), "f0": cut(f0, 2, 1), "energy": cut(energy, 2, 1),
                "source": cut(source, SAMPLES_PER_FRAME, 1), "style": style,
                NORM_FRAMES: np.array([s.lead, s.closing], np.int64),
                NORM_WEIGHTS: np.array([s.lead_weight - 1, s.closing_weight - 1], np.float32),
            }, options)[0]
            return np.asarray(out, np.float32).reshape(-1)[opened * SAMPLES_PER_FRAME:
                                                           (opened + s.hi - s.lo) * SAMPLES_PER_FRAME]

        return span


class OnnxRuntimeEngine:
    """Stage 1 -> host alignment (tail capped) -> stage 2, batch 1, on one ONNX Runtime provider.

    On the CPU, ``narrow`` one-thread session pairs serve concurrent sentences: a sentence that runs alone
    uses the all-cores pair (lowest latency), while one that overlaps another takes a one-thread pair of its
    own. On 2 cores two one-thread runs side by side gave 1.27x the sentences per second of all-core runs one
    after another (ONNX Runtime's intra-op threads idle at every small operator; 2026-11-30, 2-core CPU).
    The all-cores pair is one of the slots (``workers - 1`` one-thread pairs): at most ``workers`` sentences
    run at once, so one pair fewer covers every case, and each pair holds ~100 MiB of weights and plans.
    """

    max_batch = 1

    def __init__(self, stage1: Path, stage2: Path, *, name: str = "onnxruntime", threads: int = 0, slots: int = 1,
                 tail_frames: int = 0, providers: list[Any] | None = None, options: ort.SessionOptions | None = None,
                 narrow: int = 0, shrink_arena: bool = True, windows: Windowed | None = None) -> None:
        self.name = name
        self._run_options = run_options(shrink_arena)
        providers = providers or ["CPUExecutionProvider"]
        self.device = "cpu" if providers == ["CPUExecutionProvider"] else "cuda"
        options = options or session_options(threads)

        def pair(opts: ort.SessionOptions) -> tuple[ort.InferenceSession, _Vocoder]:
            first = ort.InferenceSession(str(stage1), opts, providers=providers)
            return first, _Vocoder(stage2, opts, providers, windows)

        self._stage1, self._stage2 = pair(options)
        self._vocoders = [self._stage2]
        if self.device == "cuda" and self._stage1.get_providers()[0] != CUDA_PROVIDER:
            # ONNX Runtime falls back to the CPU when the CUDA provider's libraries do not load; a server
            # asked for CUDA must not quietly run on the CPU.
            raise EngineError("ONNX Runtime could not load its CUDA provider (its log above names the missing "
                              "library: CUDA 13 runtime, cuBLAS or cuDNN 9; pip install 'wyoming-fasttts[gpu]' "
                              "brings them, and the NVIDIA driver must support CUDA 13)")
        self._narrow: queue.SimpleQueue[tuple[ort.InferenceSession, _Vocoder]] = queue.SimpleQueue()
        for _ in range(narrow):
            narrow_pair = pair(session_options(1))
            self._vocoders.append(narrow_pair[1])
            self._narrow.put(narrow_pair)
        self._running = 0
        self._lock = threading.Lock()
        self.slots = max(1, slots, narrow)
        self._tail_frames = tail_frames
        stage2_files = [windows.prosody, windows.render] if windows is not None else [stage2]
        self._weights = (stage1.stat().st_size + sum(f.stat().st_size for f in stage2_files)) * (1 + narrow)
        _LOGGER.info("ONNX Runtime %s: %s + %s on %s (%d threads, %d one-thread pairs, %d slots, batch up to %d%s)",
                     ort.__version__, stage1.name, " + ".join(f.name for f in stage2_files),
                     self._stage1.get_providers()[0], options.intra_op_num_threads, narrow, self.slots, self.max_batch,
                     f", stage 2 in windows from {windows.settings.first_frames} frames" if windows else "")

    def warmup(self) -> None:
        # Short on purpose: 24 equal ids with a zero style make stage 1 predict ~950 frames (24 s of audio), over
        # a minute of the batched fp32 stage 2 on a busy 2-core CPU before the server could open its port.
        item = SynthesisItem(ids=np.full(8, 16, np.int64), style=np.zeros(256, np.float32))
        if not self._stage2.windowed:
            self.run([item])
            return
        feeds, _frames = self._stage1_run(self._stage1, item)
        per_frame = self._stage2.warm(feeds, self._run_options)
        settings = self._stage2.window_settings
        assert settings is not None
        if settings.frame_ms > 0:
            if problem := slow_machine(settings, 1, per_frame):
                _LOGGER.warning("%s", problem)
            return
        # Measured, 10% over (and each window at engine.windows.margin): windows sized for a faster machine than
        # this one come late, a gap.
        frame_ms = math.ceil(1100 * per_frame)
        for vocoder in self._vocoders:
            vocoder.size_windows(frame_ms)
        sized = self._stage2.window_settings
        assert sized is not None
        least = least_first_frames(sized)
        _LOGGER.info("stage 2 renders a frame in %.1f ms here: windows sized for %d ms a frame "
                     "(engine.windows.frame_ms 0: measured at start-up), %s", 1000 * per_frame, frame_ms,
                     "sentences rendered whole: windows would not keep up" if least is None else
                     f"a sentence's first window {least} speech frames (first_frames {sized.first_frames})")

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        return [self.synthesize(item)[0] for item in items]

    @contextlib.contextmanager
    def _sessions(self) -> Iterator[tuple[ort.InferenceSession, _Vocoder]]:
        """The all-cores pair when nothing else runs, else a one-thread pair (where there are any)."""
        with self._lock:
            self._running += 1
            alone = self._running == 1
        pair = None if alone or self._narrow.empty() else self._narrow.get()
        try:
            yield pair or (self._stage1, self._stage2)
        finally:
            if pair is not None:
                self._narrow.put(pair)
            with self._lock:
                self._running -= 1

    def _stage1_run(self, stage1: ort.InferenceSession,
                    item: SynthesisItem) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Stage 2's feeds for ``item`` and the frames per token they hold."""
        style = np.asarray(item.style, np.float32).reshape(1, -1)
        durations, d, t_en = stage1.run(None, {
            "tokens": pad_tokens(item.ids), "style": style, "speed": np.array([item.speed], np.float32),
        }, self._run_options)
        frames = frame_counts(durations, self._tail_frames)
        return {"alignment": alignment(frames), "d": d, "t_en": t_en, "style": style}, frames

    def synthesize(self, item: SynthesisItem) -> tuple[np.ndarray, np.ndarray]:
        """Audio and the frames per token it was rendered with (doctor compares those): all frames at once."""
        with self._sessions() as (stage1, vocoder):
            feeds, frames = self._stage1_run(stage1, item)
            audio = vocoder.whole(feeds, self._run_options)
        return audio, frames

    def stream(self, item: SynthesisItem,
               deadline: Callable[[], float] | None = None) -> Generator[np.ndarray, None, None]:
        """The sentence's audio in parts (``backends.windows``); one part where stage 2 is not windowed."""
        with self._sessions() as (stage1, vocoder):
            feeds, frames = self._stage1_run(stage1, item)
            yield from vocoder.parts(feeds, frames, self._run_options, deadline)

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=process_rss_bytes(), weights_bytes=self._weights)

    def close(self) -> None:
        del self._stage1, self._stage2
        self._vocoders.clear()
        while not self._narrow.empty():
            self._narrow.get()


class BatchedOnnxRuntimeEngine(OnnxRuntimeEngine):
    """The batched graphs (``graphs.batched``): one stage-1 and one stage-2 call for a whole padded batch.

    Each row gives what the sentence gives alone (masks, per-row lengths); the scheduler groups sentences
    of similar length so the padding, which stage 2 pays for in frames, stays small.
    """

    def __init__(self, stage1: Path, stage2: Path, *, max_batch: int, **kwargs: Any) -> None:
        self.max_batch = max_batch
        super().__init__(stage1, stage2, **kwargs)

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        feeds1 = stage1_feeds(items)
        durations, d, t_en = self._stage1.run(None, feeds1, self._run_options)
        feeds2 = stage2_feeds(durations, d, t_en, feeds1, self._tail_frames)
        audio, lengths = self._stage2.session.run(None, feeds2, self._run_options)
        return unpad_audio(audio, lengths)

    def synthesize(self, item: SynthesisItem) -> tuple[np.ndarray, np.ndarray]:
        feeds1 = stage1_feeds([item])
        durations, d, t_en = self._stage1.run(None, feeds1, self._run_options)
        feeds2 = stage2_feeds(durations, d, t_en, feeds1, self._tail_frames)
        audio, lengths = self._stage2.session.run(None, feeds2, self._run_options)
        frames = frame_counts(durations[0, : feeds1["lengths"][0]], self._tail_frames)
        return unpad_audio(audio, lengths)[0], frames

    def stream(self, item: SynthesisItem,
               deadline: Callable[[], float] | None = None) -> Generator[np.ndarray, None, None]:
        yield self.synthesize(item)[0]


def create_onnxruntime_engine(settings: Settings, assets: ModelAssets, backend: str = "onnxruntime",
                              flavour: str | None = None) -> InspectableEngine:
    """int8 stages on the CPU (``onnxruntime``) or float stages on CUDA (``onnxruntime-cuda``); ``flavour``
    "float" on the CPU is the reference the GPU engines are compared with (the very graphs they run).

    With ``engine.batched`` the batched graphs run instead (on CUDA by default, where a batch costs little
    more than one sentence; on the CPU a batch of four took longer per item than four sentences alone). On
    CUDA they run at bucket shapes replayed as CUDA graphs (``ort_graphs``).
    """
    eng = settings.engine
    cuda = backend == "onnxruntime-cuda"
    if cuda and eng.precision == "fp16":
        # Refused here rather than at the first captured shape, where cuDNN's HEURISTIC_QUERY_FAILED says nothing.
        raise EngineError("engine.precision fp16 is for the TensorRT engines: ONNX Runtime CUDA 1.31.1's cuDNN has no "
                          "fp16 kernel for 25 of the 69 shipped stage-2 shapes (docs/BENCHMARKS.md, fourth pass); "
                          "use fp32 with onnxruntime-cuda")
    workers = settings.scheduler.workers or (1 if cuda else os.cpu_count() or 1)
    narrow = workers - 1 if not cuda and workers > 1 else 0  # the all-cores pair is the other slot
    # Spinning threads of the all-cores pair would steal the cores a one-thread pair runs on beside it.
    common: dict[str, Any] = dict(
        name=backend, threads=eng.threads, slots=workers, tail_frames=eng.tail_frames, shrink_arena=eng.arena_shrinkage,
        providers=cuda_providers(eng.device_id, eng.cuda_provider_options) if cuda else None,
        options=session_options(eng.threads, spin=not cuda and not narrow),
    )
    if flavour is None and (eng.batched == "always" or (eng.batched == "auto" and cuda)):
        batched = _batched_graphs(settings, assets, required=eng.batched == "always")
        if batched is not None and cuda:
            from .buckets import Buckets
            from .ort_graphs import GraphOnnxRuntimeEngine

            chosen = eng.buckets
            buckets = Buckets.for_limits(settings.scheduler.max_batch, eng.max_tokens, eng.max_frames,
                                         eng.batch_frames, rows=chosen.rows, tokens=chosen.tokens,
                                         frames=chosen.frames, batch_tokens=eng.batch_tokens)
            return GraphOnnxRuntimeEngine(batched.stage1, batched.stage2, buckets=buckets,
                                          providers=common["providers"], options=common["options"],
                                          tail_frames=eng.tail_frames, name=backend, device_id=eng.device_id,
                                          arena=dict(eng.cuda_arena) if eng.shared_arena else None)
        if batched is not None:
            return BatchedOnnxRuntimeEngine(batched.stage1, batched.stage2,
                                            max_batch=settings.scheduler.max_batch, **common)
    from ..graphs.convert import ensure_graphs

    graphs = ensure_graphs(assets.model, settings.assets.data_path)
    windows = None
    if flavour is None and not cuda and eng.windows.first_frames > 0:
        # The CPU, where a sentence's stage 2 takes long enough for its listener to notice (on CUDA it is ~20 ms).
        windows = Windowed(graphs.path("int8", "prosody"), graphs.path("int8", "render"), eng.windows)
    flavour = flavour or ("float" if cuda else "int8")
    return OnnxRuntimeEngine(graphs.path(flavour, "stage1"), graphs.path(flavour, "stage2"), narrow=narrow,
                             windows=windows, **common)


def _batched_graphs(settings: Settings, assets: ModelAssets, required: bool) -> BatchedGraphs | None:
    """The exported batched graphs, or None (logged) where they are not built and ``required`` is off.

    Always the float32 ones: ``engine.precision`` fp16 is refused on CUDA above, and ONNX Runtime's CPU provider
    has no fp16 convolutions worth running, so the CPU engine ignores the setting.
    """
    from ..graphs.batched import ExportError, ensure_batched_graphs

    try:
        return ensure_batched_graphs(assets, settings.assets.data_path)
    except ExportError as err:
        if required:
            raise EngineError(str(err)) from err
        _LOGGER.warning("batch-1 stage graphs instead of the batched ones: %s", err)
        return None
