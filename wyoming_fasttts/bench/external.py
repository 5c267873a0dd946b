"""The external client's view: ``wyoming-bench tts`` (PyPI) against the same servers, its summary parsed.

wyoming-bench measures one server after the other; on a shared machine load that comes and goes would then
favour one of them, so it is run in passes with the server order reversed each time and the passes pooled.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_ROW = re.compile(r"^\s+(\S+) \((.+?)\)\s+(\d+)\s+([\d.]+|-)\s+([\d.]+|-)\s+([\d.]+|-)")
_MODE = re.compile(r"^\[(\w+)\]\s*$")


@dataclass(frozen=True)
class WbRow:
    """One summary row: server address, mode, successful runs, mean/p95 time to first audio, mean total (ms)."""

    server: str
    mode: str
    ok: int
    ttft_mean_ms: float | None
    ttft_p95_ms: float | None
    total_mean_ms: float | None


def parse_summary(output: str) -> list[WbRow]:
    """Rows of the ``Summary`` block that ends wyoming-bench's report."""
    _, found, summary = output.partition("Summary (lower is better)")
    if not found:
        raise ValueError("wyoming-bench printed no summary:\n" + output[-2000:])
    rows, mode = [], None
    for line in summary.splitlines():
        if m := _MODE.match(line):
            mode = m.group(1)
        elif mode and (m := _ROW.match(line)):
            values = [None if v == "-" else float(v) for v in m.group(4, 5, 6)]
            rows.append(WbRow(m.group(1), mode, int(m.group(3)), *values))
    return rows


def command(servers: list[str], texts: list[str], rounds: int, warmup: int) -> list[str]:
    exe = shutil.which("wyoming-bench") or str(Path(sys.executable).with_name("wyoming-bench"))
    return [exe, "tts", *servers, "--mode", "both", "--no-unique", "--rounds", str(rounds), "--warmup", str(warmup),
            "--texts", *texts]


def run_passes(servers: list[str], texts: list[str], rounds: int, warmup: int, passes: int
               ) -> tuple[list[str], list[WbRow]]:
    """Raw outputs (one per pass) and every summary row, server order reversed on odd passes."""
    outputs, rows = [], []
    for n in range(passes):
        order = servers if n % 2 == 0 else servers[::-1]
        done = subprocess.run(command(order, texts, rounds, warmup), capture_output=True, text=True, check=False)
        output = done.stdout + done.stderr
        if done.returncode != 0:
            raise RuntimeError(f"wyoming-bench exited with {done.returncode}:\n{output[-3000:]}")
        outputs.append(f"$ {' '.join(command(order, texts, rounds, warmup))}\n{output}")
        rows += parse_summary(output)
    return outputs, rows


def pooled(rows: list[WbRow]) -> dict[tuple[str, str], dict[str, float]]:
    """(server, mode) -> runs and run-weighted mean TTFT / total over all passes."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in rows:
        if row.ttft_mean_ms is None or row.total_mean_ms is None or not row.ok:
            continue
        acc = out.setdefault((row.server, row.mode), {"runs": 0, "ttft_mean_ms": 0.0, "total_mean_ms": 0.0})
        n = acc["runs"] + row.ok
        acc["ttft_mean_ms"] += (row.ttft_mean_ms - acc["ttft_mean_ms"]) * row.ok / n
        acc["total_mean_ms"] += (row.total_mean_ms - acc["total_mean_ms"]) * row.ok / n
        acc["runs"] = n
    return out
