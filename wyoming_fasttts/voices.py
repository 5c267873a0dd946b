"""Kokoro voice tables: one 510x256 style matrix per voice, indexed by sentence length."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .assets import VOICES, ModelAssets

STYLE_ROWS, STYLE_DIM = 510, 256


# What a person sees in a voice picker (Home Assistant shows a Wyoming voice's description): the name each
# voice's pinyin id spells and whether it is a female (zf_) or male (zm_) voice.
NAMES = {
    "zf_xiaobei": "小贝",
    "zf_xiaoni": "小妮",
    "zf_xiaoxiao": "晓晓",
    "zf_xiaoyi": "小艺",
    "zm_yunjian": "云健",
    "zm_yunxi": "云希",
    "zm_yunxia": "云夏",
    "zm_yunyang": "云扬",
}


def label(name: str) -> str:
    """``小贝 (女声)`` for ``zf_xiaobei``; a voice without a known name keeps its id."""
    gender = {"zf": "女声", "zm": "男声"}.get(name[:2])
    shown = NAMES.get(name, name)
    return f"{shown} ({gender})" if gender else shown


class UnknownVoiceError(ValueError):
    """A voice that is not installed; the message names the valid ones."""


class VoiceBank:
    """Loads every voice once; lookups are lock-free reads of immutable arrays."""

    def __init__(self, assets: ModelAssets, names: list[str] | None = None) -> None:
        self._tables = {name: self._load(assets.voice(name)) for name in (names or list(VOICES))}

    @staticmethod
    def _load(path: Path) -> np.ndarray:
        table = np.fromfile(path, dtype=np.float32)
        if table.size != STYLE_ROWS * STYLE_DIM:
            raise ValueError(f"{path} is not a Kokoro voice ({table.size} floats, want {STYLE_ROWS}x{STYLE_DIM})")
        table = table.reshape(STYLE_ROWS, STYLE_DIM)
        table.setflags(write=False)
        return table

    @property
    def names(self) -> list[str]:
        return list(self._tables)

    def check(self, name: str) -> str:
        if name not in self._tables:
            raise UnknownVoiceError(f"unknown voice '{name}'; valid voices: {', '.join(self._tables)}")
        return name

    def style(self, name: str, n_ids: int) -> np.ndarray:
        """The style row the voice was trained to use for a sentence of ``n_ids`` phoneme ids."""
        table = self._tables[self.check(name)]
        row: np.ndarray = table[min(max(n_ids, 1), STYLE_ROWS) - 1]
        return row
