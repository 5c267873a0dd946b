"""Stage 2 in frame windows as the CPU engine ships it: how far its audio is from the whole render, and its cost.

Issue 15's time to first audio: the CPU engine renders a sentence's decoder and generator in frame windows
(``backends.windows``) after the prosody half has run once over the whole sentence, so the first window's
audio plays while the rest renders. Per sentence and setting, with the int8 stage-2 halves the engine runs
(window sizes follow the settings alone, ``frame_ms`` among them, never a clock): the parts' frames, the log-mel
distance (``doctor.parity``: int8 vs float graphs differ by 2.3-2.8 dB, another voice by 10-15) of the joined parts
against the whole render over the speech (from the end of the start pad), of the first part alone (and its level
against the whole render's), of the audio after the first part (and its level), and of 200 ms around each seam; and
the frames rendered against the sentence's frames (the windows' context is rendered twice).

    python benchmarks/window_vocoder.py [--set "" left_frames=16 ...] [--out out/window-vocoder.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids  # noqa: E402
from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME, alignment, frame_counts  # noqa: E402
from wyoming_fasttts.backends.onnxruntime import Windowed, _Vocoder, pad_tokens, session_options  # noqa: E402
from wyoming_fasttts.backends.windows import Span, render_windows  # noqa: E402
from wyoming_fasttts.config import load_settings  # noqa: E402
from wyoming_fasttts.doctor.parity import mel_distance_db  # noqa: E402
from wyoming_fasttts.graphs.convert import ensure_graphs  # noqa: E402
from wyoming_fasttts.text import normalize, phonemize  # noqa: E402
from wyoming_fasttts.voices import VoiceBank  # noqa: E402

TEXTS = [
    "洗衣机已经完成了本次的洗涤程序。",
    "检测到厨房的燃气浓度超过了安全标准。",
    "您的快递已经放在小区东门的快递柜里了。",
    "欢迎使用语音合成系统",
    "根据您设置的自动化规则，所有窗帘将在日落时自动关闭。",
    "前门的智能门锁刚才被您的家人用指纹打开了。",
]
SEAM = 4 * SAMPLES_PER_FRAME  # 100 ms each side of a seam


def _level_db(audio: np.ndarray, reference: np.ndarray) -> float:
    """How much louder (dB, RMS) ``audio`` is than ``reference`` over the same span."""
    return float(10 * np.log10((np.mean(audio ** 2) + 1e-12) / (np.mean(reference ** 2) + 1e-12)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="*", default=[""], help="settings to compare (first_frames=32,left_frames=16)")
    parser.add_argument("--out", default="out/window-vocoder.json")
    args = parser.parse_args()
    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei"])
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets, ["zf_xiaobei"])
    graphs = ensure_graphs(assets.model, settings.assets.data_path)
    options = session_options(2)
    stage1 = ort.InferenceSession(str(graphs.path("int8", "stage1")), options)
    halves = Windowed(graphs.path("int8", "prosody"), graphs.path("int8", "render"), settings.engine.windows)
    vocoder = _Vocoder(graphs.path("int8", "stage2"), options, ["CPUExecutionProvider"], halves)
    rows = []
    print("| setting | sentence (frames) | parts (frames) | rendered / frames | whole dB | first part dB "
          "| first part level dB | after it dB | its level dB | seams dB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for text in TEXTS:
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        style = voices.style("zf_xiaobei", len(ids)).reshape(1, -1)
        durations, d, t_en = stage1.run(None, {"tokens": pad_tokens(ids), "style": style,
                                               "speed": np.array([1.0], np.float32)})
        frames = frame_counts(durations, settings.engine.tail_frames)
        feeds = {"alignment": alignment(frames), "d": d, "t_en": t_en, "style": style}
        span = vocoder._halves(feeds, ort.RunOptions())
        whole = span(Span(0, int(frames.sum())))
        for spec in args.set:
            changes = {k: type(getattr(settings.engine.windows, k))(v)
                       for k, v in (item.split("=") for item in spec.split(",") if item)}
            cfg = dataclasses.replace(settings.engine.windows, **changes)
            rendered = [0]

            def counted(s: Span, rendered: list[int] = rendered, span=span) -> np.ndarray:
                rendered[0] += s.hi - s.lo + s.closing + s.opening[1] - s.opening[0]
                return span(s)

            parts = list(render_windows(counted, frames, cfg))
            joined, speech = np.concatenate(parts), int(frames[0]) * SAMPLES_PER_FRAME
            seams = np.cumsum([len(p) for p in parts])[:-1]
            row = {"setting": spec or "default", "text": text, "frames": int(frames.sum()),
                   "parts": [len(p) // SAMPLES_PER_FRAME for p in parts], "rendered": rendered[0],
                   "whole_db": round(mel_distance_db(whole[speech:], joined[speech:]), 2),
                   "first_db": round(mel_distance_db(whole[speech:seams[0]], joined[speech:seams[0]]), 2)
                   if len(seams) else 0.0,
                   "first_level_db": round(_level_db(joined[speech:seams[0]], whole[speech:seams[0]]), 2)
                   if len(seams) else 0.0,
                   "later_db": round(mel_distance_db(whole[seams[0]:], joined[seams[0]:]), 2) if len(seams) else 0.0,
                   "later_level_db": round(_level_db(joined[seams[0]:], whole[seams[0]:]), 2) if len(seams) else 0.0,
                   "seam_db": [round(mel_distance_db(whole[b - SEAM:b + SEAM], joined[b - SEAM:b + SEAM]), 2)
                               for b in seams]}
            rows.append(row)
            print(f"| {row['setting']} | {text} ({row['frames']}) | {row['parts']} | "
                  f"{row['rendered']} / {row['frames']} | {row['whole_db']} | {row['first_db']} | "
                  f"{row['first_level_db']} | {row['later_db']} | {row['later_level_db']} | {row['seam_db']} |",
                  flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
