"""Word readings from CC-CEDICT, the polyphone and neutral-tone knowledge pypinyin's tables lack.

pypinyin-dict ships CC-CEDICT as Python source; loading it through pypinyin would replace pypinyin's
process-wide phrase table (which misaki also uses) and cost 60 MB, so the files are read as text and
only the entries that pass ``data/lexicon.yaml``'s filters and hold a polyphonic character or a light
syllable are kept, in TONE3 with neutral as 5.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from importlib import resources

from pypinyin.pinyin_dict import pinyin_dict

from .data import load_yaml

_ENTRY = re.compile(r"^\s+'([\u3400-\u9fff]+)': \[(.*)\],$", re.M)
_SYLLABLE = re.compile(r"\[([^\]]*)\]")
_TONES = {"\u0304": "1", "\u0301": "2", "\u030c": "3", "\u0300": "4"}
_FILES = ("cc_cedict_0.py", "cc_cedict_1.py", "cc_cedict_2.py", "cc_cedict_3.py")


def _tone3(marked: str) -> str:
    """'lǜ' → 'lv4', 'xi' → 'xi5'."""
    tone, letters = "5", list[str]()
    for ch in unicodedata.normalize("NFD", marked):
        if ch in _TONES:
            tone = _TONES[ch]
        elif ch == "\u0308":
            letters[-1] = "v"
        else:
            letters.append(ch)
    return "".join(letters) + tone


@functools.cache
def _words() -> dict[str, tuple[str, ...]]:
    rules = load_yaml("lexicon.yaml")
    particles, toned_light = set(rules["particles"]), set(rules["toned_light"])
    not_light = set(rules["not_light"])
    package = resources.files("pypinyin_dict.phrase_pinyin_data")
    words: dict[str, tuple[str, ...]] = {}
    for name in _FILES:
        for word, body in _ENTRY.findall(package.joinpath(name).read_text(encoding="utf-8")):
            if not rules["min_chars"] <= len(word) <= rules["max_chars"] or particles & set(word):
                continue
            alternatives = _SYLLABLE.findall(body)
            if len(alternatives) != len(word) or any("," in a for a in alternatives):
                continue
            pairs = list(zip(word, (_tone3(a.strip("'")) for a in alternatives), strict=True))
            if not any(s[-1] == "5" or "," in pinyin_dict.get(ord(ch), ",") for ch, s in pairs):
                continue  # nothing pypinyin could read otherwise: no need to keep it
            # A light syllable the convention writes with its tone keeps pypinyin's reading ("").
            toned = any(w in word for w in not_light)
            reading = tuple("" if s[-1] == "5" and (toned or ch in toned_light) else s for ch, s in pairs)
            words[word] = reading
    return words


def reading(word: str) -> tuple[str, ...] | None:
    """CC-CEDICT's reading of a whole word; an empty syllable means "keep pypinyin's" (see the filters)."""
    return _words().get(word)
