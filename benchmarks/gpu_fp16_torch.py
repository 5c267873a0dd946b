"""Stage 2 in fp16 in PyTorch itself, before any runtime: does the module with its float32 islands give finite
audio close to float32's on real sentences, and what does it cost on this device? Eager PyTorch, the batched
modules the graphs are exported from (``export.reference.BatchedVocoder``), the server's own host step between
the stages.

    python benchmarks/gpu_fp16_torch.py [--device cuda] [--runs 20] --out torch.json

Per sentence alone and for a batch of all of them (and the first repeated to 16 rows): NaN count, the fp16
audio's relative L2 and mel distance (dB) against float32, p50 time of each precision, peak allocated memory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SENTENCES = ["好的。", "欢迎使用语音合成系统", "今天天气很好，我们一起去公园散步吧。",
             "客厅温度二十三度，湿度百分之四十五。"]


def main() -> None:
    import torch

    from wyoming_fasttts.assets import ensure_assets, load_vocab, phoneme_ids
    from wyoming_fasttts.backends.base import SynthesisItem
    from wyoming_fasttts.backends.batching import STAGE1_INPUTS, STAGE2_INPUTS, stage1_feeds, stage2_feeds
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.doctor.parity import mel_distance_db
    from wyoming_fasttts.export import reference
    from wyoming_fasttts.text import normalize, phonemize
    from wyoming_fasttts.voices import VoiceBank

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default="gpu_fp16_torch.json")
    args = parser.parse_args()
    dev = torch.device(args.device)
    settings = load_settings()
    assets = ensure_assets(settings.assets)
    vocab, voices = load_vocab(assets.vocab), VoiceBank(assets)
    items = []
    for text in SENTENCES:
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids, voices.style("zf_xiaobei", len(ids)), speed=1.0))
    kmodel = reference.build_kmodel(assets.model, vocab, deterministic=True)
    stage1 = reference.BatchedDurations(kmodel).eval().to(dev)
    vocoders = {p: reference.BatchedVocoder(kmodel, p).eval().to(dev) for p in ("fp32", "fp16")}

    def feeds(batch: list[SynthesisItem]) -> list[Any]:
        f1 = stage1_feeds(batch)
        with torch.inference_mode():
            out = stage1(*(torch.from_numpy(f1[n]).to(dev) for n in STAGE1_INPUTS))
        dur, d, t_en = (x.cpu().numpy() for x in out)
        f2 = stage2_feeds(dur, d, t_en, f1, tail_frames=4)
        return [torch.from_numpy(f2[n]).to(dev) for n in STAGE2_INPUTS]

    def timed(precision: str, inputs: list[Any]) -> tuple[np.ndarray, np.ndarray, float, float]:
        vocoder, ms = vocoders[precision], []
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        with torch.inference_mode():
            for _ in range(args.runs + 2):
                start = time.perf_counter()
                audio, lengths = vocoder(*inputs)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                ms.append((time.perf_counter() - start) * 1000)
        peak = torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda" else 0.0
        return audio.float().cpu().numpy(), lengths.cpu().numpy(), statistics.median(ms[2:]), peak

    cases = {f"alone {i}": [item] for i, item in enumerate(items)}
    cases["batch of all"] = items
    cases["batch 16"] = [items[1]] * 16
    report: dict[str, Any] = {"device": str(dev), "torch": torch.__version__, "runs": args.runs, "cases": {}}
    for name, batch in cases.items():
        inputs = feeds(batch)
        got = {p: timed(p, inputs) for p in ("fp32", "fp16")}
        ref, lengths = got["fp32"][0], got["fp32"][1]
        half = got["fp16"][0]
        rows = [(ref[r, :lengths[r]], half[r, :lengths[r]]) for r in range(len(batch))]
        row = {"rows": len(batch), "frames": int(inputs[0].shape[2]), "nan": int(np.isnan(half).sum()),
               "lengths_equal": bool(np.array_equal(lengths, got["fp16"][1])),
               "rel_l2": max(float(np.linalg.norm(a - b) / np.linalg.norm(a)) for a, b in rows),
               "mel_db": max(mel_distance_db(a, b) for a, b in rows),
               "fp32_p50_ms": round(got["fp32"][2], 2), "fp16_p50_ms": round(got["fp16"][2], 2),
               "fp32_peak_mib": round(got["fp32"][3]), "fp16_peak_mib": round(got["fp16"][3])}
        report["cases"][name] = row
        print(name, row, flush=True)
    Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
