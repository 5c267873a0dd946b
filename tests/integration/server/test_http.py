"""The HTTP side server against the real server process and model (the shared session fixture).

Costs a few seconds of synthesis (three short sentences); everything else is cheap. No test here reloads the
shared server's engine: tests/integration/test_reload.py does that on a server of its own.
"""

from __future__ import annotations

import asyncio
import io
import json
import wave
from urllib.error import HTTPError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from conftest import run
from speech import assert_speech

from wyoming_fasttts.assets import VOICES
from wyoming_fasttts.client import ServerError, say
from wyoming_fasttts.server.http import _is_local
from wyoming_fasttts.synthesizer import NOTHING_TO_SAY_MS

SHORT = "你好，欢迎回家。"


def _get(url: str, data: bytes | None = None, headers: dict[str, str] | None = None, method: str | None = None):
    """(status, content type, body) without raising on 4xx/5xx."""
    request = Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urlopen(request, timeout=120) as response:
            return response.status, response.headers.get_content_type(), response.read()
    except HTTPError as err:
        return err.code, err.headers.get_content_type(), err.read()


def _wav_pcm(body: bytes) -> bytes:
    with wave.open(io.BytesIO(body)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        return wav.readframes(wav.getnframes())


def _metric(server, line_start: str) -> float:
    _, _, body = _get(f"{server.http_uri}/metrics")
    values = [float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines() if line.startswith(line_start)]
    return sum(values)


def test_health_and_readiness(server):
    assert _get(f"{server.http_uri}/healthz")[0] == 200
    status, kind, body = _get(f"{server.http_uri}/readyz")
    assert (status, kind) == (200, "application/json")
    assert json.loads(body) == {"ready": True, "engine": "onnxruntime", "device": "cpu"}


def test_voices(server):
    status, _, body = _get(f"{server.http_uri}/api/voices")
    assert status == 200
    answer = json.loads(body)
    assert answer["voices"] == list(VOICES) and answer["default"] == "zf_xiaobei"
    # the names Home Assistant's picker shows, one per voice, none of them an id
    assert answer["labels"]["zf_xiaobei"] == "小贝 (女声)" and answer["labels"]["zm_yunxi"] == "云希 (男声)"
    assert len(set(answer["labels"].values())) == len(VOICES)


@pytest.mark.parametrize(
    ("method", "make"),
    [
        ("GET query", lambda url: (f"{url}?{urlencode({'text': SHORT, 'voice': 'zm_yunxi'})}", None, {})),
        ("POST json", lambda url: (url, json.dumps({"text": SHORT, "speed": 1.2}).encode(),
                                   {"Content-Type": "application/json"})),
        ("POST text", lambda url: (f"{url}?voice=zf_xiaoni", SHORT.encode(), {"Content-Type": "text/plain"})),
    ],
)
def test_tts_returns_a_wav_of_speech(server, method, make):
    url, data, headers = make(f"{server.http_uri}/api/tts")
    status, kind, body = _get(url, data, headers)
    assert (status, kind) == (200, "audio/wav"), body[:200]
    assert_speech(_wav_pcm(body), chars=7)


def test_tts_audio_matches_the_wyoming_path(server):
    """Same text, voice and speed through both protocols: the same scheduler, so the same samples."""
    wyoming = run(say(server.uri, SHORT, voice="zf_xiaobei"))
    _, _, body = _get(f"{server.http_uri}/api/tts?{urlencode({'text': SHORT, 'voice': 'zf_xiaobei'})}")
    assert _wav_pcm(body) == bytes(wyoming.pcm)


@pytest.mark.parametrize("text", ["……", "😀🎉", "👍", ""])
def test_text_with_nothing_to_say_is_a_short_silence_as_on_wyoming(server, text):
    status, kind, body = _get(f"{server.http_uri}/api/tts?{urlencode({'text': text})}")
    assert (status, kind) == (200, "audio/wav"), body[:200]
    pcm = _wav_pcm(body)
    assert pcm == bytes(len(pcm)) and len(pcm) == 48 * NOTHING_TO_SAY_MS
    assert pcm == bytes(run(say(server.uri, text)).pcm)


@pytest.mark.parametrize(
    ("query", "body", "code"),
    [
        ({}, None, "bad-text"),
        ({"text": SHORT, "voice": "nobody"}, None, "unknown-voice"),
        ({"text": SHORT, "speed": "fast"}, None, "bad-text"),
        ({"text": SHORT, "speed": "9"}, None, "bad-text"),
        ({}, b"{not json", "bad-text"),
        ({}, b'["a list"]', "bad-text"),
        ({}, json.dumps({"text": SHORT, "voice": ["x"]}).encode(), "bad-text"),
        ({}, json.dumps({"text": "好" * 100001}).encode(), "bad-text"),
    ],
)
def test_bad_requests_get_4xx_json_and_are_counted(server, query, body, code):
    before = _metric(server, f'fasttts_request_errors_total{{api="http",code="{code}"}}')
    headers = {"Content-Type": "application/json"} if body is not None else {}
    status, kind, reply = _get(f"{server.http_uri}/api/tts?{urlencode(query)}", body, headers)
    assert (status, kind) == (400, "application/json")
    error = json.loads(reply)
    assert error["code"] == code and error["error"]
    assert _metric(server, f'fasttts_request_errors_total{{api="http",code="{code}"}}') == before + 1
    assert _get(f"{server.http_uri}/healthz")[0] == 200


def test_metrics_are_prometheus_text_with_the_server_counters(server):
    run(say(server.uri, SHORT))
    status, kind, body = _get(f"{server.http_uri}/metrics")
    assert (status, kind) == (200, "text/plain")
    text = body.decode()
    for name in (
        'fasttts_requests_total{api="wyoming"}',
        "fasttts_request_seconds_bucket",
        "fasttts_batch_seconds_bucket",
        "fasttts_batch_size_bucket",
        "fasttts_queue_depth",
        "fasttts_engine_reloads_total",
        'fasttts_engine_info{device="cpu",engine="onnxruntime"} 1.0',
        "fasttts_ready 1.0",
        "process_resident_memory_bytes",
        "fasttts_process_rss_bytes",
    ):
        assert name in text, name
    assert _metric(server, 'fasttts_requests_total{api="wyoming"}') >= 1
    assert _metric(server, "fasttts_process_rss_bytes") > 100e6


def test_wyoming_errors_are_counted_by_code(server):
    before = _metric(server, 'fasttts_request_errors_total{api="wyoming",code="unknown-voice"}')
    with pytest.raises(ServerError):
        run(say(server.uri, SHORT, voice="nobody"))
    assert _metric(server, 'fasttts_request_errors_total{api="wyoming",code="unknown-voice"}') == before + 1


def test_page_lets_a_person_type_pick_a_voice_and_listen(server):
    status, kind, body = _get(f"{server.http_uri}/")
    page = body.decode()
    assert (status, kind) == (200, "text/html")
    assert "<textarea" in page and "api/voices" in page and "api/tts" in page and "<audio" in page


def test_reload_is_refused_to_pages_of_other_origins(server):
    before = _metric(server, "fasttts_engine_reloads_total")
    status, _, body = _get(f"{server.http_uri}/admin/reload", b"", {"Origin": "http://example.invalid"}, "POST")
    assert status == 403 and json.loads(body)["code"] == "forbidden"
    assert _get(f"{server.http_uri}/admin/reload")[0] == 405  # state changes only on POST
    assert _metric(server, "fasttts_engine_reloads_total") == before


@pytest.mark.parametrize(
    ("peer", "local"),
    [(("127.0.0.1", 5000), True), (("::1", 5000, 0, 0), True), (("::ffff:127.0.0.1", 5000, 0, 0), True),
     (("192.168.1.20", 5000), False), (("2001:db8::1", 5000, 0, 0), False)],
)
def test_only_loopback_peers_count_as_this_host(peer, local):
    class Transport(asyncio.Transport):
        def get_extra_info(self, name, default=None):
            return peer if name == "peername" else default

    request = make_mocked_request("POST", "/admin/reload", transport=Transport(), app=web.Application())
    assert _is_local(request) is local
