"""Phonemes for Latin words inside Chinese text (WiFi, GPU, Home Assistant).

There is no English G2P on this path, but Kokoro v1.0's vocabulary holds misaki's English phoneme set, so
known words are looked up: first our own table of names as Chinese speakers say them
(``data/latin.tsv``), then misaki's English gold lexicon (shipped inside misaki, no download). Acronyms
and unknown words are spelled letter by letter, as a Chinese reader does with GPU or USB; an unknown
camel-case name is read part by part first (SmartThings → Smart Things), as it is said.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

from .data import load_table

_ACRONYM_MAX = 5
# Parts of a camel-case name: HomePod → Home Pod, ESPHome → ESP Home, ChatGPT → Chat GPT.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


@functools.cache
def _table() -> dict[str, str]:
    return {word.lower(): phonemes for word, phonemes in load_table("latin.tsv")}


@functools.cache
def _lexicon() -> dict[str, str | dict[str, str]]:
    text = resources.files("misaki.data").joinpath("us_gold.json").read_text(encoding="utf-8")
    lexicon: dict[str, str | dict[str, str]] = json.loads(text)
    return lexicon


def _lookup(word: str) -> str | None:
    lexicon = _lexicon()
    for form in (word, word.lower(), word.capitalize()):
        entry = lexicon.get(form)
        if isinstance(entry, dict):
            entry = entry.get("DEFAULT")
        if entry:
            return entry
    return None


def spell(word: str) -> str:
    """Letter names, one English letter word each (A → ˈA)."""
    return " ".join(p for p in (_lookup(c.upper()) for c in word if c.isalpha()) if p)


def words(run: str) -> list[str]:
    """Phonemes for a run of Latin words (``normalize`` leaves one space between them), one entry per word said.

    Two words that our table knows as one name, joined or hyphenated, are said as it: the spoken form writes a
    hyphen between two Latin words as a space (Wi-Fi → Wi Fi), and Wi Fi is still "wai fai", not W, I, F, I.
    """
    parts = run.split()
    out: list[str] = []
    i = 0
    while i < len(parts):
        if i + 1 < len(parts):
            pair = next((_table()[w] for w in (f"{parts[i]}-{parts[i + 1]}".lower(), (parts[i] + parts[i + 1]).lower())
                         if w in _table()), None)
            if pair:
                out.append(pair)
                i += 2
                continue
        out.append(phonemes(parts[i]))
        i += 1
    return out


def phonemes(word: str) -> str:
    """Phonemes for one Latin word; hyphenated or apostrophe words are read part by part."""
    known = _table().get(word.lower())
    if known:
        return known
    if "-" in word:
        return " ".join(phonemes(part) for part in word.split("-") if part)
    if word.isupper() and len(word) <= _ACRONYM_MAX:
        return spell(word)
    known = _lookup(word)
    if known:
        return known
    stem = _lookup(word[:-1]) if word.endswith("s") and len(word) > 3 else None
    if stem:  # a plural the lexicon lacks: Things, Pods
        return stem + ("s" if stem[-1] in "ptkfθ" else "z")
    parts = _CAMEL.findall(word)
    if len(parts) > 1:
        return " ".join(phonemes(part) for part in parts)
    return spell(word)
