"""The host step between the two stage graphs: durations -> frame counts -> token-to-frame alignment.

Shared by every two-stage runtime (ONNX Runtime, TensorRT), so the numbers cannot drift between them.
"""

from __future__ import annotations

import numpy as np

SAMPLES_PER_FRAME = 600
"""One alignment frame is 25 ms at 24 kHz (x2 in the decoder, x10 x6 in the generator, iSTFT hop 5)."""


def frame_counts(durations: np.ndarray, tail_frames: int) -> np.ndarray:
    """Integer frames per token from stage 1, the silent end token capped at ``tail_frames``.

    The end pad carries ~1 s of trailing silence, over a quarter of the vocoder's work for a short reply:
    capping it before stage 2 removes that work instead of trimming its output. The start pad is left as
    the model predicts it: its frames warm up the prosody LSTM and the decoder, and capping them costs the
    first syllable (Whisper base heard 欢迎 as 按营 with the start capped at 10 frames, 2026-11-29).
    ``tail_frames`` 0 keeps the model's own durations.
    """
    frames = np.rint(np.asarray(durations, dtype=np.float32).ravel()).astype(np.int64)
    frames = np.maximum(frames, 1)
    if tail_frames > 0 and len(frames) >= 2:
        frames[-1] = min(frames[-1], tail_frames)
    return frames


def alignment(frames: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float32 [1, T, F] with row t one over frames [start_t, end_t); ``out`` (e.g. pinned) is filled in place."""
    ends = np.cumsum(frames)
    total = int(ends[-1])
    if out is None:
        out = np.empty((1, len(frames), total), dtype=np.float32)
    elif out.shape != (1, len(frames), total) or out.dtype != np.float32:
        raise ValueError(f"alignment buffer is {out.shape} {out.dtype}, need (1, {len(frames)}, {total}) float32")
    f = np.arange(total)
    np.logical_and(f >= (ends - frames)[:, None], f < ends[:, None], out=out[0], casting="unsafe")
    return out
