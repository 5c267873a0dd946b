"""RSS of the CPU engine before and after long sentences, with and without ONNX Runtime arena shrinkage.

Each setting runs in a fresh process: the CPU engine as the server builds it (the all-cores session pair and
the one-thread pairs), a short sentence timed a few times, then long sentences (``text.max_sentence_chars``
each) on every session pair at once, then the short sentence again. Without shrinkage every session's arena
keeps what its longest sentence needed; the issue saw 1.0 -> 1.4-1.7 GiB in the server.

A third process alternates short sentences on an engine with and one without shrinkage, for its cost.

    python benchmarks/arena_memory.py            # prints one line per setting, and --out JSON if given
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHORT = "欢迎使用语音合成系统。"
LONG = ("今天下午三点，客厅的温度是二十六度，湿度百分之四十五，空气质量良好，"
        "窗户已经关好，扫地机器人正在充电，明天早上七点会提醒你出门带伞。")


def measure(shrink: bool, repeats: int) -> dict:
    from wyoming_fasttts.assets import ensure_assets, load_vocab
    from wyoming_fasttts.backends.base import SynthesisItem
    from wyoming_fasttts.backends.memory import process_rss_bytes
    from wyoming_fasttts.backends.onnxruntime import create_onnxruntime_engine
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.synthesizer import Synthesizer
    from wyoming_fasttts.voices import VoiceBank

    settings = load_settings(overrides={"engine.arena_shrinkage": shrink})
    assets = ensure_assets(settings.assets)
    voices = VoiceBank(assets)
    synth = Synthesizer(settings, voices, load_vocab(assets.vocab), scheduler=None)  # text front end only
    engine = create_onnxruntime_engine(settings, assets)
    engine.warmup()

    def items(text: str) -> list[SynthesisItem]:
        return [SynthesisItem(s.ids, voices.style(settings.voice.default, len(s.ids)))
                for s in synth.sentences(text, first=False)]

    short, long = items(SHORT), items(LONG)

    def timed() -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            engine.run(short)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    mib = lambda: process_rss_bytes() / 2**20  # noqa: E731
    before_ms, before_rss = timed(), mib()
    threads = [threading.Thread(target=engine.run, args=(long,)) for _ in range(engine.slots)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    peak_rss = mib()
    after_ms, after_rss = timed(), mib()
    return {"arena_shrinkage": shrink, "short_ms_before": round(before_ms), "rss_mib_before": round(before_rss),
            "rss_mib_after_long": round(peak_rss), "short_ms_after": round(after_ms),
            "rss_mib_after_short": round(after_rss), "long_pieces": len(long), "slots": engine.slots}


def latency_ab(repeats: int) -> dict:
    """Short-sentence latency with shrinkage on and off, alternated run by run in one process, so a machine
    whose load drifts weighs on both alike (RSS is not comparable here: both engines share the process)."""
    from wyoming_fasttts.assets import ensure_assets, load_vocab
    from wyoming_fasttts.backends.base import SynthesisItem
    from wyoming_fasttts.backends.onnxruntime import create_onnxruntime_engine
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.synthesizer import Synthesizer
    from wyoming_fasttts.voices import VoiceBank

    settings = {s: load_settings(overrides={"engine.arena_shrinkage": s}) for s in (False, True)}
    assets = ensure_assets(settings[True].assets)
    voices = VoiceBank(assets)
    synth = Synthesizer(settings[True], voices, load_vocab(assets.vocab), scheduler=None)
    short = [SynthesisItem(s.ids, voices.style(settings[True].voice.default, len(s.ids)))
             for s in synth.sentences(SHORT, first=False)]
    engines = {s: create_onnxruntime_engine(settings[s], assets) for s in (False, True)}
    times: dict[bool, list[float]] = {False: [], True: []}
    for engine in engines.values():
        engine.warmup()
    for _ in range(repeats):
        for shrink, engine in engines.items():
            started = time.perf_counter()
            engine.run(short)
            times[shrink].append(time.perf_counter() - started)
    off, on = statistics.median(times[False]) * 1000, statistics.median(times[True]) * 1000
    return {"short_ms_median_off": round(off, 1), "short_ms_median_on": round(on, 1),
            "ratio_on_off": round(on / off, 3), "runs_each": repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--out")
    parser.add_argument("--one", choices=["on", "off", "ab"], help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(latency_ab(args.repeats) if args.one == "ab" else measure(args.one == "on", args.repeats)))
        return
    rows = []
    for setting in ("off", "on", "ab"):
        out = subprocess.run([sys.executable, __file__, "--one", setting, "--repeats", str(args.repeats)],
                             check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
