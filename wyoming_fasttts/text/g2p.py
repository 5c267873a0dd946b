"""Pinyin of normalised text, and the Kokoro v1.0 phoneme string built from exactly that pinyin.

A private jieba tokenizer (which knows our phrase table) splits each run into words; the process-wide
one (used by misaki) is neither mutated nor made noisy. Each word is read, most specific first, from
our phrase table (``data/phrases.tsv``), from CC-CEDICT (``lexicon``), or by pypinyin; context rules
(``data/polyphones.tsv``) then settle polyphonic characters no word covered, and the 一/不 tone changes
come last (``sandhi``). The phoneme string uses the same words for its spaces.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pypinyin import Style, lazy_pinyin

from . import latin, lexicon, sandhi
from .data import load_table
from .normalize import normalize

_HAN = re.compile(r"[\u3400-\u9fff]+")
# A Latin run may hold several words, one space apart (Home Assistant, Wi Fi): ``latin.words`` reads them together.
_TOKEN = re.compile(r"([\u3400-\u9fff]+)|([。，！？])|([A-Za-z]+(?:['-][A-Za-z]+)*(?: [A-Za-z]+(?:['-][A-Za-z]+)*)*)")
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
def _tokenizer() -> Any:  # jieba.Tokenizer (jieba has no type hints)
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    for word in _phrases()[0]:
        tokenizer.add_word(word)
    return tokenizer


def words(text: str) -> list[str]:
    """jieba's words of normalised text (with our phrase table), as the phoneme string spaces them."""
    return list(_tokenizer().lcut(text, HMM=False))


def _segment(text: str) -> list[str]:
    """pypinyin's own phrase segmentation, so we know which characters it read inside a word."""
    from pypinyin.seg.mmseg import seg

    return list(seg.cut(text)) if text else []


_Known = tuple[tuple[str, ...], bool]
"""A word's readings and whether they came from the project's own lexicon."""


def _unknown(chars: str) -> list[str]:
    """pypinyin's ``errors`` hook: an empty reading per character it cannot read (it accepts a list)."""
    return [""] * len(chars)


def _pypinyin(text: str) -> list[str]:
    # pypinyin's hint says ``errors`` returns a str; it accepts a list (one reading per character).
    return lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True, errors=_unknown)  # type: ignore[arg-type]


def _split(text: str, lookup: Callable[[str], _Known | None]) -> Iterator[tuple[str, _Known | None]]:
    """Longest known words of ``lookup`` inside ``text`` (left to right); the gaps come back unknown."""
    i, pending, longest = 0, "", max(_phrases()[1], 4)
    while i < len(text):
        for n in range(min(longest, len(text) - i), 1, -1):
            known = lookup(text[i : i + n])
            if known:
                if pending:
                    yield pending, None
                    pending = ""
                yield text[i : i + n], known
                i += n
                break
        else:
            pending += text[i]
            i += 1
    if pending:
        yield pending, None


def _ours(word: str) -> tuple[tuple[str, ...], bool] | None:
    reading = _phrases()[0].get(word)
    return (tuple(reading), True) if reading else None


def _cedict(word: str) -> tuple[tuple[str, ...], bool] | None:
    reading = lexicon.reading(word)
    return (reading, False) if reading else None


def _pieces(token: str) -> Iterator[tuple[str, tuple[tuple[str, ...], bool] | None]]:
    """A jieba word with its reading: ours first, also inside it (jieba's 晒太阳 holds our 太阳), then
    CC-CEDICT's for the word or the gaps between ours (True marks a reading from our phrase table)."""
    for part, ours in _split(token, _ours):
        if ours:
            yield part, ours
        elif known := _cedict(part):
            yield part, known
        else:
            yield from _split(part, _cedict)


def _run_syllables(run: str, tokens: list[str] | None = None) -> list[str]:
    """Citation syllables of one run of Chinese characters, polyphones resolved from context.

    Words come from the private jieba tokenizer (which knows our phrase table), so overlapping phrases are
    settled by word frequency (声音|调小, not 声|音调|小). Each word is read from our phrase table, else
    from CC-CEDICT (``lexicon``), else by pypinyin. Context rules only touch characters that none of
    these read as part of a word: a word reading (校长) is better than any single-character rule.
    ``tokens``: jieba's words of ``run`` where the caller already has them (jieba runs once per run).
    """
    out: list[str] = []
    alone: list[bool] = []  # read outside any known word
    fixed: list[bool] = []  # read from our phrase table
    for token in _tokenizer().lcut(run, HMM=False) if tokens is None else tokens:
        for word, known in _pieces(token):
            if known and all(known[0]):  # read whole: pypinyin (half the front end's time) is not needed
                out.extend(known[0])
                alone.extend([False] * len(word))
                fixed.extend([known[1]] * len(word))
                continue
            for piece in _segment(word):
                out.extend(_pypinyin(piece))
                alone.extend([len(piece) == 1 and not known] * len(piece))
                fixed.extend([False] * len(piece))
            if known:
                start = len(out) - len(word)
                out[start:] = [k or s for k, s in zip(known[0], out[start:], strict=True)]
    rules = _rules()
    for i, char in enumerate(run):
        rule = next((r for r in rules.get(char, ()) if r.matches(run, i, alone[i])), None)
        if rule and (rule.always or not fixed[i]):
            out[i] = rule.reading
    return sandhi.apply(run, out)


def _han_runs(text: str) -> Iterator[str]:
    """Runs of characters that are read together: a pause mark or a Latin word ends a run."""
    return (m[0] for m in _HAN.finditer(text))


def pinyin(text: str) -> list[str]:
    """One TONE3 syllable (neutral tone 5) per Chinese character of ``normalize(text)``, as spoken."""
    return [s for run in _han_runs(normalize(text)) for s in _run_syllables(run)]


def phonemize(sentence: str, *, normalized: bool = False) -> str:
    """Kokoro v1.0 phonemes in misaki's legacy layout: words split by spaces, ``, . ! ?`` attached.

    Syllables are ``pinyin``'s own (same runs, same rules); jieba's words, found once per run, set both
    the readings and where the spaces go. Latin words get English phonemes (``latin``), which the model's
    vocabulary also covers. ``normalized``: ``sentence`` is already ``normalize``'s output (the server
    normalises a request once, before splitting it).
    """
    parts: list[str] = []
    for han, mark, word in _TOKEN.findall(sentence if normalized else normalize(sentence)):
        if mark:
            parts.append(_PUNCT[mark])
        elif word:
            parts.extend(_latin_run(word))
        else:
            parts.extend(_han_words(han))
    text = ""
    for p in parts:
        text += p if p in _PUNCT.values() else (" " if text else "") + p
    return text.replace(chr(815), "")


def _han_words(han: str) -> list[str]:
    """Phonemes of one run of characters, one entry per jieba word."""
    tokens = _tokenizer().lcut(han, HMM=False)
    syllables = iter(_run_syllables(han, tokens))
    return ["".join(_ipa(next(syllables)) for _ in w) for w in tokens]


@functools.lru_cache(maxsize=8192)
def _ipa(syllable: str) -> str:
    """misaki's IPA for one TONE3 syllable. Kept: misaki rebuilds it with a dozen regex passes per call, about
    half the front end's time for a short announcement, and Mandarin has ~1,300 toned syllables."""
    from misaki.zh import ZHG2P

    return str(ZHG2P.py2ipa(syllable))


def _latin_run(run: str) -> list[str]:
    """Phonemes of a run of Latin words; a Chinese name in pinyin among them (Xiaomi) is said as its characters."""
    out: list[str] = []
    rest: list[str] = []  # the Latin words since the last name, read together (Wi Fi is one name)
    for word in [*run.split(), ""]:
        name = latin.chinese_name(word) if word else None
        if word and name is None:
            rest.append(word)
            continue
        if rest:
            out.extend(latin.words(" ".join(rest)))
            rest = []
        if name:
            out.extend(_han_words(name))
    return out
