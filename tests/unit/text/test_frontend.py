"""Behaviour of the public text API beyond the evaluation set: robustness, phonemes, idempotence."""

from __future__ import annotations

import pytest

from wyoming_fasttts.text import normalize, phonemize, pinyin
from wyoming_fasttts.text.latin import phonemes, spell


@pytest.mark.parametrize(
    "text",
    ["", "   ", "😀🎉", "★★★", "...", "？！", "abc", "１２３", "\u200b你好\u3000", "𠀀", "1e10", "--5", "3//4",
     "¥", "%"],
)
def test_odd_input_never_crashes(text):
    spoken = normalize(text)
    assert not any(ch.isdigit() for ch in spoken)
    assert len(pinyin(text)) == sum("\u3400" <= ch <= "\u9fff" for ch in spoken)
    phonemize(text)


@pytest.mark.parametrize(
    "text",
    ["今天是2026年11月29日，气温-3℃。", "打开Home Assistant的WiFi设置！", "你的验证码是384920。", "一个一个来"],
)
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once


def test_acronyms_are_spelled_and_words_looked_up():
    assert phonemes("GPU") == spell("GPU") and len(phonemes("GPU").split()) == 3
    assert phonemes("assistant") != spell("assistant")


def test_phonemize_is_built_from_pinyin():
    from misaki.zh import ZHG2P

    sentence = "我得还你钱。"
    expected = "".join(ZHG2P.py2ipa(s) for s in pinyin(sentence)).replace(chr(815), "")
    assert phonemize(sentence).replace(" ", "").rstrip(".") == expected
    assert phonemize(sentence).endswith(".")


def test_phonemize_matches_misaki_layout_where_readings_agree():
    from misaki.zh import ZHG2P

    sentence = "欢迎使用语音合成系统。"
    assert phonemize(sentence) == ZHG2P()(sentence)[0].strip()


def test_jieba_global_state_untouched():
    import jieba

    phonemize("重置路由器")
    assert "重置" not in getattr(jieba.dt, "user_word_tag_tab", {})
