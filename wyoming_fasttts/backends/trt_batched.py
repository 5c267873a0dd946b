"""The batched TensorRT lane: one stage-1 call for the scheduler's whole batch, stage 2 in as few calls as
the plan's (rows, frames) profiles allow.

Stage 2's scratch grows with rows x frames, so its plan has several profiles (``plans.batch_shapes``: 2 x
1024, 4 x 512, 8 x 256, 16 x 128 at the defaults) instead of one over 16 x 1024. Frame counts are only known
after stage 1, so the batch is grouped then: longest row first, each call on the profile that holds that
row and takes the most rows; a batch of short sentences is one call, a long one next to short ones two.
Each group's rows of d and t_en are gathered on the GPU (device-to-device copies) into stage 2's inputs;
only durations, alignment, audio and lengths cross the bus. Host steps are ``batching``'s, as on the
ONNX Runtime path, so every engine pads, aligns and unpads alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from ..core import EngineError, SynthesisItem
from .alignment import SAMPLES_PER_FRAME, frame_counts
from .batching import D_CHANNELS, STYLE_DIM, T_EN_CHANNELS, stage1_feeds, stage2_feeds, unpad_audio
from .cuda import Cuda
from .plans import PlanKey
from .trt_lane import Lane

_ON_DEVICE = np.empty(0, np.float32)
"""Stands for d and t_en in ``stage2_feeds``, which only passes them through: here they stay on the GPU."""

HOST_TENSORS = ("tokens", "lengths", "style", "speed", "durations", "alignment", "style2", "frames", "audio",
                "audio_lengths")
"""What crosses between host and GPU, hence gets a pinned host buffer."""

_STAGE2_BINDINGS = {"alignment": "alignment", "d": "d2", "t_en": "t_en2", "style": "style2", "frames": "frames",
                    "audio": "audio", "audio_lengths": "audio_lengths"}
"""Stage-2 tensor -> the lane buffer it lives in (d, t_en and style are gathered per group)."""


@dataclass(frozen=True)
class BatchLimits:
    """What the plans were built for: stage-1 rows and tokens (pads included), stage-2 (rows, frames) per profile."""

    max_batch: int
    tokens: int
    shapes: tuple[tuple[int, int], ...]

    @classmethod
    def from_keys(cls, stage1: PlanKey, stage2: PlanKey) -> BatchLimits:
        rows, tokens = stage1.profiles[0].shapes["tokens"][2]
        shapes = tuple((p.shapes["alignment"][2][0], p.shapes["alignment"][2][2]) for p in stage2.profiles)
        return cls(rows, tokens, shapes)

    @property
    def group_rows(self) -> int:
        return max(b for b, _ in self.shapes)

    @property
    def row_frames(self) -> int:
        """Most rows x frames of one stage-2 call: what the alignment and audio buffers hold."""
        return max(b * f for b, f in self.shapes)

    @property
    def frames(self) -> int:
        return max(f for _, f in self.shapes)


def batched_tensor_bytes(limits: BatchLimits) -> dict[str, int]:
    """Device bytes of every tensor of a batched lane at the limits."""
    b, t, g = limits.max_batch, limits.tokens, limits.group_rows
    return {
        "tokens": b * t * 8, "lengths": b * 8, "style": b * STYLE_DIM * 4, "speed": b * 4,
        "durations": b * t * 4, "d": b * t * D_CHANNELS * 4, "t_en": b * T_EN_CHANNELS * t * 4,
        "d2": g * t * D_CHANNELS * 4, "t_en2": g * T_EN_CHANNELS * t * 4, "style2": g * STYLE_DIM * 4,
        "frames": g * 8, "alignment": limits.row_frames * t * 4,
        "audio": limits.row_frames * SAMPLES_PER_FRAME * 4, "audio_lengths": g * 8,
    }


def stage2_groups(frames: np.ndarray, shapes: Sequence[tuple[int, int]]) -> list[tuple[int, np.ndarray]]:
    """(profile index, rows) of each stage-2 call: longest rows first, each call on the profile that holds
    the longest remaining row and takes the most rows; rows in batch order within a call."""
    order = np.argsort(-np.asarray(frames), kind="stable")
    groups, start = [], 0
    while start < len(order):
        longest = int(frames[order[start]])
        fitting = [k for k, (_, f) in enumerate(shapes) if f >= longest]
        if not fitting:
            raise EngineError(f"sentence needs {longest} frames, the engine holds {max(f for _, f in shapes)} "
                              "(engine.max_frames, engine.batch_frames); split the text further")
        k = max(fitting, key=lambda i: shapes[i][0])
        rows = np.sort(order[start:start + shapes[k][0]])
        groups.append((k, rows))
        start += len(rows)
    return groups


class BatchedLane(Lane):
    """One stage-1 context and one stage-2 context per profile, all on the lane's shared scratch."""

    def __init__(self, trt: ModuleType, engines: dict[str, Any], cuda: Cuda, base: int, limits: BatchLimits,
                 runtime_cache: Any, tail_frames: int) -> None:
        scratch = max(int(e.device_memory_size_v2) for e in engines.values())
        super().__init__(trt, cuda, base, scratch, batched_tensor_bytes(limits), HOST_TENSORS, runtime_cache)
        self.limits, self.tail_frames = limits, tail_frames
        self.stage1 = self.context(engines["stage1"])
        for name in ("tokens", "lengths", "style", "speed", "durations", "d", "t_en"):
            self.stage1.set_tensor_address(name, self.dev[name])
        self.stage2 = [self.context(engines["stage2"], k) for k in range(len(limits.shapes))]
        for ctx in self.stage2:
            for name, buffer in _STAGE2_BINDINGS.items():
                ctx.set_tensor_address(name, self.dev[buffer])

    def run(self, items: Sequence[SynthesisItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each item's audio and the frames per token it was rendered with, in item order."""
        if len(items) > self.limits.max_batch:
            raise EngineError(f"batch of {len(items)} exceeds the plans' {self.limits.max_batch} rows")
        feeds1 = stage1_feeds(items)
        rows, tokens = feeds1["tokens"].shape
        if tokens > self.limits.tokens:
            raise EngineError(f"{tokens - 2} phoneme ids exceed the engine's {self.limits.tokens - 2}")
        for name, array in feeds1.items():
            self.put(name, array)
            self.stage1.set_input_shape(name, array.shape)
        self.execute(self.stage1, self.stream, "stage 1")
        self.download("durations", rows * tokens * 4)
        self.cuda.synchronize(self.stream)
        durations = self.view("durations", np.float32, (rows, tokens))
        feeds2 = stage2_feeds(durations, _ON_DEVICE, _ON_DEVICE, feeds1, self.tail_frames)
        audio: list[np.ndarray] = [_ON_DEVICE] * rows
        for k, group in stage2_groups(feeds2["frames"], self.limits.shapes):
            for row, clip in zip(group, self._stage2(k, group, feeds2, tokens), strict=True):
                audio[row] = clip
        return [(audio[row], frame_counts(durations[row, :n], self.tail_frames))
                for row, n in enumerate(feeds1["lengths"])]

    def _stage2(self, profile: int, rows: np.ndarray, feeds2: dict[str, np.ndarray], tokens: int) -> list[np.ndarray]:
        n, frames = len(rows), int(feeds2["frames"][rows].max())
        self.put("alignment", feeds2["alignment"][rows, :, :frames])
        self.put("style2", feeds2["style"][rows])
        self.put("frames", feeds2["frames"][rows])
        for name, row_bytes in (("d", tokens * D_CHANNELS * 4), ("t_en", T_EN_CHANNELS * tokens * 4)):
            for j, row in enumerate(rows):
                self.cuda.on_device(self.dev[f"{name}2"] + j * row_bytes, self.dev[name] + int(row) * row_bytes,
                                    row_bytes, self.stream)
        ctx = self.stage2[profile]
        for name, shape in (("alignment", (n, tokens, frames)), ("d", (n, tokens, D_CHANNELS)),
                            ("t_en", (n, T_EN_CHANNELS, tokens)), ("style", (n, STYLE_DIM)), ("frames", (n,))):
            ctx.set_input_shape(name, shape)
        self.execute(ctx, self.stream, f"stage 2 (profile {profile})")
        samples = frames * SAMPLES_PER_FRAME
        self.download("audio", n * samples * 4)
        self.download("audio_lengths", n * 8)
        self.cuda.synchronize(self.stream)
        audio = self.view("audio", np.float32, (n, samples)).copy()  # the pinned buffer is reused by the next call
        return unpad_audio(audio, self.view("audio_lengths", np.int64, (n,)))

    def close(self) -> None:
        self.stage2.clear()
        self.stage1 = None
        super().close()
