"""Hostile and careless clients against a real server process (the real model, small limits from config).

Each test plays one kind of client the issue's probe found harmful: a wire fuzzer, payload and idle floods,
slowloris, clients that never read or vanish, DNS-rebinding headers, oversized and undecodable HTTP bodies,
signals mid-reply. After each, the server must answer a normal request promptly with the very samples it
gave before anything hostile happened, must not have logged a traceback for client input, and under the
floods its resident memory must stay within 1.2x its steady state.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import signal
import socket
import time
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field

import aiohttp
import psutil
import pytest
from conftest import ServerProcess, start_server, stop_server
from wyoming.event import Event, async_read_event, async_write_event

from wyoming_fasttts.client import say

SENTENCE = "欢迎使用语音合成系统。"
LONG = "今天天气很好，我们一起去公园散步吧。" * 8  # about 8 sentences, ~30 s of audio
MAX_TEXT = 500
# Small limits so every bound is reached in seconds; each still fits the longest text allowed (6 bytes/char).
LIMITS = {
    "max_connections": 12, "max_connections_per_peer": 12, "max_requests_per_peer": 4,
    "max_header_bytes": 4096, "max_data_bytes": 4096, "max_payload_bytes": 1024, "max_json_depth": 32,
    "idle_timeout_s": 2.0, "read_timeout_s": 1.0, "write_timeout_s": 2.0, "socket_send_buffer_bytes": 8192,
    "http_max_body_bytes": 4096, "reload_min_interval_s": 3600,
}
CLIENT_CODES = {"malformed-event", "bad-text", "unknown-voice", "busy"}
RSS_RATIO = 1.2
# psutil readings of the server process, kept for the report: steady state, and the peak of each flood.
RSS: dict[str, int] = {}


@dataclass
class Target:
    server: ServerProcess
    process: psutil.Process
    reference: bytes
    steady_rss: int
    host: str
    port: int
    log_seen: int = 0
    notes: list[str] = field(default_factory=list)

    def new_log(self) -> str:
        text = self.server.log_text()
        fresh, self.log_seen = text[self.log_seen:], len(text)
        return fresh


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    tmp = tmp_path_factory.mktemp("hostile")
    config = tmp / "config.yaml"
    config.write_text(json.dumps({
        "server": {"max_text_chars": MAX_TEXT, "shutdown_grace_s": 20},
        "limits": LIMITS,
        # no automatic reloads: only what a test asks for
        "watchdog": {"interval_s": 1.0, "backoff_s": 3600.0, "latency_drift_ratio": 100.0},
        # Sentences whole: each test ends by comparing a request's audio byte for byte with the reference, and with
        # frame windows a sentence's audio depends on whether a gone client's sentence was still in the engine
        # (company: whole) or not (alone: in windows). Stopping a gone client's windows: tests/unit/test_scheduler.py.
        "engine": {"windows": {"first_frames": 0}},
    }))
    server = start_server(tmp, "--config", str(config))
    host, port = server.uri.removeprefix("tcp://").split(":")
    process = psutil.Process(server.process.pid)
    reference = bytes(asyncio.run(say(server.uri, SENTENCE)).pcm)
    # steady state: what a normal workload touches, a long sentence included
    asyncio.run(say(server.uri, LONG[:36]))
    assert bytes(asyncio.run(say(server.uri, SENTENCE)).pcm) == reference
    RSS["steady"] = _median_rss(process)
    target = Target(server, process, reference, RSS["steady"], host, int(port))
    target.new_log()
    yield target
    started = time.monotonic()
    assert stop_server(server) == 0, server.log_text()[-3000:]
    assert time.monotonic() - started < 10, "shutdown waited for requests of clients that had gone"
    print("\nRSS MiB:", {k: round(v / 2**20) for k, v in RSS.items()}, *target.notes, sep="\n")


def _median_rss(process: psutil.Process) -> int:
    readings = []
    for _ in range(5):
        readings.append(process.memory_info().rss)
        time.sleep(0.2)  # spacing between readings, not synchronisation
    return sorted(readings)[2]


class RssPeak:
    """The highest RSS of the server seen while a flood runs (sampled every 20 ms)."""

    def __init__(self, process: psutil.Process) -> None:
        self.process, self.peak = process, process.memory_info().rss

    async def __aenter__(self) -> RssPeak:
        self._task = asyncio.create_task(self._sample())
        return self

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, self.process.memory_info().rss)
            await asyncio.sleep(0.02)

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        self.peak = max(self.peak, self.process.memory_info().rss)


def assert_healthy(t: Target, rss_peak: int | None = None, name: str = "") -> None:
    """Nothing running, a normal request answered promptly with the reference samples, no traceback logged."""
    _wait_for(lambda: _metric(t, "fasttts_requests_active") == 0, 30, "requests of gone clients still running")
    started = time.monotonic()
    pcm = bytes(asyncio.run(asyncio.wait_for(say(t.server.uri, SENTENCE), 60)).pcm)
    assert pcm == t.reference, "the audio changed"
    assert time.monotonic() - started < 30
    log = t.new_log()
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
    assert t.server.process.poll() is None
    if rss_peak is not None:
        RSS[name] = rss_peak
        assert rss_peak <= RSS_RATIO * t.steady_rss, f"RSS {rss_peak / 2**20:.0f} MiB under the flood, " \
            f"steady {t.steady_rss / 2**20:.0f} MiB"


def _wait_for(condition, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.05)


def _metrics(t: Target) -> dict[str, float]:
    async def get() -> str:
        async with aiohttp.ClientSession() as session, session.get(f"{t.server.http_uri}/metrics") as response:
            return await response.text()

    values = {}
    for line in asyncio.run(get()).splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def _metric(t: Target, name: str) -> float:
    return _metrics(t).get(name, 0.0)


async def _open(t: Target, rcvbuf: int | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if rcvbuf is None:
        return await asyncio.open_connection(t.host, t.port)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (t.host, t.port))
    return await asyncio.open_connection(sock=sock)


async def _replies(reader: asyncio.StreamReader, timeout: float, until: tuple[str, ...] = ()) -> list[Event]:
    """Events until one of ``until`` or the server closes; failing if neither happens within ``timeout``."""
    events: list[Event] = []
    async with asyncio.timeout(timeout):
        while True:
            try:
                event = await async_read_event(reader)
            except ConnectionError:
                return events
            if event is None:
                return events
            events.append(event)
            if event.type in until:
                return events


def _codes(events: list[Event]) -> list[str]:
    return [e.data.get("code") for e in events if e.type == "error"]


# -- the wire fuzzer ----------------------------------------------------------------------------------------

BASE_EVENTS = [
    {"type": "describe"},
    {"type": "ping", "data": {"text": "hi"}},
    {"type": "synthesize", "data": {"text": "你好。", "voice": {"name": "zf_xiaobei"}}},
    {"type": "synthesize", "data": {"text": "一二三。", "context": {"speed": 1.2}}},
    {"type": "synthesize-start", "data": {"voice": {"name": "zm_yunxi"}}},
    {"type": "synthesize-chunk", "data": {"text": "好的。"}},
    {"type": "synthesize-stop"},
]
HOSTILE_VALUES = ["fast", [1], {}, 2**63, -1, 1e308, None, True, "\ud800", "x" * 3000, [[[[[]]]]], "", "zf_xiaobei",
                  0.0, {"name": 2**63}, {"speed": "fast"}, "synthesize", "audio-chunk"]
FIELDS = ["text", "voice", "speed", "context", "text_format", "type", "data", "voice.name", "voice.speaker",
          "context.speed"]


def _encode(event: dict, rng: random.Random) -> bytes:
    """Wire form: data inline in the header or as a data block (both are valid Wyoming)."""
    event = dict(event)
    if rng.random() < 0.5 and isinstance(event.get("data"), dict):
        data = json.dumps(event.pop("data")).encode()
        event["data_length"] = len(data)
        return json.dumps(event).encode() + b"\n" + data
    return json.dumps(event).encode() + b"\n"


def _mutate(rng: random.Random) -> bytes:
    event = json.loads(json.dumps(rng.choice(BASE_EVENTS)))
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(5)
        if kind <= 1:  # a field set to a value of the wrong type or size
            path = rng.choice(FIELDS).split(".")
            holder = event if path[0] in ("type", "data") else event.setdefault("data", {})
            if isinstance(holder, dict) and len(path) == 2:
                holder = holder.setdefault(path[0], {})
                path = path[1:]
            if isinstance(holder, dict):
                holder[path[0]] = rng.choice(HOSTILE_VALUES)
    raw = _encode(event, rng)
    kind = rng.randrange(9)
    if kind == 0:  # flipped or inserted bytes
        pos = rng.randrange(len(raw))
        raw = raw[:pos] + bytes([rng.randrange(256)]) + raw[pos + rng.randint(0, 1):]
    elif kind == 1:  # cut short
        raw = raw[: rng.randrange(1, len(raw))]
    elif kind == 2:  # lengths nobody should honour
        length = rng.choice(["1e400", "-5", '"12"', str(2**40), str(1 << 30), "true", "[1]", "1.5"])
        raw = b'{"type": "describe", "%s": %s}\n' % (rng.choice([b"data_length", b"payload_length"]), length.encode())
    elif kind == 3:  # deep nesting in the header or in the data block
        depth = rng.choice([40, 1500, 3000])
        nested = b"[" * depth + b"]" * depth
        raw = (b'{"type": "describe", "data": {"x": %s}}\n' % nested if rng.random() < 0.5
               else b'{"type": "synthesize", "data_length": %d}\n%s' % (len(nested), nested))
    elif kind == 4:  # a lone surrogate, an invalid UTF-8 byte
        raw = rng.choice([b'{"type": "synthesize", "data": {"text": "\\ud800", "voice": {"name": "\\udfff"}}}\n',
                          b'{"type": "synthesize", "data": {"text": "\xff\xfe"}}\n'])
    elif kind == 5:  # a data block that is not an object
        raw = b'{"type": "synthesize", "data": {"text": "x"}, "data_length": 3}\n[1]'
    return raw


async def _fuzz_case(t: Target, raw: bytes, vanish: bool) -> list[str]:
    reader, writer = await _open(t)
    try:
        writer.write(raw + b'\n{"type": "ping", "data": {"text": "end"}}\n')
        await writer.drain()
        if vanish:
            return []
        events = await _replies(reader, 60, until=("pong",))
        return _codes(events)
    except ConnectionError:
        return []
    finally:
        writer.close()


def test_wire_fuzzer_gets_client_errors_only(target):
    rng = random.Random(20261201)
    cases = [(_mutate(rng), rng.random() < 0.2) for _ in range(160)]
    deadline = time.monotonic() + 150

    async def fuzz() -> tuple[int, dict[str, int], int]:
        codes: dict[str, int] = {}
        done = 0
        async with RssPeak(target.process) as peak:
            for start in range(0, len(cases), 4):
                if time.monotonic() > deadline:
                    break
                batch = cases[start:start + 4]
                results = await asyncio.gather(*(_fuzz_case(target, raw, vanish) for raw, vanish in batch))
                for (raw, _), found in zip(batch, results, strict=True):
                    assert set(found) <= CLIENT_CODES, f"{found} for {raw[:200]!r}"
                    for code in found:
                        codes[code] = codes.get(code, 0) + 1
                done += len(batch)
        target.notes.append(f"fuzzer: {done} cases, {codes}")
        return done, codes, peak.peak

    done, codes, peak = asyncio.run(fuzz())
    assert done >= 80 and codes.get("malformed-event") and codes.get("bad-text"), (done, codes)
    assert_healthy(target, peak, "fuzzer")


# -- floods -------------------------------------------------------------------------------------------------

async def _flood_one(t: Target, header: dict, send: int) -> list[str]:
    reader, writer = await _open(t)
    writer.write(json.dumps(header).encode() + b"\n")
    chunk = b"\0" * 65536
    try:
        for _ in range(send // len(chunk)):
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass  # refused before all of it was sent: what should happen
    try:
        return _codes(await _replies(reader, 30))
    finally:
        writer.close()


def test_payload_flood_is_refused_before_it_is_read(target):
    headers = [{"type": "describe", "payload_length": 1 << 30}, {"type": "synthesize", "data_length": 1 << 30},
               {"type": "describe", "payload_length": 1 << 30}, {"type": "audio-chunk", "payload_length": 1 << 20}]

    async def flood() -> int:
        async with RssPeak(target.process) as peak:
            results = await asyncio.gather(*(_flood_one(target, h, 16 << 20) for h in headers))
        assert all(codes == ["malformed-event"] for codes in results), results
        return peak.peak

    assert_healthy(target, asyncio.run(flood()), "payload flood")


def test_slowloris_is_cut_off_by_the_read_timeout(target):
    async def trickle() -> tuple[list[str], float]:
        reader, writer = await _open(target)
        started = time.monotonic()
        header = b'{"type": "synthesize", "data": {"text": "' + "你好".encode() * 40

        async def send() -> None:
            for byte in header:  # one byte at a time, as slowloris does
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.05)  # the attack's pacing

        sender = asyncio.create_task(send())
        try:
            return _codes(await _replies(reader, 20)), time.monotonic() - started
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            writer.close()

    async def held(partial: bytes) -> list[str]:
        reader, writer = await _open(target)
        writer.write(partial)
        try:
            return _codes(await _replies(reader, 20))
        finally:
            writer.close()

    async def attack() -> tuple[list, int]:
        async with RssPeak(target.process) as peak:
            results = await asyncio.gather(
                trickle(), held(b'{"type": "desc'), held(b'{"type": "synthesize", "data_length": 100}\n{"te'),
                held(b'{"type": "describe", "payload_length": 500}\n' + b"x" * 10),
            )
        return results, peak.peak

    results, peak = asyncio.run(attack())
    (codes, seconds), *others = results
    assert codes in (["malformed-event"], ["closed"]) and seconds < 10, (codes, seconds)
    assert all(c == ["malformed-event"] for c in others), others
    assert_healthy(target, peak, "slowloris")


def test_idle_flood_beyond_the_connection_cap(target):
    cap, extra = LIMITS["max_connections"], 6

    async def flood() -> tuple[list[list[str]], int]:
        async with RssPeak(target.process) as peak:
            connections = [await _open(target) for _ in range(cap + extra)]
            results = await asyncio.gather(*(_replies(r, 30) for r, _ in connections))
            for _, writer in connections:
                writer.close()
        return [_codes(events) for events in results], peak.peak

    results, peak = asyncio.run(flood())
    refused = [codes for codes in results if codes == ["busy"]]
    assert len(refused) == extra, results  # the rest were held until the idle timeout closed them silently
    assert all(codes in ([], ["busy"]) for codes in results), results
    assert_healthy(target, peak, "idle flood")


# -- clients that never read, or vanish ---------------------------------------------------------------------

def _synthesize_line(text: str) -> bytes:
    return json.dumps({"type": "synthesize", "data": {"text": text}}).encode() + b"\n"


def test_a_client_that_never_reads_is_dropped_and_its_work_cancelled(target):
    audio_before = _metric(target, "fasttts_audio_seconds_total")
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        sock.connect((target.host, target.port))
        sock.sendall(_synthesize_line(LONG))
        _wait_for(lambda: _metric(target, "fasttts_requests_active") == 1, 30, "the request did not start")
        # the server gives up on us (limits.write_timeout_s) without our reading a byte or closing
        _wait_for(lambda: _metric(target, "fasttts_requests_active") == 0, 60,
                  "a client that never reads kept its request running")
    spoken = _metric(target, "fasttts_audio_seconds_total") - audio_before
    assert spoken < 0.6 * len(LONG) / 4, f"{spoken:.1f} s of audio made for a client that never read"
    assert_healthy(target)


def test_a_vanished_client_costs_at_most_the_sentence_in_flight(target):
    audio_before = _metric(target, "fasttts_audio_seconds_total")
    with socket.create_connection((target.host, target.port)) as sock:
        sock.sendall(_synthesize_line(LONG))
    body = LONG.encode()
    http_port = int(target.server.http_uri.rsplit(":", 1)[1])
    with socket.create_connection((target.host, http_port)) as sock:
        sock.sendall(b"POST /api/tts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        _wait_for(lambda: _metric(target, "fasttts_requests_active") >= 1, 30, "the HTTP request did not start")
    _wait_for(lambda: _metric(target, "fasttts_requests_active") == 0, 30, "work for gone clients kept running")
    spoken = _metric(target, "fasttts_audio_seconds_total") - audio_before
    # Each request may finish what the engine had started (a sentence or two); not its ~30 s of audio.
    assert spoken < 12, f"{spoken:.1f} s of audio made for clients that had gone"
    assert_healthy(target)


# -- the HTTP side ------------------------------------------------------------------------------------------

async def _http(t: Target, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    async with aiohttp.ClientSession() as session, session.request(
            method, f"{t.server.http_uri}{path}", data=body, headers=headers or {}) as response:
        return response.status, dict(response.headers), await response.read()


def test_dns_rebinding_and_cross_origin_requests_are_refused(target):
    port = target.server.http_uri.rsplit(":", 1)[1]
    evil = {"Host": f"rebind.example.invalid:{port}", "Origin": f"http://rebind.example.invalid:{port}"}
    text = {"Content-Type": "text/plain"}
    reloads = _metric(target, 'fasttts_engine_reloads_total{trigger="manual"}')
    for path in ("/admin/reload", "/api/tts"):
        assert asyncio.run(_http(target, "POST", path, SENTENCE.encode(), {**evil, **text}))[0] == 403
        assert asyncio.run(_http(target, "POST", path, SENTENCE.encode(), {"Host": evil["Host"], **text}))[0] == 403
    assert asyncio.run(_http(target, "GET", "/api/tts?text=x", headers={"Host": evil["Host"]}))[0] == 403
    # a page of another origin posting text/plain (no CORS preflight) to the real address
    assert asyncio.run(_http(target, "POST", "/api/tts", SENTENCE.encode(),
                             {"Origin": "http://rebind.example.invalid", **text}))[0] == 403
    assert _metric(target, 'fasttts_engine_reloads_total{trigger="manual"}') == reloads
    # the names this host really has still work, and give the same audio as Wyoming
    status, _, wav = asyncio.run(_http(target, "POST", "/api/tts", SENTENCE.encode(),
                                       {"Host": f"localhost:{port}", **text}))
    assert status == 200
    with wave.open(io.BytesIO(wav)) as w:
        assert w.readframes(w.getnframes()) == target.reference
    assert_healthy(target)


def test_oversized_and_undecodable_bodies_get_413_and_400(target):
    status, _, body = asyncio.run(_http(target, "POST", "/api/tts", b"x" * (2 << 20), {"Content-Type": "text/plain"}))
    assert status == 413 and json.loads(body)["code"] == "too-large", body
    for content_type, raw in (("text/plain; charset=no-such-charset", b"abc"),
                              ("text/plain; charset=utf-8", b"\xff\xfe\xfa"),
                              ("application/json", b'{"text": "\xff"}')):
        status, _, body = asyncio.run(_http(target, "POST", "/api/tts", raw, {"Content-Type": content_type}))
        assert status == 400 and json.loads(body)["code"] == "bad-text", (content_type, body)
    assert_healthy(target)


# -- signals ------------------------------------------------------------------------------------------------

def test_sighup_and_sigusr1_mid_reply_neither_kill_nor_cut_it(target):
    text = "今天天气很好。我们一起去公园散步吧！你觉得怎么样？"
    expected = bytes(asyncio.run(say(target.server.uri, text)).pcm)

    async def signalled() -> list[Event]:
        reader, writer = await _open(target)
        await async_write_event(Event("synthesize", {"text": text}), writer)
        first = await _replies(reader, 60, until=("audio-start",))
        assert first and first[-1].type == "audio-start", first
        for sig in (signal.SIGUSR1, signal.SIGHUP):
            os.kill(target.server.process.pid, sig)
        rest = await _replies(reader, 120, until=("audio-stop",))
        writer.close()
        return first + rest

    events = asyncio.run(signalled())
    assert events[-1].type == "audio-stop", [e.type for e in events][-3:]
    assert b"".join(e.payload or b"" for e in events if e.type == "audio-chunk") == expected
    _wait_for(lambda: "SIGUSR1:" in target.server.log_text() and "SIGHUP" in target.server.log_text(), 10,
              "signals were not handled")
    # the SIGHUP reload ends (a new engine, or a logged refusal): the check below then hears the new engine
    _wait_for(lambda: _metric(target, 'fasttts_engine_reloads_total{trigger="signal"}') == 1
              or "SIGHUP: no reload" in target.server.log_text(), 180, "the SIGHUP reload did not finish")
    assert_healthy(target)


def test_manual_reloads_are_rate_limited(target):
    first = asyncio.run(_http(target, "POST", "/admin/reload"))
    assert first[0] in (200, 429), first  # 429: the SIGHUP of the test above reloaded within the interval
    status, headers, body = asyncio.run(_http(target, "POST", "/admin/reload"))
    assert status == 429 and int(headers["Retry-After"]) > 0, body
    assert json.loads(body)["code"] == "too-soon"
    assert_healthy(target)
