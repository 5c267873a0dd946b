"""Shared types every layer uses: the sample rate, a sentence for the model, the engine errors, a peer's state.

A leaf: it imports nothing from the package, so text, engines, graphs, the scheduler and the server can all
import it without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 24000
MIN_SPEED, MAX_SPEED = 0.5, 2.0
"""The speaking rates the model renders well (a config default, a request's speed, the CLI's)."""
PRECISIONS = ("fp32", "fp16")
"""Stage 2's precisions (``engine.precision``): float32 throughout, or fp16 activations and weights with float32
islands; stage 1 is float32 in both (its rounded durations must match the CPU reference; ``HALF_LSTMS`` aside).
Here, in the leaf, so the config, the CLI, the graph cache and the export (torch) check one list."""
HALF_LSTMS = ("none", "audio", "all")
"""Which of the stages' six LSTMs the torch-cuda engine runs in float16 (``engine.half_lstms``; cuDNN's persistent
kernel, ``export.lstm.OneCallLSTM``): none; the two whose outputs reach the audio but no duration (stage 1's text
encoder, whose features only stage 2 reads, and stage 2's prosody LSTM), so their float16 error can show only in
the audio, which doctor holds to a log-mel limit, never in a duration, which it holds equal to the CPU reference;
or all six."""


def check_precision(precision: str) -> None:
    """Refuse a stage-2 precision outside ``PRECISIONS`` (the graph cache and the export are entry points too)."""
    if precision not in PRECISIONS:
        raise ValueError(f"stage 2 precision must be one of {PRECISIONS}, not {precision!r}")


@dataclass(frozen=True)
class SynthesisItem:
    """One sentence for the model: ids without the boundary pads, the voice's style row, the speed."""

    ids: np.ndarray
    style: np.ndarray
    speed: float = 1.0

    def __len__(self) -> int:
        return len(self.ids)


class EngineError(RuntimeError):
    """An engine could not be created or run; the message is meant for the user."""


class AllocationError(EngineError):
    """The engine could not get the memory it needed; the watchdog counts these."""


@dataclass
class PeerStatus:
    """One remote inference server as this front end sees it (``--engine triton``); /readyz and /metrics."""

    url: str
    ready: bool = False
    outstanding: int = 0
    requests: int = 0
    failures: int = 0
    last_error: str = ""
