"""Stage 2 in frame windows (``backends.windows``), on a stand-in render whose frames do not depend on the window.

With such a render every seam is invisible, so what is checked is the bookkeeping: the parts join up to the
sentence's audio sample for sample, each window is rendered with its context, the first part is small, later
windows are as large as the time left before the listener runs out allows, and the plan is the same every time.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME
from wyoming_fasttts.backends.windows import FRAME_SECONDS, Span, render_windows, slow_machine
from wyoming_fasttts.config import load_settings

SETTINGS = load_settings().engine.windows
SENTENCE = np.array([20, *([9] * 18), 30, 12, 4])  # start pad, 18 syllables, closing silence: 228 frames
LONG = np.array([18, *([10] * 40), 28, 12, 4])  # 462 frames


class _Render:
    """A render whose frames do not depend on the window; it records each call's span."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.signal = np.sin(np.arange(total * SAMPLES_PER_FRAME, dtype=np.float32) * 0.01)
        self.calls: list[tuple[int, int]] = []
        self.spans: list[Span] = []

    def __call__(self, span: Span) -> np.ndarray:
        assert 0 <= span.lo < span.hi <= self.total - span.closing
        self.calls.append((span.lo, span.hi))
        self.spans.append(span)
        return self.signal[span.lo * SAMPLES_PER_FRAME:span.hi * SAMPLES_PER_FRAME].copy()


def _renderer(total: int) -> tuple[_Render, np.ndarray, list[tuple[int, int]]]:
    render = _Render(total)
    return render, render.signal, render.calls


def test_the_parts_join_up_to_the_whole_sentence_and_the_first_is_small() -> None:
    render, signal, calls = _renderer(int(SENTENCE.sum()))
    parts = list(render_windows(render, SENTENCE, SETTINGS))
    np.testing.assert_allclose(np.concatenate(parts), signal, atol=1e-6)  # identical frames cross-fade into themselves
    assert len(parts) >= 2
    assert len(parts[0]) == (20 + SETTINGS.first_frames) * SAMPLES_PER_FRAME
    assert calls[0] == (0, 20 + SETTINGS.first_frames + SETTINGS.right_frames)
    assert all(lo > 0 for lo, _hi in calls[1:])  # later windows start inside the sentence, with their left context
    # Only the first window's norms are shown the sentence's close; the later ones reach it or see enough.
    assert [s.closing for s in render.spans] == [SETTINGS.closing_frames] + [0] * (len(calls) - 1)
    again, _signal, calls_again = _renderer(int(SENTENCE.sum()))
    list(render_windows(again, SENTENCE, SETTINGS))
    assert calls_again == calls  # no clock in the plan: the same sentence, the same windows, the same audio


def test_a_first_window_of_a_few_pad_frames_counts_them_for_the_whole_pad() -> None:
    render, signal, calls = _renderer(int(SENTENCE.sum()))
    few = dataclasses.replace(SETTINGS, pad_frames=8, closing_weight=2.0)
    joined = np.concatenate(list(render_windows(render, SENTENCE, few)))
    skipped = (20 - 8) * SAMPLES_PER_FRAME  # the start pad's frames not rendered are sent as silence
    assert len(joined) == len(signal) and not joined[:skipped].any()
    np.testing.assert_allclose(joined[skipped:], signal[skipped:], atol=1e-6)
    assert calls[0] == (20 - 8, 20 + SETTINGS.first_frames + SETTINGS.right_frames)
    first = render.spans[0]
    assert (first.lead, first.lead * first.lead_weight, first.closing_weight) == (8, 20, 2.0)
    assert all(s.lead == 0 and s.closing == 0 for s in render.spans[1:])  # later windows: plain norms
    again, _signal, _calls = _renderer(int(SENTENCE.sum()))
    list(render_windows(again, SENTENCE, SETTINGS))
    assert again.spans[0].lead == 0 and again.spans[0].closing_weight == 1.0  # the default renders the whole pad


def test_no_window_is_late_for_its_listener_at_the_cost_it_is_sized_for() -> None:
    render, _signal, calls = _renderer(int(LONG.sum()))
    heard, rendered, ready = 0, 0, []
    for part in render_windows(render, LONG, SETTINGS):
        ready.append((sum(hi - lo for lo, hi in calls[1:]) * SETTINGS.frame_ms / 1000, heard))
        heard += len(part) // SAMPLES_PER_FRAME
        rendered = len(calls)
    speech = int(LONG[0])
    for at, heard_before in ready[1:]:
        assert at <= (heard_before - speech) * FRAME_SECONDS  # rendered before the audio handed over runs out
    assert rendered < 6  # windows grow: a few, not dozens


def test_a_slower_machine_setting_gets_smaller_windows_and_a_short_sentence_one_part() -> None:
    sizes = {}
    for frame_ms in (4.0, 20.0):
        render, _signal, calls = _renderer(int(SENTENCE.sum()))
        list(render_windows(render, SENTENCE, dataclasses.replace(SETTINGS, frame_ms=frame_ms)))
        sizes[frame_ms] = len(calls)
    assert sizes[4.0] < sizes[20.0]
    short = np.array([20, 9, 9, 30, 4])
    render, signal, _calls = _renderer(int(short.sum()))
    assert [len(p) for p in render_windows(render, short, SETTINGS)] == [len(signal)]
    render, signal, _calls = _renderer(int(SENTENCE.sum()))
    off = dataclasses.replace(SETTINGS, first_frames=0)
    assert [len(p) for p in render_windows(render, SENTENCE, off)] == [len(signal)]


def test_a_machine_slower_than_the_setting_is_told_how_to_set_it() -> None:
    assert slow_machine(SETTINGS, 64, 64 * SETTINGS.frame_ms / 2000) is None
    warning = slow_machine(SETTINGS, 64, 64 * SETTINGS.frame_ms * 2 / 1000)
    assert warning is not None and "frame_ms" in warning and "first_frames to 0" in warning
    assert slow_machine(dataclasses.replace(SETTINGS, first_frames=0), 64, 10.0) is None
