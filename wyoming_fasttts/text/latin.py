"""Phonemes for Latin words inside Chinese text (WiFi, GPU, Home Assistant).

There is no English G2P on this path, but Kokoro v1.0's vocabulary holds misaki's English phoneme set, so
known words are looked up: first our own table of names as Chinese speakers say them
(``data/latin.tsv``), then misaki's English gold lexicon (shipped inside misaki, no download). Acronyms
and unknown words are spelled letter by letter, as a Chinese reader does with GPU or USB; an unknown
camel-case name is read part by part first (SmartThings → Smart Things), as it is said. A word neither
knows that is two or more pinyin syllables (Meituan, Pinduoduo, Haier: Chinese names written in Latin letters) is
read as the syllables, not spelled: a Chinese reader sees 美团 in Meituan, and M-E-I-T-U-A-N is no name at all.
Where we know the name (``data/chinese_names.tsv``: Xiaomi 小米, Meituan 美团), ``g2p`` says its characters, tones
and all; otherwise the tones are not written, so the syllables are said toneless, in the English notation.
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
def _chinese_names() -> dict[str, str]:
    return {word.lower(): name for word, name in load_table("chinese_names.tsv")}


def chinese_name(word: str) -> str | None:
    """The characters of a Chinese name written in pinyin (Xiaomi → 小米), or None for any other word."""
    return _chinese_names().get(word.lower())


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


# Pinyin in misaki's English notation (toneless): initials, then finals as (glide, vowel).
_INITIALS = {"zh": "ʤ", "ch": "ʧ", "sh": "ʃ", "b": "b", "p": "p", "m": "m", "f": "f", "d": "d", "t": "t", "n": "n",
             "l": "l", "g": "ɡ", "k": "k", "h": "h", "j": "ʤ", "q": "ʧ", "x": "ʃ", "r": "ɹ", "z": "dz", "c": "ts",
             "s": "s"}
_FINALS = {"a": ("", "ɑ"), "o": ("", "O"), "e": ("", "ə"), "ai": ("", "I"), "ei": ("", "A"), "ao": ("", "W"),
           "ou": ("", "O"), "an": ("", "ɑn"), "en": ("", "ən"), "ang": ("", "ɑŋ"), "eng": ("", "əŋ"),
           "ong": ("", "ʊŋ"), "er": ("", "ɑɹ"), "i": ("", "i"), "ia": ("j", "ɑ"), "ie": ("j", "ɛ"),
           "iao": ("j", "W"), "iu": ("j", "O"), "iou": ("j", "O"), "io": ("j", "O"), "ian": ("j", "ɛn"),
           "in": ("", "in"), "iang": ("j", "ɑŋ"), "ing": ("", "iŋ"), "iong": ("j", "ʊŋ"), "u": ("", "u"),
           "ua": ("w", "ɑ"), "uo": ("w", "O"), "uai": ("w", "I"), "ui": ("w", "A"), "uei": ("w", "A"),
           "uan": ("w", "ɑn"), "un": ("w", "ən"), "uen": ("w", "ən"), "uang": ("w", "ɑŋ"), "ueng": ("w", "əŋ"),
           "uong": ("w", "ʊŋ"), "v": ("", "u"), "ve": ("w", "ɛ"), "van": ("w", "ɛn"), "vn": ("", "un")}


@functools.cache
def _syllables() -> frozenset[str]:
    return frozenset(row[0] for row in load_table("syllables.tsv"))


def _split_pinyin(word: str) -> list[str] | None:
    """``word`` (lower case) as the fewest pinyin syllables, or None where it is not a run of them."""
    known = _syllables()
    best: list[list[str] | None] = [[]] + [None] * len(word)  # best[i]: the fewest syllables spelling word[:i]
    for i in range(1, len(word) + 1):
        for j in range(max(0, i - 6), i):  # a syllable is at most 6 letters (zhuang)
            head = best[j]
            now = best[i]
            if head is not None and word[j:i] in known and (now is None or len(head) + 1 < len(now)):
                best[i] = [*head, word[j:i]]
    return best[-1]


def _syllable(syllable: str, stress: str) -> str | None:
    """One toneless syllable in the English notation, ``stress`` before its vowel; None for one it has no final for."""
    initial, final = "", syllable
    if syllable[0] == "y":  # y and w spell the glide of a final with no initial: ya = ia, yu = ü, wei = uei
        rest = syllable[1:]
        final = rest if rest.startswith("i") else "v" + rest[1:] if rest.startswith("u") else "i" + rest
    elif syllable[0] == "w":
        final = "u" if syllable == "wu" else "u" + syllable[1:]
    else:
        initial = next((i for i in ("zh", "ch", "sh") if syllable.startswith(i)), syllable[0] if
                       syllable[0] in _INITIALS else "")
        final = syllable[len(initial):]
        if initial in ("j", "q", "x") and final.startswith("u"):
            final = "v" + final[1:]
    if final == "i" and initial in ("z", "c", "s"):
        glide, vowel = "", "ə"
    elif final == "i" and initial in ("zh", "ch", "sh", "r"):
        glide, vowel = "", "ɜɹ"
    elif final in _FINALS:
        glide, vowel = _FINALS[final]
    else:
        return None
    if not initial and final.startswith("v"):
        glide = "j" + glide  # yu, yue, yuan, yun
    elif initial in ("j", "q", "x"):
        glide = glide.lstrip("j")  # the initial is already palatal: xiao is ʃW
    return _INITIALS.get(initial, "") + glide + stress + vowel


def pinyin_phonemes(word: str) -> str | None:
    """A word of two or more toneless pinyin syllables (Meituan, pinduoduo) read as them, or None."""
    parts = _split_pinyin(word.lower()) if word.isalpha() and not word.isupper() else None
    return _said_syllables(parts) if parts and len(parts) > 1 else None


def _said_syllables(parts: list[str]) -> str | None:
    said = [_syllable(part, "ˈ" if i == 0 else "ˌ") for i, part in enumerate(parts)]
    return None if None in said else "".join(s for s in said if s)


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
    """Phonemes for one Latin word; a hyphenated word is read part by part."""
    known = _table().get(word.lower())
    if known:
        return known
    if "-" in word:
        return " ".join(phonemes(part) for part in word.split("-") if part)
    if "'" in word:
        return _apostrophe(word)
    if word.isupper() and len(word) <= _ACRONYM_MAX:
        return spell(word)
    known = _lookup(word)
    if known:
        return known
    stem = _lookup(word[:-1]) if word.endswith("s") and len(word) > 3 else None
    if stem:  # a plural the lexicon lacks: Things, Pods
        return stem + ("s" if stem[-1] in "ptkfθ" else "z")
    known = pinyin_phonemes(word)
    if known:
        return known
    parts = _CAMEL.findall(word)
    if len(parts) > 1:
        return " ".join(phonemes(part) for part in parts)
    return spell(word)


def _apostrophe(word: str) -> str:
    """A word with an apostrophe: a contraction the lexicon knows (I'm, don't, o'clock, in any case: DON'T is no
    acronym), else a possessive said as its stem and -s (McDonald's, Tesla's), else pinyin whose apostrophe parts
    its syllables (Xi'an, Chang'an), else part by part (O'Brien)."""
    known = _lookup(word)  # as written, then lower case: DON'T as don't
    if known:
        return known
    split = [_split_pinyin(part) for part in word.lower().split("'")]
    pinyin = None if word.isupper() or None in split else _said_syllables([s for part in split if part for s in part])
    if pinyin:
        return pinyin
    stem, _, tail = word.rpartition("'")
    if tail.lower() == "s" and "'" not in stem:
        said = phonemes(stem)
        return said + ("ɪz" if said[-1] in "szʃʒʧʤ" else "s" if said[-1] in "ptkfθ" else "z")
    return " ".join(phonemes(part) for part in word.split("'") if part)
