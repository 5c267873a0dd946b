"""Thin CUDA and NVML helpers for the GPU engines: probing, one device arena, pinned host views, streams.

cuda-python's ``cuda-bindings`` is NVIDIA's maintained binding of the CUDA runtime API and ships
manylinux wheels with no build step or toolkit (pycuda, named in the design card, compiles against a local
CUDA toolkit and has its own context model that fights TensorRT's use of the primary context). NVML
(``nvidia-ml-py``) answers "which GPU, which driver" without creating a CUDA context, so probing stays
cheap and works even where the CUDA runtime is the wrong version.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..core import AllocationError, EngineError

ALIGNMENT = 256
"""TensorRT wants 256-byte aligned device memory for contexts and tensors."""


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: tuple[int, int]
    total_bytes: int
    free_bytes: int
    driver_version: str
    cuda_driver_version: tuple[int, int]

    @property
    def cc(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


def probe_gpu(device_id: int = 0) -> tuple[GpuInfo | None, str]:
    """The GPU at ``device_id`` through NVML, or None and the reason it could not be seen."""
    try:
        import pynvml
    except ImportError:
        return None, "nvidia-ml-py is not installed (pip extra 'gpu', 'tensorrt' or 'tensorrt-rtx')"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return None, f"no NVIDIA driver ({err})"
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_id)
        mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        name = pynvml.nvmlDeviceGetName(handle)
        info = GpuInfo(
            name=name.decode() if isinstance(name, bytes) else str(name),
            compute_capability=tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handle)),
            total_bytes=int(mem.total),
            free_bytes=int(mem.free),
            driver_version=str(pynvml.nvmlSystemGetDriverVersion()),
            cuda_driver_version=(cuda // 1000, (cuda % 1000) // 10),
        )
    except pynvml.NVMLError as err:
        return None, f"GPU {device_id} not readable through NVML ({err})"
    finally:
        pynvml.nvmlShutdown()
    return info, "ok"


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
        self._check(runtime.cudaSetDevice(device_id), "select GPU")

    def _check(self, result: tuple, what: str, alloc: bool = False):
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

    def synchronize(self, stream: int) -> None:
        self._check(self._rt.cudaStreamSynchronize(stream), "run on the GPU")

    def mem_info(self) -> tuple[int, int]:
        free, total = self._check(self._rt.cudaMemGetInfo(), "read GPU memory")
        return int(free), int(total)
