"""Stage 2 in frame windows (``backends.windows``), on a stand-in render whose frames do not depend on the window.

With such a render every seam is invisible, so what is checked is the bookkeeping: the parts join up to the
sentence's audio sample for sample, each window is rendered with its context, the first part is small, later
windows are as large as the time left before the listener runs out allows, and the plan is the same every time.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME
from wyoming_fasttts.backends.windows import FRAME_SECONDS, Span, least_first_frames, render_windows, slow_machine
from wyoming_fasttts.config import load_settings

SETTINGS = dataclasses.replace(load_settings().engine.windows, frame_ms=8.0)  # the default (0) is measured at start-up
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
    # Only the first window's norms are shown the sentence's close; the later ones reach it or see enough of it,
    # and the start pad's last frames (the first window renders all of the pad).
    assert [s.closing for s in render.spans] == [SETTINGS.closing_frames] + [0] * (len(calls) - 1)
    assert [s.opening for s in render.spans] == [(0, 0)] + [(20 - SETTINGS.later_pad_frames, 20)] * (len(calls) - 1)
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
    assert all(s.opening == (12, 20) and s.closing == 0 for s in render.spans[1:])  # later: the pad's last 8 too
    again, _signal, _calls = _renderer(int(SENTENCE.sum()))
    list(render_windows(again, SENTENCE, SETTINGS))
    assert again.spans[0].lead == 0 and again.spans[0].closing_weight == 1.0  # the default renders the whole pad


def test_later_windows_norms_see_the_start_pad_where_the_machine_has_the_time() -> None:
    edges = dataclasses.replace(SETTINGS, frame_ms=6.0, later_pad_frames=8)
    render, signal, _calls = _renderer(int(LONG.sum()))
    np.testing.assert_allclose(np.concatenate(list(render_windows(render, LONG, edges))), signal, atol=1e-6)
    first, *later = render.spans
    assert first.opening == (0, 0) and len(later) >= 2
    pad, total = int(LONG[0]), int(LONG.sum())
    for span in later:
        assert span.opening == (pad - 8, pad) and (span.lead, span.lead * span.lead_weight) == (8, pad)
        assert span.closing == 0
    assert later[-1].hi == total
    # Where rendering them would need a larger first window (a slower machine), first audio comes first.
    slow = dataclasses.replace(edges, frame_ms=14.0)
    render, _signal, _calls = _renderer(int(LONG.sum()))
    list(render_windows(render, LONG, slow))
    assert render.spans[0].hi == pad + least_first_frames(dataclasses.replace(slow, later_pad_frames=0)) + 8
    assert all(s.opening == (0, 0) for s in render.spans[1:])


def test_the_last_window_spends_the_time_left_on_context_back_to_the_sentence_start_where_it_fits() -> None:
    """Its audio is the whole render's where it starts at frame 0; where it cannot, it still starts earlier than
    ``left_frames`` before its own frames. It is never late (the test below), and it leaves the time a next
    sentence's first window takes: spent on context, that first window came late, a gap between sentences."""
    total, pad = int(SENTENCE.sum()), int(SENTENCE[0])
    fast = dataclasses.replace(SETTINGS, frame_ms=2.5)
    render, signal, calls = _renderer(total)
    np.testing.assert_allclose(np.concatenate(list(render_windows(render, SENTENCE, fast))), signal, atol=1e-6)
    assert calls == [(0, pad + SETTINGS.first_frames + SETTINGS.right_frames), (0, total)]
    assert render.spans[-1] == Span(0, total)  # nothing joined or weighed: the whole render
    first_window = pad + SETTINGS.first_frames + SETTINGS.right_frames + SETTINGS.closing_frames
    grown = []
    longer = np.array([20, *([9] * 24), 30, 12, 4])  # at 5.75 ms its last window starts inside the start pad
    for sentence, frame_ms in [(SENTENCE, 3.5), (SENTENCE, 5.0), (SENTENCE, 8.0), (longer, 5.75), (LONG, 6.0)]:
        total = int(sentence.sum())
        render, signal, calls = _renderer(total)
        parts = list(render_windows(render, sentence, dataclasses.replace(SETTINGS, frame_ms=frame_ms)))
        np.testing.assert_allclose(np.concatenate(parts), signal, atol=1e-6)
        last, own = render.spans[-1], total - len(parts[-1]) // SAMPLES_PER_FRAME
        assert last.hi == total and last.lo <= own - SETTINGS.left_frames
        if last.lo == own - SETTINGS.left_frames:
            continue  # no time to spare: the plain last window
        grown.append(last.lo)
        if 0 < last.lo < pad:  # from inside the start pad: its frames are rendered and count for the whole pad
            assert last.opening == (0, 0) and last.lead * last.lead_weight == pytest.approx(pad)
        done = sum(s.hi - s.lo + s.closing + s.opening[1] - s.opening[0] for s in render.spans[1:]) * frame_ms / 1000
        left = (own - pad) * FRAME_SECONDS * SETTINGS.margin - done  # rendering time before the listener runs out
        assert left >= first_window * frame_ms / 1000
    assert 0 in grown and any(0 < lo < pad for lo in grown)


@pytest.mark.parametrize("frame_ms", [6.0, 8.0, 14.0, 17.0])  # 2 cores with AVX-512 VNNI ~7, without ~13
@pytest.mark.parametrize("edge_frames", [0, 8])
def test_no_window_is_late_for_its_listener_at_the_cost_it_is_sized_for(frame_ms: float, edge_frames: int) -> None:
    settings = dataclasses.replace(SETTINGS, frame_ms=frame_ms, later_pad_frames=edge_frames)
    render, _signal, calls = _renderer(int(LONG.sum()))
    heard, rendered, ready = 0, 0, []
    for part in render_windows(render, LONG, settings):
        ready.append((sum(s.hi - s.lo + s.closing + s.opening[1] - s.opening[0] for s in render.spans[1:])
                      * frame_ms / 1000, heard))
        heard += len(part) // SAMPLES_PER_FRAME
        rendered = len(calls)
    speech = int(LONG[0])
    assert ready[0][0] == 0 and len(ready) >= 2
    for at, heard_before in ready[1:]:
        assert at <= (heard_before - speech) * FRAME_SECONDS  # rendered before the audio handed over runs out
    assert rendered < 6  # windows grow: a few, not dozens


def test_a_slower_machine_starts_with_a_larger_first_window_and_one_too_slow_renders_whole() -> None:
    least = {ms: least_first_frames(dataclasses.replace(SETTINGS, frame_ms=ms)) for ms in (4.0, 8.0, 14.0, 17.0, 20.0)}
    assert least[4.0] == least[8.0] == SETTINGS.first_frames  # the setting where the machine keeps up with it
    assert SETTINGS.first_frames < least[14.0] < least[17.0]  # type: ignore[operator]
    assert least[20.0] is None  # 20 ms for 25 ms of audio, at a margin of 0.85: whole sentences
    render, signal, _calls = _renderer(int(SENTENCE.sum()))
    assert [len(p) for p in render_windows(render, SENTENCE, dataclasses.replace(SETTINGS, frame_ms=20.0))] == [
        len(signal)]


def test_a_slower_machine_setting_gets_smaller_windows_and_a_short_sentence_one_part() -> None:
    sizes = {}
    for frame_ms in (4.0, 12.0):
        render, _signal, calls = _renderer(int(SENTENCE.sum()))
        list(render_windows(render, SENTENCE, dataclasses.replace(SETTINGS, frame_ms=frame_ms)))
        sizes[frame_ms] = len(calls)
    assert sizes[4.0] < sizes[12.0]
    short = np.array([20, 9, 9, 30, 4])
    render, signal, _calls = _renderer(int(short.sum()))
    assert [len(p) for p in render_windows(render, short, SETTINGS)] == [len(signal)]
    render, signal, _calls = _renderer(int(SENTENCE.sum()))
    off = dataclasses.replace(SETTINGS, first_frames=0)
    assert [len(p) for p in render_windows(render, SENTENCE, off)] == [len(signal)]


def test_a_later_sentence_comes_in_one_piece_where_the_audio_ahead_covers_it() -> None:
    render, signal, calls = _renderer(int(SENTENCE.sum()))
    ahead = int(SENTENCE.sum()) * SETTINGS.frame_ms / 1000 / SETTINGS.margin + 0.01
    assert [len(p) for p in render_windows(render, SENTENCE, SETTINGS, ahead_s=ahead)] == [len(signal)]
    assert calls == [(0, int(SENTENCE.sum()))]


def test_a_later_sentence_with_little_audio_ahead_is_in_time_part_by_part() -> None:
    """Each part, the first included, is rendered before the listener, who has ``ahead`` seconds of audio before
    the sentence, reaches it; the first window is as large as that time allows, not the waiting listener's size."""
    speech = int(LONG[0])
    for ahead in (0.3, 1.0, 2.5):
        render, signal, _calls = _renderer(int(LONG.sum()))
        parts = list(render_windows(render, LONG, SETTINGS, ahead_s=ahead))
        np.testing.assert_allclose(np.concatenate(parts), signal, atol=1e-6)
        heard, done = 0, 0.0
        for part, span in zip(parts, render.spans, strict=True):
            done += (span.hi - span.lo + span.closing) * SETTINGS.frame_ms / 1000
            assert done <= ahead + max(0, heard - speech) * FRAME_SECONDS or not heard  # the first may be late
            heard += len(part) // SAMPLES_PER_FRAME
        first_speech = len(parts[0]) // SAMPLES_PER_FRAME - speech
        fits = ahead * SETTINGS.margin / (SETTINGS.frame_ms / 1000) - speech
        assert first_speech >= min(SETTINGS.first_frames, fits)
    waited, _signal, waited_calls = _renderer(int(LONG.sum()))
    list(render_windows(waited, LONG, SETTINGS, ahead_s=2.5))
    assert waited_calls[0][1] > speech + SETTINGS.first_frames + SETTINGS.right_frames  # more than a first window


def test_a_machine_slower_than_the_setting_is_told_how_to_set_it() -> None:
    assert slow_machine(SETTINGS, 64, 64 * SETTINGS.frame_ms / 2000) is None
    warning = slow_machine(SETTINGS, 64, 64 * SETTINGS.frame_ms * 2 / 1000)
    assert warning is not None and "frame_ms" in warning and "first_frames to 0" in warning
    assert slow_machine(dataclasses.replace(SETTINGS, first_frames=0), 64, 10.0) is None
    assert slow_machine(dataclasses.replace(SETTINGS, frame_ms=0), 64, 10.0) is None  # measured: fits by definition
