"""Stage 2 in frame windows (``backends.windows``), on a stand-in render whose frames do not depend on the window.

With such a render every seam is invisible, so what is checked is the bookkeeping: the parts join up to the
sentence's audio sample for sample, each window is rendered with its context, the first part is small, and
later windows are as large as the time left before the listener runs out allows.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME
from wyoming_fasttts.backends.windows import FRAME_SECONDS, FrameCost, render_windows
from wyoming_fasttts.config import load_settings

SETTINGS = load_settings().engine.windows


class Clock:
    """Time that passes only while the stand-in renders: ``per_frame`` seconds a frame."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _renderer(total: int, clock: Clock, per_frame: float):
    signal = np.sin(np.arange(total * SAMPLES_PER_FRAME, dtype=np.float32) * 0.01)
    calls: list[tuple[int, int]] = []

    def render(lo: int, hi: int) -> np.ndarray:
        assert 0 <= lo < hi <= total
        calls.append((lo, hi))
        clock.now += (hi - lo) * per_frame
        return signal[lo * SAMPLES_PER_FRAME:hi * SAMPLES_PER_FRAME].copy()

    return render, signal, calls


def test_the_parts_join_up_to_the_whole_sentence_and_the_first_is_small() -> None:
    frames = np.array([20, *([9] * 18), 30, 12, 4])  # start pad, 18 syllables, closing silence: 228 frames
    clock = Clock()
    render, signal, calls = _renderer(int(frames.sum()), clock, per_frame=0.007)
    parts = list(render_windows(render, frames, SETTINGS, FrameCost(0.007), clock))
    joined = np.concatenate(parts)
    np.testing.assert_allclose(joined, signal, atol=1e-6)  # identical frames cross-fade into themselves
    assert len(parts) >= 2
    assert len(parts[0]) == (20 + SETTINGS.first_frames) * SAMPLES_PER_FRAME
    assert calls[0] == (0, 20 + SETTINGS.first_frames + SETTINGS.right_frames)
    for lo, _hi in calls[1:]:
        assert lo > 0  # later windows start inside the sentence, with their left context


def test_no_window_is_late_for_its_listener() -> None:
    frames = np.array([18, *([10] * 40), 28, 12, 4])  # a long sentence: 462 frames
    clock = Clock()
    render, _signal, calls = _renderer(int(frames.sum()), clock, per_frame=0.007)
    handed: list[tuple[float, int]] = []  # when each part was handed over, and the frames heard by its end
    heard = 0
    for part in render_windows(render, frames, SETTINGS, FrameCost(0.007), clock):
        heard += len(part) // SAMPLES_PER_FRAME
        handed.append((clock.now, heard))
    first_at, speech = handed[0][0], int(frames[0])
    for (_, heard_before), (at, _) in itertools.pairwise(handed):
        assert at <= first_at + (heard_before - speech) * FRAME_SECONDS  # ready before the audio runs out
    assert len(calls) < 6  # windows grow: a few, not dozens


def test_a_slow_machine_gets_smaller_windows_and_a_short_sentence_one_part() -> None:
    frames = np.array([20, *([9] * 18), 30, 12, 4])
    sizes = {}
    for per_frame in (0.004, 0.02):
        clock = Clock()
        render, _signal, calls = _renderer(int(frames.sum()), clock, per_frame)
        list(render_windows(render, frames, SETTINGS, FrameCost(per_frame), clock))
        sizes[per_frame] = len(calls)
    assert sizes[0.004] < sizes[0.02]
    short = np.array([20, 9, 9, 30, 4])
    clock = Clock()
    render, signal, calls = _renderer(int(short.sum()), clock, 0.007)
    assert [len(p) for p in render_windows(render, short, SETTINGS, FrameCost(), clock)] == [len(signal)]
    render, signal, calls = _renderer(int(frames.sum()), clock, 0.007)
    off = dataclasses.replace(SETTINGS, first_frames=0)
    assert [len(p) for p in render_windows(render, frames, off, FrameCost(), clock)] == [len(signal)]


def test_the_cost_per_frame_follows_what_is_measured() -> None:
    cost = FrameCost(0.01)
    for _ in range(20):
        cost.observe(100, 0.5)
    assert abs(cost.per_frame - 0.005) < 1e-4
    assert abs(cost.frames_within(1.0) - 200) <= 1 and cost.frames_within(-1.0) == 0
