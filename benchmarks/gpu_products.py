"""Stage 2's small matrix products as the stages ran them against ``export.products`` (issue 13, thirtieth pass),
each form captured in a CUDA graph and replayed interleaved, by rows:

* ``styles``: the 70 AdaIN style projections at the model's sizes (12 of the predictor's style half, 58 of the
  decoder's), each its own ``Linear`` (as before) against one product per style half (``StyleProjections``);
* ``source``: the harmonic source's last steps at the 160-frame bucket (96 000 samples a row: the 9 harmonics' sine,
  their mix, tanh), compiled by inductor as the engine compiles stage 2, the mix a ``Linear(9, 1)`` (a cuBLAS
  matrix-vector product reading the harmonics back) against ``HarmonicMix`` (a sum inductor fuses into the sine's
  kernel).

Random weights of the model's shapes (the timing does not depend on the values). Needs PyTorch with CUDA only (the
device machine has it without the project's pack):

    PYTHONPATH=. python3 benchmarks/gpu_products.py --out gpu-products.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import torch
from replay_timing import captured, interleaved, summary, write_report  # beside this script
from torch import nn

from wyoming_fasttts.export.products import HarmonicMix, StyleProjections

# out_features of each AdaIN norm's fc in stage 2, by style half (read from the KModel, 2026-12-07)
_NORMS = {"predictor": [1024] * 6 + [512] * 6,
          "decoder": [512] * 24 + [256] * 24 + [2048] * 4 + [2180] * 4 + [1028, 1024]}
_STYLE = 128
_SAMPLES = 96_000  # 160 frames x 600


class _Norm(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(_STYLE, features)


def _forms(rows: int) -> dict[str, Callable[[], object]]:
    """Each form as a no-argument call on its own inputs of ``rows`` rows."""
    halves = {half: nn.ModuleList(_Norm(n) for n in sizes).cuda() for half, sizes in _NORMS.items()}
    styles = {half: torch.randn(rows, _STYLE, device="cuda") for half in halves}
    each = {half: [norm.fc for norm in norms] for half, norms in halves.items()}  # kept before they are replaced
    one = {half: StyleProjections([norms], _Norm).cuda() for half, norms in halves.items()}

    def projections_each() -> object:
        return [fc(styles[half]) for half, fcs in each.items() for fc in fcs]

    def projections_one() -> object:
        return [one[half](styles[half]) for half in one]

    linear = nn.Linear(9, 1).cuda()
    mix = HarmonicMix(linear).cuda()
    phase = torch.rand(rows, _SAMPLES, 9, device="cuda") * 1e5

    def source(merge: nn.Module) -> Callable[[], object]:
        compiled = torch.compile(lambda p: torch.tanh(merge(torch.sin(p) * 0.1)).squeeze(-1))
        return lambda: compiled(phase)

    return {"styles_each": projections_each, "styles_one": projections_one,
            "source_linear": source(linear), "source_mix": source(mix)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="2,8,16")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []
    with torch.inference_mode():
        for rows in (int(r) for r in args.rows.split(",")):
            times = interleaved({name: captured(fn)[0] for name, fn in _forms(rows).items()}, args.runs)
            row = {"rows": rows, **summary(times)}
            results.append(row)
            print(json.dumps(row), flush=True)
    write_report(args.out, args.runs, results)


if __name__ == "__main__":
    main()
