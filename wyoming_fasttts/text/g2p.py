"""Pinyin of normalised text, and the Kokoro v1.0 phoneme string built from exactly that pinyin.

Readings come in three layers, most specific first: our own phrase table (``data/phrases.tsv``, longest
match), context rules for polyphonic characters (``data/polyphones.tsv``), then pypinyin for the rest.
The 一/不 tone changes are applied last (``sandhi``). Words for the phoneme string's spacing come from a
private jieba tokenizer, so the process-wide one (used by misaki) is neither mutated nor made noisy.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pypinyin import Style, lazy_pinyin

from . import latin, sandhi
from .data import load_table
from .normalize import normalize

_HAN = re.compile(r"[\u3400-\u9fff]+")
_TOKEN = re.compile(r"([\u3400-\u9fff]+)|([。，！？])|([A-Za-z]+(?:['-][A-Za-z]+)*)")
_PUNCT = {"，": ",", "。": ".", "！": "!", "？": "?"}


@functools.cache
def _phrases() -> tuple[dict[str, list[str]], int]:
    table = {word: reading.split() for word, reading in load_table("phrases.tsv")}
    return table, max(map(len, table))


@dataclass(frozen=True)
class _Rule:
    reading: str
    before: re.Pattern[str] | None
    after: re.Pattern[str] | None
    always: bool

    def matches(self, run: str, i: int, alone: bool) -> bool:
        return (
            (alone or self.always)
            and (self.before is None or bool(self.before.search(run[:i])))
            and (self.after is None or bool(self.after.match(run[i + 1 :])))
        )


@functools.cache
def _rules() -> dict[str, list[_Rule]]:
    rules: dict[str, list[_Rule]] = {}
    for row in load_table("polyphones.tsv"):
        char, reading, before, after, scope = (*row, "", "", "")[:5]
        rules.setdefault(char, []).append(
            _Rule(reading, re.compile(before) if before else None, re.compile(after) if after else None,
                  scope == "always")
        )
    return rules


@functools.cache
def _tokenizer():  # -> jieba.Tokenizer (jieba has no type hints)
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    for word in _phrases()[0]:
        tokenizer.add_word(word)
    return tokenizer


def _segment(text: str) -> list[str]:
    """pypinyin's own phrase segmentation, so we know which characters it read inside a word."""
    from pypinyin.seg.mmseg import seg

    return list(seg.cut(text)) if text else []


def _pypinyin(text: str) -> list[str]:
    return lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True, errors=lambda chars: [""] * len(chars))


def _run_syllables(run: str) -> list[str]:
    """Citation syllables of one run of Chinese characters, polyphones resolved from context.

    Context rules only touch characters that neither table read as part of a word: pypinyin's phrase
    readings (校长) are better than any single-character rule.
    """
    phrases, longest = _phrases()
    out: list[str] = []
    alone: list[bool] = []  # read by pypinyin outside any of its words
    fixed: list[bool] = []  # read from our phrase table
    pending = ""

    def flush() -> None:
        for word in _segment(pending):
            out.extend(_pypinyin(word))
            alone.extend([len(word) == 1] * len(word))
            fixed.extend([False] * len(word))

    i = 0
    while i < len(run):
        for n in range(min(longest, len(run) - i), 0, -1):
            reading = phrases.get(run[i : i + n])
            if reading:
                flush()
                pending = ""
                out.extend(reading)
                alone.extend([False] * n)
                fixed.extend([True] * n)
                i += n
                break
        else:
            pending += run[i]
            i += 1
    flush()
    rules = _rules()
    for i, char in enumerate(run):
        if not fixed[i]:
            rule = next((r for r in rules.get(char, ()) if r.matches(run, i, alone[i])), None)
            out[i] = rule.reading if rule else out[i]
    return sandhi.apply(run, out)


def _han_runs(text: str) -> Iterator[str]:
    """Runs of characters that are read together: a pause mark or a Latin word ends a run."""
    return (m[0] for m in _HAN.finditer(text))


def pinyin(text: str) -> list[str]:
    """One TONE3 syllable (neutral tone 5) per Chinese character of ``normalize(text)``, as spoken."""
    return [s for run in _han_runs(normalize(text)) for s in _run_syllables(run)]


def phonemize(sentence: str) -> str:
    """Kokoro v1.0 phonemes in misaki's legacy layout: words split by spaces, ``, . ! ?`` attached.

    Syllables are ``pinyin``'s own (same runs, same rules); jieba only decides where the spaces go.
    Latin words get English phonemes (``latin``), which the model's vocabulary also covers.
    """
    from misaki.zh import ZHG2P

    parts: list[str] = []
    for han, mark, word in _TOKEN.findall(normalize(sentence)):
        if mark:
            parts.append(_PUNCT[mark])
        elif word:
            parts.append(latin.phonemes(word))
        else:
            syllables = iter(_run_syllables(han))
            for w in _tokenizer().lcut(han, HMM=False):
                parts.append("".join(ZHG2P.py2ipa(next(syllables)) for _ in w))
    text = ""
    for p in parts:
        text += p if p in _PUNCT.values() else (" " if text else "") + p
    return text.replace(chr(815), "")
