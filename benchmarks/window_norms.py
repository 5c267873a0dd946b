"""Why a sentence's first frame window sounds different from its whole render: the instance norms, measured.

Issue 15's frame windows (``backends.windows``) start a sentence's audio after its first window, the start pad
plus ``first_frames`` speech frames and 16 of right context (as first shipped). That first part differs from the
whole render by ~3 dB log-mel (``window_vocoder.py``), and the ear hears it (docs/BENCHMARKS.md). Stage 2's decoder and
generator are convolutions with a short reach, but 70 instance norms (prosody 12, decoder 10, the generator's
noise branches 12 and resblocks 36) take each channel's mean and variance over all the frames they see. This
renders the first window with its norms' statistics taken from elsewhere, eager PyTorch float32 on the CPU
(the ``export`` extra), and gives the first part's log-mel distance from the whole render (``doctor.parity``)
for each:

- ``window``: its own statistics (what ships);
- ``sentence``: the whole sentence's, all 70 norms (and with a first window of 24 + 8 frames);
- ``sentence:<group>``: the sentence's for one group of norms, the window's own for the rest;
- ``prior``: the mean of the other sentences' statistics of the same voice, blended with the window's own
  (weight of the window's: 0, 0.5);
- ``bias``: the window's own, corrected by the mean log-ratio (variance) and shift (mean) between the other
  sentences' whole and first-window statistics;
- ``faster``: the statistics of the same sentence rendered with every token's frames divided by 2 or 4 (a
  cheaper whole render), blended half and half with the window's own;
- ``closing``: its own, with the sentence's last 8, 16 or 24 frames (the phrase-final syllable drawn out, the
  closing mark's silence) joined after the window for the norms (what ships: ``engine.windows.closing_frames``),
  against as many more frames of right context, or 16 from the sentence's middle.

    python benchmarks/window_norms.py [--voice zf_xiaobei] [--out out/window-norms.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from closing_silence import vocode  # noqa: E402

from wyoming_fasttts.assets import ensure_assets, load_vocab  # noqa: E402
from wyoming_fasttts.backends.alignment import SAMPLES_PER_FRAME, alignment, frame_counts  # noqa: E402
from wyoming_fasttts.backends.batching import STAGE1_INPUTS, stage1_feeds  # noqa: E402
from wyoming_fasttts.config import load_settings  # noqa: E402
from wyoming_fasttts.core import SynthesisItem  # noqa: E402
from wyoming_fasttts.doctor.parity import mel_distance_db  # noqa: E402
from wyoming_fasttts.export import reference as ref  # noqa: E402
from wyoming_fasttts.synthesizer import Synthesizer  # noqa: E402
from wyoming_fasttts.voices import VoiceBank  # noqa: E402

TEXTS = ["洗衣机已经完成了本次的洗涤程序。", "检测到厨房的燃气浓度超过了安全标准。",
         "您的快递已经放在小区东门的快递柜里了。", "欢迎使用语音合成系统",
         "根据您设置的自动化规则，所有窗帘将在日落时自动关闭。", "前门的智能门锁刚才被您的家人用指纹打开了。",
         "主卧的空调已经调到二十六度。", "明天上午九点有一个重要的会议，请提前准备好资料。"]
GROUPS = {"prosody": range(0, 12), "decoder": range(12, 22), "noise": [*range(22, 28), *range(46, 52)],
          "resblocks, first upsampling": range(28, 46), "resblocks, second upsampling": range(52, 70)}
"""The norms in the order the reference stage 2 calls them (``reference.BatchedVocoder``)."""

Stats = list[tuple[torch.Tensor, torch.Tensor]]
Rule = Callable[[int, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""(norm index, the window's own mean, variance) -> the mean and variance to normalise with."""


class Norms:
    """``reference._instance_norm`` that records each call's statistics, or normalises with other ones."""

    def __init__(self) -> None:
        self.recorded: Stats = []
        self.rule: Rule | None = None
        self._calls = 0
        self._original = ref._instance_norm

    def __enter__(self) -> Norms:
        ref._instance_norm = self
        return self

    def __exit__(self, *exc: object) -> None:
        ref._instance_norm = self._original

    def reset(self, rule: Rule | None = None) -> None:
        self.recorded, self.rule, self._calls = [], rule, 0

    def __call__(self, x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
        count = mask.sum(dim=-1, keepdim=True)
        mean = (x * mask).sum(dim=-1, keepdim=True) / count
        var = (((x - mean) * mask) ** 2).sum(dim=-1, keepdim=True) / count
        self.recorded.append((mean, var))
        if self.rule is not None:
            mean, var = self.rule(self._calls, mean, var)
        self._calls += 1
        return (x - mean) * mask / torch.sqrt(var + eps)


def blend(given: Stats, own_weight: float, only: range | list[int] | None = None) -> Rule:
    """Normalise with ``given`` (where ``only`` holds, else the window's own), mixed with the window's own as
    the statistics of the two pooled sets of steps, weighted ``own_weight`` : 1 - ``own_weight``."""
    def rule(i: int, mean: torch.Tensor, var: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if only is not None and i not in only:
            return mean, var
        g_mean, g_var = given[i]
        m = own_weight * mean + (1 - own_weight) * g_mean
        return m, own_weight * (var + (mean - m) ** 2) + (1 - own_weight) * (g_var + (g_mean - m) ** 2)
    return rule


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="zf_xiaobei")
    parser.add_argument("--out", default="out/window-norms.json")
    args = parser.parse_args()
    torch.set_num_threads(2)
    settings = load_settings()
    windows = settings.engine.windows
    assets = ensure_assets(settings.assets, voices=[args.voice])
    vocab = load_vocab(assets.vocab)
    synth = Synthesizer(settings, VoiceBank(assets, [args.voice]), vocab, scheduler=None)  # type: ignore[arg-type]
    kmodel = ref.build_kmodel(assets.model, vocab, deterministic=True)
    durations_model, vocoder = ref.BatchedDurations(kmodel).eval(), ref.BatchedVocoder(kmodel).eval()
    with Norms() as norms, torch.inference_mode():
        sentences = []
        for text in TEXTS:
            piece = synth.sentences(text)[0]
            feeds = stage1_feeds([SynthesisItem(piece.ids, synth.voices.style(args.voice, len(piece.ids)))])
            durations, d, t_en = durations_model(*(torch.from_numpy(feeds[n]) for n in STAGE1_INPUTS))
            counts = frame_counts(durations[0].numpy(), settings.engine.tail_frames)
            inputs = (d, t_en, torch.from_numpy(feeds["style"]))
            norms.reset()
            whole = vocode(vocoder, torch.from_numpy(alignment(counts)), *inputs, int(counts.sum()))
            sentences.append({"text": text, "counts": counts, "inputs": inputs, "whole": whole,
                              "stats": norms.recorded})

        def first_part(k: int, rule: Rule | None = None, first: int = windows.first_frames,
                       right: int = 16, joined: Callable[[int, int], range] | None = None) -> tuple[float, Stats]:
            """The first window's speech against the whole render's (dB), and the statistics it normalised by;
            ``joined(hi, total)``: frames rendered after the window's [0, hi), for its norms."""
            s = sentences[k]
            pad, total = int(s["counts"][0]), int(s["counts"].sum())
            end = pad + first
            hi = min(total, end + right)
            norms.reset(rule)
            frames = [*range(hi), *(joined(hi, total) if joined else ())]
            audio = vocode(vocoder, torch.from_numpy(alignment(s["counts"])), *s["inputs"], frames)
            span = slice(pad * SAMPLES_PER_FRAME, end * SAMPLES_PER_FRAME)
            return mel_distance_db(s["whole"][span], audio[span]), norms.recorded

        own = [first_part(k)[1] for k in range(len(sentences))]
        rows = []
        for k, s in enumerate(sentences):
            others = [j for j in range(len(sentences)) if j != k]
            n_norms = len(s["stats"])
            prior = [(torch.stack([sentences[j]["stats"][i][0] for j in others]).mean(0),
                      torch.stack([sentences[j]["stats"][i][1] for j in others]).mean(0)) for i in range(n_norms)]
            log_ratio = [torch.stack([torch.log(sentences[j]["stats"][i][1] + 1e-5) - torch.log(own[j][i][1] + 1e-5)
                                      for j in others]).mean(0) for i in range(n_norms)]
            shift = [torch.stack([(sentences[j]["stats"][i][0] - own[j][i][0]) / torch.sqrt(own[j][i][1] + 1e-5)
                                  for j in others]).mean(0) for i in range(n_norms)]

            def bias(i: int, mean: torch.Tensor, var: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                return mean + shift[i] * torch.sqrt(var), var * torch.exp(log_ratio[i])  # noqa: B023

            row: dict[str, object] = {"text": s["text"], "frames": int(s["counts"].sum()),
                                      "window": first_part(k)[0],
                                      "sentence": first_part(k, blend(s["stats"], 0.0))[0],
                                      "sentence, first window 24 + 8": first_part(k, blend(s["stats"], 0.0), 24, 8)[0]}
            for name, group in GROUPS.items():
                row[f"sentence: {name}"] = first_part(k, blend(s["stats"], 0.0, group))[0]
            for weight in (0.0, 0.5):
                row[f"prior, own weight {weight}"] = first_part(k, blend(prior, weight))[0]
            row["bias"] = first_part(k, bias)[0]
            for q in (2, 4):
                c = s["counts"]
                faster = np.maximum((c > 0).astype(c.dtype), np.round(c / q).astype(c.dtype))
                norms.reset()
                vocode(vocoder, torch.from_numpy(alignment(faster)), *s["inputs"], int(faster.sum()))
                row[f"faster x{q} frames"] = int(faster.sum())
                row[f"faster x{q}, own weight 0.5"] = first_part(k, blend(norms.recorded, 0.5))[0]
            for more in (8, 16, 24):
                row[f"closing {more}"] = first_part(k, joined=lambda hi, total, n=more: range(total - n, total))[0]
                row[f"right context +{more}"] = first_part(k, right=16 + more)[0]
            row["middle 16"] = first_part(k, joined=lambda hi, total: range((hi + total) // 2 - 8,
                                                                            (hi + total) // 2 + 8))[0]
            rows.append(row)
            print({key: round(v, 2) if isinstance(v, float) else v for key, v in row.items()}, flush=True)
    keys = [key for key in rows[0] if key not in ("text", "frames") and not key.endswith(" frames")]
    print("\n| statistics the first window is normalised by | first part vs whole render, mean dB (8 sentences) |")
    print("|---|---|")
    for key in keys:
        print(f"| {key} | {np.mean([r[key] for r in rows]):.2f} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"voice": args.voice, "windows": dataclasses.asdict(windows), "rows": rows},
                                         ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
