"""The stages' bidirectional LSTMs: length-aware, and in the torch-cuda engine both directions in one call.

A module of torch alone, so that ``benchmarks/gpu_lstm_merge.py`` can time these on a GPU machine that has PyTorch
and nothing else of the project's.
"""

from __future__ import annotations

import torch
from torch import nn

_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
"""A one-layer LSTM's tensors, each ``{name}_l0`` in PyTorch (``_reverse`` appended for a backward direction)."""


def _tensors(lstm: nn.LSTM, suffix: str = "") -> dict[str, torch.Tensor]:
    return {name: getattr(lstm, f"{name}_l0{suffix}").detach() for name in _NAMES}


def reverse_index(lengths: torch.Tensor, size: int) -> torch.Tensor:
    """[B, size, 1] index that reverses each row within its length and leaves the padding in place."""
    t = torch.arange(size, device=lengths.device)[None, :]
    last = lengths[:, None] - 1
    return torch.where(t <= last, last - t, t).unsqueeze(-1)


def _flip(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """[B, N, C] with each row's valid steps reversed by ``reverse_index``'s ``index`` (its own inverse)."""
    return torch.gather(x, 1, index.expand(-1, -1, x.shape[2]))


class LengthAwareLSTM(nn.Module):
    """A bidirectional one-layer LSTM whose backward pass starts at each row's last valid step."""

    def __init__(self, lstm: nn.LSTM) -> None:
        super().__init__()
        self.forward_lstm, self.backward_lstm = (
            nn.LSTM(lstm.input_size, lstm.hidden_size, batch_first=True) for _ in range(2))
        for suffix, target in (("", self.forward_lstm), ("_reverse", self.backward_lstm)):
            own = _tensors(target)
            for name, value in _tensors(lstm, suffix).items():
                own[name].copy_(value)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """[B, N, C] -> [B, N, 2H]; steps past a row's length hold garbage (callers mask)."""
        index = reverse_index(lengths, x.shape[1])
        ahead, _ = self.forward_lstm(x)
        back, _ = self.backward_lstm(_flip(x, index))
        return torch.cat([ahead, _flip(back, index)], dim=-1)


HALF_ROWS = 8
"""``OneCallLSTM(half=True)`` pads its rows to a multiple of this: PyTorch asks cuDNN for its persistent LSTM kernel on
GPUs of compute capability 8.0+ with 98 or more SMs only for batches that are (``use_persist_device_heuristics``
in ATen's cudnn/RNN.cpp); a pair runs as 8 rows at a pair's cost (0.154 ms against 0.383 unpadded in float16, 64
steps, an H100, 2026-12-07, docs/BENCHMARKS.md, thirty-first pass)."""


class OneCallLSTM(nn.Module):
    """A bidirectional one-layer LSTM summed as ``LengthAwareLSTM`` sums it, both directions in one LSTM of twice its
    width: the forward input beside the row-reversed one, each direction's gates reading only its own half of the
    input and of the state (the weights block-diagonal, the blocks between the directions zero).

    Why. On a GPU an LSTM steps through its sequence one small matrix product and one gate kernel at a time, and at
    these sizes a step waits on latency, not arithmetic: the directions one after the other made each of the
    stages' six LSTMs a chain of twice its bucket's tokens (stage 1, five of them) or frames (stage 2) in short
    kernels. Twice the width costs a step ~1.4x, half the steps ~0.7x in all: one LSTM of the model's size
    (input 640, 256 a direction) at 2 rows, captured, 0.90 -> 0.65 ms over 64 steps and 2.17 -> 1.53 ms over
    160; the torch-cuda engine's pair of stages alone 15.4 -> 13.7 ms and 16.4 -> 14.0 in two pairs of runs; the
    backward direction on a stream of its own beside the forward one gained nothing (an H100, 2026-12-07,
    ``benchmarks/gpu_lstm_merge.py``, docs/BENCHMARKS.md, twenty-ninth pass). The zero blocks add exact zeros: the
    CPU gives the two forms' outputs equal to the bit, an H100 equal at 2 rows and within 1e-4 at 8 and 16.

    ``half=True`` holds the LSTM in float16 and runs it on rows padded to ``HALF_ROWS``, its input and output float32
    as before: with float16 data, one direction and widths a multiple of 128 (512 wide, 1280 or 1024 in here) cuDNN
    runs the whole sequence in one persistent kernel that keeps the recurrent weights on chip (``ampere_lstm_tile16``;
    its sums in float32) instead of a matrix product and a gate kernel a step. Captured on an H100, 2 rows: 64
    steps 0.64 -> 0.15 ms, 160 steps 1.71 -> 0.34; 8 rows 0.75 -> 0.17 and 1.75 -> 0.32; outputs within 5.4e-4 of
    float32 (2026-12-07, ``benchmarks/gpu_lstm_merge.py --fp16``, docs/BENCHMARKS.md, thirty-first pass). Where
    PyTorch does not pick the persistent kernel (sm_86 cards such as the RTX 3060 are excluded) the same LSTM
    runs cuDNN's step-by-step kernels in float16 (0.38 ms at 2 rows over 64 steps on the H100)."""

    def __init__(self, lstm: nn.LSTM, half: bool = False) -> None:
        super().__init__()
        c, h = lstm.input_size, lstm.hidden_size
        self.hidden_size = h
        """A direction's: the merged LSTM's output is the forward half, then the backward."""
        self.rows = HALF_ROWS if half else 1
        """The multiple the rows are padded to (``half``; 1: none)."""
        self.lstm = nn.LSTM(2 * c, 2 * h, batch_first=True)
        merged = _tensors(self.lstm)
        for value in merged.values():
            value.zero_()
        for side, suffix in enumerate(("", "_reverse")):
            own = _tensors(lstm, suffix)
            for gate in range(4):  # PyTorch's gate order i, f, g, o; a gate's rows: the forward half, the backward
                src, rows = slice(gate * h, (gate + 1) * h), slice((2 * gate + side) * h, (2 * gate + side + 1) * h)
                merged["weight_ih"][rows, side * c:(side + 1) * c] = own["weight_ih"][src]
                merged["weight_hh"][rows, side * h:(side + 1) * h] = own["weight_hh"][src]
                merged["bias_ih"][rows] = own["bias_ih"][src]
                merged["bias_hh"][rows] = own["bias_hh"][src]
        if half:
            self.lstm.half()

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """[B, N, C] -> [B, N, 2H], as ``LengthAwareLSTM`` (float32 in and out, whatever the LSTM's own dtype)."""
        index = reverse_index(lengths, x.shape[1])
        both = torch.cat([x, _flip(x, index)], dim=-1)
        if self.rows > 1:  # zero rows of full length, dropped again: each row's steps are its own
            rows = x.shape[0]
            padded = nn.functional.pad(both, (0, 0, 0, 0, 0, -rows % self.rows)).half()
            both = self.lstm(padded)[0][:rows].float()
        else:
            both, _ = self.lstm(both)
        ahead, back = both.split(self.hidden_size, dim=-1)
        return torch.cat([ahead, _flip(back, index)], dim=-1)
