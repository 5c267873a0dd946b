"""Spoken form of Chinese text: full-width to half-width, numbers and symbols read out (wetext)."""

from __future__ import annotations

import functools
import re
import unicodedata

_PAUSES = str.maketrans({"、": "，", "：": "，", "；": "，", "—": "，", ",": "，", ".": "。", "!": "！", "?": "？",
                         ":": "，", ";": "，"})
_DROP = re.compile(r"[\"'“”‘’«»《》「」『』【】()\[\]{}（）<>〈〉]")
_KEEP = re.compile(r"[^\u3400-\u9fffA-Za-z。，！？ ]+")


@functools.lru_cache(maxsize=1)
def _wetext():
    from wetext import Normalizer

    return Normalizer(lang="zh", operator="tn")


def normalize(text: str) -> str:
    """Only Chinese characters, Latin words and the pause marks ``。，！？`` remain."""
    text = unicodedata.normalize("NFKC", text)
    text = _wetext().normalize(text) if text.strip() else ""
    text = re.sub(r"\.{3,}|…+", "，", text)
    text = _DROP.sub("", text).translate(_PAUSES)
    text = _KEEP.sub(" ", text)
    text = re.sub(r"\s*([。，！？])\s*", r"\1", text)
    text = re.sub(r"([。，！？])[。，！？]+", r"\1", text)
    return re.sub(r"\s+", " ", text).strip(" ，")
