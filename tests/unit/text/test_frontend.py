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


def test_brand_names_are_said_as_words_not_spelled():
    """Wi-Fi is "wai fai" however it is written; camel-case names the lexicon lacks are read part by part."""
    assert phonemes("Wi-Fi") == phonemes("WiFi") == phonemes("wifi")
    assert phonemes("SmartThings") == " ".join(phonemes(w) for w in ("Smart", "Things"))
    for name in ("HomePod", "AirPods", "MacBook", "Spotify", "ESPHome", "SmartThings"):
        assert phonemes(name) != spell(name), name


def test_announcement_text_keeps_everything_the_user_wrote():
    """Issue 15's examples: no part of an address, version or count vanishes, and 每 is kept in rates."""
    assert normalize("网关10.0.0.254") == "网关幺零点零点零点二五四"
    assert normalize("已升级到v3.2.1") == "已升级到v三点二点一"
    assert normalize("你有999+ 条消息") == "你有九百九十九加条消息"
    assert normalize("售价¥1,299，包邮") == "售价一千二百九十九元，包邮"
    assert normalize("电价0.5元/度，停车10元/小时") == "电价五角每度，停车十元每小时"


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
