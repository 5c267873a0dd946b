"""What float16 LSTMs do to the durations (``engine.half_lstms``, issue 13, thirty-first pass): stage 1 as the
torch-cuda engine builds it (one-call LSTMs, fused attention), its LSTMs in float32 against ``--half`` (``all``:
the five of stage 1; ``audio``: only the text encoder, which reaches no duration), sentence by sentence on the CPU.

Torch's CPU float16 LSTM is not cuDNN's persistent kernel (whose sums are float32), so this bounds the risk rather
than measures the GPU; doctor on the GPU (``benchmarks/h200_torch.sh D8HA``) is the check that counts.

    .venv/bin/python benchmarks/half_lstm_durations.py \\
        --texts docs/benchmarks/half-lstm-durations-sentences-2026-12-07.txt --out half-lstm-durations.json
"""

from __future__ import annotations

import argparse
import json

import torch

from wyoming_fasttts.assets import VOICES, ensure_assets, load_vocab, phoneme_ids
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.export import reference
from wyoming_fasttts.text import normalize, phonemize
from wyoming_fasttts.voices import VoiceBank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", required=True, help="one sentence a line")
    parser.add_argument("--half", default="all", choices=("audio", "all"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    assets = ensure_assets(load_settings().assets)
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    kmodel = reference.build_kmodel(assets.model, vocab, deterministic=True)
    stages = {half: reference.BatchedDurations(kmodel, fused_attention=True, one_call_lstms=True,
                                               half_lstms=half).eval() for half in ("none", args.half)}
    with open(args.texts, encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    names, rows, tokens, d_diff = list(VOICES), [], 0, 0.0
    with torch.inference_mode():
        for i, text in enumerate(texts):
            ids = phoneme_ids(phonemize(normalize(text)), vocab)
            voice = names[i % len(names)]
            inputs = (torch.tensor([[0, *ids, 0]]), torch.tensor([len(ids) + 2]),
                      torch.from_numpy(voices.style(voice, len(ids))).float().reshape(1, -1), torch.tensor([1.0]))
            (want, d_want, _), (got, d_got, _) = (stages[half](*inputs) for half in ("none", args.half))
            tokens += len(ids) + 2
            d_diff = max(d_diff, (d_got - d_want).abs().max().item())
            differ = int((want != got).sum().item())
            if differ:
                rows.append({"text": text, "voice": voice, "durations_differ": differ})
                print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    report = {"half_lstms": args.half, "sentences": len(texts), "tokens": tokens,
              "durations_differ": sum(r["durations_differ"] for r in rows), "sentences_differ": len(rows),
              "d_max_abs_diff": d_diff, "torch": torch.__version__, "differing": rows}
    print(json.dumps({k: v for k, v in report.items() if k != "differing"}))
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
