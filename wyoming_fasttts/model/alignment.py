"""The host step between the two stage graphs: durations -> frame counts -> token-to-frame alignment.

Shared by every two-stage runtime (ONNX Runtime, TensorRT), so the numbers cannot drift between them.
"""

from __future__ import annotations

import numpy as np

SAMPLES_PER_FRAME = 600
"""One alignment frame is 25 ms at 24 kHz (x2 in the decoder, x10 x6 in the generator, iSTFT hop 5)."""


def frame_counts(durations: np.ndarray, edge_frames: int) -> np.ndarray:
    """Integer frames per token from stage 1, the silent boundary tokens capped at ``edge_frames``.

    The pad tokens at both ends carry the leading and trailing silence: ~1.5 s of a 3.7 s reply, and ~40%
    of the vocoder's work. Capping them before stage 2 removes that work instead of trimming its output.
    ``edge_frames`` 0 keeps the model's own durations.
    """
    frames = np.rint(np.asarray(durations, dtype=np.float32).ravel()).astype(np.int64)
    frames = np.maximum(frames, 1)
    if edge_frames > 0 and len(frames) >= 2:
        frames[0] = min(frames[0], edge_frames)
        frames[-1] = min(frames[-1], edge_frames)
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
