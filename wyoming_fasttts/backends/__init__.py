"""Engine factory: the only place that knows which backend classes exist."""

from __future__ import annotations

import logging

from ..assets import ModelAssets
from ..config import Settings
from ..core import EngineError
from .base import Engine

_LOGGER = logging.getLogger(__name__)


def resolve_backend(settings: Settings) -> tuple[str, str]:
    """The backend to use and why (``--engine auto`` probes what this machine can run)."""
    requested = settings.engine.backend
    if requested != "auto":
        return requested, "requested"
    try:
        from .select import choose_backend
    except ImportError:
        return "onnxruntime", "no GPU backend support in this build"
    return choose_backend(settings)


def create_engine(settings: Settings, assets: ModelAssets) -> Engine:
    """Load, warm up and return the configured engine; raises EngineError with a user-facing reason."""
    backend, reason = resolve_backend(settings)
    _LOGGER.info("Engine: %s (%s)", backend, reason)
    if backend in ("onnxruntime", "onnxruntime-cuda"):
        from .onnxruntime import create_onnxruntime_engine

        engine: Engine = create_onnxruntime_engine(settings, assets, backend)
    elif backend in ("tensorrt", "tensorrt-rtx"):
        from .tensorrt import create_tensorrt_engine

        engine = create_tensorrt_engine(settings, assets, backend)
    elif backend == "torch-cuda":
        from .torch_cuda import create_torch_engine

        engine = create_torch_engine(settings, assets)
    elif backend == "triton":
        from .triton import create_triton_engine

        engine = create_triton_engine(settings)
    else:
        raise EngineError(f"engine backend '{backend}' is not available in this installation")
    engine.warmup()
    return engine
