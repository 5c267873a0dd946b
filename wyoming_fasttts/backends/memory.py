"""Every memory reading in one place: process and host memory (psutil), GPUs through NVML.

The engines report their process's RSS, the watchdog samples host and device memory, ``doctor`` and
``--engine auto`` probe the GPU, and ``bench`` reads what each server it started holds. NVML
(``nvidia-ml-py``) answers "which GPU, which driver, how much memory, which process" without creating a CUDA
context, so probing costs no GPU memory and works even where the CUDA runtime is the wrong version.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psutil

_LOGGER = logging.getLogger(__name__)


def process_rss_bytes(pid: int | None = None) -> int:
    """Resident set size now of ``pid`` (default: this process)."""
    return int(psutil.Process(pid).memory_info().rss)


def peak_rss_bytes(pid: int) -> int | None:
    """The kernel's high-water mark of ``pid``'s resident memory (Linux ``VmHWM``; psutil has no peak there)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def host_available_bytes() -> int:
    """Memory the host can still hand out without swapping."""
    return int(psutil.virtual_memory().available)


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


class Nvml:
    """One GPU through NVML: what it is, its memory, and what a process holds on it."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self._nvml = pynvml
        self._handle = handle

    @classmethod
    def connect(cls, device_id: int) -> tuple[Nvml | None, str]:
        """NVML for ``device_id``, or None and why not (no nvidia-ml-py, no driver, no such GPU)."""
        try:
            import pynvml
        except ImportError:
            return None, "nvidia-ml-py is not installed (pip extra 'gpu', 'tensorrt' or 'tensorrt-rtx')"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as err:
            return None, f"no NVIDIA driver ({err})"
        try:
            return cls(pynvml, pynvml.nvmlDeviceGetHandleByIndex(device_id)), "ok"
        except pynvml.NVMLError as err:
            pynvml.nvmlShutdown()
            return None, f"GPU {device_id} not readable through NVML ({err})"

    @classmethod
    def open(cls, device_id: int) -> Nvml | None:
        """NVML for ``device_id``, or None where there is none to read (CPU installs): readings are optional."""
        nvml, why = cls.connect(device_id)
        if nvml is None:
            _LOGGER.debug("no GPU memory readings: %s", why)
        return nvml

    @classmethod
    def all_devices(cls) -> Iterator[Nvml]:
        """Each GPU in turn (none without NVML); the caller closes nothing, iteration does."""
        first, _ = cls.connect(0)
        if first is None:
            return
        try:
            count = first._nvml.nvmlDeviceGetCount()
            yield first
            for index in range(1, count):
                yield cls(first._nvml, first._nvml.nvmlDeviceGetHandleByIndex(index))
        finally:
            first.close()

    def info(self) -> GpuInfo:
        nvml, handle = self._nvml, self._handle
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
        cuda = nvml.nvmlSystemGetCudaDriverVersion_v2()
        name = nvml.nvmlDeviceGetName(handle)
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        return GpuInfo(
            name=name.decode() if isinstance(name, bytes) else str(name),
            compute_capability=(int(major), int(minor)),
            total_bytes=int(mem.total),
            free_bytes=int(mem.free),
            driver_version=str(nvml.nvmlSystemGetDriverVersion()),
            cuda_driver_version=(cuda // 1000, (cuda % 1000) // 10),
        )

    def process_bytes(self, pid: int) -> int | None:
        """GPU memory NVML charges to ``pid`` on this device, or None where it cannot see the process."""
        with contextlib.suppress(self._nvml.NVMLError):
            for proc in self._nvml.nvmlDeviceGetComputeRunningProcesses(self._handle):
                if proc.pid == pid and proc.usedGpuMemory is not None:
                    return int(proc.usedGpuMemory)
        return None

    def read(self) -> tuple[int, int, int, int | None]:
        """Used, free, total for the device, and this process's share where NVML can see our pid."""
        mem = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
        return int(mem.used), int(mem.free), int(mem.total), self.process_bytes(os.getpid())

    def close(self) -> None:
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlShutdown()


def probe_gpu(device_id: int = 0) -> tuple[GpuInfo | None, str]:
    """The GPU at ``device_id`` through NVML, or None and the reason it could not be seen."""
    nvml, why = Nvml.connect(device_id)
    if nvml is None:
        return None, why
    try:
        return nvml.info(), "ok"
    except nvml._nvml.NVMLError as err:
        return None, f"GPU {device_id} not readable through NVML ({err})"
    finally:
        nvml.close()


def device_used_bytes(device_id: int) -> int | None:
    """Device memory in use on the whole device (NVML: no CUDA context of its own), or None without nvidia-ml-py
    or a driver: what an engine takes is the difference across its start-up."""
    nvml = Nvml.open(device_id)
    if nvml is None:
        return None
    try:
        return nvml.read()[0]
    finally:
        nvml.close()


def gpu_process_bytes(pid: int) -> int | None:
    """GPU memory ``pid`` holds over all GPUs, or None without NVML, a GPU or any memory held."""
    return sum(filter(None, (gpu.process_bytes(pid) for gpu in Nvml.all_devices()))) or None
