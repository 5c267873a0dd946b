"""One bidirectional LSTM of the model's size, its two directions one call after the other (``LengthAwareLSTM``, as the
stages ran them) against both in one call (``OneCallLSTM``), each captured in a CUDA graph and replayed interleaved:
what merging the directions saves a stage, by rows and steps (issue 13, twenty-ninth pass).

Stage 1 runs five such LSTMs over its token bucket (64 for the benchmark sentence), stage 2 one over its frame bucket
(160); both in float32. Random weights of the model's shapes (input 640, hidden 256 a direction): the timing does not
depend on the values. Needs PyTorch with CUDA only (the device machine has it without the project's pack):

    PYTHONPATH=. python3 benchmarks/gpu_lstm_merge.py --out gpu-lstm-merge.json

docs/benchmarks/gpu-lstm-merge-h100-2026-12-07.json also holds a third form this script ran that day and no longer
does (``two_streams``: the backward direction on a stream of its own, two branches of one graph): no faster than two
calls, so not kept.
"""

from __future__ import annotations

import argparse
import json

import torch
from replay_timing import captured, interleaved, summary, write_report  # beside this script

from wyoming_fasttts.export.lstm import LengthAwareLSTM, OneCallLSTM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="2:64,8:64,16:64,2:160,8:160,16:160",
                        help="rows:steps pairs (the stages' bucket shapes)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []
    with torch.inference_mode():
        lstm = torch.nn.LSTM(640, 256, batch_first=True, bidirectional=True)
        two = LengthAwareLSTM(lstm).cuda().eval()
        one = OneCallLSTM(lstm).cuda().eval()
        for shape in args.shapes.split(","):
            rows, steps = (int(v) for v in shape.split(":"))
            x = torch.randn(rows, steps, 640, device="cuda")
            lengths = torch.full((rows,), steps, device="cuda", dtype=torch.int64)
            lengths[0] = max(1, steps - 5)
            graphs = {name: captured(lambda module=module, x=x, lengths=lengths: module(x, lengths))
                      for name, module in (("two_calls", two), ("one_call", one))}
            times = interleaved({name: graph for name, (graph, _) in graphs.items()}, args.runs)
            valid = (torch.arange(steps, device="cuda")[None, :] < lengths[:, None])[..., None]
            diff = {f"{name}_max_abs_diff": ((graphs["two_calls"][1] - out).abs() * valid).max().item()
                    for name, (_, out) in graphs.items() if name != "two_calls"}
            row = {"rows": rows, "steps": steps, **diff, **summary(times)}
            results.append(row)
            print(json.dumps(row), flush=True)
    write_report(args.out, args.runs, results)


if __name__ == "__main__":
    main()
