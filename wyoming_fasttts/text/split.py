"""Sentences the model can take, and sentences out of a stream of text chunks."""

from __future__ import annotations

import re

_SENTENCE_END = "。！？"
_CLAUSE = "，"


def _pieces(text: str, marks: str) -> list[str]:
    return [p for p in re.findall(rf"[^{marks}]+[{marks}]*|[{marks}]+", text) if p.strip(marks + " ")]


def split_sentences(text: str, max_chars: int = 80, first_clause_chars: int = 0) -> list[str]:
    """Split normalised text at sentence marks; long sentences at clause marks, then hard at ``max_chars``.

    With ``first_clause_chars`` the first sentence's first clause becomes a piece of its own when the
    sentence is longer than that, so a listener hears the reply start sooner.
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
    if first_clause_chars and out and len(out[0]) > first_clause_chars:
        clauses = _pieces(out[0], _CLAUSE)
        if len(clauses) > 1:
            out[:1] = [clauses[0], "".join(clauses[1:])]
    return [p.strip() for p in out if p.strip()]


class SentenceBuffer:
    """Collects streamed text chunks; hands out each sentence once its end mark has arrived."""

    def __init__(self) -> None:
        self._text = ""

    def add(self, chunk: str) -> list[str]:
        self._text += chunk
        cut = max(self._text.rfind(m) for m in _SENTENCE_END + "!?\n")
        if cut < 0:
            return []
        done, self._text = self._text[: cut + 1], self._text[cut + 1 :]
        return [done]

    def flush(self) -> list[str]:
        done, self._text = self._text, ""
        return [done] if done.strip() else []
