"""Stage 2 in frame windows: a sentence starts to sound after its first window, not after all of its frames.

On the CPU stage 2 costs ~7 ms per 25-ms frame, so a listener used to wait for every frame of the first
sentence (1.4 s for a 20-character one on two cores) before hearing anything. Stage 2 is cut in two
(``graphs.split.split_vocoder``): the prosody (the F0 and energy curves from a bidirectional LSTM over the
whole sentence, and the harmonic source whose phase accumulates over it) runs once, ~75 ms; the decoder and
generator, ~95% of the cost and local but for their instance norms, run over windows of frames with context
on each side, and their audio is joined with a short cross-fade. Rendered over all frames at once the two
halves give stage 2's output exactly; a window differs from that by about as much as the int8 graphs differ
from the float ones (docs/BENCHMARKS.md, "stage 2 in frame windows").

The first window is small: its audio is what the listener waits for. Each later one is as large as can be
rendered, at the cost per frame measured on this machine just now, before the audio already handed over has
played out, so a window is never late for its listener; what is left once it fits is rendered in one piece.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from ..config import WindowSettings
from .alignment import SAMPLES_PER_FRAME

FRAME_SECONDS = SAMPLES_PER_FRAME / 24000


class FrameCost:
    """Seconds stage 2 takes per rendered frame here, now: a moving average over recent windows.

    Shared by an engine's threads (concurrent sentences slow each other down, and the next window's size
    should know it); a float updated under a lock.
    """

    def __init__(self, seconds_per_frame: float = 0.01, weight: float = 0.3) -> None:
        self._per_frame = seconds_per_frame
        self._weight = weight
        self._lock = threading.Lock()

    @property
    def per_frame(self) -> float:
        return self._per_frame

    def observe(self, frames: int, seconds: float) -> None:
        if frames > 0:
            with self._lock:
                self._per_frame += self._weight * (seconds / frames - self._per_frame)

    def frames_within(self, seconds: float) -> int:
        return int(seconds / self._per_frame) if seconds > 0 else 0


Render = Callable[[int, int], np.ndarray]
"""``render(lo, hi)``: the decoder and generator over frames [lo, hi) of the sentence, 600 samples a frame."""


def render_windows(render: Render, frames: np.ndarray, settings: WindowSettings, cost: FrameCost,
                   clock: Callable[[], float] = time.monotonic) -> Iterator[np.ndarray]:
    """A sentence's audio in consecutive parts, from frames per token (stage 1's, as the alignment has them).

    The parts joined are as long as the sentence's audio. The first window starts at frame 0, start pad and
    all: its instance norms need the pad's silence (started 8 frames before the speech, the first window's
    speech differed from the full render's by 4.5-8.0 dB, from 0 by 2.8-4.9). A sentence whose speech fits in
    the first window plus one more of its size is rendered whole, as one part.
    """
    total = int(frames.sum())
    speech = int(frames[0])  # the start pad's frames: the first token's speech starts here
    first_end = speech + settings.first_frames
    if settings.first_frames <= 0 or total - first_end < settings.first_frames:
        t0 = clock()
        audio = render(0, total)
        cost.observe(total, clock() - t0)
        yield audio
        return
    s, e = 0, first_end
    fade = min(settings.fade_frames, settings.right_frames) * SAMPLES_PER_FRAME
    held: np.ndarray | None = None
    handed_over: float | None = None
    while True:
        lo = max(0, s - settings.left_frames)
        hi = total if e >= total else min(total, e + settings.right_frames)
        t0 = clock()
        audio = render(lo, hi)
        cost.observe(hi - lo, clock() - t0)
        part = audio[(s - lo) * SAMPLES_PER_FRAME:]
        if held is not None:
            part = part.copy()
            ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, len(held), dtype=np.float32))
            part[:len(held)] = held * (1.0 - ramp) + part[:len(held)] * ramp
        if e >= total:
            yield part
            return
        cut = (e - s) * SAMPLES_PER_FRAME
        held = part[cut:cut + fade].copy()
        if handed_over is None:
            handed_over = clock()
        yield part[:cut]
        # The next window must be rendered before the listener has heard everything up to ``e``.
        deadline = handed_over + (e - speech) * FRAME_SECONDS * settings.margin
        budget = cost.frames_within(deadline - clock())
        rest = total - e
        if rest + settings.left_frames <= budget:
            nxt = total
        else:
            nxt = e + max(settings.first_frames, budget - settings.left_frames - settings.right_frames)
            if total - nxt < settings.first_frames:
                nxt = total
        s, e = e, nxt
