"""Engine reloads under load, and SIGTERM, against a real server process with the real model.

Several clients (Wyoming and HTTP) speak continuously while the engine is reloaded three times through
``POST /admin/reload``: every answer must be the complete audio (the same samples as before any reload),
the metrics must count the reloads, and process memory must come back to its pre-reload steady state.
Then SIGTERM during a request: the request finishes, the ports close, the process exits 0 within the
grace period. Costs about 1.5–2 minutes of CPU on a 2-core machine (an engine load is ~15 s there).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import pytest
from conftest import start_server, stop_server
from speech import assert_speech
from wyoming.audio import AudioChunk
from wyoming.client import AsyncClient
from wyoming.tts import Synthesize

from wyoming_fasttts.client import say

SENTENCES = ("你好。", "开灯了。", "现在七点。")
RELOADS = 3
GRACE_S = 20
MIB = 1 << 20
# RSS after the reloads may exceed the pre-reload steady state by this much. One leaked ONNX Runtime engine
# is ~500 MiB here, so a leak of even one engine fails; what stays below it is the allocator keeping pages
# for reuse and ONNX Runtime's one-time per-thread state (measured: 0–120 MiB; see docs/OPERATIONS.md).
RSS_TOLERANCE = 250 * MIB


@dataclass
class Answer:
    sentence: str
    pcm: bytes
    started: float
    ended: float


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """A server of its own (reloads and SIGTERM would disturb the shared one); no automatic reloads."""
    tmp = tmp_path_factory.mktemp("reload")
    config = tmp / "config.yaml"
    config.write_text(json.dumps({
        "server": {"shutdown_grace_s": GRACE_S},
        "limits": {"reload_min_interval_s": 0},  # back-to-back reloads on purpose
        "watchdog": {"interval_s": 1.0, "backoff_s": 3600.0, "latency_drift_ratio": 100.0},
        # Sentences whole: the audio under load is compared byte for byte with the audio before, and with frame
        # windows a sentence's audio depends on whether it had the engine to itself (in windows) or company (whole),
        # which is not what these tests measure. Windows across a reload: tests/hostile (SIGHUP mid-reply).
        "engine": {"windows": {"first_frames": 0}},
    }))
    server = start_server(tmp, "--config", str(config))
    yield server
    if server.process.poll() is None:
        stop_server(server)


async def _metrics(session: aiohttp.ClientSession, base: str) -> dict[str, float]:
    async with session.get(f"{base}/metrics") as response:
        text = await response.text()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


async def _steady_rss(session: aiohttp.ClientSession, base: str) -> float:
    readings = []
    for _ in range(5):
        readings.append((await _metrics(session, base))["fasttts_process_rss_bytes"])
        await asyncio.sleep(0.3)
    return sorted(readings)[len(readings) // 2]


async def _until(condition: Callable[[], bool | Awaitable[bool]], timeout: float) -> bool:
    """Whether ``condition`` came true within ``timeout`` (checked every 0.1 s: it is another process's state)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if await result if inspect.isawaitable(result) else result:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)


class Answers(list[Answer]):
    """The answers so far; ``arrived`` is set on each one."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()

    def add(self, answer: Answer) -> None:
        self.append(answer)
        self.arrived.set()


async def _wyoming_client(uri: str, n: int, stop: asyncio.Event, answers: Answers) -> None:
    k = n
    while not stop.is_set():
        sentence = SENTENCES[k % len(SENTENCES)]
        started = time.monotonic()
        reply = await say(uri, sentence)
        answers.add(Answer(sentence, bytes(reply.pcm), started, time.monotonic()))
        k += 1


async def _http_client(session, base: str, stop: asyncio.Event, answers: Answers) -> None:
    k = 0
    while not stop.is_set():
        sentence = SENTENCES[k % len(SENTENCES)]
        started = time.monotonic()
        async with session.post(f"{base}/api/tts", json={"text": sentence}) as response:
            assert response.status == 200, await response.text()
            body = await response.read()
        answers.add(Answer(sentence, body[44:], started, time.monotonic()))  # after the 44-byte WAV header
        k += 1


async def _reload_under_load(server) -> dict:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        reference = {s: bytes((await say(server.uri, s)).pcm) for s in SENTENCES}
        for s in SENTENCES:  # a second round: the steady state includes everything the workload touches
            await say(server.uri, s)
        before = await _metrics(session, server.http_uri)
        rss_before = await _steady_rss(session, server.http_uri)

        stop, answers = asyncio.Event(), Answers()
        clients = [asyncio.create_task(_wyoming_client(server.uri, n, stop, answers)) for n in range(2)]
        clients.append(asyncio.create_task(_http_client(session, server.http_uri, stop, answers)))
        reloads = []
        for _ in range(RELOADS):
            started = time.monotonic()
            async with session.post(f"{server.http_uri}/admin/reload") as response:
                assert response.status == 200, await response.text()
            reloads.append((started, time.monotonic()))
        done_reloading = len(answers)
        while len(answers) < done_reloading + 3:  # some answers from the final engine too
            answers.arrived.clear()
            await asyncio.wait_for(answers.arrived.wait(), 120)
        stop.set()
        await asyncio.gather(*clients)
        freed = await _until(lambda: server.log_text().count("replaced engine freed") == RELOADS, 60)
        assert freed, "a replaced engine was not closed and freed"
        return {
            "reference": reference, "answers": answers, "reloads": reloads, "before": before,
            "after": await _metrics(session, server.http_uri), "rss_before": rss_before,
            "rss_after": await _steady_rss(session, server.http_uri),
        }


def test_reloads_under_load_lose_no_audio_and_memory_returns(own_server):
    result = asyncio.run(_reload_under_load(own_server))
    answers, reference = result["answers"], result["reference"]

    assert len(answers) >= 6
    for answer in answers:
        assert answer.pcm == reference[answer.sentence], f"{answer.sentence}: audio differs from before reloads"
        assert_speech(answer.pcm, chars=len(answer.sentence) - 1)
    during = [a for a in answers if any(a.started < end and a.ended > start for start, end in result["reloads"])]
    assert len(during) >= 3, "the load did not overlap the reloads"

    before, after = result["before"], result["after"]
    assert after['fasttts_engine_reloads_total{trigger="manual"}'] == RELOADS
    assert after["fasttts_engine_reload_failures_total"] == 0
    assert not [name for name in after if name.startswith("fasttts_request_errors_total")]
    wyoming = 'fasttts_requests_total{api="wyoming"}'
    served = after[wyoming] - before[wyoming] + after.get('fasttts_requests_total{api="http"}', 0)
    assert served == len(answers)
    assert after["fasttts_requests_active"] == 0

    grown = result["rss_after"] - result["rss_before"]
    assert grown < RSS_TOLERANCE, (
        f"RSS {result['rss_before'] / MIB:.0f} MiB before {RELOADS} reloads, {result['rss_after'] / MIB:.0f} after"
    )


async def _request_then_sigterm(server) -> tuple[bytes, float, bool]:
    text = "今天天气很好。我们一起去公园散步吧。晚上七点回家吃饭。"
    async with AsyncClient.from_uri(server.uri) as client:
        await client.write_event(Synthesize(text=text).event())
        pcm = bytearray()
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)
            assert event is not None and event.type != "error", event
            if AudioChunk.is_type(event.type):
                if not pcm:  # the first audio is out, the rest is still being synthesised: stop now
                    server.process.send_signal(signal.SIGTERM)
                    signalled = time.monotonic()
                    refused = await _until(lambda: _refused(server.uri), 5)
                pcm += AudioChunk.from_event(event).audio
            elif event.type == "audio-stop":
                return bytes(pcm), signalled, refused


async def _refused(uri: str) -> bool:
    host, port = uri.removeprefix("tcp://").split(":")
    try:
        _, writer = await asyncio.open_connection(host, int(port))
    except (ConnectionRefusedError, ConnectionResetError):
        # Reset: the attempt was queued on the listening socket as it closed, and the kernel dropped it.
        return True
    writer.close()
    return False


def test_sigterm_finishes_the_request_in_flight_then_exits_0(own_server):
    pcm, signalled, refused = asyncio.run(_request_then_sigterm(own_server))
    assert_speech(pcm, chars=24)  # all three sentences, not just the first
    assert refused, "new connections were still accepted after SIGTERM"
    code = own_server.process.wait(timeout=GRACE_S + 10)
    assert code == 0
    assert time.monotonic() - signalled < GRACE_S + 10
    log = own_server.log_text()
    assert "SIGTERM received" in log and "stopped" in log
