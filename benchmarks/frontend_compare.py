"""Score wetext, cn2an, pypinyin, misaki's legacy G2P and our front end on the text evaluation sets.

    pip install wetext==0.1.8 cn2an==0.5.24     # the compared normalisers; not dependencies of the server
    python benchmarks/frontend_compare.py [SET.tsv ...]   (default: eval, holdout, holdout2, holdout3)

Every normaliser's output goes through the same punctuation clean-up (``clean_marks``), so the table
compares how numbers and symbols are read, not how quotes are dropped. Every G2P gets the expected spoken
form, so a normalisation miss is not counted twice. Prints Markdown tables.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path

from wyoming_fasttts.text import normalize, pinyin
from wyoming_fasttts.text.evaluation import load_cases, score_normalize, score_pinyin
from wyoming_fasttts.text.normalize import clean_marks

DEFAULT_SETS = tuple(f"tests/unit/text/data/{name}.tsv" for name in ("eval", "holdout", "holdout2", "holdout3"))
_HAN = re.compile(r"[\u3400-\u9fff]+")


def _normalizers() -> dict[str, Callable[[str], str]]:
    import cn2an
    from wetext import Normalizer

    wetext = Normalizer(lang="zh", operator="tn")
    return {
        "wetext 0.1.8 (tn)": lambda t: clean_marks(wetext.normalize(t)) if t.strip() else "",
        "cn2an 0.5.24 (an2cn)": lambda t: clean_marks(cn2an.transform(t, "an2cn")),
        "ours": normalize,
    }


def _g2ps() -> dict[str, Callable[[str], list[str]]]:
    import jieba
    from pypinyin import Style, lazy_pinyin

    jieba.setLogLevel(logging.WARNING)

    def plain(text: str, **kw: bool) -> list[str]:
        return [s for run in _HAN.findall(text) for s in lazy_pinyin(run, style=Style.TONE3,
                                                                      neutral_tone_with_five=True, **kw)]

    def misaki_legacy(text: str) -> list[str]:
        """What misaki's ZHG2P() feeds Kokoro v1.0: jieba words, pypinyin per word."""
        return [s for run in _HAN.findall(text) for w in jieba.lcut(run) for s in
                lazy_pinyin(w, style=Style.TONE3, neutral_tone_with_five=True)]

    return {
        "pypinyin 0.55": plain,
        "pypinyin 0.55, tone_sandhi=True": lambda t: plain(t, tone_sandhi=True),
        "misaki 0.9.4 legacy (jieba + pypinyin)": misaki_legacy,
        "ours": pinyin,
    }


def main(paths: list[str]) -> None:
    sets = {Path(p).stem: load_cases(p) for p in paths}
    header = " | ".join(f"{name} ({len(cases)})" for name, cases in sets.items())
    print(f"| normalize | {header} |\n|---|" + "---|" * len(sets))
    for name, fn in _normalizers().items():
        cells = [score_normalize(cases, fn) for cases in sets.values()]
        print(f"| {name} | " + " | ".join(f"{c.share:.1%} ({c.right})" for c in cells) + " |")
    sets = {name: cases for name, cases in sets.items() if all(c.pinyin for c in cases)}  # announce*: no pinyin
    header = " | ".join(f"{name} ({len(cases)})" for name, cases in sets.items())
    for title, blind in (("pinyin", ""), ("pinyin, tones of 一/不 ignored", "一不")):
        if not sets:
            break
        print(f"\n| {title} | {header} |\n|---|" + "---|" * len(sets))
        for name, fn in _g2ps().items():
            cells = [score_pinyin(cases, fn, blind) for cases in sets.values()]
            print(f"| {name} | " + " | ".join(f"{c.share:.1%} ({c.right})" for c in cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT_SETS))
