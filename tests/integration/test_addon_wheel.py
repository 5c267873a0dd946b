"""The add-on's committed wheel is what the package source builds today.

The Supervisor installs the wheel in addon/wheels/ (it builds only that folder), so a wheel older than the
source would give add-on users old code under a new add-on version. ``scripts/build-addon --check`` builds
the wheel again from the tracked files (pip, setuptools pinned in pyproject.toml; ~15 s) and compares every
file, metadata included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_committed_addon_wheel_matches_a_fresh_build() -> None:
    proc = subprocess.run(["bash", "scripts/build-addon", "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr
