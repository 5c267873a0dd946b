"""Edge silence trimmed part by part (``audio.SilenceTrimmer``) as it would be on the whole sentence."""

from __future__ import annotations

import numpy as np

from wyoming_fasttts.audio import SilenceTrimmer
from wyoming_fasttts.config import load_settings

SETTINGS = load_settings().audio
RATE = 24000


def _sentence() -> np.ndarray:
    """0.4 s of silence, speech with a 0.3 s pause in it, then 1 s of silence (the model's own padding)."""
    t = np.arange(int(3.2 * RATE)) / RATE
    audio = (0.3 * np.sin(2 * np.pi * 180 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    audio[(t < 0.4) | (t > 2.2) | ((t > 1.0) & (t < 1.3))] = 0.0
    return audio


def test_parts_are_trimmed_exactly_as_the_whole_sentence() -> None:
    audio = _sentence()
    whole = SilenceTrimmer(SETTINGS).part(audio)
    assert 0.4 * RATE - len(audio) < len(whole) - len(audio) < 0  # both edges cut
    for cuts in ([6000], [26000, 30000], [9600, 28800, 54000, 60000], list(range(600, len(audio), 600 * 40))):
        trimmer = SilenceTrimmer(SETTINGS)
        out = [trimmer.part(p) for p in np.split(audio, cuts)]
        np.testing.assert_array_equal(np.concatenate(out), whole)


def test_a_pause_inside_the_sentence_waits_for_the_next_part_and_the_trailing_silence_never_comes() -> None:
    audio = _sentence()
    trimmer = SilenceTrimmer(SETTINGS)
    first = trimmer.part(audio[: int(1.15 * RATE)])  # ends inside the pause: its silence is held back
    assert len(first) < int(1.15 * RATE) - int(0.4 * RATE) + SETTINGS.lead_ms * RATE // 1000
    rest = trimmer.part(audio[int(1.15 * RATE):])
    assert len(first) + len(rest) == len(SilenceTrimmer(SETTINGS).part(audio))
    assert len(trimmer.part(np.zeros(RATE, np.float32))) == 0  # more silence after the end: nothing
