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

``--fp16`` (thirty-first pass) adds the one-call LSTM in float16 (``one_call_fp16``) and the same with its rows padded
to a multiple of 8 (``one_call_fp16_pad8``): PyTorch picks cuDNN's persistent LSTM kernel (the recurrent weights held on
chip for the whole sequence instead of one matrix product a step) only for float16 data, one direction, widths a
multiple of 128, and on an H100-class GPU batches a multiple of 8 (``use_persist_device_heuristics`` in ATen's
cudnn/RNN.cpp). Each form's cuDNN kernels, by name, go into the report: which algorithm ran, not assumed. (The run
of 2026-12-07 padded with a copy of its own, zero rows of full length as ``OneCallLSTM(half=True)`` adds them; the
padded form is now the engine's own.)
"""

from __future__ import annotations

import argparse
import copy
import json

import torch
from replay_timing import captured, interleaved, summary, write_report  # beside this script

from wyoming_fasttts.export.lstm import LengthAwareLSTM, OneCallLSTM


class Half(torch.nn.Module):
    """A one-call LSTM run in float16 as it is, rows unpadded, float32 in and out (``OneCallLSTM(half=True)`` pads
    them to 8)."""

    def __init__(self, inner: OneCallLSTM) -> None:
        super().__init__()
        self.inner = copy.deepcopy(inner).half()

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.inner(x.half(), lengths).float()


def rnn_kernels(fn: object) -> list[str]:
    """The names of the cuDNN RNN kernels one eager call of ``fn`` launches (torch.profiler)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()  # type: ignore[operator]
        torch.cuda.synchronize()
    names = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    return sorted(n[:120] for n in names if any(k in n.lower() for k in ("rnn", "lstm", "persist")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="2:64,8:64,16:64,2:160,8:160,16:160",
                        help="rows:steps pairs (the stages' bucket shapes)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--fp16", action="store_true",
                        help="also the one-call LSTM in float16, as is and padded to 8 rows")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []
    with torch.inference_mode():
        lstm = torch.nn.LSTM(640, 256, batch_first=True, bidirectional=True)
        two = LengthAwareLSTM(lstm).cuda().eval()
        one = OneCallLSTM(lstm).cuda().eval()
        forms: dict[str, torch.nn.Module] = {"two_calls": two, "one_call": one}
        if args.fp16:
            forms.update(one_call_fp16=Half(one), one_call_fp16_pad8=OneCallLSTM(lstm, half=True).cuda().eval())
        for shape in args.shapes.split(","):
            rows, steps = (int(v) for v in shape.split(":"))
            x = torch.randn(rows, steps, 640, device="cuda")
            lengths = torch.full((rows,), steps, device="cuda", dtype=torch.int64)
            lengths[0] = max(1, steps - 5)
            graphs = {name: captured(lambda module=module, x=x, lengths=lengths: module(x, lengths))
                      for name, module in forms.items()}
            times = interleaved({name: graph for name, (graph, _) in graphs.items()}, args.runs)
            valid = (torch.arange(steps, device="cuda")[None, :] < lengths[:, None])[..., None]
            diff = {f"{name}_max_abs_diff": ((graphs["two_calls"][1] - out).abs() * valid).max().item()
                    for name, (_, out) in graphs.items() if name != "two_calls"}
            kernels = {f"{name}_kernels": rnn_kernels(lambda module=module, x=x, lengths=lengths: module(x, lengths))
                       for name, module in forms.items()} if args.fp16 else {}
            row = {"rows": rows, "steps": steps, **diff, **summary(times), **kernels}
            results.append(row)
            print(json.dumps(row), flush=True)
    write_report(args.out, args.runs, results)


if __name__ == "__main__":
    main()
