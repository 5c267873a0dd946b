"""Corrupted cache bytes: a cached stage graph with one byte flipped (same size) is found at start and rebuilt.

The issue's probe flipped one byte of a cached graph: it loaded silently and the audio changed. Here a server
runs on a copy of the user's graph cache; then a byte is flipped and a second server must notice, rebuild the
graphs and answer with exactly the audio of the first. The stamp that keeps later starts fast is checked on
its own, with a small fake cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import start_server, stop_server

from wyoming_fasttts.config import load_settings
from wyoming_fasttts.graphs import cache
from wyoming_fasttts.graphs.cache import build_once, changed_files
from wyoming_fasttts.graphs.convert import pipeline_key

SENTENCE = "欢迎使用语音合成系统。"


def _flip_byte(path: Path) -> None:
    """One byte in the middle of the file, size unchanged."""
    with open(path, "r+b") as fh:
        fh.seek(path.stat().st_size // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))


def _fake_build(tmp: Path) -> None:
    payload = b"graph bytes " * 1000
    (tmp / "g.onnx").write_bytes(payload)
    (tmp / "manifest.json").write_text(json.dumps({"g.onnx": hashlib.sha256(payload).hexdigest()}))


def _fake_load(directory: Path) -> Path | None:
    try:
        expected = json.loads((directory / "manifest.json").read_text())
    except OSError:
        return None
    return None if changed_files(directory, expected) else directory / "g.onnx"


def test_a_flipped_byte_is_found_and_rebuilt_and_the_stamp_spares_later_starts(tmp_path, monkeypatch):
    directory = tmp_path / "graphs" / "key"
    builds = []

    def build(tmp: Path) -> None:
        builds.append(tmp)
        _fake_build(tmp)

    original = build_once(directory, _fake_load, build)
    assert original is not None and len(builds) == 1
    good = original.read_bytes()

    hashed: list[Path] = []
    real_sha256 = cache.sha256_of
    monkeypatch.setattr(cache, "sha256_of", lambda p: hashed.append(p) or real_sha256(p))
    assert build_once(directory, _fake_load, build) is not None
    assert hashed == [] and len(builds) == 1, "an unchanged file was hashed again"

    _flip_byte(original)
    assert len(original.read_bytes()) == len(good)
    rebuilt = build_once(directory, _fake_load, build)
    assert len(builds) == 2 and rebuilt is not None and rebuilt.read_bytes() == good


def test_a_server_on_a_corrupted_graph_cache_rebuilds_it_and_sounds_the_same(tmp_path):
    """Costs one graph conversion (about a minute of CPU) and two server starts."""
    settings = load_settings()
    shared = settings.assets.data_path
    key = pipeline_key(shared / "kokoro-v1.0.int8.onnx")
    if not (shared / "graphs" / key / "manifest.json").is_file():
        pytest.fail(f"no stage graph cache for this code in {shared}; start the server once first")
    data = tmp_path / "data"
    (data / "graphs").mkdir(parents=True)
    for name in ("kokoro-v1.0.int8.onnx", "vocab.json", "voices"):  # read-only inputs: linked, not copied
        (data / name).symlink_to(shared / name)
    shutil.copytree(shared / "graphs" / key, data / "graphs" / key)

    async def speak(server) -> bytes:
        from wyoming_fasttts.client import say

        return bytes((await asyncio.wait_for(say(server.uri, SENTENCE), 120)).pcm)

    # The frame windows' later sizes follow engine.windows.frame_ms, by default measured at each start-up: pinned, so
    # both servers plan the sentence's windows alike and any difference is the cache's.
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"engine": {"windows": {"frame_ms": 12}}}), encoding="utf-8")
    first = start_server(tmp_path, "--data-dir", str(data), "--config", str(config))
    try:
        reference = asyncio.run(speak(first))
    finally:
        assert stop_server(first) == 0
    assert (data / "graphs" / key / ".verified.json").is_file()

    manifest = json.loads((data / "graphs" / key / "manifest.json").read_text())
    _flip_byte(data / "graphs" / key / manifest["flavours"]["int8"]["stage2"]["file"])
    second = start_server(tmp_path, "--data-dir", str(data), "--config", str(config))
    try:
        assert asyncio.run(speak(second)) == reference
    finally:
        assert stop_server(second) == 0
    log = second.log_text()
    assert "changed since they were built" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
