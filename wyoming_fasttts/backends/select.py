"""``--engine auto``: the fastest backend this machine can really run, and the reason, for the log.

Order: TensorRT-RTX on a GPU it supports (small install, kernels compiled for the exact GPU), else full
TensorRT, else ONNX Runtime CUDA, else ONNX Runtime on the CPU, which every machine has. Probing only
imports modules and asks NVML; it creates no CUDA context and loads no model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from ..config import Settings
from .memory import GpuInfo, probe_gpu

TENSORRT_RTX_ARCHS = ((8, 0), (8, 6), (8, 9), (12, 0), (12, 1))
"""Compute capabilities TensorRT-RTX 1.7 runs engines on, as its own refusal on an H200 (9.0) listed them."""


@dataclass(frozen=True)
class Probe:
    """What auto-selection looks at; tests pass fakes."""

    gpu: Callable[[int], tuple[GpuInfo | None, str]] = probe_gpu
    has_module: Callable[[str], bool] = lambda name: importlib.util.find_spec(name) is not None
    ort_providers: Callable[[], list[str]] = lambda: _ort_providers()


def _ort_providers() -> list[str]:
    try:
        import onnxruntime
    except ImportError:  # neither ONNX Runtime extra installed; the engine factory says so
        return []
    return list(onnxruntime.get_available_providers())


def tensorrt_rtx_supports(gpu: GpuInfo) -> bool:
    return gpu.compute_capability in TENSORRT_RTX_ARCHS or gpu.compute_capability > (12, 1)


def choose_backend(settings: Settings, probe: Probe | None = None) -> tuple[str, str]:
    """(backend, reason) for ``engine.backend: auto``."""
    probe = probe or Probe()
    gpu, why = probe.gpu(settings.engine.device_id)
    if gpu is None:
        return "onnxruntime", f"no usable GPU ({why})"
    cuda_ok = probe.has_module("cuda.bindings")
    if not cuda_ok:
        skipped = "cuda-bindings is not installed"
    elif probe.has_module("tensorrt_rtx") and tensorrt_rtx_supports(gpu):
        return "tensorrt-rtx", f"{gpu.name} (sm {gpu.cc}) is supported by TensorRT-RTX"
    elif probe.has_module("tensorrt"):
        return "tensorrt", f"{gpu.name} (sm {gpu.cc}) with TensorRT installed"
    else:
        skipped = "neither TensorRT-RTX (for this GPU) nor TensorRT is installed"
    if "CUDAExecutionProvider" in probe.ort_providers():
        return "onnxruntime-cuda", f"{gpu.name}: {skipped}; ONNX Runtime has CUDA"
    return "onnxruntime", f"{gpu.name} found, but {skipped} and ONNX Runtime has no CUDA provider"
