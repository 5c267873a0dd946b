"""Drive Home Assistant's own Wyoming integration against a running wyoming-fasttts server; print JSON.

Runs inside the Home Assistant virtualenv (Python 3.13) that ``tests/peers/test_home_assistant.py`` builds;
it imports nothing from this project. It starts a real ``HomeAssistant`` instance (base functionality, the
``http`` component on 127.0.0.1, a media player that resolves what ``tts.speak`` sends it), adds the server
through the Wyoming config flow as a user does, and then goes the ways Home Assistant reaches a TTS engine:

- the voice list a zh pipeline shows (``tts/engine/list`` and ``tts/engine/voices`` over the websocket API),
- HA's one-shot code (``async_get_tts_audio``: a ``synthesize`` event, read to ``audio-stop``),
- the TTS manager with text arriving in pieces, as an LLM reply does (``synthesize-start/chunk/stop``),
- ``tts.speak`` with each language code users type, the audio fetched from HA's HTTP server as a speaker would,
- and the inputs that used to leave HA waiting forever (emoji-only, unknown voice, empty text).

Every check is bounded (``LIMIT_S``); a check that does not end in time is reported as ``timed_out``. Audio
is written to ``--out`` as raw 16-bit PCM (``<check>.pcm``) for the test to judge.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import struct
import sys
import time
import traceback
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import imageio_ffmpeg
from homeassistant import bootstrap, config_entries, loader
from homeassistant.components import tts
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import HomeAssistant
from homeassistant.core_config import async_process_ha_core_config
from homeassistant.setup import async_setup_component
from homeassistant.util import language as language_util

LIMIT_S = 30.0  # a check still running after this is a hang
LANGUAGES = ["zh-cn", "zh-CN", "zh-Hans", "zh", "zh_CN"]
WELCOME = "欢迎使用语音合成系统。"
REPLY = ["好的，", "客厅的灯", "已经打开了。", "现在室内温度", "是二十三度，", "湿度百分之四十五。"]
ANNOUNCEMENT = "洗衣机洗好了。"


def parse_wav(data: bytes) -> dict[str, Any]:
    """Format and PCM of a WAV file, also one streamed with a zero length in its header."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError(f"not a WAV file ({len(data)} bytes, starts {data[:12]!r})")
    pos, fmt = 12, None
    while pos + 8 <= len(data):
        kind, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        if kind == b"fmt ":
            _, channels, rate, _, _, bits = struct.unpack("<HHIIHH", data[pos + 8 : pos + 24])
            fmt = {"rate": rate, "channels": channels, "width": bits // 8}
        elif kind == b"data":
            if fmt is None:
                raise ValueError("WAV data before its format")
            return {**fmt, "pcm": data[pos + 8 :]}  # a streamed header says 0 bytes: take the rest
        pos += 8 + size
    raise ValueError("WAV file without a data chunk")


async def decode(data: bytes) -> bytes:
    """MP3 (what ``tts.speak`` hands a media player by default) to WAV at its own sample rate."""
    ffmpeg = await asyncio.create_subprocess_exec(
        imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-f", "wav",
        "pipe:1", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await ffmpeg.communicate(data)
    if ffmpeg.returncode:
        raise ValueError(f"ffmpeg could not decode {len(data)} bytes: {err.decode(errors='replace')[-300:]}")
    return out


class Warnings(logging.Handler):
    """HA's warnings and errors, by logger, for the test to judge (e.g. a writer task that crashed)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append({"logger": record.name, "message": record.getMessage()[:300]})


class Driver:
    def __init__(self, hass: HomeAssistant, base_url: str, out: Path) -> None:
        self.hass = hass
        self.base_url = base_url
        self.out = out
        self.entity_id = ""
        self.results: dict[str, dict[str, Any]] = {}

    async def check(self, name: str, body: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        started = time.monotonic()
        result: dict[str, Any]
        try:
            result = await asyncio.wait_for(body(), LIMIT_S)
        except TimeoutError:
            result = {"timed_out": True}
        except Exception as err:  # reported, judged by the test
            result = {"raised": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-1500:]}
        result["seconds"] = round(time.monotonic() - started, 3)
        self.results[name] = result

    async def audio(self, name: str, extension: str | None, data: bytes | None) -> dict[str, Any]:
        """What came back: nothing, or audio (WAV, or MP3 decoded by ffmpeg) whose PCM goes to ``<name>.pcm``."""
        if data is None:
            return {"extension": extension, "audio": None}
        if not data:
            return {"extension": extension, "audio": {"bytes": 0}}
        if extension != "wav":
            data = await decode(data)
        wav = parse_wav(data)
        pcm = wav.pop("pcm")
        (self.out / f"{name}.pcm").write_bytes(pcm)
        return {"extension": extension, "audio": {**wav, "bytes": len(pcm)}}

    # -- the ways Home Assistant reaches the engine -------------------------------------------------------

    def entity(self) -> tts.TextToSpeechEntity:
        return self.hass.data[tts.DATA_COMPONENT].get_entity(self.entity_id)

    async def one_shot(self, name: str, message: str, options: dict[str, Any]) -> dict[str, Any]:
        """HA's one-shot code path (used when a server does not announce streaming, and by HA < 2025.x)."""
        extension, data = await self.entity().async_get_tts_audio(message, "zh-cn", options)
        return await self.audio(name, extension, data)

    async def stream(self, name: str, pieces: list[str], options: dict[str, Any]) -> dict[str, Any]:
        """The TTS manager fed text in pieces, as the Assist pipeline feeds an LLM's reply."""

        async def reply() -> AsyncGenerator[str]:
            for piece in pieces:
                await asyncio.sleep(0.05)  # an LLM's pace, not synchronisation
                yield piece

        result = tts.async_create_stream(self.hass, self.entity_id, "zh-cn", options)
        if hasattr(result, "async_set_message_stream"):
            result.async_set_message_stream(reply())
        else:  # HA before streaming TTS input (2025.4): the pipeline waits for the whole reply
            result.async_set_message("".join([piece async for piece in reply()]))
        data = b"".join([chunk async for chunk in result.async_stream_result()])
        return await self.audio(name, result.extension, data)

    async def speak(self, name: str, message: str, language: str | None, options: dict | None = None) -> dict:
        """``tts.speak`` as an automation calls it, then the audio fetched like a network speaker does."""
        queue: asyncio.Queue[str] = self.hass.data["test_speaker"]
        data: dict[str, Any] = {
            "entity_id": self.entity_id,
            "media_player_entity_id": "media_player.test_speaker",
            "message": message,
            "cache": False,
        }
        if language is not None:
            data["language"] = language
        if options:
            data["options"] = options
        await self.hass.services.async_call("tts", "speak", data, blocking=True)
        url = await queue.get()
        async with aiohttp.ClientSession() as session, session.get(self.base_url + url) as response:
            body = await response.read()
            status = response.status
        result = await self.audio(name, url.rsplit(".", 1)[-1], body) if status == 200 else {"audio": None}
        return {"status": status, **result}

    async def voices(self, token: str) -> dict[str, Any]:
        """What the pipeline editor asks over the websocket API, for each language code."""
        async with aiohttp.ClientSession() as session, session.ws_connect(self.base_url + "/api/websocket") as ws:
            await ws.receive_json()
            await ws.send_json({"type": "auth", "access_token": token})
            assert (await ws.receive_json())["type"] == "auth_ok"
            answers: dict[str, Any] = {}
            requests = [("engines", {"type": "tts/engine/list", "language": "zh-cn", "country": "CN"})]
            requests += [
                (f"voices_{code}", {"type": "tts/engine/voices", "engine_id": self.entity_id, "language": code})
                for code in LANGUAGES
            ]
            for n, (key, request) in enumerate(requests, start=1):
                await ws.send_json({"id": n, **request})
                reply = await ws.receive_json()
                answers[key] = reply.get("result") if reply.get("success") else {"error": reply.get("error")}
        engines = [e for e in answers.pop("engines")["providers"] if e["engine_id"] == self.entity_id]
        entity = self.entity()
        return {
            "pipeline_engine": engines[0] if engines else None,
            "supported_languages": sorted(entity.supported_languages),
            "pipeline_best_match": language_util.matches("zh-cn", entity.supported_languages, "CN")[:1],
            "voices": {key[len("voices_") :]: value for key, value in answers.items()},
        }

    async def run_all(self, token: str) -> None:
        await self.check("voices", lambda: self.voices(token))
        await self.check("one_shot", lambda: self.one_shot("one_shot", WELCOME, {"voice": "zf_xiaoxiao"}))
        await self.check("stream", lambda: self.stream("stream", REPLY, {"voice": "zm_yunxi"}))
        for code in LANGUAGES:
            await self.check(f"speak_{code}", lambda code=code: self.speak(f"speak_{code}", ANNOUNCEMENT, code))
        await self.check("speak_default_language", lambda: self.speak("speak_default_language", ANNOUNCEMENT, None))
        bad = {"emoji": "😀🎉", "thumbs_up": "👍", "ellipsis": "……", "empty": ""}
        for label, text in bad.items():
            await self.check(f"one_shot_{label}", lambda label=label, text=text: self.one_shot(
                f"one_shot_{label}", text, {}))
            await self.check(f"stream_{label}", lambda label=label, text=text: self.stream(
                f"stream_{label}", list(text) or [""], {}))
            await self.check(f"speak_{label}", lambda label=label, text=text: self.speak(
                f"speak_{label}", text, "zh-cn"))
        nobody = {"voice": "zf_nobody"}
        await self.check("one_shot_unknown_voice", lambda: self.one_shot("one_shot_unknown_voice", WELCOME, nobody))
        await self.check("stream_unknown_voice", lambda: self.stream("stream_unknown_voice", REPLY, nobody))
        await self.check("speak_unknown_voice", lambda: self.speak("speak_unknown_voice", WELCOME, "zh-cn", nobody))
        # After all of that, the same HA still gets speech: nothing was left hanging on either side.
        await self.check("one_shot_after", lambda: self.one_shot("one_shot_after", WELCOME, {}))


async def main(args: argparse.Namespace) -> dict[str, Any]:
    config_dir = Path(args.config_dir)
    shutil.copytree(Path(__file__).parent / "ha_config", config_dir, dirs_exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    warnings = Warnings()
    logging.getLogger().addHandler(warnings)
    hass = HomeAssistant(str(config_dir))
    loader.async_setup(hass)
    hass.config.skip_pip = True  # the virtualenv has every requirement, pinned; HA must not install any
    hass.config_entries = config_entries.ConfigEntries(hass, {})
    await loader.async_get_custom_components(hass)
    await bootstrap.async_load_base_functionality(hass)
    # What a Chinese-speaking user's configuration.yaml gives: the language and country HA offers defaults for.
    await async_process_ha_core_config(hass, {"language": "zh-Hans", "country": "CN", "time_zone": "Asia/Shanghai"})
    base_url = f"http://127.0.0.1:{args.http_port}"
    setups = {
        "homeassistant": {},
        "http": {"http": {"server_host": ["127.0.0.1"], "server_port": args.http_port}},
        "websocket_api": {},
        # HA converts TTS audio to MP3 for media players (and to what a satellite asks for) with ffmpeg;
        # the virtualenv's comes from the imageio-ffmpeg wheel.
        "ffmpeg": {"ffmpeg": {"ffmpeg_bin": imageio_ffmpeg.get_ffmpeg_exe()}},
        "media_player": {"media_player": [{"platform": "test_speaker"}]},
        "tts": {},
    }
    for domain, config in setups.items():
        if not await async_setup_component(hass, domain, config):
            raise RuntimeError(f"Home Assistant could not set up {domain}")
    await hass.async_start()

    flow = await hass.config_entries.flow.async_init(
        "wyoming", context={"source": "user"}, data={"host": "127.0.0.1", "port": args.port}
    )
    await hass.async_block_till_done()
    report: dict[str, Any] = {"ha_version": HA_VERSION, "flow": {"type": str(flow["type"]), "title": flow.get("title")}}
    entities = hass.states.async_entity_ids("tts")
    report["tts_entities"] = entities
    if not entities:
        raise RuntimeError(f"the config flow made no tts entity: {flow}")

    user = await hass.auth.async_create_system_user("peer test", group_ids=["system-admin"])
    refresh = await hass.auth.async_create_refresh_token(user)
    driver = Driver(hass, base_url, out)
    driver.entity_id = entities[0]
    # None: a release without streaming TTS input (2025.4), where every request takes the one-shot path
    streaming = getattr(driver.entity(), "async_supports_streaming_input", None)
    report["streaming_input"] = streaming() if streaming else None
    await driver.run_all(hass.auth.async_create_access_token(refresh))
    report["checks"] = driver.results
    await hass.async_stop()
    report["warnings"] = warnings.records
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="the wyoming-fasttts server's Wyoming port")
    parser.add_argument("--http-port", type=int, required=True, help="a free port for Home Assistant's HTTP server")
    parser.add_argument("--config-dir", required=True)
    parser.add_argument("--out", required=True, help="folder for the audio of each check")
    report = asyncio.run(main(parser.parse_args()))
    json.dump(report, sys.stdout, ensure_ascii=False, indent=1)
