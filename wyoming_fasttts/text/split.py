"""Sentences the model can take, and sentences out of a stream of text chunks."""

from __future__ import annotations

import itertools
import re

_SENTENCE_END = "。！？"
# Where a streamed sentence ends (``SentenceBuffer``): a full-width mark or a line break, or ASCII ! ? before a space
# or a character that is not ASCII.
_STREAM_END = re.compile(r"[。！？\n]|[!?](?=\s|[^\x00-\x7f])")
_CLAUSE = "，"
# Characters of a number's reading (二十三点五, 两百万, 幺三九): a first chunk never ends inside or right after
# one, so a number is never split from its digits or from the measure word or unit that follows it.
_NUMERAL = set("零一二三四五六七八九十百千万亿两幺点负")
# Words a cut may not come before: particles and suffixes belong to the word before them.
_CLINGS = set("的地得了着过吗呢吧啊呀们么嘛哦")
# Words that start a predicate or a new phrase: a cut right before one falls on a prosodic boundary a reader
# would pause at (洗衣机|已经完成了…, 请|把客厅的灯…).
_PHRASE_STARTS = ("已经", "已", "正在", "将", "将会", "会", "就", "都", "还", "也", "请", "把", "被", "给", "为",
                  "在", "从", "到", "和", "跟", "对", "向", "比", "可以", "需要", "要", "不", "没有", "是", "有",
                  "让", "帮", "预计", "目前", "现在", "今天", "明天", "因为", "所以", "但是", "如果",
                  # verbs announcements open their predicate with
                  "检测到", "超过", "完成", "开始", "打开", "关闭", "到达", "达到", "低于", "高于", "进入", "离开",
                  "显示", "提醒", "发现", "出现", "建议", "适合", "正常", "即将", "马上", "刚刚", "自动", "仍然")
# ... and never right after one, nor after 的 or a degree word: they lean on the word that follows.
_LEANS = {*_PHRASE_STARTS, "的", "地", "很", "最", "更", "太", "非常", "比较", "这", "那", "这个", "那个", "您的",
          "你的", "我", "你", "您", "他", "她", "它", "我们", "你们", "他们", "一共", "共", "总共", "约", "大约", "只",
          "才", "刚"}
_MIN_CHUNK = 3  # syllables: a first chunk is at least one prosodic word (洗衣机, 好的)


def _pieces(text: str, marks: str) -> list[str]:
    return [p for p in re.findall(rf"[^{marks}]+[{marks}]*|[{marks}]+", text) if p.strip(marks + " ")]


def split_sentences(text: str, max_chars: int = 80, first_clause_chars: int = 0) -> list[str]:
    """Split normalised text at sentence marks; long sentences at clause marks, then hard at ``max_chars``.

    With ``first_clause_chars`` the first sentence's first clause becomes a piece of its own when the
    sentence is longer than that, so a listener hears the reply start sooner; a first clause that is still
    longer is cut at a word boundary (``lead``).
    """
    out: list[str] = []
    for sentence in _pieces(text, _SENTENCE_END):
        if len(sentence) <= max_chars:
            parts = [sentence]
        else:
            parts, cur = [], ""
            for clause in _pieces(sentence, _CLAUSE + _SENTENCE_END):
                if cur and len(cur) + len(clause) > max_chars:
                    parts.append(cur)
                    cur = ""
                cur += clause
            if cur:
                parts.append(cur)
            parts = [p[i : i + max_chars] for p in parts for i in range(0, len(p), max_chars)]
        out.extend(parts)
    # A first sentence no longer than ``first_clause_chars`` stays whole: cutting it gains little first audio
    # and costs a second engine call (and a pause) on the short announcements users send most.
    if first_clause_chars and out and len(out[0]) > first_clause_chars:
        clauses = _pieces(out[0], _CLAUSE)
        if len(clauses) > 1:
            out[:1] = [clauses[0], "".join(clauses[1:])]
        out[:1] = lead(out[0], first_clause_chars)
    return [p.strip() for p in out if p.strip()]


def lead(piece: str, limit: int) -> list[str]:
    """The first piece of a reply in growing chunks cut at word boundaries, so its audio starts early.

    On a CPU a piece takes time in proportion to its length, so a reply whose first sentence is long and
    has no comma would be heard only after all of it was synthesised. A piece longer than half of ``limit``
    is cut about a third of ``limit`` syllables in (at most ``limit``); each next chunk may be three times
    longer, since the audio already playing covers the time it takes. Cuts fall between jieba words,
    before a word that opens a phrase where one is in reach, never inside or right after a number's reading
    nor before a particle; a cut chunk ends with a pause mark (the model says it as a phrase, not a
    sentence end).
    """
    chunks: list[str] = []
    target = max(_MIN_CHUNK, limit // 3)
    while len(piece.rstrip(_SENTENCE_END + _CLAUSE)) > limit // 2:
        cut = _word_cut(piece, target, limit)
        if cut is None:
            break
        chunks.append(piece[:cut] + _CLAUSE)
        piece = piece[cut:]
        target, limit = target * 3, limit * 3
    return [*chunks, piece]


def _word_cut(piece: str, target: int, limit: int) -> int | None:
    """The best word boundary in ``piece`` between 3 and ``limit`` characters (None: no good one)."""
    from .g2p import words

    best: tuple[float, int] | None = None
    pos = 0
    tokens = words(piece)
    for word, following in itertools.pairwise(tokens):
        pos += len(word)
        if pos > limit:
            break
        rest = piece[pos:]
        if pos < _MIN_CHUNK or len(rest.strip(_SENTENCE_END + _CLAUSE)) < 3:
            continue
        if word[-1] in _NUMERAL or following[0] in _NUMERAL or following[0] in _CLINGS or word in _LEANS:
            continue
        if not (word[-1].isascii() or "\u3400" <= word[-1] <= "\u9fff"):
            continue  # after a pause mark the clause split already cut
        # Before a word that opens a phrase unless none is in reach; then the boundary nearest the target.
        score = abs(pos - target) + (0 if following.startswith(_PHRASE_STARTS) else limit)
        if best is None or score < best[0]:
            best = (score, pos)
    return best[1] if best else None


class SentenceBuffer:
    """Collects streamed text chunks; hands out each sentence once its end mark has arrived.

    A full-width end mark (。！？) or a line break ends a sentence where it stands. An ASCII ``!`` or ``?`` ends one
    only once the next character has come and is a space or not ASCII (``真的吗?好的``, ``Ready? 好``): inside an
    address it is part of what is read as typed (``http://nas.local/a?id=3``), and cutting there would read each
    half as text of its own. So a chunk that ends in ``?`` waits for the next chunk or the stream's end."""

    def __init__(self) -> None:
        self._text = ""

    def add(self, chunk: str) -> list[str]:
        self._text += chunk
        cut = max((m.start() for m in _STREAM_END.finditer(self._text)), default=-1)
        if cut < 0:
            return []
        done, self._text = self._text[: cut + 1], self._text[cut + 1 :]
        return [done]

    def flush(self) -> list[str]:
        done, self._text = self._text, ""
        return [done] if done.strip() else []
