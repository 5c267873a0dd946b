"""Numbers → the report: summary statistics, ratios against the baseline, goal checks, Markdown and a PNG.

The report is one JSON-able dict; Markdown and the plot are rendered from it alone, so a saved JSON can be
re-rendered without measuring again.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the GPU table imports this module where the Wyoming client is not installed
    from .load import LoadResult, Sample

MIB = 1 << 20


def summary_ms(values_s: list[float]) -> dict[str, float]:
    ms = np.asarray(values_s, np.float64) * 1000.0
    return {
        "n": len(ms), "mean": float(ms.mean()), "std": float(ms.std()), "min": float(ms.min()),
        "p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
        "p99": float(np.percentile(ms, 99)), "max": float(ms.max()),
    }


def sequential_row(samples: list[Sample]) -> dict[str, float]:
    row = summary_ms([s.latency_s for s in samples])
    row["rtf"] = statistics.fmean(s.rtf for s in samples)
    row["audio_s"] = statistics.fmean(s.audio_s for s in samples)
    return row


def load_row(result: LoadResult) -> dict[str, float]:
    lat = summary_ms([s.latency_s for s in result.samples])
    return {"clients": result.clients, "requests": len(result.samples), "qps": result.qps, "p50": lat["p50"],
            "p99": lat["p99"], "mean": lat["mean"]}


def first_audio_row(samples: list[Sample]) -> dict[str, float]:
    ttfa = summary_ms([s.first_audio_s for s in samples])
    return {"n": ttfa["n"], "ttfa_mean": ttfa["mean"], "ttfa_p50": ttfa["p50"], "ttfa_std": ttfa["std"],
            "total_mean": summary_ms([s.latency_s for s in samples])["mean"],
            "audio_s": statistics.fmean(s.audio_s for s in samples), "cycles": samples[0].cycles,
            "stalled": sum(s.stall_s > 0 for s in samples),
            "stall_ms_mean": 1000 * statistics.fmean(s.stall_s for s in samples)}


def mib(value: int | None) -> float | None:
    return None if value is None else round(value / MIB, 1)


# ------------------------------------------------------------------------------------------- ratios, goals

def ratios(report: dict[str, Any], ours: str, baseline: str) -> dict[str, float]:
    """How ``ours`` compares with ``baseline`` in the same run (>1 = ours better, except *_ratio_ttfa)."""
    out: dict[str, float] = {}
    seq = report.get("sequential", {}).get("rows", {})
    if ours in seq and baseline in seq:
        out["speedup_p50"] = seq[baseline]["p50"] / seq[ours]["p50"]
        out["speedup_mean"] = seq[baseline]["mean"] / seq[ours]["mean"]
    levels = report.get("load", {}).get("levels", {})
    if ours in levels and baseline in levels:
        mine = {row["clients"]: row for row in levels[ours]}
        for row in levels[baseline]:
            if row["clients"] in mine:
                out[f"throughput_x_c{row['clients']}"] = mine[row["clients"]]["qps"] / row["qps"]
    fa = report.get("first_audio", {}).get("rows", {})
    if ours in fa and baseline in fa:
        for key, row in fa[ours].items():
            if key in fa[baseline]:
                out[f"ttfa_ratio {key}"] = row["ttfa_mean"] / fa[baseline][key]["ttfa_mean"]
    return out


def goals(report: dict[str, Any], ours: str, gpu: bool) -> list[dict[str, Any]]:
    """The issue's targets that apply to this engine, each with the measured value and whether it is met."""
    out: list[dict[str, Any]] = []

    def check(goal: str, value: float | None, ok: bool | None) -> None:
        if value is not None:
            out.append({"goal": goal, "value": round(value, 3), "met": bool(ok)})

    seq = report.get("sequential", {}).get("rows", {}).get(ours)
    if seq:
        check("jitter: std <= 10% of mean (sequential)", seq["std"] / seq["mean"], seq["std"] <= 0.10 * seq["mean"])
        if gpu:
            check("GPU: std <= 3% of mean", seq["std"] / seq["mean"], seq["std"] <= 0.03 * seq["mean"])
    peak = report.get("servers", {}).get(ours, {}).get("peak_rss_mib")
    if not gpu and peak is not None:
        # Issue 12 counts in binary units: its "1.3 GB" peak was 1336 MiB, its plain server's "0.5 GB" 526 MiB.
        check("CPU: peak RSS <= 0.7 GiB", peak / 1024, peak <= 0.7 * 1024)
    levels = {row["clients"]: row for row in report.get("load", {}).get("levels", {}).get(ours, [])}
    if levels:
        top = levels[max(levels)]
        check(f"no collapse: p99 <= 2 x p50 at saturation (c={top['clients']})", top["p99"] / top["p50"],
              top["p99"] <= 2 * top["p50"])
        if gpu and 16 in levels and 1 in levels and seq:
            check("GPU: QPS(c16) >= 6 x QPS(c1)", levels[16]["qps"] / levels[1]["qps"],
                  levels[16]["qps"] >= 6 * levels[1]["qps"])
            check("GPU: p99(c16) <= 3 x batch-1 p50", levels[16]["p99"] / seq["p50"],
                  levels[16]["p99"] <= 3 * seq["p50"])
    r = report.get("ratios", {}).get(ours, {})
    if levels and not gpu:
        top_x = r.get(f"throughput_x_c{max(levels)}")
        check(f"CPU: throughput >= 1.3 x baseline (c={max(levels)})", top_x, top_x is not None and top_x >= 1.3)
    for mode, value in report.get("wyoming_bench", {}).get("ttfa_ratio", {}).get(ours, {}).items():
        check(f"TTFA (wyoming-bench, replies, {mode}) <= 0.4 x baseline", value, value <= 0.4)
    return out


# ------------------------------------------------------------------------------------------------ Markdown

def _f(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def md_table(heading: str, columns: list[str], rows: list[list[object]]) -> list[str]:
    return [f"### {heading}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(map(str, row)) + " |" for row in rows), ""]


def markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [f"## `wyoming-fasttts bench` — {meta['date']}, {meta['machine']}", "",
             f"Command: `{meta['command']}`", ""]
    if seq := report.get("sequential"):
        srv = report["servers"]
        lines += md_table(
            f"Sequential: {seq['runs']} × {seq['text']} (one-shot, one request at a time, servers interleaved)",
            ["server", "engine", "mean ± std ms", "p50 ms", "p95 ms", "p99 ms", "peak RSS MiB", "GPU MiB", "RTF",
             "audio s"],
            [[name, srv[name]["engine"], f"{_f(r['mean'])} ± {_f(r['std'])}", _f(r["p50"]), _f(r["p95"]),
              _f(r["p99"]), _f(srv[name].get("peak_rss_mib"), 0), _f(srv[name].get("gpu_mib"), 0), _f(r["rtf"], 3),
              _f(r["audio_s"], 2)] for name, r in seq["rows"].items()])
    if load := report.get("load"):
        lines += md_table(
            f"Concurrency: closed-loop clients, {load['text']}",
            ["server", "clients", "timed requests", "QPS", "p50 ms", "p99 ms", "p99 / p50"],
            [[name, r["clients"], r["requests"], _f(r["qps"], 2), _f(r["p50"]), _f(r["p99"]),
              _f(r["p99"] / r["p50"], 2)] for name, rows in load["levels"].items() for r in rows])
    if fa := report.get("first_audio"):
        lines += md_table(
            "Time to first audio (our client, servers interleaved)",
            ["server", "text / mode", "runs", "TTFA mean ms", "TTFA p50 ms", "total mean ms", "audio s", "cycles"],
            [[name, key, r["n"], _f(r["ttfa_mean"]), _f(r["ttfa_p50"]), _f(r["total_mean"]), _f(r["audio_s"], 2),
              r["cycles"]] for name, rows in fa["rows"].items() for key, r in rows.items()])
    if wb := report.get("wyoming_bench"):
        lines += md_table(
            "wyoming-bench (external client), pooled over passes",
            ["server", "mode", "runs", "TTFT mean ms", "total mean ms", "our client, same texts: TTFA mean ms"],
            [[r["name"], r["mode"], r["runs"], _f(r["ttft_mean_ms"]), _f(r["total_mean_ms"]),
              _f(r.get("ours_ttfa_mean_ms"))] for r in wb["pooled"]])
    for name, values in report.get("ratios", {}).items():
        lines += md_table(f"{name} vs baseline (same run)", ["measure", "value"],
                        [[key, f"{value:.2f}"] for key, value in values.items()])
    for name, rows in report.get("goals", {}).items():
        lines += md_table(f"Goals: {name}", ["goal", "measured", "met"],
                        [[g["goal"], f"{g['value']:.3f}", "yes" if g["met"] else "**no**"] for g in rows])
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- plot

def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    seq, load, fa = report.get("sequential"), report.get("load"), report.get("first_audio")
    ax = axes[0][0]
    for name, lat in (seq or {}).get("latencies_ms", {}).items():
        ax.plot(np.sort(lat), np.linspace(0, 1, len(lat)), label=name)
    ax.set(title="sequential latency (CDF)", xlabel="ms", ylabel="fraction")
    for i, (name, rows) in enumerate((load or {}).get("levels", {}).items()):
        clients, color = [r["clients"] for r in rows], f"C{i}"
        axes[0][1].plot(clients, [r["qps"] for r in rows], marker="o", color=color, label=name)
        axes[1][0].plot(clients, [r["p50"] for r in rows], marker="o", color=color, label=f"{name} p50")
        axes[1][0].plot(clients, [r["p99"] for r in rows], marker="x", linestyle="--", color=color, label=f"{name} p99")
        for ax in (axes[0][1], axes[1][0]):
            ax.set_xscale("log")
            ax.set_xticks(clients, [str(c) for c in clients])
    axes[0][1].set(title="throughput", xlabel="concurrent clients", ylabel="requests / s")
    axes[1][0].set(title="latency under load", xlabel="concurrent clients", ylabel="ms", yscale="log")
    ax = axes[1][1]
    fa_rows = (fa or {}).get("rows", {})
    names = list(fa_rows)
    keys = sorted({k for rows in fa_rows.values() for k in rows})
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        ax.bar(np.arange(len(keys)) + i * width, [fa_rows[name].get(k, {}).get("ttfa_mean", 0) for k in keys],
               width, label=name)
    ax.set_xticks(np.arange(len(keys)) + width * (len(names) - 1) / 2, keys, rotation=20, fontsize=7)
    ax.set(title="time to first audio", ylabel="ms")
    for ax in axes.flat:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"wyoming-fasttts bench — {report['meta']['machine']}, {report['meta']['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
