"""Stage 2's small matrix products as one kernel each (the torch-cuda engine's stage 2; ``BatchedVocoder``'s
``fused_products``).

Why: stage 2 projects the style for each of its 70 AdaIN norms with a ``Linear`` of its own (128 -> 2C, a row per
sentence) and mixes the source's 9 harmonics with a ``Linear(9, 1)`` over every sample. Inductor leaves matrix
products to cuBLAS, so the first are 70 float32 products of a few rows each and the second a matrix-vector product
reading the 9 harmonics back from memory. Captured on an H100 the 70 take 0.21-0.25 ms and the two products here
0.03; the mix 0.02-0.12 ms and the fused sum 0.01-0.05: the engine alone 0.12-0.28 ms faster a call, side by side
(2026-12-07, docs/BENCHMARKS.md, thirty-first pass; a profile had suggested 1.3-2.3 ms, most of which was the LSTM).
Here each style half is projected once for every norm that reads it (one product, each norm reading its own
columns), and the harmonics are mixed by a multiply and a sum that inductor fuses into the kernel computing them.
The same sums in another order: outputs equal to float32 rounding. The exported graphs keep the ``Linear`` layers.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class StyleColumns(nn.Module):
    """An AdaIN norm's ``fc`` in a stage whose style projections are one product (``StyleProjections``): its
    columns of that product, [B, 2C], from the projected style [B, all norms' 2C] its callers pass in place of
    the style."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__()
        self.start, self.end = start, end

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        return projected[:, self.start:self.end]


class StyleProjections(nn.Module):
    """Every ``fc`` of the ``norm_type`` modules inside ``parts`` as one ``Linear``; each of those modules' ``fc`` is
    replaced, in place, by its ``StyleColumns`` (so ``parts`` must be the stage's own copy). The weights move into
    the one product, each held once."""

    def __init__(self, parts: Sequence[nn.Module], norm_type: type[nn.Module]) -> None:
        super().__init__()
        weights, biases, start = [], [], 0
        for part in parts:
            for norm in [m for m in part.modules() if isinstance(m, norm_type)]:
                fc: nn.Linear = norm.fc  # type: ignore[assignment]
                weights.append(fc.weight.detach())
                biases.append(fc.bias.detach())
                norm.fc = StyleColumns(start, start + fc.out_features)
                start += fc.out_features
        if not weights:
            raise ValueError(f"no {norm_type.__name__} in the parts given")
        self.weight = nn.Parameter(torch.cat(weights), requires_grad=False)
        self.bias = nn.Parameter(torch.cat(biases), requires_grad=False)

    def forward(self, style: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(style, self.weight, self.bias)


class HarmonicMix(nn.Module):
    """The source's ``l_linear`` (harmonics [..., H] -> [..., 1]) as a multiply and a sum over the last axis."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        if linear.out_features != 1 or linear.bias is None:
            raise ValueError(f"{linear}: a harmonic mix has one output and a bias (the source's l_linear)")
        self.weight = nn.Parameter(linear.weight.detach()[0], requires_grad=False)
        self.bias = nn.Parameter(linear.bias.detach(), requires_grad=False)

    def forward(self, harmonics: torch.Tensor) -> torch.Tensor:
        return (harmonics * self.weight).sum(dim=-1, keepdim=True) + self.bias
