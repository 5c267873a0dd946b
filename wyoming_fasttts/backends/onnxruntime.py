"""ONNX Runtime engine: the CPU path every machine has, and the reference the GPU engines are checked against.

One resident session serves every slot: ``InferenceSession.run`` is thread-safe, so concurrent requests
share the weights instead of each loading a copy.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .base import EngineMemory, SynthesisItem
from .memory import process_rss_bytes

_LOGGER = logging.getLogger(__name__)


class OnnxRuntimeEngine:
    """The shipped Kokoro graph (batch 1) on ONNX Runtime's CPU provider."""

    name = "onnxruntime"
    device = "cpu"
    max_batch = 1

    def __init__(self, model: Path, threads: int = 0, slots: int = 1) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.slots = max(1, slots)
        self._weights = model.stat().st_size
        _LOGGER.info("ONNX Runtime %s session loaded from %s (%d threads, %d slots)",
                     ort.__version__, model.name, options.intra_op_num_threads, self.slots)

    def warmup(self) -> None:
        item = SynthesisItem(ids=np.full(24, 16, np.int64), style=np.zeros(256, np.float32))
        self.run([item])

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        return [self._run_one(item) for item in items]

    def _run_one(self, item: SynthesisItem) -> np.ndarray:
        tokens = np.concatenate([[0], item.ids, [0]]).astype(np.int64)[None, :]
        feeds = {
            "tokens": tokens,
            "style": item.style.astype(np.float32).reshape(1, -1),
            "speed": np.array([item.speed], np.float32),
        }
        return self._session.run(None, feeds)[0].reshape(-1).astype(np.float32, copy=False)

    def memory(self) -> EngineMemory:
        return EngineMemory(host_rss_bytes=process_rss_bytes(), weights_bytes=self._weights)

    def close(self) -> None:
        del self._session
