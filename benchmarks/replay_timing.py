"""Shared by the PyTorch GPU microbenchmarks (``gpu_lstm_merge.py``, ``gpu_products.py``; ``gpu_kernels.py`` captures
with it): a call captured in a CUDA graph the way the torch-cuda engine captures its stages (warmed on a side stream
first), and graphs replayed interleaved, one after another each run, so a machine's drift reaches every form alike;
each form's p50 and p90, and the report the first two write."""

from __future__ import annotations

import json
import statistics
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


def summary(times: dict[str, list[float]]) -> dict[str, float]:
    """``interleaved``'s times as each form's p50 and p90 in ms (``NAME_p50_ms``, ``NAME_p90_ms``)."""
    return {**{f"{name}_p50_ms": statistics.median(t) for name, t in times.items()},
            **{f"{name}_p90_ms": statistics.quantiles(t, n=10)[-1] for name, t in times.items()}}


def write_report(path: str, runs: int, results: list[dict[str, Any]]) -> None:
    """The rows measured, with the device and the libraries they ran on, as JSON at ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "cudnn": torch.backends.cudnn.version(), "runs": runs, "results": results}, f, indent=1)
