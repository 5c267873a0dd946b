"""`wyoming-fasttts doctor` on a machine without a GPU: reports what is missing, runs the CPU reference and the CPU
engine the server runs (stage 2 in frame windows), and exits 0 (~30 s: one CPU run of three sentences on the float
stage graphs, one windowed sentence, cached conversion)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wyoming_fasttts.backends.memory import probe_gpu

ROOT = Path(__file__).resolve().parents[2]


def test_doctor_without_gpu_reports_and_runs_the_cpu_reference() -> None:
    if probe_gpu(0)[0] is not None:
        pytest.skip("this machine has a GPU: the CPU-only report does not apply")
    proc = subprocess.run([sys.executable, "-m", "wyoming_fasttts", "doctor", "--cpu-runs", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[--] GPU: none usable" in out
    assert "Engine: onnxruntime" in out
    assert out.count("cpu reference") == 3
    windows = out.split("CPU engine (int8, stage 2 in frame windows", 1)[1].splitlines()
    assert "first audio p50" in windows[0] and "the sentence whole p50" in windows[0]
    # Whether this machine keeps up with the windows' sizing is advice (a busy CI machine may not), not the verdict.
    assert windows[1].lstrip().startswith(("[ok]", "[!!]")) and "frame_ms" in windows[1]
    assert "PASS (CPU only)" in out
