"""The batched graphs' cache key: the model and an explicit format version, never the source text.

A key that hashed source files sent every user without torch (the GPU image, a plain install) from batched
to batch-1 graphs whenever a comment changed. The key must stay put under such edits and move with the
model and with ``FORMAT_VERSION``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wyoming_fasttts.graphs import batched as export

ROOT = Path(__file__).resolve().parents[2]
_PRINT_KEY = "import sys; from pathlib import Path; from wyoming_fasttts.graphs.batched import cache_key; " \
             "print(cache_key(Path(sys.argv[1])))"


def _key_with_package(package_root: Path, model: Path) -> str:
    out = subprocess.run([sys.executable, "-c", _PRINT_KEY, str(model)], cwd=package_root, env={"PYTHONPATH": "."},
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_editing_the_export_code_keeps_the_key(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"stand-in model bytes")
    edited = tmp_path / "edited"
    shutil.copytree(ROOT / "wyoming_fasttts", edited / "wyoming_fasttts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    package = edited / "wyoming_fasttts"
    for source in [*package.glob("graphs/*.py"), *package.glob("export/*.py")]:
        source.write_text(source.read_text(encoding="utf-8") + "\n# a comment a maintainer added\n", encoding="utf-8")
    assert _key_with_package(edited, model) == _key_with_package(ROOT, model) == export.cache_key(model)


def test_the_key_follows_the_model_and_the_format_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    first.write_bytes(b"model a")
    second.write_bytes(b"model b")
    key = export.cache_key(first)
    assert export.cache_key(second) != key
    monkeypatch.setattr(export, "FORMAT_VERSION", export.FORMAT_VERSION + 1)
    assert export.cache_key(first) != key


def test_each_precision_has_its_own_key_and_fp32_keeps_the_old_one(tmp_path: Path) -> None:
    """An fp16 stage 2 is a different graph: it must never be served for fp32 or the other way round. The
    fp32 key is the one computed before precisions existed, so caches (and the GPU image's prebuilt graphs)
    exported then stay valid."""
    import hashlib

    model = tmp_path / "model.onnx"
    model.write_bytes(b"stand-in model bytes")
    digest = hashlib.sha256(b"stand-in model bytes").hexdigest()
    legacy = hashlib.sha256(f"{digest}:batched-format-{export.FORMAT_VERSION}".encode()).hexdigest()[:20]
    assert export.cache_key(model) == export.cache_key(model, "fp32") == legacy
    assert export.cache_key(model, "fp16") not in (legacy, "")
    with pytest.raises(ValueError, match="precision"):
        export.cache_key(model, "int8")
