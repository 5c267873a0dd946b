"""The Wyoming wire format, read with every part bounded: a header line, its data and payload lengths checked
against ``limits`` before a byte of them is read, JSON nesting bounded, field types checked.

wyoming's own reader trusts whatever lengths a header claims and hangs up on bad JSON without a word; a TTS
server on a LAN port must instead answer ``malformed-event`` (or ``bad-text`` for a field of the wrong type)
and never buffer more than its limits allow (docs/OPERATIONS.md lists them).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from wyoming.event import Event

from ..config import LimitSettings
from ..synthesizer import TextError


class MalformedEvent(ValueError):
    """Input that is not a Wyoming event; ``fatal`` when the rest of the stream can no longer be framed."""

    def __init__(self, message: str, fatal: bool = False, code: str = "malformed-event") -> None:
        super().__init__(message)
        self.fatal = fatal
        self.code = code


class PeerReader(asyncio.StreamReader):
    """A stream reader that tells when the peer has gone (EOF or reset) without consuming anything."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit=limit)
        self.gone = asyncio.Event()

    def feed_eof(self) -> None:
        super().feed_eof()
        self.gone.set()

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        self.gone.set()

    async def wait_readable(self) -> None:
        """Return once a byte is buffered or the peer has gone; reads nothing.

        asyncio has no public way to wait for data without taking it; this uses the same private wait its
        own ``read*`` methods use (stable since Python 3.4)."""
        state: Any = self
        while not state._buffer and not self.gone.is_set():
            await state._wait_for_data("wait_readable")


async def read_event(reader: asyncio.StreamReader, limits: LimitSettings) -> Event | None:
    """One event, each part bounded by ``limits`` before it is read."""
    try:
        line = await reader.readline()
    except ValueError:  # asyncio's line limit (the reader was made with limit=max_header_bytes)
        raise MalformedEvent(f"header line longer than {limits.max_header_bytes} bytes (limits.max_header_bytes)",
                              fatal=True) from None
    if not line:
        return None
    header = _parse_json(line, limits, "header")
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        # Without a header object there are no lengths to skip, so the next line is the next event.
        raise MalformedEvent("header must be a JSON object with a 'type' string")
    data_length = _length(header, "data_length", limits.max_data_bytes, "limits.max_data_bytes")
    payload_length = _length(header, "payload_length", limits.max_payload_bytes, "limits.max_payload_bytes")
    oversize = data_length > limits.max_data_bytes or payload_length > limits.max_payload_bytes
    if oversize:  # a careless client's long text: read past it without keeping it, refuse, stay in step
        await _discard(reader, data_length + payload_length)
        if data_length > limits.max_data_bytes and header["type"] in ("synthesize", "synthesize-chunk"):
            # a one-shot that failed before audio ends with a closed connection (what Home Assistant waits for)
            raise MalformedEvent(f"text too long: {data_length} bytes of event data; the limit is "
                                  f"{limits.max_data_bytes} (limits.max_data_bytes)", code="bad-text",
                                  fatal=header["type"] == "synthesize")
        raise MalformedEvent(f"event too large: data {data_length} bytes, payload {payload_length} bytes; "
                              f"the limits are {limits.max_data_bytes} and {limits.max_payload_bytes} "
                              "(limits.max_data_bytes, limits.max_payload_bytes)")
    data = header.get("data")
    extra = _parse_json(await reader.readexactly(data_length), limits, "data") if data_length else None
    payload = await reader.readexactly(payload_length) if payload_length else None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(extra, (dict, type(None))):
        raise MalformedEvent("data must be a JSON object")
    return Event(type=header["type"], data={**data, **(extra or {})}, payload=payload)


# Lengths up to this many times their limit are read past and refused with the connection kept (a long
# text by mistake); larger ones are not read at all: the error is sent and the connection closed (a flood).
_SKIP_FACTOR = 16


def _length(header: dict[str, Any], key: str, limit: int, setting: str) -> int:
    """A declared length, checked before a byte of it is read (a wrong one cannot be skipped safely)."""
    value = header.get(key)
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise MalformedEvent(f"{key} must be a non-negative integer, not {value!r:.40}", fatal=True)
    if value > _SKIP_FACTOR * limit:
        raise MalformedEvent(f"{key} {value} is over the limit of {limit} bytes ({setting})", fatal=True)
    return value


async def _discard(reader: asyncio.StreamReader, count: int) -> None:
    while count > 0:
        chunk = await reader.read(min(count, 65536))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", count)
        count -= len(chunk)


def _parse_json(raw: bytes, limits: LimitSettings, what: str) -> Any:
    try:
        value = json.loads(raw)
    except RecursionError:
        raise MalformedEvent(f"{what} nests deeper than {limits.max_json_depth} (limits.max_json_depth)") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, integers with too many digits
        raise MalformedEvent(f"{what} is not JSON: {err}") from None
    _check_json(value, limits.max_json_depth, what)
    return value


def _check_json(value: Any, depth: int, what: str) -> None:
    """Bounded nesting and text that can be encoded again (a lone surrogate would break every reply)."""
    if depth < 0:
        raise MalformedEvent(f"{what} nests too deep (limits.max_json_depth)")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise MalformedEvent(f"{what} holds a string that is not valid Unicode (a lone surrogate)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json(key, depth - 1, what)
            _check_json(item, depth - 1, what)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth - 1, what)


def check_fields(event: Event) -> None:
    """The fields a synthesize event may carry have the types the protocol gives them (else ``bad-text``)."""
    if event.type not in ("synthesize", "synthesize-start", "synthesize-chunk"):
        return
    data = event.data
    _expect(data, "text", str, optional=event.type == "synthesize-start")
    _expect(data, "text_format", str)
    voice = _expect(data, "voice", dict)
    for key in ("name", "speaker", "language"):
        _expect(voice or {}, key, str, where="voice.")
    context = _expect(data, "context", dict)
    for where, holder in (("", data), ("context.", context or {})):
        speed = holder.get("speed")
        if speed is not None and (type(speed) not in (int, float) or not math.isfinite(speed)):
            raise TextError(f"'{where}speed' must be a number between 0.5 and 2.0, not {speed!r:.40}")


def _expect(data: dict[str, Any], key: str, kind: type, optional: bool = True, where: str = "") -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind):
        raise TextError(f"'{where}{key}' must be a {_KINDS[kind]}, not {value!r:.40}")
    return value


_KINDS: dict[type, str] = {str: "string", dict: "JSON object"}
