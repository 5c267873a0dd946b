"""Time the text front end per sentence (normalize + pinyin + phonemize), warm, on the evaluation set.

    python benchmarks/frontend_speed.py [tests/unit/text/data/eval.tsv] [--repeat 5]

The issue's bound is 2 ms per typical sentence on the 2-core development machine. The first call (jieba
dictionary, pypinyin tables, data files) is reported apart: it happens once per process.
"""

from __future__ import annotations

import argparse
import statistics
import time

from wyoming_fasttts.text import normalize, phonemize, pinyin
from wyoming_fasttts.text.evaluation import load_cases


def _time_ms(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?", default="tests/unit/text/data/eval.tsv")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    texts = [c.text for c in load_cases(args.path)]
    start = time.perf_counter()
    phonemize(texts[0])
    print(f"first call (loads dictionaries): {(time.perf_counter() - start) * 1000:.0f} ms")
    print(f"{len(texts)} sentences, mean {statistics.mean(map(len, texts)):.1f} characters, best of {args.repeat}")
    print("| step | median ms | p95 ms | max ms |\n|---|---|---|---|")
    steps = {"normalize": normalize, "pinyin (incl. normalize)": pinyin, "phonemize (incl. normalize)": phonemize}
    for name, fn in steps.items():
        times = sorted(min(_time_ms(fn, t) for _ in range(args.repeat)) for t in texts)
        p95 = times[int(0.95 * (len(times) - 1))]
        print(f"| {name} | {statistics.median(times):.3f} | {p95:.3f} | {times[-1]:.3f} |")


if __name__ == "__main__":
    main()
