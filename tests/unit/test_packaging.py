"""One ONNX Runtime per install, on every path a user or an image follows.

``onnxruntime`` and ``onnxruntime-gpu`` install the same Python module: with both, the last one installed
overwrites the other and doctor fails. The base dependencies carry neither, the ``cpu`` and ``gpu`` extras
one each, and every install command the project documents or runs picks exactly one of the two extras.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
ORT = {"onnxruntime", "onnxruntime-gpu"}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


def test_each_onnxruntime_comes_from_its_own_extra_only() -> None:
    extras = PROJECT["optional-dependencies"]
    assert not _names(PROJECT["dependencies"]) & ORT
    assert _names(extras["cpu"]) & ORT == {"onnxruntime"}
    assert _names(extras["gpu"]) & ORT == {"onnxruntime-gpu"}
    assert not [name for name, reqs in extras.items() if name not in ("cpu", "gpu") and _names(reqs) & ORT]


def test_the_gpu_extra_brings_the_cuda_libraries_its_onnxruntime_needs() -> None:
    (gpu_ort,) = [r for r in PROJECT["optional-dependencies"]["gpu"] if r.startswith("onnxruntime-gpu")]
    assert re.fullmatch(r"onnxruntime-gpu\[cuda,cudnn\]==[\d.]+", gpu_ort)


DOCUMENTED = ["README.md", "docs/SETUP.md", "docs/SETUP.zh.md", "docs/TENSORRT.md", "Dockerfile.gpu",
              "addon/Dockerfile", "scripts/test", "addon/DOCS.md"]
_INSTALL = re.compile(r"pip install[^\n]*?(?:'|\")?(?:\.|wyoming-fasttts|\S+\.whl)\[([\w,${}-]+)\]")


@pytest.mark.parametrize("path", DOCUMENTED)
def test_every_documented_install_picks_one_onnxruntime(path: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    for match in _INSTALL.finditer(text):
        extras = set(match.group(1).split(","))
        assert len(extras & {"cpu", "gpu"}) == 1, f"{path}: {match.group(0)!r} needs exactly one of [cpu] / [gpu]"
    bare = re.findall(r"pip install (?:-e )?(?:\.|wyoming-fasttts)(?=[\s&'\"`]|$)", text, re.M)
    assert not bare, f"{path}: {bare} installs no ONNX Runtime"


def test_an_install_without_onnxruntime_says_which_extra_to_add() -> None:
    """``pip install .`` alone gives no engine: the server must say so, not die on a bare ImportError."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['onnxruntime'] = None\n"
            "from wyoming_fasttts.backends.base import EngineError\n"
            "try:\n    import wyoming_fasttts.backends.onnxruntime\n"
            "except EngineError as err:\n    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert "ONNX Runtime is not installed" in out and "'wyoming-fasttts[cpu]'" in out
