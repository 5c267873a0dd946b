"""What batching buys on a GPU: the batched stage modules (the very code the batched graphs are exported from)
run eagerly on CUDA, time per sentence at batch 1, 4, 8, 16.

The host step between the stages is the server's own (``model.batching``), so the numbers include it. Inputs
come from ``benchmarks/gpu_table.py prepare`` (our server's ids and style for 欢迎使用语音合成系统); rows of
a "mixed" batch cut that sentence to 100/80/60/40 % of its ids, so padding is paid as in real traffic.

    python benchmarks/gpu_batching.py --inputs inputs.json --model kokoro-v1.0.int8.onnx --vocab vocab.json \\
        [--device cuda] [--runs 50] [--batches 1,4,8,16] [--out gpu_batching.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_fasttts.backends.base import SynthesisItem
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, STAGE2_INPUTS, stage1_feeds, stage2_feeds


def _rows(item: dict, batch: int, mixed: bool) -> list[SynthesisItem]:
    ids = np.array(item["ids"], np.int64)
    style = np.array(item["style"], np.float32)
    cuts = [1.0, 0.8, 0.6, 0.4] if mixed else [1.0]
    return [SynthesisItem(ids[: max(4, int(len(ids) * cuts[i % len(cuts)]))], style) for i in range(batch)]


def main() -> None:
    import torch

    from wyoming_fasttts.export import reference

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--batches", default="1,4,8,16")
    parser.add_argument("--out", default="gpu_batching.json")
    args = parser.parse_args()

    item = json.loads(Path(args.inputs).read_text())["items"][0]
    vocab = json.loads(Path(args.vocab).read_text())["vocab"]
    kmodel = reference.build_kmodel(Path(args.model), vocab, deterministic=True)
    stage1 = reference.BatchedDurations(kmodel).eval().to(args.device)
    stage2 = reference.BatchedVocoder(kmodel).eval().to(args.device)
    cuda = args.device.startswith("cuda")

    def run(rows: list[SynthesisItem]) -> int:
        feeds1 = stage1_feeds(rows)
        with torch.inference_mode():
            out1 = stage1(*(torch.from_numpy(feeds1[n]).to(args.device) for n in STAGE1_INPUTS))
            durations, d, t_en = (x.float().cpu().numpy() for x in out1)
            feeds2 = stage2_feeds(durations, d, t_en, feeds1, tail_frames=4)
            _audio, lengths = stage2(*(torch.from_numpy(feeds2[n]).to(args.device) for n in STAGE2_INPUTS))
            total = int(lengths.sum().item())
        if cuda:
            torch.cuda.synchronize()
        return total

    results = []
    for mixed in (False, True):
        for batch in (int(b) for b in args.batches.split(",")):
            rows = _rows(item, batch, mixed)
            for _ in range(3):
                run(rows)
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                samples = run(rows)
                times.append(time.perf_counter() - start)
            p50 = statistics.median(times)
            row = {"rows": "mixed" if mixed else "same", "batch": batch, "p50_ms": p50 * 1000,
                   "mean_ms": statistics.fmean(times) * 1000, "std_ms": statistics.pstdev(times) * 1000,
                   "per_sentence_ms": p50 * 1000 / batch, "sentences_per_s": batch / p50,
                   "audio_s_per_batch": samples / 24000}
            results.append(row)
            print(json.dumps(row), flush=True)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
    meta = {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
            "runs": args.runs, "peak_alloc_mib": peak}
    Path(args.out).write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
