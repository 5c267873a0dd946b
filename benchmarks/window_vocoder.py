"""Could a sentence's audio start before stage 2 has rendered all of it? Stage 2 in frame windows, measured.

Issue 15's time to first audio: on the CPU stage 2 costs ~7 ms per 25-ms frame, so a listener waits for all
of a first sentence's frames (or, with the first-chunk cut, for a short chunk rendered as a phrase of its own).
Rendering the decoder and vocoder in windows of frames while the prosody (F0 and energy, a bidirectional LSTM
over the whole sentence, cheap) is computed once would let the first window play while the rest renders, with
the sentence's own prosody and no text cut. What it would cost the audio: each window's instance norms see
only its frames, and its edges lack context. Per sentence and window size, the first window (``W`` frames
plus ``R`` frames of right context, its audio taken up to ``W``) against the full render over the same span
(log-mel distance, ``doctor.parity``: int8 vs float graphs differ by 2.3-2.8 dB, another voice by 10-15), and
the seam: the distance over the last 5 frames before ``W``, where the next part would take over.

    python benchmarks/window_vocoder.py [--windows 40,60] [--context 8,16,32] [--out out/window-vocoder.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from closing_silence import TEXTS, vocode  # noqa: E402

from wyoming_fasttts.assets import ensure_assets, load_vocab  # noqa: E402
from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME, alignment, frame_counts  # noqa: E402
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, stage1_feeds  # noqa: E402
from wyoming_fasttts.config import load_settings  # noqa: E402
from wyoming_fasttts.core import SynthesisItem  # noqa: E402
from wyoming_fasttts.doctor.parity import mel_distance_db  # noqa: E402
from wyoming_fasttts.export import reference as ref  # noqa: E402
from wyoming_fasttts.text import normalize, phonemize  # noqa: E402
from wyoming_fasttts.voices import VoiceBank  # noqa: E402

SEAM_FRAMES = 5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="40,60", help="frames of audio the first window gives")
    parser.add_argument("--context", default="8,16,32", help="frames of right context rendered past it")
    parser.add_argument("--out", default="out/window-vocoder.json")
    args = parser.parse_args()
    windows, contexts = [int(w) for w in args.windows.split(",")], [int(c) for c in args.context.split(",")]
    torch.set_num_threads(2)
    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei"])
    vocab = load_vocab(assets.vocab)
    voices = VoiceBank(assets, ["zf_xiaobei"])
    kmodel = ref.build_kmodel(assets.model, vocab, deterministic=True)
    durations_model, vocoder = ref.BatchedDurations(kmodel).eval(), ref.BatchedVocoder(kmodel).eval()
    rows = []
    print("| sentence (frames) | W | R | first window dB | seam dB |\n|---|---|---|---|---|")
    for text in TEXTS:
        ids = np.array([vocab[p] for p in phonemize(normalize(text)) if p in vocab], np.int64)
        feeds = stage1_feeds([SynthesisItem(ids, voices.style("zf_xiaobei", len(ids)))])
        with torch.inference_mode():
            durations, d, t_en = durations_model(*(torch.from_numpy(feeds[n]) for n in STAGE1_INPUTS))
            counts = frame_counts(durations[0].numpy(), settings.engine.tail_frames)
            aln, style, total = torch.from_numpy(alignment(counts)), torch.from_numpy(feeds["style"]), int(counts.sum())
            full = vocode(vocoder, aln, d, t_en, style, total)
            for w in windows:
                for r in contexts:
                    if w + r >= total:
                        continue
                    part = vocode(vocoder, aln, d, t_en, style, w + r)
                    end, seam = w * SAMPLES_PER_FRAME, (w - SEAM_FRAMES) * SAMPLES_PER_FRAME
                    row = {"text": text, "frames": total, "window": w, "context": r,
                           "first_db": round(mel_distance_db(full[:end], part[:end]), 2),
                           "seam_db": round(mel_distance_db(full[seam:end], part[seam:end]), 2)}
                    rows.append(row)
                    print(f"| {text} ({total}) | {w} | {r} | {row['first_db']} | {row['seam_db']} |", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
