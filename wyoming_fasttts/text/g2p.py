"""Pinyin and Kokoro v1.0 phonemes (misaki's legacy Mandarin path, which the v1.0 voices were trained on)."""

from __future__ import annotations

import re

import jieba
from misaki.zh import ZHG2P
from pypinyin import Style, lazy_pinyin

_HAN = re.compile(r"[\u3400-\u9fff]+")
_PUNCT = {"，": ",", "。": ".", "！": "!", "？": "?"}


def _words(text: str) -> list[str]:
    return [w for w in jieba.lcut(text, cut_all=False) if w.strip()]


def pinyin(text: str) -> list[str]:
    """One TONE3 syllable (neutral tone 5) per Chinese character of ``text``."""
    out: list[str] = []
    for run in _HAN.findall(text):
        for word in _words(run):
            out.extend(lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True))
    return out


def phonemize(sentence: str) -> str:
    """Kokoro phoneme string for normalised text, built word by word from ``pinyin``."""
    parts: list[str] = []
    for token in re.findall(r"[\u3400-\u9fff]+|[。，！？]|[A-Za-z][A-Za-z ]*", sentence):
        if token in _PUNCT:
            parts.append(_PUNCT[token])
        elif _HAN.fullmatch(token):
            parts.extend("".join(ZHG2P.py2ipa(s) for s in pinyin(w)) for w in _words(token))
        else:
            parts.append(token.strip())
    text = ""
    for p in parts:
        text += p if p in _PUNCT.values() else (" " if text else "") + p
    return text.replace(chr(815), "")
