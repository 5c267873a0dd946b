"""Where a reply is cut so its first audio comes early (issue 15): word boundaries, numbers whole, nothing lost;
and where a streamed reply is cut into sentences."""

from __future__ import annotations

import pytest

from wyoming_fasttts.text import SentenceBuffer, normalize, split_sentences

LIMIT = 12
REPLIES = [
    "洗衣机已经完成了本次的洗涤程序。请及时晾晒衣物，以免产生异味。",
    "检测到厨房的燃气浓度超过了安全标准。请立即开窗通风并关闭燃气阀门。",
    "主人您好我是您的智能家居助手小爱。有什么可以帮您的吗？",
    "您的快递已经放在小区东门的丰巢快递柜里面了请尽快取件以免超时收费。",
    "前门摄像头在08:15检测到有人。",
    "客厅的空气净化器滤芯需要更换了。",
]


def _pieces(text: str) -> list[str]:
    return split_sentences(normalize(text), max_chars=80, first_clause_chars=LIMIT)


@pytest.mark.parametrize("text", REPLIES)
def test_a_long_first_sentence_without_comma_starts_with_a_short_chunk(text):
    pieces = _pieces(text)
    assert 3 <= len(pieces[0].rstrip("，")) <= LIMIT, pieces
    assert pieces[0].endswith("，"), pieces  # said as a phrase, not as the end of a sentence


@pytest.mark.parametrize("text", REPLIES)
def test_nothing_is_lost_and_only_a_pause_is_added(text):
    pieces = _pieces(text)
    assert "".join(pieces).replace("，", "") == normalize(text).replace("，", "")


def test_the_cut_falls_before_the_predicate_not_inside_a_word():
    assert _pieces(REPLIES[0])[:2] == ["洗衣机，", "已经完成了本次的洗涤程序。"]
    assert _pieces(REPLIES[2])[:2] == ["主人您好，", "我是您的智能家居助手小爱。"]


@pytest.mark.parametrize("text", ["客厅温度23.5℃，湿度58%。", "空调已经调到二十六摄氏度并开启了睡眠模式。",
                                  "您本月的电费一共是两百五十六元八角请及时缴纳。"])
def test_a_number_is_never_split_from_its_digits_or_its_unit(text):
    first = _pieces(text)[0].rstrip("，")
    numerals = set("零一二三四五六七八九十百千万亿两幺点")
    rest = normalize(text)[len(first) :].lstrip("，")
    assert not (first[-1] in numerals or rest[:1] in numerals), (first, rest)


def test_only_the_first_sentence_is_cut():
    text = "好的。" + REPLIES[0]
    assert _pieces(text)[1:] == split_sentences(normalize(text), max_chars=80)[1:]


def test_short_pieces_and_disabled_cuts_are_left_alone():
    assert _pieces("欢迎回家。今天是星期六。") == ["欢迎回家。", "今天是星期六。"]
    # a first sentence no longer than the limit is one engine call, not two with a pause between
    assert _pieces("欢迎使用语音合成系统。请说出您的指令。")[0] == "欢迎使用语音合成系统。"
    assert split_sentences(normalize(REPLIES[0]), max_chars=80)[0] == "洗衣机已经完成了本次的洗涤程序。"


STREAMED = "请打开 http://nas.local/cam?id=3&t=10 查看。真的吗?好的! Ready? 再见"


@pytest.mark.parametrize("at", range(1, len(STREAMED)))
def test_a_streamed_address_is_never_cut_at_its_question_mark(at):
    """Wherever an LLM's stream splits the reply in two chunks, the address reaches one sentence whole and the
    sentences join back to the reply."""
    buffer = SentenceBuffer()
    sentences = buffer.add(STREAMED[:at]) + buffer.add(STREAMED[at:]) + buffer.flush()
    assert "".join(sentences) == STREAMED
    assert next(s for s in sentences if "nas.local" in s).count("http://nas.local/cam?id=3&t=10") == 1


def test_streamed_sentences_end_at_ascii_marks_once_the_next_character_shows_it():
    buffer = SentenceBuffer()
    assert buffer.add("真的吗?") == []  # an address could go on
    assert buffer.add("好的! Ready?") == ["真的吗?好的!"]
    assert buffer.add(" 再见") == [" Ready?"]
    assert buffer.flush() == [" 再见"]
