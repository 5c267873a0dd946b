"""The Wyoming reader's bounds and the field checks, on the bytes the issue's probe sent (no server, no model)."""

from __future__ import annotations

import asyncio
import json

import pytest
from wyoming.event import Event

from wyoming_fasttts.config import ConfigError, load_settings
from wyoming_fasttts.scheduler import BusyError
from wyoming_fasttts.server.http import _host_name, known_hosts
from wyoming_fasttts.server.wire import MalformedEvent, PeerReader, check_fields, read_event
from wyoming_fasttts.server.wyoming import Peers
from wyoming_fasttts.synthesizer import TextError

LIMITS = load_settings(overrides={"limits.max_payload_bytes": 1024}).limits


def _read(raw: bytes):
    async def go():
        reader = PeerReader(LIMITS.max_header_bytes)
        reader.feed_data(raw)
        reader.feed_eof()
        return await read_event(reader, LIMITS)

    return asyncio.run(go())


MALFORMED = [
    (b'{"type": "describe", "payload_length": 1073741824}\n', True),  # the 1 GiB flood: refused unread
    (b'{"type": "describe", "data_length": 1e400}\n', True),
    (b'{"type": "describe", "data_length": -1}\n', True),
    (b'{"type": "describe", "data_length": "12"}\n', True),
    (b'{"type": "describe", "payload_length": true}\n', True),
    (b'{"type": "x", "data": {"t": "' + b"a" * (LIMITS.max_header_bytes + 10) + b'"}}\n', True),
    (b'{"type": "synthesize", "data": {"x": ' + b"[" * 30000 + b"]" * 30000 + b"}}\n", False),
    (b'{"type": "synthesize", "data": {"x": ' + b"[" * 3000 + b"]" * 3000 + b"}}\n", False),
    (b'{"type": "synthesize", "data": {"x": ' + b"[" * 40 + b"]" * 40 + b"}}\n", False),
    (b'{"type": "synthesize", "data": {"text": "x"}, "data_length": 3}\n[1]', False),
    (b'{"type": "synthesize", "data": [1]}\n', False),
    (b'{"type": "synthesize", "data": {"voice": {"name": "\\ud800"}}}\n', False),
    (b'{"type": "synthesize", "data": {"text": "\xff"}}\n', False),
    (b'[1, 2]\n', False),
    (b'{"type": 5}\n', False),
    (b'{"type": "describe", "data_length": 99999999999999999999' + b"9" * 5000 + b"}\n", False),
]


@pytest.mark.parametrize(("raw", "fatal"), MALFORMED, ids=[f"probe{n}" for n in range(len(MALFORMED))])
def test_malformed_events_are_refused_before_their_lengths_are_read(raw, fatal):
    with pytest.raises(MalformedEvent) as caught:
        _read(raw)
    assert caught.value.fatal == fatal


def test_a_text_too_long_is_read_past_and_refused_and_the_next_event_still_reads():
    big = json.dumps({"text": "好" * LIMITS.max_data_bytes}, ensure_ascii=False).encode()
    assert LIMITS.max_data_bytes < len(big) < 16 * LIMITS.max_data_bytes

    async def go():
        reader = PeerReader(LIMITS.max_header_bytes)
        reader.feed_data(b'{"type": "synthesize-chunk", "data_length": %d}\n%s{"type": "describe"}\n'
                         % (len(big), big))
        reader.feed_eof()
        with pytest.raises(MalformedEvent) as caught:
            await read_event(reader, LIMITS)
        return caught.value, await read_event(reader, LIMITS)

    refused, following = asyncio.run(go())
    assert (refused.code, refused.fatal) == ("bad-text", False) and "limits.max_data_bytes" in str(refused)
    assert following.type == "describe"


def test_a_well_formed_event_with_data_block_and_small_payload_reads_whole():
    data = json.dumps({"text": "你好"}).encode()
    event = _read(b'{"type": "synthesize", "data": {"voice": {"name": "zf_xiaobei"}}, "data_length": %d, '
                  b'"payload_length": 4}\n%sabcd' % (len(data), data))
    assert event.type == "synthesize" and event.payload == b"abcd"
    assert event.data == {"voice": {"name": "zf_xiaobei"}, "text": "你好"}


@pytest.mark.parametrize("data", [
    {"text": "好", "speed": "fast"}, {"text": "好", "speed": [1]}, {"text": "好", "context": "fast"},
    {"text": "好", "voice": {"name": 2**63}}, {"text": "好", "voice": "zf_xiaobei"}, {"text": 5},
    {"text": "好", "context": {"speed": float("nan")}}, {"text": "好", "text_format": [1]},
    {"text": "好", "speed": True},
])
def test_synthesize_fields_of_the_wrong_type_are_bad_text(data):
    with pytest.raises(TextError):
        check_fields(Event("synthesize", data))


def test_peers_cap_connections_and_requests():
    limits = load_settings(overrides={"limits.max_connections": 3, "limits.max_connections_per_peer": 2,
                                      "limits.max_requests_per_peer": 1}).limits
    peers = Peers(limits)
    assert peers.admit("a") is None and peers.admit("a") is None
    assert "max_connections_per_peer" in peers.admit("a")
    assert peers.admit("b") is None
    assert "max_connections" in peers.admit("c")
    peers.leave("a")
    assert peers.admit("c") is None
    assert peers.claim_request("a")
    with pytest.raises(BusyError):
        peers.claim_request("a")
    peers.release_request("a")
    assert peers.claim_request("a")


def test_limits_that_cannot_carry_the_longest_text_are_refused():
    with pytest.raises(ConfigError, match="max_data_bytes"):
        load_settings(overrides={"limits.max_data_bytes": 1000})
    with pytest.raises(ConfigError, match="read_timeout_s"):
        load_settings(overrides={"limits.read_timeout_s": 0})
    assert load_settings(overrides={"server.max_text_chars": 100, "limits.max_data_bytes": 2000})


def test_host_names_for_the_rebinding_check():
    assert _host_name("[::1]:10201") == "::1"
    assert _host_name("LocalHost:10201") == "localhost"
    assert _host_name("192.168.1.5") == "192.168.1.5"
    settings = load_settings(overrides={"limits.http_allowed_hosts": ["tts.home.lan"]})
    hosts = known_hosts(settings)
    assert {"localhost", "tts.home.lan", "127.0.0.1"} <= hosts
    assert "rebind.example.invalid" not in hosts
