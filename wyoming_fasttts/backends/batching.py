"""Feeding the batched graphs: padded inputs for a batch of sentences, and each row's audio back.

Run-time code (numpy only): the engines import this, never ``export`` (which needs torch to write the graphs).
Usage with two ONNX Runtime sessions:

    feeds1 = stage1_feeds(items)                        # tokens [B,T] int64, lengths [B], style [B,256], speed [B]
    durations, d, t_en = stage1.run(None, feeds1)
    feeds2 = stage2_feeds(durations, d, t_en, feeds1, tail_frames)   # alignment [B,T,F], frames [B], ...
    audio, audio_lengths = stage2.run(None, feeds2)
    clips = unpad_audio(audio, audio_lengths)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core import SynthesisItem
from . import alignment as host_alignment

STAGE1_INPUTS = ("tokens", "lengths", "style", "speed")
STAGE1_OUTPUTS = ("durations", "d", "t_en")
STAGE2_INPUTS = ("alignment", "d", "t_en", "style", "frames")
STAGE2_OUTPUTS = ("audio", "audio_lengths")
# Channel sizes of the tensors that cross the cut between the stages, and of a voice's style row.
D_CHANNELS = 640
T_EN_CHANNELS = 512
STYLE_DIM = 256


def stage1_feeds(items: Sequence[SynthesisItem]) -> dict[str, np.ndarray]:
    """Stage-1 inputs for a batch: each row ``[0, *ids, 0]`` padded with zeros to the longest."""
    lengths = np.array([len(item) + 2 for item in items], dtype=np.int64)
    tokens = np.zeros((len(items), int(lengths.max())), dtype=np.int64)
    for row, item in enumerate(items):
        tokens[row, 1:len(item) + 1] = item.ids
    return {
        "tokens": tokens,
        "lengths": lengths,
        "style": np.stack([np.asarray(item.style, np.float32).reshape(-1) for item in items]),
        "speed": np.array([item.speed for item in items], dtype=np.float32),
    }


def stage2_feeds(durations: np.ndarray, d: np.ndarray, t_en: np.ndarray, feeds1: dict[str, np.ndarray],
                 tail_frames: int) -> dict[str, np.ndarray]:
    """Stage-2 inputs: each row's alignment (``alignment.alignment``, edges capped) zero-padded to the most frames."""
    lengths = feeds1["lengths"]
    counts = [host_alignment.frame_counts(durations[row, :n], tail_frames) for row, n in enumerate(lengths)]
    frames = np.array([c.sum() for c in counts], dtype=np.int64)
    aligned = np.zeros((len(counts), durations.shape[1], int(frames.max())), dtype=np.float32)
    for row, c in enumerate(counts):
        aligned[row, :len(c), :frames[row]] = host_alignment.alignment(c)[0]
    return {"alignment": aligned, "d": d, "t_en": t_en, "style": feeds1["style"], "frames": frames}


def unpad_audio(audio: np.ndarray, audio_lengths: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(audio[row, :n], dtype=np.float32) for row, n in enumerate(audio_lengths)]
