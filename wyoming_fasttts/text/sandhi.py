"""Spoken tones of 一 and 不, which change with the next syllable (一个 yi2 ge4, 不是 bu2 shi4).

Third-tone sandhi is left out on purpose: it is automatic for any native reader, and the Kokoro v1.0
voices were trained on labels without it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from pypinyin import Style, lazy_pinyin

from .data import load_yaml


@dataclass(frozen=True)
class _Rules:
    yi1_after: re.Pattern[str]
    yi1_before: re.Pattern[str]
    unit_after: re.Pattern[str]
    teen_before: re.Pattern[str]
    between_same: str


@functools.cache
def _rules() -> _Rules:
    d = load_yaml("sandhi.yaml")
    patterns = {key: re.compile(d[key]) for key in ("yi1_after", "yi1_before", "unit_after", "teen_before")}
    return _Rules(**patterns, between_same=d["yi_between_same"])


def _base_tone(char: str, syllable: str) -> str:
    """The citation tone, also for a syllable written neutral (个 in 一个 is still a fourth tone)."""
    if syllable[-1] != "5":
        return syllable[-1]
    return lazy_pinyin(char, style=Style.TONE3, neutral_tone_with_five=True)[0][-1]


def apply(text: str, syllables: list[str]) -> list[str]:
    """``text`` is a run of Chinese characters with one syllable each; returns the spoken syllables."""
    r = _rules()
    out = list(syllables)
    for i, char in enumerate(text):
        if char not in "一不":
            continue
        if i + 1 >= len(text):
            out[i] = "yi1" if char == "一" else "bu4"
            continue
        before, after = text[:i], text[i + 1 :]
        lowered = "2" if _base_tone(text[i + 1], syllables[i + 1]) == "4" else "4"
        if char == "不":
            out[i] = "bu" + lowered
        elif r.unit_after.match(after) and not r.teen_before.search(before):
            out[i] = "yi" + lowered
        elif r.yi1_after.search(before) or r.yi1_before.match(after):
            out[i] = "yi1"
        elif before and before[-1] == after[0] and before[-2:-1] != "一":
            out[i] = r.between_same
        else:
            out[i] = "yi" + lowered
    return out
