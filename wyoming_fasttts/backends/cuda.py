"""Thin CUDA helpers for the GPU engines: one device arena, pinned host views, streams, the current device.

cuda-python's ``cuda-bindings`` is NVIDIA's maintained binding of the CUDA runtime API and ships
manylinux wheels with no build step or toolkit (pycuda compiles against a local CUDA toolkit and has its own
context model that fights TensorRT's use of the primary context). Probing the GPU is NVML's job
(``memory.probe_gpu``): it needs no CUDA context.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..core import AllocationError, EngineError

ALIGNMENT = 256
"""TensorRT wants 256-byte aligned device memory for contexts and tensors."""


def aligned(size: int, alignment: int = ALIGNMENT) -> int:
    return (int(size) + alignment - 1) // alignment * alignment


def arena_layout(sizes: Iterable[tuple[str, int]]) -> tuple[dict[str, int], int]:
    """Offsets of named blocks packed into one allocation (each 256-aligned) and the total size."""
    offsets, total = {}, 0
    for name, size in sizes:
        if name in offsets:
            raise ValueError(f"block {name} laid out twice")
        offsets[name] = total
        total += aligned(size)
    return offsets, total


class Cuda:
    """The few runtime calls the engines make, each checked; errors become EngineError/AllocationError."""

    def __init__(self, device_id: int) -> None:
        try:
            from cuda.bindings import runtime
        except ImportError as err:
            raise EngineError("cuda-bindings is not installed (pip extra 'tensorrt' or 'tensorrt-rtx')") from err
        self._rt = runtime
        self.device_id = device_id
        self._bound = threading.local()
        self.bind()

    def bind(self) -> None:
        """Make this GPU the calling thread's current device (once per thread).

        The CUDA runtime's current device is per thread: the scheduler's workers, the warm-up and the thread
        that closes the engine are not the one that built it, and without this a ``device_id`` other than 0
        would allocate and run on GPU 0.
        """
        if getattr(self._bound, "device", None) != self.device_id:
            self._check(self._rt.cudaSetDevice(self.device_id), "select GPU")
            self._bound.device = self.device_id

    def _check(self, result: Any, what: str, alloc: bool = False) -> Any:
        err, *values = result if isinstance(result, tuple) else (result,)
        if err != self._rt.cudaError_t.cudaSuccess:
            name = self._rt.cudaGetErrorName(err)[1].decode()
            cls = AllocationError if alloc or "Memory" in name else EngineError
            raise cls(f"CUDA failed to {what}: {name}")
        return values[0] if len(values) == 1 else values

    def runtime_version(self) -> int:
        return int(self._check(self._rt.cudaRuntimeGetVersion(), "read the runtime version"))

    def malloc(self, size: int) -> int:
        return int(self._check(self._rt.cudaMalloc(size), f"allocate {size >> 20} MiB on the GPU", alloc=True))

    def free(self, ptr: int) -> None:
        self._check(self._rt.cudaFree(ptr), "free GPU memory")

    def pinned(self, nbytes: int) -> tuple[int, np.ndarray]:
        """Page-locked host memory (so copies are truly asynchronous) and a uint8 numpy view of it."""
        ptr = int(self._check(self._rt.cudaMallocHost(nbytes), f"pin {nbytes} host bytes", alloc=True))
        view = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
        return ptr, view

    def free_pinned(self, ptr: int) -> None:
        self._check(self._rt.cudaFreeHost(ptr), "free pinned memory")

    def stream(self) -> int:
        flags = self._rt.cudaStreamNonBlocking
        return int(self._check(self._rt.cudaStreamCreateWithFlags(flags), "create a stream"))

    def destroy_stream(self, stream: int) -> None:
        self._check(self._rt.cudaStreamDestroy(stream), "destroy a stream")

    def to_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        kind = self._rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        self._check(self._rt.cudaMemcpyAsync(dst, src, nbytes, kind, stream), "copy to the GPU")

    def to_host(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        kind = self._rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        self._check(self._rt.cudaMemcpyAsync(dst, src, nbytes, kind, stream), "copy from the GPU")

    def on_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        kind = self._rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
        self._check(self._rt.cudaMemcpyAsync(dst, src, nbytes, kind, stream), "copy on the GPU")

    def begin_capture(self, stream: int) -> None:
        mode = self._rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
        self._check(self._rt.cudaStreamBeginCapture(stream, mode), "start capturing a CUDA graph")

    def end_capture(self, stream: int) -> Any:
        """The captured graph, instantiated (the plain graph is freed: only the executable is replayed)."""
        graph = self._check(self._rt.cudaStreamEndCapture(stream), "finish capturing a CUDA graph")
        try:
            return self._check(self._rt.cudaGraphInstantiate(graph, 0), "instantiate a CUDA graph", alloc=True)
        finally:
            self._check(self._rt.cudaGraphDestroy(graph), "free a captured graph")

    def launch(self, graph_exec: Any, stream: int) -> None:
        self._check(self._rt.cudaGraphLaunch(graph_exec, stream), "replay a CUDA graph")

    def destroy_graph(self, graph_exec: Any) -> None:
        self._check(self._rt.cudaGraphExecDestroy(graph_exec), "free a CUDA graph")

    def synchronize(self, stream: int) -> None:
        self._check(self._rt.cudaStreamSynchronize(stream), "run on the GPU")

    def mem_info(self) -> tuple[int, int]:
        free, total = self._check(self._rt.cudaMemGetInfo(), "read GPU memory")
        return int(free), int(total)
