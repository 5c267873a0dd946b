"""The int8 convolutions as ConvInteger (as shipped) and as signed-weight matrix products (``graphs.conv_matmul``).

Two parts, both on this machine's CPU with ONNX Runtime's two-thread sessions, the two forms interleaved:

* ``convs``: one convolution of each of three kinds the vocoder has (128 channels x 11 taps at the generator's
  ~120 steps a frame, 256 x 7 at ~20, 1024 x 3 at 2), 75 frames' worth, DynamicQuantizeLinear in front and the
  int32 out; whether the outputs are equal;
* ``stage2``: the shipped int8 stage 2 split as the server splits it, with and without the rewrite, on one
  sentence's stage-1 output; whether the audio is equal to the bit.

    python benchmarks/conv_matmul.py [--runs 5] [--out conv_matmul.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.backends.alignment import alignment, frame_counts
from wyoming_fasttts.backends.onnxruntime import pad_tokens, session_options
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.graphs import split
from wyoming_fasttts.graphs.conv_matmul import convs_as_matmuls, exact_here, one_conv
from wyoming_fasttts.text.g2p import phonemize
from wyoming_fasttts.text.normalize import normalize

SHAPES = [(128, 11, 9000), (256, 7, 1500), (1024, 3, 150)]
SENTENCE = "洗衣机已经完成了本次的洗涤程序，请及时晾晒衣物以免产生异味。"


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), session_options(2), providers=["CPUExecutionProvider"])


def _best_ms(sessions: list[ort.InferenceSession], feeds: dict[str, np.ndarray], runs: int) -> list[float]:
    """Fastest of ``runs`` for each session, runs interleaved after one warm-up each."""
    for s in sessions:
        s.run(None, feeds)
    best = [np.inf] * len(sessions)
    for _ in range(runs):
        for i, s in enumerate(sessions):
            start = time.perf_counter()
            s.run(None, feeds)
            best[i] = min(best[i], time.perf_counter() - start)
    return [round(1000 * b, 2) for b in best]


def convs(runs: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(0)
    rows = []
    for channels, taps, steps in SHAPES:
        weights = rng.integers(0, 256, (channels, channels, taps), dtype=np.uint8)
        model = one_conv(weights, 128, pads=(taps // 2, taps // 2), frames=steps)
        rewritten, _ = convs_as_matmuls(onnx.ModelProto.FromString(model.SerializeToString()))
        sessions = [_session(model), _session(rewritten)]
        feeds = {"x": rng.standard_normal((1, channels, steps)).astype(np.float32)}
        ms = _best_ms(sessions, feeds, runs)
        equal = bool(np.array_equal(*(s.run(None, feeds)[0] for s in sessions)))
        rows.append({"channels": channels, "taps": taps, "steps": steps, "ConvInteger_ms": ms[0],
                     "rewritten_ms": ms[1], "speedup": round(ms[0] / ms[1], 2), "equal": equal})
        print(rows[-1], flush=True)
    return rows


def stage2(runs: int) -> dict[str, object]:
    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=[settings.voice.default])
    stages = split.split(onnx.load(str(assets.model)))
    ids = phoneme_ids(phonemize(normalize(SENTENCE)), load_vocab(assets.vocab))
    style = np.fromfile(assets.voice(settings.voice.default), np.float32).reshape(510, 256)[len(ids) - 1][None]
    durations, d, t_en = _session(stages.stage1).run(None, {
        "tokens": pad_tokens(np.asarray(ids, np.int64)), "style": style, "speed": np.array([1.0], np.float32)})
    frames = frame_counts(durations, settings.engine.tail_frames)
    feeds = {"alignment": alignment(frames), "d": d, "t_en": t_en, "style": style}
    rewritten, count = convs_as_matmuls(onnx.ModelProto.FromString(stages.stage2.SerializeToString()))
    sessions = [_session(stages.stage2), _session(rewritten)]
    ms = _best_ms(sessions, feeds, runs)
    equal = bool(np.array_equal(*(s.run(None, feeds)[0] for s in sessions)))
    row = {"frames": int(frames.sum()), "rewritten_convolutions": count, "ConvInteger_ms": ms[0], "rewritten_ms": ms[1],
           "per_frame_ms": [round(m / frames.sum(), 2) for m in ms], "speedup": round(ms[0] / ms[1], 2),
           "audio_equal": equal}
    print(row, flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="conv_matmul.json")
    args = parser.parse_args()
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "onnxruntime": ort.__version__,
              "exact_here": exact_here(), "convs": convs(args.runs), "stage2": stage2(args.runs)}
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
