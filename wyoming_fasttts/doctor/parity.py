"""How close two renderings of the same sentence are, in terms that survive a chaotic vocoder phase.

The vocoder's phase is chaotic: a 0.1% change in the style vector turns waveform correlation negative,
so sample-wise metrics say nothing. What must agree is the timing (durations, hence lengths) and the
spectral envelope, compared here as log-mel spectrograms.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..core import SAMPLE_RATE

_N_FFT = 1024
_HOP = 256
_N_MELS = 80
_FLOOR = 1e-5


@lru_cache(maxsize=1)
def _mel_filters() -> np.ndarray:
    """Slaney-style triangular filters on the HTK mel scale, [n_mels, n_fft/2+1]."""
    def mel(f: np.ndarray) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def hz(m: np.ndarray) -> np.ndarray:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    edges = hz(np.linspace(mel(np.array(0.0)), mel(np.array(SAMPLE_RATE / 2)), _N_MELS + 2))
    bins = np.fft.rfftfreq(_N_FFT, 1.0 / SAMPLE_RATE)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rise = (bins[None, :] - lower) / (centre - lower)
    fall = (upper - bins[None, :]) / (upper - centre)
    filters: np.ndarray = np.maximum(0.0, np.minimum(rise, fall)) * (2.0 / (upper - lower))
    return filters


def log_mel(audio: np.ndarray) -> np.ndarray:
    """log10 mel power, [frames, n_mels]; frames of 1024 samples every 256 (Hann)."""
    x = np.asarray(audio, dtype=np.float64).ravel()
    if len(x) < _N_FFT:
        x = np.pad(x, (0, _N_FFT - len(x)))
    n = 1 + (len(x) - _N_FFT) // _HOP
    frames = np.lib.stride_tricks.as_strided(x, (n, _N_FFT), (x.strides[0] * _HOP, x.strides[0]))
    power = np.abs(np.fft.rfft(frames * np.hanning(_N_FFT), axis=1)) ** 2
    mel: np.ndarray = np.log10(np.maximum(power @ _mel_filters().T, _FLOOR))
    return mel


def mel_distance_db(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute log-mel difference in dB over the common length (lengths are checked separately)."""
    ma, mb = log_mel(a), log_mel(b)
    n = min(len(ma), len(mb))
    return float(10.0 * np.mean(np.abs(ma[:n] - mb[:n])))
