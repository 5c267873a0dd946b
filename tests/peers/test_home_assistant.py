"""Home Assistant's own Wyoming integration as the client: the config flow, voices, one-shot, streamed replies,
``tts.speak`` with every language code, and every bad input ending promptly.

Home Assistant runs in its own virtualenv (Python 3.13 from pyenv; HA and every package it imports pinned in
``ha-<version>.txt``), built on first use and cached under ``~/.cache/wyoming-fasttts-tests``. The driver
(``ha_driver.py``) runs there against the session's real server and prints what HA got; these tests judge it.
``FASTTTS_HA_VERSIONS`` (comma-separated, default ``2026.2.3``) picks the releases; each needs its lock file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ServerProcess, free_port
from ear import pinyin_error_rate, transcribe
from speech import assert_speech

from wyoming_fasttts.assets import VOICES
from wyoming_fasttts.synthesizer import NOTHING_TO_SAY_MS
from wyoming_fasttts.voices import label

HERE = Path(__file__).parent
VERSIONS = os.environ.get("FASTTTS_HA_VERSIONS", "2026.2.3").split(",")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "wyoming-fasttts-tests"
LANGUAGES = ["zh-cn", "zh-CN", "zh-Hans", "zh", "zh_CN"]
NOTHING_TO_SAY = ["emoji", "thumbs_up", "ellipsis", "empty"]
DRIVER_TIMEOUT_S = 900  # the driver bounds each check at 30 s; this only catches a driver that never starts


def _python313() -> Path:
    """pyenv's Python 3.13.0 (``FASTTTS_HA_PYTHON`` overrides); HA needs 3.13, our own venv is 3.11."""
    if override := os.environ.get("FASTTTS_HA_PYTHON"):
        return Path(override)
    pyenv = shutil.which("pyenv")
    assert pyenv, "the Home Assistant peer test needs pyenv's Python 3.13.0 (or FASTTTS_HA_PYTHON)"
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=True).stdout.strip()
    python = Path(root) / "versions/3.13.0/bin/python3.13"
    assert python.exists(), f"{python} is missing: pyenv install 3.13.0 (or set FASTTTS_HA_PYTHON)"
    return python


def home_assistant_venv(version: str) -> tuple[Path, float | None]:
    """The virtualenv for ``version``, built once per lock file's content; returns (python, build seconds)."""
    lock = HERE / f"ha-{version}.txt"
    key = hashlib.sha256(lock.read_bytes()).hexdigest()[:12]
    venv = CACHE / f"ha-{version}-{key}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"ha-{version}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # another test run building the same venv: wait for it
        if (venv / "complete").exists():
            return venv / "bin/python", None
        return _build(lock, venv)


def _build(lock: Path, venv: Path) -> tuple[Path, float]:
    started = time.monotonic()
    partial = venv.with_name(venv.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run([str(_python313()), "-m", "venv", str(partial)], check=True)
    pip = subprocess.run(
        [str(partial / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--ignore-requires-python", "-r", str(lock)],
        capture_output=True, text=True, timeout=1800,
    )
    assert pip.returncode == 0, f"installing {lock.name} failed:\n{pip.stderr[-4000:]}"
    seconds = time.monotonic() - started
    (partial / "complete").write_text(f"{seconds:.0f} s to build\n")
    shutil.rmtree(venv, ignore_errors=True)
    partial.rename(venv)  # only ever called through bin/python, which a rename does not break
    return venv / "bin/python", seconds


@pytest.fixture(scope="session", params=VERSIONS)
def home_assistant(request, server: ServerProcess, tmp_path_factory) -> dict[str, Any]:
    """One driver run per Home Assistant release against the session's server: its report and audio folder."""
    python, built = home_assistant_venv(request.param)
    work = tmp_path_factory.mktemp(f"ha-{request.param}")
    port = int(server.uri.rsplit(":", 1)[1])
    cmd = [str(python), str(HERE / "ha_driver.py"), "--port", str(port), "--http-port", str(free_port()),
           "--config-dir", str(work / "config"), "--out", str(work / "audio")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    (work / "report.json").write_text(done.stdout)  # what HA got, for reading after a failure
    report = json.loads(done.stdout)
    report["audio_dir"] = work / "audio"
    report["venv_build_seconds"] = built
    if built is not None:
        print(f"\nHome Assistant {request.param} virtualenv built in {built:.0f} s", file=sys.stderr)
    return report


def _check(report: dict[str, Any], name: str) -> dict[str, Any]:
    check = report["checks"][name]
    assert not check.get("timed_out"), f"{name}: Home Assistant was still waiting after 30 s"
    return check


def _pcm(report: dict[str, Any], name: str) -> bytes:
    check = _check(report, name)
    assert "raised" not in check, check
    audio = check["audio"]
    assert audio and (audio["rate"], audio["width"], audio["channels"]) == (24000, 2, 1), check
    return (report["audio_dir"] / f"{name}.pcm").read_bytes()


def test_config_flow_creates_a_streaming_tts_entity(home_assistant):
    assert home_assistant["flow"] == {"type": "create_entry", "title": "fasttts"}
    assert home_assistant["tts_entities"] == ["tts.fasttts"]
    assert home_assistant["streaming_input"] in (True, None), "HA does not stream text to a server that can take it"


def test_a_zh_pipeline_offers_every_voice_by_its_chinese_name(home_assistant):
    voices = _check(home_assistant, "voices")
    assert "raised" not in voices, voices
    assert voices["pipeline_engine"] is not None, "tts/engine/list offers no fasttts for zh-cn"
    assert voices["pipeline_best_match"], "no language of ours matches a zh-cn pipeline"
    expected = sorted((label(name), name) for name in VOICES)
    for code in LANGUAGES:
        offered = voices["voices"][code]
        assert offered and offered.get("voices"), f"{code}: {offered}"
        assert sorted((v["name"], v["voice_id"]) for v in offered["voices"]) == expected, code


def test_one_shot_is_speech(home_assistant):
    assert_speech(_pcm(home_assistant, "one_shot"), len("欢迎使用语音合成系统"))


def test_a_reply_streamed_in_pieces_is_intelligible_speech(home_assistant):
    reply = "好的，客厅的灯已经打开了。现在室内温度是二十三度，湿度百分之四十五。"
    pcm = _pcm(home_assistant, "stream")
    assert_speech(pcm, len(reply) - 4)
    heard = transcribe(pcm)
    assert pinyin_error_rate(reply, heard) <= 0.25, heard


@pytest.mark.parametrize("code", [*LANGUAGES, "default_language"])
def test_tts_speak_with_each_language_code_plays_speech(home_assistant, code):
    check = _check(home_assistant, f"speak_{code}")
    assert check.get("status") == 200, check
    assert_speech(_pcm(home_assistant, f"speak_{code}"), len("洗衣机洗好了"))


@pytest.mark.parametrize("text", NOTHING_TO_SAY)
@pytest.mark.parametrize("way", ["one_shot", "stream", "speak"])
def test_nothing_to_say_is_a_short_silence_in_every_way(home_assistant, way, text):
    """Emoji-only or empty text: the automation goes on, the speaker plays a moment of silence."""
    pcm = _pcm(home_assistant, f"{way}_{text}")
    seconds = len(pcm) / 48000
    assert NOTHING_TO_SAY_MS / 2000 <= seconds <= NOTHING_TO_SAY_MS / 1000 + 0.4, seconds  # MP3 pads a little
    assert np.abs(np.frombuffer(pcm, "<i2")).max() < 300, "not silence"
    if way == "speak":
        assert home_assistant["checks"][f"speak_{text}"]["status"] == 200


@pytest.mark.parametrize("way", ["one_shot", "stream", "speak"])
def test_an_unknown_voice_fails_promptly_without_audio(home_assistant, way):
    """HA's one-shot sees a closed connection and reports "No TTS"; its stream ends with nothing to convert."""
    check = _check(home_assistant, f"{way}_unknown_voice")
    if way == "one_shot":
        assert check["audio"] is None, check
    elif way == "speak":
        assert check["status"] != 200 or not check["audio"], check
    else:
        assert "raised" in check or not (check["audio"] or {}).get("bytes"), check


def test_home_assistant_still_gets_speech_after_every_bad_input(home_assistant):
    assert_speech(_pcm(home_assistant, "one_shot_after"), len("欢迎使用语音合成系统"))


def test_home_assistant_logs_no_wyoming_trouble(home_assistant):
    """No crashed task (HA's stream writer dies if the stream ends while it still writes) and no warning from
    HA's Wyoming integration (e.g. "Unexpected disconnection from TTS client")."""
    trouble = [r for r in home_assistant["warnings"]
               if r["logger"] == "asyncio" or r["logger"].startswith("homeassistant.components.wyoming")]
    assert not trouble, trouble
