"""Stage 2 in frame windows: a sentence starts to sound after its first window, not after all of its frames.

On the CPU stage 2 costs ~7 ms per 25-ms frame, so a listener used to wait for every frame of the first
sentence (1.4 s for a 20-character one on two cores) before hearing anything. Stage 2 is cut in two
(``graphs.split.split_vocoder``): the prosody (the F0 and energy curves from a bidirectional LSTM over the
whole sentence, and the harmonic source whose phase accumulates over it) runs once, ~75 ms; the decoder and
generator, ~95% of the cost and local but for their instance norms, run over windows of frames with context
on each side, and their audio is joined with a short cross-fade. Rendered over all frames at once the two
halves give stage 2's output exactly; a window differs from that by about as much as the int8 graphs differ
from the float ones (docs/BENCHMARKS.md, "stage 2 in frame windows").

The first window is small: its audio is what the listener waits for. Its instance norms would see only the sentence's
start, so the sentence's last ``closing_frames`` (the phrase-final syllable drawn out, the closing mark's silence) are
rendered beside it for the norms alone: over a first window those statistics are what it lacks most (eager float32:
first part 3.2 -> 2.1 dB from the whole render for 16 frames more, where 16 more of right context gave 3.0,
``benchmarks/window_norms.py``; int8, 8 of them in place of 8 frames of right context: 3.8 -> 3.1 dB,
``benchmarks/window_vocoder.py``), each counted ``closing_weight`` times (``graphs.norm_weights``). It may render only
the last ``pad_frames`` of the start pad's silence (~20 frames), each counted for as many of the pad's frames as it
stands for (the skipped frames' audio is silence, sent as zeros): 12 frames less to wait for and as close to the whole
render in log-mel distance, but Whisper heard it worse (+0.41 points against +0.17, docs/BENCHMARKS.md, third pass),
so by default the whole pad is rendered. A later window's norms, over its own frames alone, see speech where the whole
render's also see the start pad's silence: the Whisper ear's extra errors sat after the first window, not in it
(docs/BENCHMARKS.md, sixth pass), so each later window renders the start pad's last ``later_pad_frames`` before its
left context, counted for the whole pad, where the machine has the time (``_pad_if_free``). Each later one is as large
as can be rendered, at ``frame_ms`` a frame, before the audio already handed over has played out, so a window is never
late for its listener; what is left once it fits is rendered in one piece, its left context grown by the time left
before the listener needs it, back to the sentence's start where that fits: then its instance norms see every frame
and the rest of the sentence is the whole render's audio exactly (``_last_lo``; less the time a next sentence's first
window needs, else that one came late; the ear on 48 replies, 8 voices: -0.15 points against whole sentences, 95%
-0.49 to +0.17, docs/BENCHMARKS.md, tenth pass). ``frame_ms`` is what this machine takes: by default measured once at
start-up (the engine's warm-up; a machine without VNNI renders a frame in ~13 ms where one with it takes ~6, and
windows sized for the faster one left gaps), else the setting, checked against the machine (``slow_machine``). A
reply's later sentence is rendered while the one before it plays: its plan starts from the audio its listener has
ahead (``ahead_s``), so it comes whole where that covers it, and in windows that are each in time where it does not
(rendered whole regardless, it came late: gaps of 1-2 s between sentences on the slower machine). The plan reads no
clock itself: the same sentence, settings and ``ahead_s`` give the same audio, and a sentence its listener waits for
(a reply's first) always starts with the same first window. A sentence the scheduler renders whole (it had company)
differs from its windowed audio by the seams, as the tables in docs/BENCHMARKS.md measure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from ..config import WindowSettings
from ..core import SAMPLE_RATE
from .alignment import SAMPLES_PER_FRAME

FRAME_SECONDS = SAMPLES_PER_FRAME / SAMPLE_RATE


@dataclass(frozen=True)
class Span:
    """Frames [lo, hi) of a sentence to render, and what its instance norms see besides (the first window's)."""

    lo: int
    hi: int
    closing: int = 0
    """The sentence's last frames, joined after [lo, hi) for the norms alone (their audio is not returned)."""
    lead: int = 0
    """The span's first frames, each counted ``lead_weight`` times by the norms."""
    lead_weight: float = 1.0
    closing_weight: float = 1.0
    opening: tuple[int, int] = (0, 0)
    """Frames [a, b) of the sentence (the start pad's) joined before [lo, hi) for the norms alone; they are the
    ``lead`` where given (a later window's)."""


Render = Callable[[Span], np.ndarray]
"""The decoder and generator over a span of the sentence's frames: its audio, 600 samples a frame."""

NORM_FRAMES = "norm_frames"
"""The render graph's int64 [2] input (``graphs.norm_weights``): a span's ``lead`` and ``closing`` frames."""
NORM_WEIGHTS = "norm_weights"
"""Its float [2] input: the extra weight of each of those frames in the norms (``lead_weight - 1``, ...)."""


def render_windows(render: Render, frames: np.ndarray, settings: WindowSettings,
                   ahead_s: float = 0.0) -> Iterator[np.ndarray]:
    """A sentence's audio in consecutive parts, from frames per token (stage 1's, as the alignment has them).

    ``ahead_s``: the audio its listener has yet to hear before this sentence (0: the listener is waiting for it, as
    for a reply's first sentence). With some, the first window is sized like the later ones, to be ready before that
    audio runs out, and a sentence that can be rendered in that time comes in one piece; a sentence a listener waits
    for starts with ``first_frames``, whatever the clock, so its first audio is always the same.

    The parts joined are as long as the sentence's audio. The first window's instance norms need the start pad's
    silence: started 8 frames before the speech with those frames counted once, its speech differed from the full
    render's by 4.5-8.0 dB, from frame 0 by 2.8-4.9; counted for the whole pad (``pad_frames``, ``_first_span``),
    3.3 dB against 3.1 from frame 0 (int8, six sentences, ``benchmarks/window_vocoder.py``). A sentence whose
    speech fits in the first window plus one more of its size is rendered whole, as one part.
    """
    total = int(frames.sum())
    speech = int(frames[0])  # the start pad's frames: the first token's speech starts here
    if settings.frame_ms <= 0:
        raise ValueError("engine.windows.frame_ms 0 is measured by the engine's warm-up, which has not run")
    settings = _pad_if_free(settings)
    per_frame = settings.frame_ms / 1000
    least = least_first_frames(settings)
    fits = int(ahead_s * settings.margin / per_frame)  # frames rendered while the audio before it plays
    first_end = speech + (least or 0)
    if ahead_s > 0:  # as much as fits, the last window no smaller
        first_end = max(first_end, min(fits - settings.right_frames - settings.closing_frames,
                                       total - settings.first_frames))
    if least is None or total <= fits or total - first_end < settings.first_frames:
        yield render(Span(0, total))
        return
    s, e = 0, first_end
    fade = min(settings.fade_frames, settings.right_frames) * SAMPLES_PER_FRAME
    held: np.ndarray | None = None
    # Seconds of rendering counted against the audio the listener has: from the first part's handover where they
    # wait for it, else from now (the first window's rendering included).
    busy = 0.0
    opening = min(settings.later_pad_frames, speech)  # the start pad's frames a later window's norms see
    # Rendering time the last window leaves to what follows it (a reply's next sentence starts with a first window
    # of its own), with the margin least_first_frames allows: spent on the last window's context, it made that first
    # window late, a gap between two sentences (2 of 48 replies, 54 and 179 ms).
    reserve = math.ceil(1.25 * _cost(_first_span(speech, speech + least + settings.right_frames, total,
                                                 settings)))
    lo = 0  # where the next later window's rendering starts: its left context on
    while True:
        hi = total if e >= total else min(total, e + settings.right_frames)
        if s:
            span = _later_span(lo, hi, speech, settings)
            busy += _cost(span) * per_frame
            part = render(span)[(s - span.lo) * SAMPLES_PER_FRAME:]
        else:
            span = _first_span(speech, hi, total, settings)
            if ahead_s > 0:
                busy += _cost(span) * per_frame
            part = render(span)
            if span.lo:  # the start pad's frames before the span: silence
                part = np.concatenate([np.zeros(span.lo * SAMPLES_PER_FRAME, np.float32), part])
        if held is not None:
            part = part.copy()
            ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, len(held), dtype=np.float32))
            part[:len(held)] = held * (1.0 - ramp) + part[:len(held)] * ramp
        if e >= total:
            yield part
            return
        cut = (e - s) * SAMPLES_PER_FRAME
        held = part[cut:cut + fade].copy()
        yield part[:cut]
        # The next window must be rendered before the listener has heard everything up to ``e``.
        budget = int((((e - speech) * FRAME_SECONDS + ahead_s) * settings.margin - busy) / per_frame)
        rest = total - e
        lo = max(0, e - settings.left_frames)
        if rest + settings.left_frames + opening <= budget:
            nxt = total
            lo = _last_lo(lo, total, budget - reserve, speech, opening)
        else:
            nxt = e + max(settings.first_frames, budget - settings.left_frames - settings.right_frames - opening)
            if total - nxt < settings.first_frames:
                nxt = total
        s, e = e, nxt


def least_first_frames(settings: WindowSettings) -> int | None:
    """Speech frames the first window needs for the later ones to keep up on a machine rendering a frame in
    ``frame_ms`` (``first_frames`` or more), or None for whole sentences: windows off (``first_frames`` 0), or
    they cannot keep up at all.

    Each later window renders its ``left_frames`` and ``right_frames`` of context again, and the start pad's frames
    its norms see (``later_pad_frames``): c frames in all. With ``r`` the seconds of rendering per
    second of audio (frame_ms over 25 ms, at ``margin``), and S the audio ahead of the renderer, a window as large
    as S allows leaves S/r - c ahead after it: the lead grows only from more than c r / (1 - r) frames, which the
    first part must give. At 8 ms a frame that is 29 frames with the pad (40 is the setting); at 14 (2 cores without
    VNNI, where the pad is left out) 78, so 40 had every later window come late, by 0.3-0.8 s each."""
    if settings.first_frames <= 0:
        return None
    r = settings.frame_ms / 1000 / (FRAME_SECONDS * settings.margin)
    if r >= 0.9:
        return None
    again = settings.left_frames + settings.right_frames + settings.later_pad_frames
    return max(settings.first_frames, math.ceil(1.25 * again * r / (1 - r)))


def _first_span(pad: int, hi: int, total: int, settings: WindowSettings) -> Span:
    """The first window: the start pad's last ``pad_frames`` standing for all ``pad`` of its frames, the sentence's
    close joined after it, both weighed in its norms."""
    lead = settings.pad_frames if 0 < settings.pad_frames < pad else 0
    return Span(pad - lead if lead else 0, hi, closing=max(0, min(settings.closing_frames, total - hi)),
                lead=lead, lead_weight=pad / lead if lead else 1.0, closing_weight=settings.closing_weight)


def _pad_if_free(settings: WindowSettings) -> WindowSettings:
    """The settings a plan follows: the start pad in the later windows' norms only where rendering it needs no larger
    first window (``frame_ms`` up to ~8 ms: 2 cores with VNNI); on a slower machine it would cost first audio, so
    there the later windows go without."""
    plain = replace(settings, later_pad_frames=0)
    return settings if least_first_frames(settings) == least_first_frames(plain) else plain


def _last_lo(lo: int, total: int, budget: int, pad: int, opening: int) -> int:
    """Where the last window's rendering starts: its left context grown by the time the listener leaves it (``budget``
    frames, less what the next sentence's first window needs), back to the sentence's start where that fits (then
    its instance norms see every frame and its audio is the whole render's); never less than ``lo``."""
    if total <= budget:
        return 0
    if total - budget < pad:  # from inside the start pad: its frames are rendered, no opening joined
        return min(lo, total - budget)
    return min(lo, total - budget + opening)


def _later_span(lo: int, hi: int, pad: int, settings: WindowSettings) -> Span:
    """A later window: its left context on, and, for its norms, the start pad's last ``later_pad_frames`` standing
    for all ``pad`` of its frames, as the whole render's norms see them (a later window's own frames are speech; the
    sentence's statistics also hold the pad's silence). A window starting inside the pad (the last one, grown by
    ``_last_lo``) renders the pad's last frames itself and counts them for the whole pad; one from 0 is the whole
    render."""
    if lo < pad:
        return Span(lo, hi, lead=pad - lo, lead_weight=pad / (pad - lo)) if lo else Span(0, hi)
    opening = min(settings.later_pad_frames, pad)
    return Span(lo, hi, lead=opening, lead_weight=pad / opening if opening else 1.0,
                opening=(pad - opening, pad) if opening else (0, 0))


def _cost(span: Span) -> int:
    """Frames a span renders: its own, and those joined for its norms."""
    return span.hi - span.lo + span.closing + span.opening[1] - span.opening[0]


def slow_machine(settings: WindowSettings, frames: int, seconds: float) -> str | None:
    """Why the windows may come late here (a warning for the log), or None: ``frames`` took ``seconds`` to render.
    A ``frame_ms`` of 0 is measured by the engine at start-up, so it always fits the machine."""
    measured = 1000 * seconds / max(1, frames)
    if settings.first_frames > 0 and 0 < settings.frame_ms < measured:
        return (f"stage 2 took {measured:.1f} ms a frame here, more than engine.windows.frame_ms "
                f"({settings.frame_ms}): a sentence's later windows may come after its first has played (a gap); "
                f"set frame_ms to 0 (measured at start-up) or {measured * 1.2:.0f}, or first_frames to 0 to render "
                f"sentences whole")
    return None
