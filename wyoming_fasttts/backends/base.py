"""The one interface every inference backend implements; nothing above ``backends/`` imports a backend.

An engine turns batches of phoneme-id sequences into 24 kHz float audio. It is built (loaded and warmed
up) once, kept resident, and may be asked to run from several threads at once, up to ``slots`` calls in
flight: that is how a backend exposes its execution contexts without the scheduler knowing what they are.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

# The errors an engine raises and the items it runs are part of its contract; they live in the leaf module.
from ..core import AllocationError, EngineError, PeerStatus, SynthesisItem

__all__ = ["AllocationError", "BatchSynthesis", "Engine", "EngineError", "EngineMemory", "InspectableEngine",
           "PeerStatus", "RemoteEngine", "StreamingEngine", "SynthesisItem", "engine_peers"]


@dataclass
class EngineMemory:
    """What an engine holds; device numbers are None where there is no device."""

    host_rss_bytes: int
    weights_bytes: int | None = None
    workspace_bytes: int | None = None
    device_used_bytes: int | None = None
    device_free_bytes: int | None = None
    device_total_bytes: int | None = None
    extra: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    name: str
    """Backend name as the user selects it (``onnxruntime``, ``tensorrt-rtx`` ...)."""
    device: str
    """Where it runs, for logs and metrics (``cpu``, ``cuda:0``)."""
    max_batch: int
    """Largest batch ``run`` accepts."""
    slots: int
    """How many ``run`` calls may be in flight at once."""

    def warmup(self) -> None:
        """Run representative shapes once so the first request does not pay for lazy initialisation."""

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        """Synthesise each item; float32 mono audio at ``SAMPLE_RATE`` per item, in order."""

    def memory(self) -> EngineMemory:
        """Current memory held by this engine (and the process)."""

    def close(self) -> None:
        """Release everything; called once, after the last ``run`` has returned."""


@runtime_checkable
class StreamingEngine(Engine, Protocol):
    """An engine that can hand over one sentence's audio in parts as it renders them (the CPU engine's frame
    windows): the scheduler uses it for a sentence that runs alone, so its listener hears the first part while
    the rest is rendered. Batches still go through ``run``."""

    def stream(self, item: SynthesisItem,
               deadline: Callable[[], float] | None = None) -> Generator[np.ndarray, None, None]:
        """The sentence's audio in consecutive parts, the first as soon as it is rendered: what ``run([item])``
        gives, but for the seams where parts meet and start-pad silence before the first (trimmed anyway).
        ``deadline()`` (``time.monotonic``; None: the listener is waiting now) says when the audio before this
        sentence runs out, so each part need only be ready by the time its listener reaches it; it is read when the
        parts are planned, since that audio is still being sent while the sentence waits. Closing the generator
        stops the rendering."""


@runtime_checkable
class RemoteEngine(Protocol):
    """An engine that serves from other machines; /readyz and /metrics report each of them."""

    def peers(self) -> list[PeerStatus]:
        """A snapshot of every server the engine sends work to."""


def engine_peers(engine: Engine) -> list[PeerStatus]:
    """The remote servers behind ``engine``; empty for an engine that runs in this process."""
    return engine.peers() if isinstance(engine, RemoteEngine) else []


@runtime_checkable
class InspectableEngine(Engine, Protocol):
    """An engine ``doctor`` can compare with the CPU reference: one sentence, and the frames it was given."""

    def synthesize(self, item: SynthesisItem) -> tuple[np.ndarray, np.ndarray]:
        """Float32 audio for ``item`` and the frames per token (from stage 1) it was rendered with."""


class BatchSynthesis:
    """``run`` and ``synthesize`` for an engine whose one path is a batch with its frames (``synthesize_batch``):
    the GPU engines, whose batch's every row ``doctor`` can compare, serve requests and doctor from one call."""

    def synthesize_batch(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each item's float32 audio and the frames per token it was rendered with, in item order."""
        raise NotImplementedError

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        return [audio for audio, _ in self.synthesize_batch(items)]

    def synthesize(self, item: SynthesisItem) -> tuple[np.ndarray, np.ndarray]:
        return self.synthesize_batch([item])[0]
