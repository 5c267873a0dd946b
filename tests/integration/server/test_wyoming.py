"""End to end through the real Wyoming client against the real server process and the real model."""

from __future__ import annotations

import asyncio

import pytest
from conftest import run
from ear import pinyin_error_rate, transcribe
from speech import assert_speech, median_pitch_hz
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from wyoming_fasttts.assets import VOICES
from wyoming_fasttts.client import ServerError, say
from wyoming_fasttts.synthesizer import NOTHING_TO_SAY_MS
from wyoming_fasttts.voices import label

WELCOME = "欢迎使用语音合成系统"


async def _events_until(client: AsyncClient, done: str, timeout: float = 120.0) -> list[Event]:
    events = []
    while True:
        event = await asyncio.wait_for(client.read_event(), timeout)
        assert event is not None, "server closed the connection"
        events.append(event)
        if event.type in (done, "error"):
            return events


async def _events_through(client: AsyncClient, done: str, timeout: float = 120.0) -> list[Event]:
    """Every event up to and including ``done``, errors too: how a request ends is what is being checked."""
    events = []
    while not events or events[-1].type != done:
        event = await asyncio.wait_for(client.read_event(), timeout)
        assert event is not None, f"server closed the connection after {[e.type for e in events]}"
        events.append(event)
    return events


async def _exchange(uri: str, *requests: Event, done: str = "audio-stop") -> list[Event]:
    async with AsyncClient.from_uri(uri) as client:
        for request in requests:
            await client.write_event(request)
        return await _events_until(client, done)


def test_describe_lists_the_mandarin_voices(server):
    events = run(_exchange(server.uri, Describe().event(), done="info"))
    info = Info.from_event(events[-1])
    assert len(info.tts) == 1
    program = info.tts[0]
    assert program.name == "fasttts"
    assert program.supports_synthesize_streaming
    assert program.version and program.attribution and program.description
    assert [v.name for v in program.voices] == list(VOICES)
    assert [v.description for v in program.voices] == [label(name) for name in VOICES]
    assert len({v.description for v in program.voices}) == len(VOICES)
    assert all(v.languages == ["zh_CN", "zh-CN", "zh-cn", "zh-Hans", "zh"] for v in program.voices)
    assert program.attribution.url and all(v.attribution.url for v in program.voices)


def test_one_shot_is_one_audio_cycle_of_intelligible_speech(server):
    events = run(_exchange(server.uri, Synthesize(text=WELCOME).event()))
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types[-1] == "audio-stop"
    assert set(types[1:-1]) == {"audio-chunk"} and len(types) > 3
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (24000, 2, 1)
    pcm = b"".join(AudioChunk.from_event(e).audio for e in events[1:-1])
    assert_speech(pcm, len(WELCOME))
    heard = transcribe(pcm)
    assert pinyin_error_rate(WELCOME, heard) <= 0.2, heard


def test_stream_gives_one_cycle_per_sentence_then_stopped(server):
    sentences = ["今天天气很好。", "我们一起去公园散步吧！", "你觉得怎么样？"]

    async def go() -> list[Event]:
        async with AsyncClient.from_uri(server.uri) as client:
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="zm_yunxi")).event())
            for sentence in sentences:
                await client.write_event(SynthesizeChunk(text=sentence).event())
            # Older clients also send a plain synthesize inside the stream; it must be ignored.
            await client.write_event(Synthesize(text="".join(sentences)).event())
            await client.write_event(SynthesizeStop().event())
            return await _events_until(client, "synthesize-stopped")

    events = run(go())
    types = [e.type for e in events]
    assert "error" not in types
    assert types.count("audio-start") == 3 and types.count("audio-stop") == 3
    assert types[-1] == "synthesize-stopped"
    cycles, pcm = [], b""
    for event in events:
        if AudioStart.is_type(event.type):
            fmt = AudioStart.from_event(event)
            assert (fmt.rate, fmt.width, fmt.channels) == (24000, 2, 1)
        elif AudioChunk.is_type(event.type):
            pcm += AudioChunk.from_event(event).audio
        elif AudioStop.is_type(event.type):
            cycles.append(pcm)
            pcm = b""
    for sentence, audio in zip(sentences, cycles, strict=True):
        assert_speech(audio, len(sentence) - 1)
    assert SynthesizeStopped.is_type(events[-1].type)


def test_voice_and_speed_are_chosen_per_request(server):
    async def go():
        normal = await say(server.uri, WELCOME, voice="zm_yunjian")
        fast = await say(server.uri, WELCOME, voice="zm_yunjian", speed=1.6)
        other = await say(server.uri, WELCOME, voice="zf_xiaoyi")
        return normal, fast, other

    normal, fast, other = run(go())
    assert fast.seconds < 0.85 * normal.seconds
    # The voice asked for is the one heard: a female voice speaks well above the male one.
    assert median_pitch_hz(other.pcm) > 1.3 * median_pitch_hz(normal.pcm)


def _silence(events: list[Event]) -> bytes:
    """The one audio cycle of a nothing-to-say answer: NOTHING_TO_SAY_MS of digital silence."""
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types.count("audio-stop") == 1 and "error" not in types, types
    pcm = b"".join(AudioChunk.from_event(e).audio for e in events if AudioChunk.is_type(e.type))
    assert pcm == bytes(len(pcm)) and len(pcm) == 48 * NOTHING_TO_SAY_MS
    return pcm


@pytest.mark.parametrize("text", ["", "   \n\t ", "😀🎉", "👍", "……", "★☆ ###"])
def test_nothing_to_say_is_a_short_silence_in_both_modes(server, text):
    """Emoji-only or empty text (a notification that was just "👍") is not an error: an automation goes on."""

    async def go():
        async with AsyncClient.from_uri(server.uri) as client:
            await client.write_event(Synthesize(text=text).event())
            one_shot = await _events_until(client, "audio-stop")
            await client.write_event(SynthesizeStart().event())
            for piece in [*text, ""]:
                await client.write_event(SynthesizeChunk(text=piece).event())
            await client.write_event(Synthesize(text=text).event())
            await client.write_event(SynthesizeStop().event())
            streamed = await _events_until(client, "synthesize-stopped")
            return one_shot, streamed

    one_shot, streamed = run(go())
    assert _silence(one_shot) == _silence(streamed[:-1])
    assert [e.type for e in streamed].count("synthesize-stopped") == 1


def test_an_unreadable_first_sentence_of_a_stream_is_skipped(server):
    async def go():
        async with AsyncClient.from_uri(server.uri) as client:
            await client.write_event(SynthesizeStart().event())
            for piece in ["😀🎉。", "今天天气", "很好。"]:
                await client.write_event(SynthesizeChunk(text=piece).event())
            await client.write_event(SynthesizeStop().event())
            return await _events_until(client, "synthesize-stopped")

    events = run(go())
    types = [e.type for e in events]
    assert "error" not in types and types.count("audio-stop") == 1, types
    assert_speech(b"".join(AudioChunk.from_event(e).audio for e in events if AudioChunk.is_type(e.type)), 6)


async def _error_then_hang_up(uri: str, request: Event) -> tuple[Error, Event | None]:
    async with AsyncClient.from_uri(uri) as client:
        await client.write_event(request)
        event = await asyncio.wait_for(client.read_event(), 60)
        assert event is not None and Error.is_type(event.type), event
        return Error.from_event(event), await asyncio.wait_for(client.read_event(), 60)


@pytest.mark.parametrize(
    ("request_event", "code"),
    [
        (Synthesize(text=WELCOME, voice=SynthesizeVoice(name="zf_nobody")).event(), "unknown-voice"),
        (Synthesize(text="好" * 100_000).event(), "bad-text"),
        (Event("synthesize", {"text": 42}), "bad-text"),
        (Event("synthesize", {"text": WELCOME, "speed": "fast"}), "bad-text"),
    ],
    ids=["unknown-voice", "100k-characters", "text-not-a-string", "speed-not-a-number"],
)
def test_a_one_shot_that_fails_before_audio_gets_the_error_then_a_closed_connection(server, request_event, code):
    """Home Assistant ignores the error event; the closed connection is what ends its wait (as a failure)."""
    error, after = run(_error_then_hang_up(server.uri, request_event))
    assert error.code == code
    assert after is None


def test_unknown_voice_error_names_the_valid_voices(server):
    with pytest.raises(ServerError) as caught:
        run(say(server.uri, WELCOME, voice="zf_nobody"))
    assert caught.value.code == "unknown-voice"
    assert all(name in str(caught.value) for name in VOICES)


@pytest.mark.parametrize(
    ("requests", "code"),
    [
        # as Home Assistant sends a stream: start, chunks, the compatibility synthesize, stop
        ([SynthesizeStart(voice=SynthesizeVoice(name="zf_nobody")).event(), SynthesizeChunk(text="今天天气").event(),
          SynthesizeChunk(text="很好。").event(), Synthesize(text="今天天气很好。").event(), SynthesizeStop().event()],
         "unknown-voice"),
        ([SynthesizeStart().event(), SynthesizeChunk(text="好" * 10_001).event(),
          SynthesizeChunk(text="这句不会再说了。").event(), SynthesizeStop().event()], "bad-text"),
        ([SynthesizeStop().event()], "bad-text"),
    ],
    ids=["unknown-voice", "grows-too-long", "stop-without-start"],
)
def test_a_failed_stream_gets_one_error_and_one_synthesize_stopped(server, requests, code):
    """Nothing else: no audio, and nothing left queued behind synthesize-stopped (the describe answers next)."""

    async def go():
        async with AsyncClient.from_uri(server.uri) as client:
            for request in [*requests, Describe().event()]:
                await client.write_event(request)
            return await _events_through(client, "info")

    events = run(go())
    assert [e.type for e in events] == ["error", "synthesize-stopped", "info"]
    assert Error.from_event(events[0]).code == code


def test_malformed_and_unexpected_events_get_errors(server):
    async def go():
        reader, writer = await asyncio.open_connection(*server.uri[len("tcp://") :].split(":"))
        replies = []
        for line in (b"this is not json\n", b'{"no_type": 1}\n', b'{"type": "transcribe", "data": {}}\n',
                     b'{"type": "synthesize-chunk", "data": {"text": "x"}}\n', b'{"type": "describe"}\n'):
            writer.write(line)
            await writer.drain()
            header = await asyncio.wait_for(reader.readline(), 30)
            replies.append(header)
            if b'"data_length"' in header:
                import json

                await reader.readexactly(json.loads(header)["data_length"])
        writer.close()
        return replies

    replies = run(go())
    assert all(b'"type": "error"' in r for r in replies[:4]), replies
    assert b'"type": "info"' in replies[4]


def test_client_disconnecting_mid_stream_does_not_hurt_others(server):
    async def rude():
        reader, writer = await asyncio.open_connection(*server.uri[len("tcp://") :].split(":"))
        await async_write_event(SynthesizeStart().event(), writer)
        await async_write_event(SynthesizeChunk(text="这是一个很长的句子，我说到一半就走了。" * 3).event(), writer)
        while (event := await asyncio.wait_for(async_read_event(reader), 120)) is not None:
            if AudioChunk.is_type(event.type):
                break  # gone once the first audio is out, the rest of the sentences still being synthesised
        writer.close()

    async def go():
        await rude()
        return await say(server.uri, WELCOME)

    reply = run(go())
    assert_speech(bytes(reply.pcm), len(WELCOME))
    assert server.process.poll() is None


def test_four_concurrent_clients_are_all_answered(server):
    texts = ["打开客厅的灯。", "现在几点了？", "明天会下雨吗？", "把空调调到二十六度。"]

    async def go():
        return await asyncio.gather(*(say(server.uri, t, voice=v) for t, v in zip(texts, VOICES, strict=False)))

    replies = run(go())
    for text, reply in zip(texts, replies, strict=True):
        assert reply.cycles == 1
        assert_speech(bytes(reply.pcm), len(text) - 1)
