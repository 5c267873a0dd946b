"""PyTorch on CUDA: every bucket shape replayed as a CUDA graph, the elementwise work optionally fused (issue 13).

Why a PyTorch engine. On this model a batch's GPU time is mostly small elementwise and reduction kernels:
at 16 rows of 192 frames the vocoder ran 72 of its 98 ms of kernels in ~1760 separate ATen elementwise and
reduction launches (instance norms, snakes, AdaIN affines; an H200, 2026-12-02, docs/BENCHMARKS.md, sixth
pass). ONNX Runtime CUDA runs the batched graphs' nodes the same way, one kernel each, so its batch of 16 costs
~7x its batch of 1 and the throughput goals stay out of reach; its arena and captured graphs take 3.4 GiB
(seventh pass). TensorRT fuses such chains, but it cannot run on the machines this project is measured on.
Inductor (``torch.compile``) fuses them into a few hundred Triton kernels (the sixth pass: 72 ms of
elementwise work became 10 ms), and PyTorch's CUDA graphs can share one memory pool across shapes.

The model is the reference (``export.reference``: kokoro's code with the shipped weights), the code the
batched graphs are exported from, so rows, buckets, masks and the host step between the stages are those of
every other GPU engine, and doctor holds its audio to the CPU reference the same way:

* every batch is padded to a bucket shape (``buckets``; exact: the stages take per-row lengths), stage 2's at the
  largest token bucket whatever stage 1's was (``stage2_tokens``): 16 + 20 shapes at the shipped buckets, where the
  ONNX Runtime and TensorRT engines have 16 + 69;
* every tensor has one flat device buffer sized for its largest bucket, and each shape views its start (the
  host's inputs lie in one inbox per stage, ``_send``); stage 2 reads stage 1's d, t_en and style where they lie;
* ``compile`` (``engine.torch_compile``): both stages compiled by inductor once, with dynamic shapes, so the
  bucket shapes share one compile (each LSTM is a graph break, dynamo does not trace RNNs, so it runs as
  PyTorch's own kernel between fused parts). A compiled engine has no row bucket below two: a lone sentence
  runs as a pair, its row repeated (``paired_rows``). Its stage 2 is planar (2-D convolutions, compiled
  channels-last: no NCHW<->NHWC transforms around cuDNN's fp16 kernels) and cuDNN times its algorithms per
  shape: stage 2 of 16 rows 25.0 -> 23.0 ms, of 8 rows 17.7 -> 14.7, a pair 7.7 -> 7.9 (an H100, 2026-12-06,
  docs/BENCHMARKS.md, twenty-first pass);
* ``graphs`` (on CUDA): each shape's stage captured once into one memory pool shared by every shape of that
  stage, its outputs copied inside the graph into the flat output buffers (outside the pool), so that a capture's
  intermediates are free for the next capture to reuse. That is safe because a stage's replays never overlap (a
  lock per stage) and nothing allocated in a capture outlives it but PyTorch's own per-stream workspaces, which
  every capture of a stage shares by using one capture stream per stage. Measured on an H200 (2026-12-03,
  docs/BENCHMARKS.md, eighth pass, ``benchmarks/gpu_torch_pool.py``): the sharing works, the largest shape's
  capture reserved 1862 MiB and the other 84 added 8 MiB (smallest first: 1960 MiB); but that capture holds
  1.65x the 1129 MiB its shape peaks at run eagerly, and every shape of 2048 row-frames (``batch_frames``) peaks
  there. With weights, buffers and CUDA's own modules the engine takes 3.5 GiB, as ONNX Runtime CUDA does.
* pipelined stages (``slots`` 2, ``scheduler.workers`` 0 or 2): a batch's stage 1 and host step run while the last
  batch's stage 2 does, each stage on its own CUDA stream, stage 2 reading copies of what it takes from stage 1
  (``_hand_over``). Stage 1's graphs then need a pool of their own. Side by side on an H100 (2026-12-06,
  docs/BENCHMARKS.md, twenty-third pass), 16 clients in another process 270.8 QPS one batch at a time
  (``scheduler.workers: 1``: both stages in one pool, as before) and 340.4 pipelined, p99 63.6 -> 49.0 ms; on a
  second H100, where they stayed in lock-step as one batch of 16 (nothing to overlap), 255.9 and 256.6, which the
  scheduler's split (``Scheduler._pick``) is for: 367.7 QPS on a third. 222-456 MiB more device memory.
* each stage's bidirectional LSTMs with their two directions in one call (``export.lstm.OneCallLSTM``; stage 1's
  five step through its token bucket, stage 2's one through its frame bucket): side by side with the two calls in
  two pairs of runs on an H100 (2026-12-07, docs/BENCHMARKS.md, twenty-ninth pass), a lone sentence through
  Wyoming 20.0 -> 17.6 and 22.6 -> 19.4 ms, the pair alone 15.4 -> 13.7 and 16.4 -> 14.0, batches of 8 alone
  0.6-1.8 ms faster, and the server of examples/torch-cuda.yaml 1322-1328 -> 1128 MiB of device memory.
* stage 2's small matrix products as one kernel each (``export.products``): its 70 AdaIN style projections, ~3 us
  apiece on cuBLAS, as one product per style half, and the source's 9 -> 1 harmonic mix as a sum inductor fuses into
  the kernel computing the harmonics: the engine alone 0.12-0.28 ms faster a call in two pairs of runs on an H100
  (2026-12-07, docs/BENCHMARKS.md, thirty-first pass), less than the profile it was chosen from suggested (that
  profile's largest products were most likely the LSTM's recurrent steps, thirtieth and thirty-first passes).
* ``engine.half_lstms`` (opt-in; ``all`` in examples/torch-cuda.yaml): LSTMs in float16, which cuDNN runs as one
  persistent kernel a sequence on rows padded to 8 (``export.lstm.OneCallLSTM(half=True)``); one such LSTM alone on
  an H100 4-5x faster (64 steps 0.64 -> 0.15 ms, 160 steps 1.71 -> 0.34), ~4.5 ms of the engine's 13.2 a pair
  being its six LSTMs (thirty-first pass). Through the engine, side by side on one H100 (one run each, 2026-12-07,
  docs/BENCHMARKS.md, thirty-second pass): ``all`` a lone sentence 13.8 -> 10.0 ms and a batch of 8 23.8 -> 20.0,
  the server 1128 -> 1088 MiB, doctor's durations still the CPU reference's; "audio" (the four that decide the
  durations kept in float32) 1.2-2.0 ms faster, the server 40 MiB larger.

Measured through Wyoming beside eager PyTorch in one process (docs/BENCHMARKS.md has each pass): eager kernels
captured (the default), one sentence 22.2-22.3 ms, 109-110 QPS at 16 clients, 9 s to start (an H100, 2026-12-06,
seventeenth pass); fused fp16 (``engine.precision: fp16``, ``engine.torch_compile: true``) with the finer frame
buckets of the README's setting, one sentence 19.0 ms (0.29x eager), 235-268 QPS at 16 clients, ~4 min to start
the first time, 71-83 s with inductor's cache (an H100, 2026-12-06, nineteenth pass). ``engine.torch_compile`` stays
off by default for that first start.

Torch, kokoro and transformers come with the ``torch`` extra (``export``'s packages); nothing imports this
module unless ``engine.backend`` is ``torch-cuda``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ..assets import ModelAssets, load_vocab
from ..config import EngineSettings, Settings
from ..core import EngineError, SynthesisItem
from ..export.lstm import OneCallLSTM
from .alignment import SAMPLES_PER_FRAME
from .base import BatchSynthesis, EngineMemory
from .batching import STAGE1_INPUTS, STAGE1_OUTPUTS, STAGE2_INPUTS, STAGE2_OUTPUTS
from .buckets import (
    TENSOR_DTYPES,
    Buckets,
    bucket_feeds,
    call_rows,
    in_stage1_groups,
    paired_rows,
    run_groups,
    stage2_plan,
    tensor_dims,
    warm_alignment,
)
from .cuda import arena_layout
from .memory import device_used_bytes, process_rss_bytes

_LOGGER = logging.getLogger(__name__)

_TORCH_DTYPES: dict[type, torch.dtype] = {np.int64: torch.int64, np.float32: torch.float32}
_INBOXES = (STAGE1_INPUTS, ("frames", "alignment"))
"""What the host sends each stage, one inbox each, in layout order (stage 2's d, t_en and style are on the device)."""
_TOKEN_AXIS = {"d": 1, "t_en": 2}
"""The token axis of the stage-1 outputs stage 2 reads where they lie (d [B, T, 640], t_en [B, 512, T])."""
_FETCHED = ("durations", "audio")
"""What the host reads back: stage 1's durations for the host step, stage 2's audio."""
_HANDED = ("d", "t_en", "style")
"""What stage 2 reads of stage 1's (d and t_en its outputs, style its input) from copies of its own."""


class TorchGraphEngine(BatchSynthesis):
    """The reference stages on PyTorch at bucket shapes: compiled (``compile``), each shape replayed as a CUDA
    graph (``graphs``, CUDA only). With two ``slots`` (the default) two batches run at once, one in each stage
    (``synthesize_batch``); with one, a batch at a time and both stages' graphs in one memory pool."""

    def __init__(self, stage1: torch.nn.Module, stage2: torch.nn.Module, *, buckets: Buckets, tail_frames: int,
                 device: str = "cuda:0", compile: bool = True, graphs: bool = True, slots: int = 2,
                 name: str = "torch-cuda") -> None:
        self.name, self.tail_frames = name, tail_frames
        self.max_batch = buckets.rows[-1]
        self.buckets = paired_rows(buckets) if compile else buckets
        self._device = torch.device(device)
        cuda = self._device.type == "cuda"
        self.device = str(self._device)
        self.graphs = graphs and cuda
        self.compiled = compile
        self.slots = min(max(slots, 1), 2)
        """Batches in flight: one per stage at most (a third would only wait for a stage)."""
        self._locks = (threading.RLock(), threading.RLock())
        """Stage 1's and stage 2's. With one slot both are one lock, re-entered for the hand-over, so a batch's
        stage 1 waits for the last batch's stage 2 and the two stages' graphs may share one pool."""
        if self.slots == 1:
            self._locks = (self._locks[0], self._locks[0])
        self._streams = ((torch.cuda.Stream(self._device), torch.cuda.Stream(self._device))  # type: ignore[no-untyped-call]
                         if cuda else None)
        self._handed = torch.cuda.Event() if cuda else None  # type: ignore[no-untyped-call]
        """Recorded on stage 2's stream once a batch's stage-1 results are copied to stage 2's inputs; the next
        stage 1 waits for it before it overwrites them."""
        self._device_index = (self._device.index or 0) if cuda else None
        self._used_before = None if self._device_index is None else device_used_bytes(self._device_index)
        stage1, stage2 = stage1.to(self._device).eval(), stage2.to(self._device).eval()
        self.weights_bytes = _unique_bytes(stage1, stage2)
        self.half_lstms = sum(isinstance(m, OneCallLSTM) and m.rows > 1 for s in (stage1, stage2) for m in s.modules())
        """How many of the stages' LSTMs run in float16 (``engine.half_lstms``), for ``replay``."""
        # A planar stage 2 (``reference.BatchedVocoder``'s ``planar``) is compiled channels-last.
        self._stages = ((_compiled(stage1), _compiled(stage2, channels_last=getattr(stage2, "planar", False)))
                        if compile else (stage1, stage2))
        self.stage2_tokens = buckets.tokens[-1]
        """Stage 2 takes every row's tokens padded to the largest bucket. It uses tokens only in two matrix products
        with the alignment (the rest is per frame), so padding costs it little, and the token buckets need no
        stage-2 shapes of their own: 20 captured graphs instead of 69 at the shipped buckets, each of which held
        ~12 MiB of the driver's (eleventh pass). Stage 1 writes d and t_en in that layout."""
        self.shapes1 = self.buckets.stage1_shapes()
        self.shapes2 = sorted({(b, self.stage2_tokens, f) for b, _, f in self.buckets.stage2_shapes()})
        all_dims = [tensor_dims(b, t, 1) for b, t in self.shapes1] + [tensor_dims(*s) for s in self.shapes2]
        largest = {k: max(int(np.prod(d[k])) for d in all_dims) for k in TENSOR_DTYPES}
        # The inputs from the host lie in one device inbox per stage, mirrored by one pinned host inbox: a stage's
        # inputs go over in one copy (alignment last, so a stage-2 call copies only the prefix its shape uses).
        self._offsets: dict[str, tuple[torch.Tensor, torch.Tensor, int]] = {}
        self._inboxes: list[tuple[torch.Tensor, torch.Tensor]] = []
        for names in _INBOXES:
            offsets, size = arena_layout((k, largest[k] * np.dtype(TENSOR_DTYPES[k]).itemsize) for k in names)
            device_box = torch.zeros(size, dtype=torch.uint8, device=self._device)
            host_box = torch.zeros(size, dtype=torch.uint8, pin_memory=cuda)
            self._inboxes.append((device_box, host_box))
            self._offsets |= {k: (device_box, host_box, offset) for k, offset in offsets.items()}
        self._buf = {k: self._typed(k, self._offsets[k][0], n) if k in self._offsets else
                     torch.zeros(n, dtype=_TORCH_DTYPES[TENSOR_DTYPES[k]], device=self._device)
                     for k, n in largest.items()}
        self._handoff = {k: torch.zeros(largest[k], dtype=torch.float32, device=self._device)
                         for k in (_HANDED if self.slots > 1 else ())}
        """Stage 2's own d, t_en and style, copied from where stage 1 leaves them (``_hand_over``): the next batch's
        stage 1 may then overwrite those while this batch's stage 2 runs. None with one slot: stage 2 reads them
        where stage 1 left them (38 MB less at the shipped buckets)."""
        self._host = {k: self._typed(k, self._offsets[k][1], largest[k]).numpy() for k in self._offsets}
        # Outputs the host reads land in pinned buffers, read through numpy views.
        self._out = {k: torch.zeros(largest[k], dtype=self._buf[k].dtype, pin_memory=cuda) for k in _FETCHED}
        self._sends: dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor]] = {}
        """(device, host) slices of an inbox by (its last input, elements of it): made once, so a copy is one call."""
        self._fetches: dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor, np.ndarray]] = {}
        """(pinned host, device, numpy view of the host) slices of an output by (name, elements)."""
        self.buffer_bytes = (sum(int(b.numel() * b.element_size()) for k, b in self._buf.items()
                                 if k not in self._offsets) + sum(int(box.numel()) for box, _ in self._inboxes)
                             + sum(int(b.numel() * b.element_size()) for b in self._handoff.values()))
        self._graphs: dict[tuple[int, ...], torch.cuda.CUDAGraph] = {}
        self.pool_bytes: int | None = None
        self.uncaptured_bytes = 0
        self.warmup_s = 0.0
        _LOGGER.info("PyTorch %s %s: %d stage-1 and %d stage-2 bucket shapes, %.0f MB of weights, %.0f MB of I/O "
                     "buffers; %s", torch.__version__, self.device, len(self.shapes1), len(self.shapes2),
                     self.weights_bytes / 1e6, self.buffer_bytes / 1e6, self.replay)

    @property
    def replay(self) -> str:
        """How the stages run, for logs and doctor."""
        how = ("inductor-compiled (a lone sentence as a pair; stage 2 planar, channels-last)" if self.compiled
               else "eager")
        graphs = ("one CUDA graph per shape, " + ("a pool per stage" if self.slots > 1 else "one pool")
                  if self.graphs else "no CUDA graphs")
        half = f"; {self.half_lstms} of the LSTMs in float16" if self.half_lstms else ""
        return (f"{how}, {graphs}; {len(self.shapes1)} + {len(self.shapes2)} bucket shapes; "
                f"{'stages pipelined' if self.slots > 1 else 'one batch at a time'}{half}")

    def _view(self, name: str, dims: tuple[int, ...]) -> torch.Tensor:
        return self._buf[name][: int(np.prod(dims))].view(dims)

    def _input2(self, name: str, dims: tuple[int, ...]) -> torch.Tensor:
        """Stage 2's view of ``name``: its own copy of d, t_en and style (``_handoff``), its inbox otherwise."""
        whole = self._handoff.get(name)
        return self._view(name, dims) if whole is None else whole[: int(np.prod(dims))].view(dims)

    def _typed(self, name: str, box: torch.Tensor, count: int) -> torch.Tensor:
        """The tensor's flat region of an inbox (device or host): ``count`` elements of its type."""
        offset, dtype = self._offsets[name][2], TENSOR_DTYPES[name]
        return box[offset:offset + count * np.dtype(dtype).itemsize].view(_TORCH_DTYPES[dtype])

    def _put(self, name: str, array: np.ndarray) -> None:
        """Host -> the tensor's place in its pinned host inbox (numpy: no PyTorch call); ``_send`` copies it over."""
        np.copyto(self._host[name][:array.size], array.reshape(-1))

    def _send(self, last: str, count: int) -> None:
        """One copy of an inbox, up to ``count`` elements of its last input ``last``, to the device.

        Why inboxes. Every PyTorch call lets the GIL go and must take it back; with the event loop busy serving
        16 clients each take-back waits for the loop's next system call, and one batch made ~25 such calls (a
        put was four: two slices, two copies). The batch path now makes six: a copy in, a replay and a copy out
        per stage. Under 16 clients a batch of 8 took 29.6-31.7 ms in the server against 27.1 ms alone (an H100,
        2026-12-05, docs/BENCHMARKS.md, fifteenth pass)."""
        pair = self._sends.get((last, count))
        if pair is None:
            device_box, host_box, offset = self._offsets[last]
            end = offset + count * np.dtype(TENSOR_DTYPES[last]).itemsize
            pair = self._sends[(last, count)] = (device_box[:end], host_box[:end])
        pair[0].copy_(pair[1], non_blocking=True)

    def _send_stage1(self) -> None:
        """The whole stage-1 inbox (~80 kB at the shipped buckets: no prefix worth cutting)."""
        self._send(STAGE1_INPUTS[-1], self._host[STAGE1_INPUTS[-1]].size)

    def _fetch(self, name: str, dims: tuple[int, ...]) -> np.ndarray:
        """The tensor at ``dims`` on the host, one copy (synchronised) into its pinned buffer; the array is a view
        of that buffer, good until the next fetch of the same tensor."""
        n = int(np.prod(dims))
        slices = self._fetches.get((name, n))
        if slices is None:
            host = self._out[name][:n]
            slices = self._fetches[(name, n)] = (host, self._buf[name][:n], host.numpy())
        slices[0].copy_(slices[1])
        return slices[2].reshape(dims)

    def _call(self, shape: tuple[int, ...]) -> Callable[[], None]:
        """One stage at ``shape`` ((rows, tokens) for stage 1, (rows, tokens, frames) for stage 2), reading and
        writing the flat buffers' views: what a graph captures and what runs where there are no graphs."""
        dims = tensor_dims(shape[0], shape[1], shape[2] if len(shape) == 3 else 1)
        module, inputs, outputs = ((self._stages[1], STAGE2_INPUTS, STAGE2_OUTPUTS) if len(shape) == 3
                                   else (self._stages[0], STAGE1_INPUTS, STAGE1_OUTPUTS))
        feeds = [self._input2(k, dims[k]) if len(shape) == 3 else self._view(k, dims[k]) for k in inputs]
        targets = [self._stage1_target(k, *shape) if len(shape) == 2 else self._view(k, dims[k]) for k in outputs]

        def call() -> None:
            for target, value in zip(targets, module(*feeds), strict=True):
                target.copy_(value)

        return call

    def _stage1_target(self, name: str, rows: int, tokens: int) -> torch.Tensor:
        """Where stage 1 at (``rows``, ``tokens``) writes ``name``: d and t_en in stage 2's layout (their token axis
        ``stage2_tokens`` long, this call's ``tokens`` first), durations as they are."""
        if name not in _TOKEN_AXIS:
            return self._view(name, tensor_dims(rows, tokens, 1)[name])
        whole = self._view(name, tensor_dims(rows, self.stage2_tokens, 1)[name])
        return whole.narrow(_TOKEN_AXIS[name], 0, tokens)

    def _run(self, shape: tuple[int, ...]) -> None:
        graph = self._graphs.get(shape)
        if graph is not None:
            graph.replay()
        else:
            self._call(shape)()

    def warm_shapes(self) -> list[tuple[int, ...]]:
        """Stage 2's shapes, then stage 1's, each largest first: the first capture sets the pool's size."""
        def size(s: tuple[int, ...]) -> tuple[int, int]:
            return (int(np.prod(s[:1] + s[2:])), s[1])
        return [*sorted(self.shapes2, key=size, reverse=True), *sorted(self.shapes1, key=size, reverse=True)]

    @torch.inference_mode()
    def warmup(self) -> None:
        """Every shape runs twice (the first compiles where it must and picks kernels), then, with graphs, every
        shape is captured into the one pool; warm-up's own memory is handed back to the driver first.

        Last, the objects warm-up leaves behind (dynamo's and inductor's, a heap of millions) are frozen out of the
        garbage collector's reach: a full collection over them stalled every request in flight by ~1.2 s, once per
        run under 16 clients, in two H200 runs of the fused engine; with the freeze that run showed no stall
        (2026-12-04, docs/BENCHMARKS.md, tenth pass)."""
        start = time.perf_counter()
        with self._locks[0], self._locks[1]:
            self._put("style", np.full(self._host["style"].size, 0.1, np.float32))
            self._put("speed", np.ones(self._host["speed"].size, np.float32))
            self._put("tokens", np.full(self._host["tokens"].size, 16, np.int64))
            shapes = self.warm_shapes()
            for shape in shapes:
                self._warm_feeds(shape)
                for _ in range(2):
                    self._call(shape)()
            if self.graphs:
                self._capture(shapes)
        gc.collect()
        gc.freeze()
        self.warmup_s = time.perf_counter() - start
        if self._used_before is not None and self._device_index is not None:
            used = device_used_bytes(self._device_index)
            self.pool_bytes = None if used is None else used - self._used_before
        _LOGGER.info("warm-up: %d shapes in %.1f s (%s); device memory taken by the engine: %s MiB",
                     len(shapes), self.warmup_s, self.replay,
                     "?" if self.pool_bytes is None else f"{self.pool_bytes / 2**20:.0f}")

    def _warm_feeds(self, shape: tuple[int, ...]) -> None:
        """Inputs every shape can run on: full-length rows, each token one span of frames. The host inboxes are
        rewritten here, so the last shape's copies out of them must have run first (a batch's own fetches see to
        that on the request path)."""
        if self._device.type == "cuda":
            torch.cuda.synchronize(self._device)
        b, t = shape[0], shape[1]
        self._put("lengths", np.full(b, t, np.int64))
        self._send_stage1()
        if len(shape) == 3:
            self._hand_over(b, several=False)
            self._put("frames", np.full(b, shape[2], np.int64))
            self._put("alignment", warm_alignment(b, t, shape[2]))
            self._send("alignment", b * t * shape[2])

    def _capture(self, shapes: list[tuple[int, ...]]) -> None:
        torch.cuda.synchronize(self._device)
        torch.cuda.empty_cache()  # warm-up's blocks: the graphs take theirs from the pool
        self.uncaptured_bytes = torch.cuda.memory_reserved(self._device)  # weights and buffers alone
        # A pool and a capture stream (so PyTorch's per-stream workspaces) per stage where the stages' replays
        # overlap (two slots), one of each where they never do.
        places = [(torch.cuda.graph_pool_handle(), torch.cuda.Stream(self._device))  # type: ignore[no-untyped-call]
                  for _ in range(self.slots)]
        for shape in shapes:
            pool, stream = places[(len(shape) - 2) % self.slots]  # stage 1's (rows, tokens), stage 2's + frames
            graph = torch.cuda.CUDAGraph()
            call = self._call(shape)
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                call()
            self._graphs[shape] = graph
        torch.cuda.synchronize(self._device)
        torch.cuda.empty_cache()

    def synthesize_batch(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each item's audio and the frames per token it was rendered with, in item order (a batch over the
        largest row bucket is refused by ``bucket_feeds``), as one batch or, over ``engine.batch_tokens``, several."""
        return in_stage1_groups(items, self.buckets, self._batch)

    @torch.inference_mode()
    def _batch(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """One batch through both stages.

        Pipelined (two slots): a batch holds stage 1's lock through its stage 1 and the host step, takes stage 2's
        (the last batch's stage 2 has ended) to hand its stage-1 results over, then lets stage 1's go: the next
        batch's stage 1 and host step run, on a CUDA stream of their own, while this one's stage 2 does. Stage 1
        (the LSTMs step through the tokens) leaves most of the GPU idle, and the host step leaves all of it idle;
        one batch at a time, 16 clients ran as batches of 8 at 22.7 ms each, 14.7 of them stage 2 (an H100,
        docs/BENCHMARKS.md, twenty-first and twenty-second passes)."""
        feeds, real = bucket_feeds(items, self.buckets)
        rows, tokens = feeds["tokens"].shape
        lock1, lock2 = self._locks
        with lock1:
            with self._on(0):
                durations = self._stage1(feeds, rows, tokens)
            counts, frames, groups = stage2_plan(durations, feeds["lengths"], real, tokens, self.buckets,
                                                 self.tail_frames)
            lock2.acquire()
            try:
                with self._on(1):
                    staged = self._hand_over(rows, several=len(groups) > 1)
            except BaseException:
                lock2.release()
                raise
        try:
            with self._on(1):
                audio = run_groups(groups, real, lambda group, b, f: self._stage2(group, b, f, counts, frames, staged))
        finally:
            lock2.release()
        return [(audio[row], counts[row]) for row in range(real)]

    def _on(self, stage: int) -> contextlib.AbstractContextManager[object]:
        """The stage's CUDA stream as the current one (nothing on the CPU)."""
        return contextlib.nullcontext() if self._streams is None else torch.cuda.stream(self._streams[stage])

    def _stage1(self, feeds: dict[str, np.ndarray], rows: int, tokens: int) -> np.ndarray:
        """Stage 1 at (``rows``, ``tokens``) once the last batch's results are handed over; its durations."""
        if self._handed is not None:
            self._handed.wait()  # on the current stream, stage 1's
        for name in STAGE1_INPUTS:
            self._put(name, feeds[name])
        self._send_stage1()
        self._run((rows, tokens))
        return self._fetch("durations", (rows, tokens))

    def _hand_over(self, rows: int, several: bool) -> dict[str, torch.Tensor]:
        """Stage 1's d, t_en and style of ``rows`` rows, copied to stage 2's own (on the current stream; with one slot
        there is nothing to copy), or, where the rows are split over several stage-2 calls, cloned for each call to
        gather its rows from (returned)."""
        dims = tensor_dims(rows, self.stage2_tokens, 1)
        staged: dict[str, torch.Tensor] = {}
        if several:
            staged = {name: self._view(name, dims[name]).clone() for name in _HANDED}
        else:
            for name in self._handoff:
                self._input2(name, dims[name]).copy_(self._view(name, dims[name]))
        if self._handed is not None:
            self._handed.record()
        return staged

    def _stage2(self, group: np.ndarray, b: int, f: int, counts: list[np.ndarray], frames: np.ndarray,
                staged: dict[str, torch.Tensor]) -> list[np.ndarray]:
        """One stage-2 call (``call_rows``, the alignment written straight into the pinned inbox). Where the rows are
        split over several calls, each call's rows are gathered to the front of stage 2's d, t_en and style first."""
        tokens = self.stage2_tokens
        dims = tensor_dims(b, tokens, f)
        inbox = self._host["alignment"][:b * tokens * f].reshape(dims["alignment"])
        fill, _ = call_rows(group, b, tokens, f, counts, frames, out=inbox)
        if staged:
            index = torch.from_numpy(fill).to(self._device)
            for name, whole in staged.items():
                self._input2(name, dims[name]).copy_(whole.index_select(0, index))
        self._put("frames", frames[fill])
        self._send("alignment", inbox.size)
        self._run((b, tokens, f))
        audio = self._fetch("audio", dims["audio"])  # audio_lengths is 600 x frames: known here
        return [audio[j, :frames[row] * SAMPLES_PER_FRAME].copy() for j, row in enumerate(group)]

    def memory(self) -> EngineMemory:
        extra = {"bucket_shapes": float(len(self.shapes1) + len(self.shapes2)), "cuda_graphs": float(len(self._graphs)),
                 "io_buffer_bytes": float(self.buffer_bytes), "warmup_s": self.warmup_s}
        if self._device.type == "cuda":
            extra["torch_reserved_bytes"] = float(torch.cuda.memory_reserved(self._device))
            extra["reserved_before_capture_bytes"] = float(self.uncaptured_bytes)
        return EngineMemory(host_rss_bytes=process_rss_bytes(), weights_bytes=self.weights_bytes,
                            workspace_bytes=self.pool_bytes, extra=extra)

    def close(self) -> None:
        with self._locks[0], self._locks[1]:
            self._graphs.clear()
            self._buf.clear()
            self._host.clear()
            self._out.clear()
            self._sends.clear()
            self._fetches.clear()
            self._inboxes.clear()
            self._handoff.clear()
        if self._device.type == "cuda":
            torch.cuda.empty_cache()


def _compiled(module: torch.nn.Module, channels_last: bool = False) -> Callable[..., Any]:
    """``module`` under inductor with dynamic shapes: one compile serves every bucket (no bucket has one row:
    ``paired_rows``); the limit is raised so no bucket falls back to eager.

    ``channels_last``: inductor's layout optimisation forced on (a planar stage 2's convolutions and the work
    around them in NHWC). Inductor decides it by itself only for static shapes."""
    import torch._dynamo

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    return torch.compile(module, dynamic=True, options={"force_layout_optimization": True} if channels_last else None)


def _unique_bytes(*modules: torch.nn.Module) -> int:
    """Bytes of the parameters and buffers the modules hold on the device, each storage counted once (a
    tensor two modules share is one allocation; the stages hold disjoint parts of one KModel, ``reference._parts``)."""
    seen: dict[int, int] = {}
    for module in modules:
        for tensor in (*module.parameters(), *module.buffers()):
            seen[tensor.data_ptr()] = tensor.numel() * tensor.element_size()
    return sum(seen.values())


def _memory_environment(eng: EngineSettings) -> None:
    """PyTorch's allocator and cuBLAS's workspace as ``engine.torch_expandable_segments`` and
    ``engine.cublas_workspace_kib`` ask, through the variables both libraries read once (the allocator when CUDA is
    first initialised, PyTorch's cuBLAS workspace size when cuBLAS first runs): so they are set here, before the engine
    touches the device, and a value the user set in the environment wins. Why: the fast setting's graphs keep
    PyTorch's cuBLAS workspace (32 MiB on Hopper) in each stage's pool, and expandable segments let those pools grow
    by what a capture needs; with ``engine.batch_tokens`` they took examples/torch-cuda.yaml's server from 1646-1648
    to 1324-1326 MiB at the same speed (an H100, 2026-12-07, docs/BENCHMARKS.md, twenty-sixth pass)."""
    wanted = {}
    if eng.torch_expandable_segments:
        wanted["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    if eng.cublas_workspace_kib:
        wanted["CUBLAS_WORKSPACE_CONFIG"] = f":{eng.cublas_workspace_kib}:1"
    set_here = [name for name in wanted if name not in os.environ]
    for name, value in wanted.items():
        effective = os.environ.setdefault(name, value)
        _LOGGER.info("%s=%s%s", name, effective, "" if name in set_here else " (the environment's)")
    if set_here and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        _LOGGER.warning("CUDA was initialised in this process before the engine, so %s may not apply: set them in "
                        "the environment instead", ", ".join(set_here))


STAGE2_FORMS = {"one_call_lstms": True, "fused_products": True}
"""The forms of ``reference.BatchedVocoder`` this engine always builds (beside its precision, planar and half_lstms
settings): one place, so that ``benchmarks/gpu_profile.py --as-engine`` profiles the stage 2 the engine runs."""


def create_torch_engine(settings: Settings, assets: ModelAssets, device: str | None = None) -> TorchGraphEngine:
    """The reference stages with the shipped weights on ``engine.device_id`` (``device`` "cpu": tests), at
    ``engine.buckets``; stage 2 in ``engine.precision`` (fp16: convolutions and elementwise work in fp16 with
    float32 islands, ``reference.BatchedVocoder``)."""
    try:
        from ..export import reference
    except ImportError as err:
        raise EngineError(f"the torch-cuda engine needs the 'torch' extra: pip install 'wyoming-fasttts[cpu,torch]' "
                          f"and pip install --no-deps kokoro==0.9.4 ({err})") from err
    eng = settings.engine
    device = device or f"cuda:{eng.device_id}"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EngineError("the torch-cuda engine found no CUDA device: this PyTorch is a CPU build or the driver "
                          "is missing (wyoming-fasttts doctor says which)")
    cuda = device.startswith("cuda")
    if cuda:
        _memory_environment(eng)
    compiled = eng.torch_compile and cuda
    kmodel = reference.build_kmodel(assets.model, load_vocab(assets.vocab), deterministic=True)
    stage1 = reference.BatchedDurations(kmodel, fused_attention=True, one_call_lstms=True, half_lstms=eng.half_lstms)
    stage2 = reference.BatchedVocoder(kmodel, eng.precision, planar=compiled, half_lstms=eng.half_lstms, **STAGE2_FORMS)
    chosen = eng.buckets
    buckets = Buckets.for_limits(settings.scheduler.max_batch, eng.max_tokens, eng.max_frames, eng.batch_frames,
                                 rows=chosen.rows, tokens=chosen.tokens, frames=chosen.frames,
                                 batch_tokens=eng.batch_tokens)
    if compiled:
        # cuDNN times its algorithms for each convolution shape as warm-up first runs it (the captured graphs keep
        # the picks): its heuristics alone chose a generic kernel for one NHWC shape of the planar stage 2 that took
        # 95 ms at 8 rows, and with the timing stage 2 at 8 rows took 14.7 ms (1-D: 17.7 -> 15.5), an H100,
        # 2026-12-06, docs/BENCHMARKS.md, twenty-first pass.
        torch.backends.cudnn.benchmark = True
        # Inductor's kernels beside the TensorRT plans (engine_dir), not in /tmp where they are lost with a
        # reboot: a restart that found them started in 96-122 s instead of 337 (an H100, 2026-12-05,
        # docs/BENCHMARKS.md, fourteenth pass). A TORCHINDUCTOR_CACHE_DIR the user set wins.
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(eng.engine_path / "inductor"))
    return TorchGraphEngine(stage1, stage2, buckets=buckets, tail_frames=eng.tail_frames, device=device,
                            compile=compiled, graphs=cuda, slots=settings.scheduler.workers or 2)
