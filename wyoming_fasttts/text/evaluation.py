"""Scoring a front end on an evaluation set (``tests/unit/text/data/eval.tsv``): share of sentences exactly right.

Shared by the test suite (our own scores) and ``benchmarks/frontend_compare.py`` (the baselines), so both
read the set and count a hit the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    category: str
    text: str
    spoken: str
    pinyin: tuple[str, ...]


def load_cases(path: str | Path) -> list[Case]:
    """Rows of category, text, spoken form and (not in the announcement sets) pinyin.

    A row is one line, so a text column writes a line break (a Home Assistant notification's title on its
    own line, a bullet list) as the two characters ``\\n``.
    """
    cases = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            category, text, spoken, *pinyin = line.split("\t")
            cases.append(Case(category, text.replace("\\n", "\n"), spoken,
                              tuple(pinyin[0].split()) if pinyin else ()))
    return cases


@dataclass(frozen=True)
class Score:
    right: int
    total: int
    misses: tuple[tuple[Case, object], ...]

    @property
    def share(self) -> float:
        return self.right / self.total if self.total else 0.0


def score(cases: Iterable[Case], got: Callable[[Case], object], want: Callable[[Case], object]) -> Score:
    """Exact match per sentence; misses keep what was produced, for the report."""
    total, misses = 0, []
    for case in cases:
        total += 1
        output = got(case)
        if output != want(case):
            misses.append((case, output))
    return Score(total - len(misses), total, tuple(misses))


def score_normalize(cases: Iterable[Case], normalize: Callable[[str], str]) -> Score:
    return score(cases, lambda c: normalize(c.text), lambda c: c.spoken)


def score_pinyin(cases: Iterable[Case], pinyin: Callable[[str], list[str]], blind: str = "") -> Score:
    """Pinyin of the expected spoken form, so a normalisation miss is not counted twice.

    ``blind="一不"`` ignores the tones of those characters: it separates polyphone reading from the
    tone-change convention, which plain pypinyin does not follow.
    """

    def masked(case: Case, syllables: Iterable[str]) -> tuple[str, ...]:
        han = [ch for ch in case.spoken if "\u3400" <= ch <= "\u9fff"]
        syllables = tuple(syllables)
        if len(syllables) != len(han):
            return syllables
        return tuple(s[:-1] if ch in blind else s for ch, s in zip(han, syllables, strict=True))

    return score(cases, lambda c: masked(c, pinyin(c.spoken)), lambda c: masked(c, c.pinyin))
