"""Shape buckets: the small fixed set of (rows, tokens, frames) shapes every GPU engine runs.

A GPU engine pays for a new input shape: ONNX Runtime CUDA re-selects its convolution algorithms and
workspaces (~200 ms on an H200), a CUDA graph has to be captured per shape, a TensorRT context re-plans
when its shapes change. With buckets every batch is padded up to one of a few shapes, all of which are
warmed (and captured) at start-up, so no request ever meets a new one.

Padding is exact because the batched graphs take each row's own length (``lengths`` for tokens, ``frames``
for frames): a row padded with zeros to a longer T or F computes what it computes alone (masks, per-row
norm statistics; docs/BATCHING.md), and the audio past a row's end is cut off by ``audio_lengths``. Extra
rows (to reach a bucket's row count) repeat the first row and are dropped afterwards.

Derived (``for_limits`` without chosen steps, as TensorRT uses them): rows are powers of two up to
``max_batch``; tokens (pads included) powers of four (32, 128, 512); frames in steps of about sqrt(2). ONNX
Runtime CUDA takes ``engine.buckets`` (shipped: rows 1, 4, 8, 16; tokens 32, 64, 128, 512; frames 64 ... 1024).
Every shape costs start-up time (ONNX Runtime CUDA plans each new shape, then captures it) and device
memory: each shape's captured graph holds ~12.5 MiB of its own (1.06 GiB for the shipped 85 on an H200;
ONNX Runtime captures in a shape's first run call), and ONNX Runtime's arena, which never hands memory back,
ends at 2 GiB of regions for the weights and the largest run (2026-12-02, docs/BENCHMARKS.md, seventh
pass). 3.4 GiB in all at the shipped buckets with one arena for both stages, largest shapes first; 2.6 GiB
at 27 shapes, batch 1 13% and batches of 4-16 1.2-2x slower (2026-12-01, docs/BENCHMARKS.md, fifth pass).
A token bucket far above the sentence costs stage-1 time (its LSTMs step through every slot): the 64 bucket
took the benchmark sentence from 26.8 to 22-24 ms (2026-12-01, docs/BENCHMARKS.md). These steps are the trade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from ..core import EngineError, SynthesisItem
from .alignment import SAMPLES_PER_FRAME, alignment, frame_counts
from .batching import D_CHANNELS, STYLE_DIM, T_EN_CHANNELS, stage1_feeds

MIN_TOKENS = 32
MIN_FRAMES = 32
_T = TypeVar("_T")


def _powers_of_two(low: int, high: int, step: int = 2) -> tuple[int, ...]:
    """low, step low, step^2 low ... up to the first value >= high (so ``high`` itself always fits)."""
    values = [low]
    while values[-1] < high:
        values.append(values[-1] * step)
    return tuple(values)


def _root_two_steps(low: int, high: int) -> tuple[int, ...]:
    """low, 1.5 low, 2 low, 3 low, 4 low ... (steps of ~sqrt 2) up to the first value >= high."""
    values = []
    for p in _powers_of_two(low, high):
        values += [p, p * 3 // 2]
    return tuple(v for i, v in enumerate(values) if i == 0 or values[i - 1] < high)


def _chosen(steps: Sequence[int], limit: int) -> tuple[int, ...]:
    """Sorted ``steps`` up to ``limit``, ending with a step that holds it; () when none are chosen."""
    if not steps:
        return ()
    kept = sorted({s for s in steps if 0 < s < limit})
    return (*kept, limit)


@dataclass(frozen=True)
class Buckets:
    rows: tuple[int, ...]
    tokens: tuple[int, ...]
    frames: tuple[int, ...]
    batch_frames: int
    batch_tokens: int = 0
    """Most rows x tokens (a token bucket) one stage-1 call takes, the smallest row bucket always allowed; 0: no cap.

    Why a cap. A captured graph holds device memory of its own that grows with its length, since the LSTMs step
    through every token, each step its own kernels: stage 1's graphs at 512 tokens held 46 / 76 / 76 MiB at 8 / 4 / 2
    rows, the twelve stage-1 graphs 298 MiB in all, and the one at 8 rows set stage 1's pool (168 MiB) with the
    largest working set (an H100, the torch-cuda engine, 2026-12-06, docs/BENCHMARKS.md, twenty-fifth pass).
    Sentences that long are rare, so a cap that sends them through stage 1 a few at a time drops the largest shapes."""

    @classmethod
    def for_limits(cls, max_batch: int, max_tokens: int, max_frames: int, batch_frames: int, *,
                   rows: Sequence[int] = (), tokens: Sequence[int] = (), frames: Sequence[int] = (),
                   batch_tokens: int = 0) -> Buckets:
        """``max_tokens`` counts phoneme ids (the two pads are added here); the largest bucket of each holds
        its limit, so every sentence the engine accepts has a bucket. ``rows``, ``tokens`` (pads included),
        ``frames``: chosen steps (``engine.buckets``) instead of the derived ones; the limit is added where the
        largest step is below it, steps above it are dropped."""
        return cls(rows=_chosen(rows, max_batch) or _powers_of_two(1, max_batch),
                   tokens=_chosen(tokens, max_tokens + 2) or _powers_of_two(MIN_TOKENS, max_tokens + 2, 4),
                   frames=_chosen(frames, max_frames) or _root_two_steps(MIN_FRAMES, max_frames),
                   batch_frames=max(batch_frames, max_frames), batch_tokens=batch_tokens)

    @staticmethod
    def _up(value: int, steps: Sequence[int], what: str) -> int:
        for step in steps:
            if step >= value:
                return step
        raise EngineError(f"{what} {value} exceeds the engine's largest bucket {steps[-1]}")

    def row_bucket(self, rows: int) -> int:
        return self._up(rows, self.rows, "batch of")

    def token_bucket(self, tokens: int) -> int:
        return self._up(tokens, self.tokens, "tokens (pads included)")

    def frame_bucket(self, frames: int) -> int:
        return self._up(frames, self.frames, "frames")

    def max_rows(self, frames: int) -> int:
        """Most rows one stage-2 call of ``frames`` (a bucket) may take within ``batch_frames``."""
        return max([b for b in self.rows if b * frames <= self.batch_frames] or [1])

    def stage1_fits(self, rows: int, tokens: int) -> bool:
        """Whether a stage-1 call of ``rows`` x ``tokens`` (buckets) is within ``batch_tokens``."""
        return rows == self.rows[0] or not self.batch_tokens or rows * tokens <= self.batch_tokens

    def stage1_rows(self, tokens: int) -> int:
        """Most rows one stage-1 call at token bucket ``tokens`` may take."""
        return max(b for b in self.rows if self.stage1_fits(b, tokens))

    def stage1_shapes(self) -> list[tuple[int, int]]:
        return [(b, t) for b in self.rows for t in self.tokens if self.stage1_fits(b, t)]

    def stage2_shapes(self) -> list[tuple[int, int, int]]:
        """Every (rows, tokens, frames) stage 2 can meet: rows x frames within ``batch_frames`` (the smallest row
        bucket at every frame bucket: one row always runs, even where that bucket is two rows, ``paired_rows``) and
        at least one frame per token (each token lasts >= 1 frame, so a row of T tokens has >= T frames: a frame
        bucket below half the token bucket never occurs)."""
        return [(b, t, f) for b in self.rows for t in self.tokens for f in self.frames
                if (b == self.rows[0] or b * f <= self.batch_frames) and 2 * f >= t and self.stage1_fits(b, t)]


def paired_rows(buckets: Buckets) -> Buckets:
    """``buckets`` with every row bucket below two raised to two, for the torch-cuda engine's compiled stages: a
    lone sentence runs as a pair, its row repeated (as every padded row is) and the copy's audio dropped.

    Why. Dynamo specialises a size of one, so a one-row call is a second, static compile, and it was the slowest
    way to render a sentence; a pair runs the dynamic kernels every other bucket runs. On an H100 (2026-12-06,
    fp16, docs/BENCHMARKS.md, nineteenth pass), the engine alone rendered the benchmark sentence in 14.2-14.3 ms as a
    fused pair, against 18.1 on eager kernels at one row (the engine's earlier ``torch_eager_rows``) and 27.7 fused
    at one row; through Wyoming 19.0 ms against 23.2, 16 clients unchanged, 48 MiB more device memory, and the
    pair's audio 0.28-0.34 dB from the CPU reference (``doctor``)."""
    return replace(buckets, rows=tuple(sorted({max(rows, 2) for rows in buckets.rows})))


TENSOR_DTYPES: dict[str, type] = {
    "tokens": np.int64, "lengths": np.int64, "style": np.float32, "speed": np.float32, "durations": np.float32,
    "d": np.float32, "t_en": np.float32, "alignment": np.float32, "frames": np.int64, "audio": np.float32,
    "audio_lengths": np.int64}
"""Every tensor either stage reads or writes, and its element type (both stages' inputs and outputs)."""


def tensor_dims(b: int, t: int, f: int) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape at rows ``b``, tokens ``t``, frames ``f`` (stage 1's with any ``f``): the views an engine
    with one flat buffer per tensor binds at that shape."""
    return {"tokens": (b, t), "lengths": (b,), "style": (b, STYLE_DIM), "speed": (b,), "durations": (b, t),
            "d": (b, t, D_CHANNELS), "t_en": (b, T_EN_CHANNELS, t), "alignment": (b, t, f), "frames": (b,),
            "audio": (b, f * SAMPLES_PER_FRAME), "audio_lengths": (b,)}


def bucket_feeds(items: Sequence[SynthesisItem], buckets: Buckets) -> tuple[dict[str, np.ndarray], int]:
    """Stage-1 inputs at a bucket shape, and how many rows are real (the rest repeat row 0)."""
    rows = buckets.row_bucket(len(items))
    padded = [*items, *[items[0]] * (rows - len(items))]
    feeds = stage1_feeds(padded)
    tokens = buckets.token_bucket(feeds["tokens"].shape[1])
    feeds["tokens"] = pad_to(feeds["tokens"], (rows, tokens))
    return feeds, len(items)


def pad_to(array: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``array`` zero-padded at the end of every axis to ``shape``."""
    if tuple(array.shape) == tuple(shape):
        return np.ascontiguousarray(array)
    out = np.zeros(shape, dtype=array.dtype)
    out[tuple(slice(0, n) for n in array.shape)] = array
    return out


def _longest_first(sizes: np.ndarray, bucket: Callable[[int], int],
                   most: Callable[[int], int]) -> list[tuple[np.ndarray, int]]:
    """(indices, bucket) of each call: the longest remaining row sets the call's bucket and the call takes as
    many of the next longest as ``most(bucket)`` allows; all in one call, in order, where they fit."""
    order = np.argsort(-np.asarray(sizes), kind="stable")
    groups, start = [], 0
    while start < len(order):
        size = bucket(int(sizes[order[start]]))
        take = order[start:start + most(size)]
        groups.append((np.sort(take), size))
        start += len(take)
    return groups


def stage1_groups(items: Sequence[SynthesisItem], buckets: Buckets) -> list[np.ndarray]:
    """The items (indices) of each stage-1 call: one call where the batch's rows x token bucket fits
    ``batch_tokens``, else longest sentences first (``Buckets.batch_tokens``)."""
    tokens = np.array([len(item) + 2 for item in items])  # the two pads
    return [take for take, _ in _longest_first(tokens, buckets.token_bucket, buckets.stage1_rows)]


def in_stage1_groups(items: Sequence[SynthesisItem], buckets: Buckets,
                     run: Callable[[Sequence[SynthesisItem]], list[_T]]) -> list[_T]:
    """``run`` (a batch's whole path) over each stage-1 call's items (``stage1_groups``), results in item order. A
    batch over the largest row bucket is refused, not split: the scheduler never forms one."""
    buckets.row_bucket(len(items))
    groups = stage1_groups(items, buckets)
    if len(groups) == 1:
        return run(items)
    results: dict[int, _T] = {}
    for group in groups:
        results.update(zip(group.tolist(), run([items[i] for i in group]), strict=True))
    return [results[i] for i in range(len(items))]


def stage2_groups(frames: np.ndarray, tokens: int, buckets: Buckets) -> list[tuple[np.ndarray, int, int]]:
    """(rows, row bucket, frame bucket) of each stage-2 call at token bucket ``tokens``: all rows in one call
    when rows x frames fits ``batch_frames``, else longest rows first, each call taking as many rows as its
    frame bucket allows. A frame bucket is never below half the token bucket (``stage2_shapes``)."""
    groups = _longest_first(frames, lambda n: buckets.frame_bucket(max(n, (tokens + 1) // 2)), buckets.max_rows)
    return [(take, buckets.row_bucket(len(take)), f) for take, f in groups]


def stage2_plan(durations: np.ndarray, lengths: np.ndarray, real: int, tokens: int, buckets: Buckets,
                tail_frames: int) -> tuple[list[np.ndarray], np.ndarray, list[tuple[np.ndarray, int, int]]]:
    """From stage 1's durations at token bucket ``tokens``: each row's frames per token, its frames in all, and
    the stage-2 calls for the ``real`` rows (``stage2_groups``)."""
    counts = [frame_counts(durations[row, :n], tail_frames) for row, n in enumerate(lengths)]
    frames = np.array([c.sum() for c in counts], np.int64)
    return counts, frames, stage2_groups(frames[:real], tokens, buckets)


def warm_alignment(b: int, t: int, f: int) -> np.ndarray:
    """An alignment [b, t, f] every stage-2 shape can run on at warm-up: full-length rows, each token one frame
    spread evenly over the frames."""
    aligned = np.zeros((b, t, f), np.float32)
    aligned[:, np.arange(t), np.arange(t) * f // t] = 1.0
    return aligned


def call_rows(group: np.ndarray, b: int, tokens: int, f: int, counts: list[np.ndarray],
              frames: np.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The rows one stage-2 call runs (``group``, padded to ``b`` rows by repeating its first: stage 1's extra
    rows already do) and their alignment [b, tokens, f], written into ``out`` (e.g. a pinned buffer) if given."""
    fill = np.concatenate([group, np.repeat(group[:1], b - len(group))])
    if out is None:
        aligned = np.zeros((b, tokens, f), np.float32)
    else:
        aligned = out
        aligned.fill(0.0)
    for j, row in enumerate(fill):
        aligned[j, :len(counts[row]), :frames[row]] = alignment(counts[row])[0]
    return fill, aligned


def run_groups(groups: list[tuple[np.ndarray, int, int]], real: int,
               call: Callable[[np.ndarray, int, int], list[np.ndarray]]) -> list[np.ndarray]:
    """Each of the ``real`` rows' audio, in row order, from one ``call(group, rows, frames)`` per stage-2 call."""
    audio: list[np.ndarray] = [np.empty(0, np.float32)] * real
    for group, b, f in groups:
        for row, clip in zip(group, call(group, b, f), strict=True):
            audio[row] = clip
    return audio
