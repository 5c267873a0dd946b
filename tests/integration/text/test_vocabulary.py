"""Every phoneme the front end writes is one the model knows: checked against the model's own vocabulary."""

from __future__ import annotations

import json

import pytest

from wyoming_fasttts.assets import ensure_assets
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.text import phonemize
from wyoming_fasttts.text.data import load_table
from wyoming_fasttts.text.latin import phonemes, pinyin_phonemes, spell


@pytest.fixture(scope="module")
def vocab() -> set[str]:
    assets = ensure_assets(load_settings().assets)
    return set(json.loads(assets.vocab.read_text(encoding="utf-8"))["vocab"])


def test_phonemes_use_only_the_vocabulary(vocab):
    sentences = ["我们一起去银行还钱吧，好不好？", "请把GPU的温度调到65°C。", "打开Home Assistant的iPhone和WiFi！",
                 "你好，小米音箱。", "Bluetooth已连接，USB正在充电。", "xyzzy qwerty"]
    for sentence in sentences:
        assert set(phonemize(sentence).replace(" ", "")) <= vocab, sentence


def test_latin_table_and_letters_are_in_vocabulary(vocab):
    for word, _ in load_table("latin.tsv"):
        assert set(phonemes(word).replace(" ", "")) <= vocab, word
    assert set(spell("ABCDEFGHIJKLMNOPQRSTUVWXYZ").replace(" ", "")) <= vocab
    for (syllable,) in load_table("syllables.tsv"):  # a Chinese name in pinyin (Meituan) is read as its syllables
        assert set(pinyin_phonemes(syllable + syllable)) <= vocab, syllable
