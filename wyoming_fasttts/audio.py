"""From the model's float samples to what a listener gets: edge silence trimmed, 16-bit PCM, WAV."""

from __future__ import annotations

import io
import wave

import numpy as np

from .config import AudioSettings
from .core import SAMPLE_RATE

SAMPLE_WIDTH = 2
CHANNELS = 1
_FRAME = SAMPLE_RATE // 100  # 10 ms


class SilenceTrimmer:
    """Cut a sentence's long leading and trailing near-silence down to natural pauses, part by part.

    Kokoro pads every sentence with ~0.4 s before and ~1 s after the speech; left in, a listener hears a gap
    before each reply and between sentences. A sentence may arrive in parts (the CPU engine's frame windows),
    so nothing waits for its end: silence before the first loud 10-ms frame is dropped (but ``lead_ms``); a
    part's audio past its last loud frame (but ``tail_ms``) is held back, and goes out in front of the next part
    if one comes, so a pause inside the sentence stays and only the trailing one is lost. "Loud" is within
    ``silence_db`` of the loudest frame so far (and above ``QUIET``, until the speech has started: a part of
    start-pad silence alone has no loud frame). Frames are counted from the sentence's first sample whatever
    the parts' lengths, so a sentence whose first part holds its loudest frame is trimmed exactly as if whole.
    """

    QUIET = 1e-3
    """RMS below which a 10-ms frame is silence whatever came before (-60 dBFS; speech frames are ~0.05-0.3)."""

    def __init__(self, settings: AudioSettings) -> None:
        self._settings = settings
        self._loudest = 0.0
        self._started = False
        self._held = np.zeros(0, np.float32)
        """Not yet played: the start-pad silence before the speech, or audio past the last loud frame."""
        self._owed = 0
        """Samples of ``tail_ms`` after the last loud frame that fell past the end of its part."""

    def part(self, audio: np.ndarray) -> np.ndarray:
        """What of ``audio`` (the sentence's next samples) can be played now."""
        audio = np.concatenate([self._held, audio]) if len(self._held) else audio
        # Frames start where the unplayed audio does: at a frame boundary of the sentence, so the framing
        # is the whole sentence's (what is held always ends at one, or holds a partial frame at the end).
        n = len(audio) // _FRAME
        if n == 0:
            self._held = audio
            return audio[:0]
        rms = np.sqrt(np.mean(audio[: n * _FRAME].reshape(n, _FRAME) ** 2, axis=1) + 1e-12)
        self._loudest = max(self._loudest, float(rms.max()))
        loud = np.flatnonzero((20 * np.log10(rms / self._loudest) > self._settings.silence_db)
                              & (self._started | (rms > self.QUIET)))
        if len(loud) == 0:  # all quiet: part of a pause, or the silence before the speech
            played = min(self._owed, n * _FRAME)
            self._owed -= played
            self._held = audio[played:]
            return audio[:played]
        start = 0
        if not self._started:
            self._started = True
            start = max(0, loud[0] * _FRAME - self._settings.lead_ms * SAMPLE_RATE // 1000)
        wanted = (loud[-1] + 1) * _FRAME + self._settings.tail_ms * SAMPLE_RATE // 1000
        end = min(n * _FRAME, wanted)
        self._owed = wanted - end
        self._held = audio[end:]
        return audio[start:end]


def to_pcm16(audio: np.ndarray) -> bytes:
    return bytes((np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


def pcm_chunks(pcm: bytes, chunk_ms: int) -> list[bytes]:
    size = SAMPLE_RATE * SAMPLE_WIDTH * CHANNELS * chunk_ms // 1000
    return [pcm[i : i + size] for i in range(0, len(pcm), size)]


def wav_bytes(pcm: bytes, rate: int = SAMPLE_RATE) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(CHANNELS)
        wav.setsampwidth(SAMPLE_WIDTH)
        wav.setframerate(rate)
        wav.writeframes(pcm)
    return buf.getvalue()
