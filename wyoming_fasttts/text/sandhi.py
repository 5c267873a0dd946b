"""Spoken tones of 一 and 不, which change with the next syllable (一个 yi2 ge4, 不是 bu2 shi4).

Third-tone sandhi is left out on purpose: it is automatic for any native reader, and the Kokoro v1.0
voices were trained on labels without it.
"""

from __future__ import annotations

import functools

from pypinyin import Style, lazy_pinyin

from .data import load_yaml

_DIGITS = "零一二三四五六七八九"


@functools.cache
def _rules() -> tuple[tuple[str, ...], tuple[str, ...], str]:
    d = load_yaml("sandhi.yaml")
    after = tuple(d["yi1_after"])
    before = tuple(sorted(d["yi1_before"], key=len, reverse=True))
    return after, before, d["yi_between_same"]


def _base_tone(char: str, syllable: str) -> str:
    """The citation tone, also for a syllable written neutral (个 in 一个 is still a fourth tone)."""
    if syllable[-1] != "5":
        return syllable[-1]
    return lazy_pinyin(char, style=Style.TONE3, neutral_tone_with_five=True)[0][-1]


def apply(text: str, syllables: list[str]) -> list[str]:
    """``text`` is a run of Chinese characters with one syllable each; returns the spoken syllables."""
    after, before, between = _rules()
    out = list(syllables)
    for i, char in enumerate(text):
        if char not in "一不":
            continue
        if i + 1 >= len(text):
            out[i] = "yi1" if char == "一" else "bu4"
            continue
        nxt = text[i + 1 :]
        tone = _base_tone(text[i + 1], syllables[i + 1])
        if char == "不":
            out[i] = "bu2" if tone == "4" else "bu4"
        elif (i and text[i - 1].endswith(after)) or nxt.startswith(before) or (
            nxt.startswith("点") and nxt[1:2] and nxt[1] in _DIGITS
        ):
            out[i] = "yi1"
        elif i and text[i - 1] == text[i + 1] and text[i - 2 : i - 1] != "一":
            out[i] = between
        else:
            out[i] = "yi2" if tone == "4" else "yi4"
    return out
