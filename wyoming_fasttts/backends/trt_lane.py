"""What every TensorRT lane (batch 1 or batched) has: a stream, one block of the pool, pinned host mirrors,
execution contexts whose scratch we provide.

A lane's contexts run one after the other on its own stream, so they share one scratch block (TensorRT
allows contexts that never run concurrently to share device memory): a lane costs the largest context's
scratch, not the sum, plus its tensors. Stage 2 dominates (0.6-0.66 MB of scratch per frame and row), so
stage 1 comes for free.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

import numpy as np

from ..core import EngineError
from .cuda import Cuda, arena_layout

SCRATCH = "scratch"


def lane_layout(scratch_bytes: int, tensors: dict[str, int]) -> tuple[dict[str, int], int]:
    """Offsets of the shared scratch and of each tensor in a lane's block, and the block's size."""
    return arena_layout([(SCRATCH, scratch_bytes), *tensors.items()])


def create_context(trt: ModuleType, engine: Any, runtime_cache: Any) -> Any:
    """A context whose scratch memory we provide (USER_MANAGED), with the JIT cache where the flavour has one."""
    strategy = trt.ExecutionContextAllocationStrategy.USER_MANAGED
    if hasattr(engine, "create_runtime_config"):
        config = engine.create_runtime_config()
        config.set_execution_context_allocation_strategy(strategy)
        if runtime_cache is not None:
            config.set_runtime_cache(runtime_cache)
        context = engine.create_execution_context(config)
    else:
        context = engine.create_execution_context(strategy)
    if context is None:
        raise EngineError("TensorRT could not create an execution context")
    return context


class GraphReplay:
    """TensorRT enqueues captured as CUDA graphs, one per (context, input shapes), replayed ever after.

    Capture around enqueue is the path both TensorRT and TensorRT-RTX document: after the input shapes are
    set, one plain ``execute_async_v3`` (it runs deferred shape work and, on TensorRT-RTX, compiles the
    shape's kernels), then the same call inside stream capture. Every tensor sits at a fixed address in the
    lane's block and the scratch is shared, so a replay needs nothing but the uploads before it. Shapes are
    bucketed (``buckets``), so a lane meets a small fixed set and captures them all at warm-up.
    """

    def __init__(self, cuda: Cuda, enabled: bool = True) -> None:
        self.cuda, self.enabled = cuda, enabled
        self.graphs: dict[tuple[object, ...], Any] = {}

    def execute(self, context: Any, stream: int, key: tuple[object, ...], what: str) -> None:
        graph = self.graphs.get(key)
        if graph is not None:
            self.cuda.launch(graph, stream)
            return
        Lane.execute(context, stream, what)  # this call's result; and flushes work capture must not see
        if self.enabled:
            self.cuda.begin_capture(stream)
            try:
                ok = context.execute_async_v3(stream)
            finally:
                graph = self.cuda.end_capture(stream)
            if not ok:
                self.cuda.destroy_graph(graph)
                raise EngineError(f"TensorRT failed to enqueue {what} while capturing it")
            self.graphs[key] = graph

    def close(self) -> None:
        for graph in self.graphs.values():
            self.cuda.destroy_graph(graph)
        self.graphs.clear()


class Lane:
    """A stream, device tensors at fixed addresses in the lane's block, pinned host buffers for ``host_tensors``."""

    def __init__(self, trt: ModuleType, engines: dict[str, Any], cuda: Cuda, base: int, tensors: dict[str, int],
                 host_tensors: Iterable[str], runtime_cache: Any, tail_frames: int) -> None:
        self.trt, self.cuda, self.runtime_cache, self.tail_frames = trt, cuda, runtime_cache, tail_frames
        self.scratch_bytes = scratch_bytes = max(int(e.device_memory_size_v2) for e in engines.values())
        self.stream = cuda.stream()
        offsets, _ = lane_layout(scratch_bytes, tensors)
        self.dev = {name: base + off for name, off in offsets.items()}
        self.host_ptr: dict[str, int] = {}
        self.host: dict[str, np.ndarray] = {}
        for name in host_tensors:
            self.host_ptr[name], self.host[name] = cuda.pinned(tensors[name])

    def context(self, engine: Any, profile: int = 0) -> Any:
        """A context on the shared scratch, switched to optimisation ``profile`` once, here, not per request."""
        ctx = create_context(self.trt, engine, self.runtime_cache)
        ctx.set_device_memory(self.dev[SCRATCH], self.scratch_bytes)
        if profile:
            if not ctx.set_optimization_profile_async(profile, self.stream):
                raise EngineError(f"TensorRT could not select optimisation profile {profile}")
            self.cuda.synchronize(self.stream)
        return ctx

    def upload(self, name: str, nbytes: int) -> None:
        self.cuda.to_device(self.dev[name], self.host_ptr[name], nbytes, self.stream)

    def download(self, name: str, nbytes: int) -> None:
        self.cuda.to_host(self.host_ptr[name], self.dev[name], nbytes, self.stream)

    def put(self, name: str, array: np.ndarray) -> None:
        """Copy ``array`` into the pinned mirror of ``name`` and on to the GPU (asynchronously)."""
        self.view(name, array.dtype, array.shape)[...] = array
        self.upload(name, array.nbytes)

    def view(self, name: str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        """The first ``prod(shape)`` elements of pinned buffer ``name`` as an array of that shape."""
        view: np.ndarray = self.host[name].view(dtype)[:int(np.prod(shape))].reshape(shape)
        return view

    @staticmethod
    def execute(context: Any, stream: int, what: str) -> None:
        if not context.execute_async_v3(stream):
            raise EngineError(f"TensorRT failed to enqueue {what}")

    def close(self) -> None:
        for ptr in self.host_ptr.values():
            self.cuda.free_pinned(ptr)
        self.host_ptr.clear()
        self.cuda.destroy_stream(self.stream)
