"""Checks that audio is speech of a plausible length, not silence or noise."""

from __future__ import annotations

import numpy as np


def assert_speech(pcm: bytes, chars: int, rate: int = 24000) -> None:
    """Mandarin at a normal rate is 3–7 characters a second; speech alternates loud and quiet frames."""
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
    seconds = len(audio) / rate
    assert chars / 8.0 <= seconds <= chars / 2.0 + 1.0, f"{seconds:.2f} s of audio for {chars} characters"
    frames = audio[: len(audio) // 240 * 240].reshape(-1, 240)
    rms = np.sqrt((frames**2).mean(axis=1))
    assert rms.max() > 0.02, "audio is (nearly) silent"
    loud = rms > 0.1 * rms.max()
    assert 0.3 < loud.mean() < 0.98, f"{loud.mean():.2f} of frames loud: not speech-like"


def median_pitch_hz(pcm: bytes, rate: int = 24000) -> float:
    """Median fundamental frequency of the voiced 40 ms frames (autocorrelation peak between 60 and 400 Hz)."""
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
    size, lo, hi = rate // 25, rate // 400, rate // 60
    frames = audio[: len(audio) // size * size].reshape(-1, size)
    rms = np.sqrt((frames**2).mean(axis=1))
    pitches = []
    for frame in frames[rms > 0.3 * rms.max()]:
        frame = frame - frame.mean()
        corr = np.correlate(frame, frame, "full")[size - 1 :]
        lag = lo + int(np.argmax(corr[lo:hi]))
        if corr[lag] > 0.3 * corr[0]:
            pitches.append(rate / lag)
    assert pitches, "no voiced frames"
    return float(np.median(pitches))

