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
from .alignment import SAMPLES_PER_FRAME, alignment, frame_counts
from .batching import D_CHANNELS, STYLE_DIM, T_EN_CHANNELS, stage2_feeds, unpad_audio
from .buckets import Buckets, bucket_feeds, pad_to
from .cuda import Cuda
from .plans import PlanKey
from .trt_lane import GraphReplay, Lane

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
    """One stage-1 context and one stage-2 context per profile, all on the lane's shared scratch.

    Every call runs at a bucket shape (``buckets``: rows, tokens and frames rounded up, rows past a batch or
    group repeating its first row) and is replayed as a CUDA graph (``GraphReplay``) once met; ``warm``
    meets them all at start-up."""

    def __init__(self, trt: ModuleType, engines: dict[str, Any], cuda: Cuda, base: int, limits: BatchLimits,
                 runtime_cache: Any, tail_frames: int, graphs: bool = True) -> None:
        super().__init__(trt, engines, cuda, base, batched_tensor_bytes(limits), HOST_TENSORS, runtime_cache,
                         tail_frames)
        self.limits = limits
        full = Buckets.for_limits(limits.max_batch, limits.tokens - 2, limits.frames, limits.row_frames)
        self.buckets = Buckets(rows=tuple(sorted({min(r, limits.max_batch) for r in full.rows})),
                               tokens=tuple(sorted({min(t, limits.tokens) for t in full.tokens})),
                               frames=full.frames, batch_frames=limits.row_frames)
        self.replay = GraphReplay(cuda, graphs)
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
        longest = max(len(item) for item in items) + 2
        if longest > self.limits.tokens:
            raise EngineError(f"{longest - 2} phoneme ids exceed the engine's {self.limits.tokens - 2}")
        feeds1, real = bucket_feeds(items, self.buckets)
        tokens = feeds1["tokens"].shape[1]
        durations = self._stage1(feeds1)
        feeds2 = stage2_feeds(durations, _ON_DEVICE, _ON_DEVICE, feeds1, self.tail_frames)
        audio: list[np.ndarray] = [_ON_DEVICE] * real
        for k, group in stage2_groups(feeds2["frames"][:real], self.limits.shapes):
            for row, clip in zip(group, self._stage2(k, group, feeds2, tokens), strict=True):
                audio[row] = clip
        return [(audio[row], frame_counts(durations[row, :n], self.tail_frames))
                for row, n in enumerate(feeds1["lengths"][:real])]

    def _stage1(self, feeds1: dict[str, np.ndarray]) -> np.ndarray:
        rows, tokens = feeds1["tokens"].shape
        for name, array in feeds1.items():
            self.put(name, array)
            self.stage1.set_input_shape(name, array.shape)
        self.replay.execute(self.stage1, self.stream, ("stage1", rows, tokens), "stage 1")
        self.download("durations", rows * tokens * 4)
        self.cuda.synchronize(self.stream)
        durations: np.ndarray = self.view("durations", np.float32, (rows, tokens)).copy()
        return durations

    def _stage2(self, profile: int, rows: np.ndarray, feeds2: dict[str, np.ndarray], tokens: int) -> list[np.ndarray]:
        """One stage-2 call on ``profile`` at a bucket shape; returns the audio of ``rows``."""
        most_rows, most_frames = self.limits.shapes[profile]
        n = min(self.buckets.row_bucket(len(rows)), most_rows)
        fill = np.concatenate([rows, np.repeat(rows[:1], n - len(rows))])
        frames = min(self.buckets.frame_bucket(int(feeds2["frames"][rows].max())), most_frames)
        aligned = feeds2["alignment"][fill][:, :, :frames]
        self.put("alignment", pad_to(aligned, (n, tokens, frames)))
        self.put("style2", feeds2["style"][fill])
        self.put("frames", feeds2["frames"][fill])
        for name, row_bytes in (("d", tokens * D_CHANNELS * 4), ("t_en", T_EN_CHANNELS * tokens * 4)):
            for j, row in enumerate(fill):
                self.cuda.on_device(self.dev[f"{name}2"] + j * row_bytes, self.dev[name] + int(row) * row_bytes,
                                    row_bytes, self.stream)
        ctx = self.stage2[profile]
        for name, shape in (("alignment", (n, tokens, frames)), ("d", (n, tokens, D_CHANNELS)),
                            ("t_en", (n, T_EN_CHANNELS, tokens)), ("style", (n, STYLE_DIM)), ("frames", (n,))):
            ctx.set_input_shape(name, shape)
        self.replay.execute(ctx, self.stream, ("stage2", profile, n, tokens, frames), f"stage 2 (profile {profile})")
        samples = frames * SAMPLES_PER_FRAME
        self.download("audio", n * samples * 4)
        self.download("audio_lengths", n * 8)
        self.cuda.synchronize(self.stream)
        audio = self.view("audio", np.float32, (n, samples)).copy()  # the pinned buffer is reused by the next call
        return unpad_audio(audio, self.view("audio_lengths", np.int64, (n,)))[:len(rows)]

    def stage2_shapes(self) -> list[tuple[int, int, int, int]]:
        """(profile, rows, tokens, frames) of every stage-2 call ``run`` can make: ``stage2_groups`` gives a
        call the profile with the most rows that holds its longest row, so each profile sees the frame
        buckets above the next profile's frames, with any row bucket it holds."""
        shapes = []
        for k, (most_rows, most_frames) in enumerate(self.limits.shapes):
            above = max([f for r, f in self.limits.shapes if r > most_rows and f < most_frames], default=0)
            frames = sorted({min(f, most_frames) for f in self.buckets.frames if f > above})
            shapes += [(k, b, t, f) for b in self.buckets.rows if b <= most_rows for t in self.buckets.tokens
                       for f in frames]
        return shapes

    def warm(self, style: np.ndarray) -> int:
        """Meet (plan, compile, capture) every bucket shape now; returns how many."""
        count = 0
        for b in self.buckets.rows:
            for t in self.buckets.tokens:
                item = SynthesisItem(ids=np.full(t - 2, 16, np.int64), style=style)
                self._stage1(bucket_feeds([item] * b, self.buckets)[0])
                count += 1
        for k, b, t, f in self.stage2_shapes():
            counts = np.ones(t, np.int64)
            counts[-1] += max(0, f - t)
            aligned = np.repeat(pad_to(alignment(counts)[0][:, :f], (t, f))[None], b, axis=0)
            feeds2 = {"alignment": aligned, "style": np.repeat(style[None], b, axis=0),
                      "frames": np.full(b, f, np.int64)}
            self._stage2(k, np.arange(b), feeds2, t)
            count += 1
        return count

    def close(self) -> None:
        self.replay.close()
        self.stage2.clear()
        self.stage1 = None
        super().close()
