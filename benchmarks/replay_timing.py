"""Shared by the PyTorch-only GPU microbenchmarks (``gpu_lstm_merge.py``, ``gpu_products.py``): a call captured in a
CUDA graph the way the torch-cuda engine captures its stages (warmed on a side stream first), and graphs replayed
interleaved, one after another each run, so a machine's drift reaches every form alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def captured(fn: Callable[[], Any]) -> tuple[torch.cuda.CUDAGraph, Any]:
    """``fn`` warmed on a side stream, then captured once: the graph and what the captured call returned (its
    output tensors, which every replay rewrites)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out


def interleaved(graphs: dict[str, torch.cuda.CUDAGraph], runs: int) -> dict[str, list[float]]:
    """Each graph's replay time in ms (CUDA events), ``runs`` rounds of one replay of each."""
    times: dict[str, list[float]] = {name: [] for name in graphs}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(runs):
        for name, graph in graphs.items():
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return times
