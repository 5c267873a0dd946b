"""The front end against the evaluation sets: the issue's bar is 97 % of sentences exactly right."""

from __future__ import annotations

from pathlib import Path

import pytest

from wyoming_fasttts.text import normalize, pinyin
from wyoming_fasttts.text.evaluation import load_cases, score_normalize, score_pinyin

DATA = Path(__file__).parent / "data"
GOAL = 0.97
# Held-out sets: written before the front end ran on them (README.md says how far each was tuned on since).
HELD_OUT = ("holdout.tsv", "holdout2.tsv", "holdout3.tsv")


def _report(misses: tuple) -> str:
    return "\n".join(f"{case.text} -> {got!r}" for case, got in misses[:20])


@pytest.fixture(scope="module")
def eval_cases():
    cases = load_cases(DATA / "eval.tsv")
    assert len(cases) >= 300
    return cases


def test_normalize_meets_goal(eval_cases):
    result = score_normalize(eval_cases, normalize)
    assert result.share >= GOAL, _report(result.misses)


def test_pinyin_meets_goal(eval_cases):
    result = score_pinyin(eval_cases, pinyin)
    assert result.share >= GOAL, _report(result.misses)


@pytest.mark.parametrize("name", HELD_OUT)
def test_held_out_sets_meet_goal(name):
    cases = load_cases(DATA / name)
    assert len(cases) >= 60
    for result in (score_normalize(cases, normalize), score_pinyin(cases, pinyin)):
        assert result.share >= GOAL, _report(result.misses)


def test_every_category_is_covered(eval_cases):
    categories = {c.category for c in eval_cases}
    wanted = {"year", "date", "time", "cardinal", "liang", "negative", "fraction", "ratio", "percent", "money",
              "temperature", "unit", "digits", "polyphone", "sandhi", "mixed"}
    assert wanted <= categories


@pytest.mark.parametrize("name", ("eval.tsv", *HELD_OUT))
def test_expected_pinyin_has_one_syllable_per_character(name):
    for case in load_cases(DATA / name):
        han = [ch for ch in case.spoken if "\u3400" <= ch <= "\u9fff"]
        assert len(han) == len(case.pinyin), case.text


# Announcement sets (issue 15): spoken form only. announce.tsv was tuned on; announce_holdout.tsv, then
# announce_holdout2.tsv, announce_holdout3.tsv, announce_holdout4.tsv, announce_holdout5.tsv, announce_holdout6.tsv,
# announce_holdout7.tsv, announce_holdout8.tsv, announce_holdout9.tsv and announce_holdout10.tsv were written after the
# tuning (first-run scores in docs/TEXT.md: announce_holdout10.tsv's 789 of 792); each was tuned on after its first
# run; announce_holdout7.tsv's N100 line, a convention question at its first run, was corrected once the convention
# settled it as 幺. The bar for them is 98 %.
ANNOUNCE_GOAL = 0.98
ANNOUNCE_MIN = {"announce.tsv": 250, "announce_holdout.tsv": 60, "announce_holdout2.tsv": 160,
                "announce_holdout3.tsv": 300, "announce_holdout4.tsv": 400, "announce_holdout5.tsv": 450,
                "announce_holdout6.tsv": 500, "announce_holdout7.tsv": 420, "announce_holdout8.tsv": 540,
                "announce_holdout9.tsv": 530, "announce_holdout10.tsv": 750}


@pytest.mark.parametrize("name", ANNOUNCE_MIN)
def test_announcement_sets_meet_goal(name):
    cases = load_cases(DATA / name)
    assert len(cases) >= ANNOUNCE_MIN[name]
    result = score_normalize(cases, normalize)
    assert result.share >= ANNOUNCE_GOAL, _report(result.misses)


def test_announcement_set_covers_the_kinds_users_send():
    categories = {c.category for c in load_cases(DATA / "announce.tsv")}
    assert {"sensor", "weather", "range", "time", "date", "duration", "money", "phone", "code", "flight", "plate",
            "version", "ip", "latin", "count", "generation", "symbol", "reply"} <= categories
