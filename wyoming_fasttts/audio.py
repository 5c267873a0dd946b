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


def trim_silence(audio: np.ndarray, settings: AudioSettings) -> np.ndarray:
    """Cut the model's long leading/trailing near-silence down to natural pauses.

    Kokoro pads every sentence with ~0.4 s before and ~1 s after the speech; left in, a listener hears
    a gap before each reply and between sentences.
    """
    n = len(audio) // _FRAME
    if n == 0:
        return audio
    rms = np.sqrt(np.mean(audio[: n * _FRAME].reshape(n, _FRAME) ** 2, axis=1) + 1e-12)
    loud = np.flatnonzero(20 * np.log10(rms / rms.max()) > settings.silence_db)
    if len(loud) == 0:
        return audio[:0]
    start = max(0, loud[0] * _FRAME - settings.lead_ms * SAMPLE_RATE // 1000)
    end = min(len(audio), (loud[-1] + 1) * _FRAME + settings.tail_ms * SAMPLE_RATE // 1000)
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
