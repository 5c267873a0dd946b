"""Is the silence at the end of a piece free to skip? Two ways of not rendering it, against the full render.

Kokoro gives every piece ~45 frames of closing silence (the phrase-final token lengthened to ~29 frames, a
closing ，or 。 ~11-15, the end pad), which the server trims to ``audio.tail_ms`` after the vocoder made it;
on the CPU a frame costs ~7 ms, so a short first chunk (洗衣机，) spends half its time on it (issue 15's
time to first audio). This measures, per piece, what the listener would lose:

- ``cap``: the two closing tokens' durations capped at ``--cap`` frames before stage 2 (what the host step
  can do on every engine today);
- ``crop``: stage 2's prosody (the F0 / energy predictor) run on the full alignment, then only the decoder and
  vocoder cropped to ``--keep`` frames past the start of the last spoken token (would need stage 2 split
  after the prosody predictor).

For each, the log-mel distance to the full render over the speech span (``doctor.parity``; int8 vs float
graphs measure 2.3-2.8 dB, another voice 10-15 dB) and how much sooner the speech ends (the last 10 ms
frame above -45 dB of the loudest). Eager PyTorch on the CPU (the ``export`` extra):

    python benchmarks/closing_silence.py [--cap 10] [--keep 12] [--out out/closing-silence.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wyoming_fasttts.assets import ensure_assets, load_vocab  # noqa: E402
from wyoming_fasttts.backends.alignment import alignment, frame_counts  # noqa: E402
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, stage1_feeds  # noqa: E402
from wyoming_fasttts.config import load_settings  # noqa: E402
from wyoming_fasttts.core import SynthesisItem  # noqa: E402
from wyoming_fasttts.doctor.parity import mel_distance_db  # noqa: E402
from wyoming_fasttts.export import reference as ref  # noqa: E402
from wyoming_fasttts.synthesizer import Synthesizer  # noqa: E402
from wyoming_fasttts.voices import VoiceBank  # noqa: E402

TEXTS = ["洗衣机已经完成了本次的洗涤程序。", "好的，已经为您打开客厅的灯。", "您的快递已经放在小区东门。",
         "还没吃饭吗？", "欢迎使用语音合成系统", "今天天气很好，我们一起去公园散步吧。"]


def vocode(vocoder: ref.BatchedVocoder, aln: torch.Tensor, d: torch.Tensor, t_en: torch.Tensor,
           style: torch.Tensor, render: int | list[int]) -> np.ndarray:
    """``BatchedVocoder.forward`` for one row, with the decoder and generator cropped to ``render`` frames (or run
    over the frames listed, joined in that order: ``window_norms.py``)."""
    k = vocoder.k
    frames = torch.tensor([aln.shape[2]])
    m1, m2 = ref._mask(frames, aln.shape[2]), ref._mask(2 * frames, 2 * aln.shape[2])
    s_pred, s_dec = style[:, ref.STYLE_SPLIT:], style[:, :ref.STYLE_SPLIT]
    shared = vocoder.lstm("predictor.shared", torch.matmul(d.transpose(-1, -2), aln).transpose(-1, -2), frames)
    shared = shared.transpose(-1, -2)
    idx = torch.arange(render) if isinstance(render, int) else torch.tensor(render)
    steps = torch.stack([2 * idx, 2 * idx + 1], dim=1).reshape(-1)  # the F0 and energy curves: 2 steps a frame
    f0 = vocoder._prosody(k.predictor.F0, k.predictor.F0_proj, shared, s_pred, m1, m2)[:, steps]
    noise = vocoder._prosody(k.predictor.N, k.predictor.N_proj, shared, s_pred, m1, m2)[:, steps]
    n = len(idx)
    frames = torch.tensor([n])
    m1, m2 = ref._mask(frames, n), ref._mask(2 * frames, 2 * n)
    dec = k.decoder
    asr = torch.matmul(t_en, aln[:, :, idx])
    f0_down, noise_down = dec.F0_conv(f0.unsqueeze(1)) * m1, dec.N_conv(noise.unsqueeze(1)) * m1
    x = ref._adain_resblk(dec.encode, torch.cat([asr, f0_down, noise_down], dim=1), s_dec, m1, m1)
    asr_res, mask = dec.asr_res(asr), m1
    for block in dec.decode:
        if mask is m1:
            x = torch.cat([x, asr_res, f0_down, noise_down], dim=1)
        out_mask = m2 if block.upsample_type != "none" else mask
        x, mask = ref._adain_resblk(block, x, s_dec, mask, out_mask), out_mask
    return vocoder._generator(x, s_dec, f0, 2 * frames)[0][0].numpy()


def speech_end_ms(audio: np.ndarray) -> int:
    n = len(audio) // 240
    rms = np.sqrt((audio[:n * 240].reshape(n, 240) ** 2).mean(1) + 1e-12)
    return int(np.flatnonzero(20 * np.log10(rms / rms.max()) > -45)[-1] + 1) * 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=10, help="frames for each of the two closing tokens")
    parser.add_argument("--keep", type=int, default=12, help="crop: frames kept past the last spoken token's start")
    parser.add_argument("--out", default="out/closing-silence.json")
    args = parser.parse_args()
    torch.set_num_threads(2)
    settings = load_settings()
    assets = ensure_assets(settings.assets, voices=["zf_xiaobei"])
    vocab = load_vocab(assets.vocab)
    synth = Synthesizer(settings, VoiceBank(assets, ["zf_xiaobei"]), vocab, scheduler=None)  # type: ignore[arg-type]
    kmodel = ref.build_kmodel(assets.model, vocab, deterministic=True)
    durations_model, vocoder = ref.BatchedDurations(kmodel).eval(), ref.BatchedVocoder(kmodel).eval()
    rows = []
    print(f"| piece | frames | cap {args.cap}: frames, dB, ends sooner ms "
          f"| crop +{args.keep}: frames, dB, ends sooner ms |")
    print("|---|---|---|---|")
    for text in TEXTS:
        for piece in synth.sentences(text)[:2]:
            item = SynthesisItem(piece.ids, synth.voices.style("zf_xiaobei", len(piece.ids)))
            feeds = stage1_feeds([item])
            with torch.inference_mode():
                durations, d, t_en = durations_model(*(torch.from_numpy(feeds[n]) for n in STAGE1_INPUTS))
                style = torch.from_numpy(feeds["style"])
                full_counts = frame_counts(durations[0].numpy(), settings.engine.tail_frames)
                capped_counts = full_counts.copy()
                capped_counts[-3:-1] = np.minimum(capped_counts[-3:-1], args.cap)
                renders = {}
                for name, counts in (("full", full_counts), ("cap", capped_counts)):
                    aln = torch.from_numpy(alignment(counts))
                    renders[name] = (int(counts.sum()), vocode(vocoder, aln, d, t_en, style, int(counts.sum())))
                render = min(int(full_counts.sum()), int(full_counts[:-3].sum()) + args.keep)
                renders["crop"] = (render, vocode(vocoder, torch.from_numpy(alignment(full_counts)), d, t_en, style,
                                                  render))
            full = renders["full"][1]
            row = {"piece": piece.text, "frames": renders["full"][0]}
            for name in ("cap", "crop"):
                frames, audio = renders[name]
                span = min(len(audio), speech_end_ms(full) * 24)
                row[name] = {"frames": frames, "mel_db": round(mel_distance_db(full[:span], audio[:span]), 2),
                             "ends_sooner_ms": speech_end_ms(full) - speech_end_ms(audio)}
            rows.append(row)
            cells = [f"{row[n]['frames']}, {row[n]['mel_db']}, {row[n]['ends_sooner_ms']}" for n in ("cap", "crop")]
            print(f"| {piece.text} | {row['frames']} | {cells[0]} | {cells[1]} |", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"cap": args.cap, "keep": args.keep, "rows": rows}, ensure_ascii=False,
                                         indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
