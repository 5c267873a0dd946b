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

WELCOME = "欢迎使用语音合成系统"


async def _events_until(client: AsyncClient, done: str, timeout: float = 120.0) -> list[Event]:
    events = []
    while True:
        event = await asyncio.wait_for(client.read_event(), timeout)
        assert event is not None, "server closed the connection"
        events.append(event)
        if event.type in (done, "error"):
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
    assert all(v.languages == ["zh_CN"] for v in program.voices)


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


@pytest.mark.parametrize(
    ("text", "code"),
    [("", "bad-text"), ("   \n\t ", "bad-text"), ("😀🎉👍 ★☆ ###", "bad-text"), ("好" * 100_000, "bad-text")],
    ids=["empty", "whitespace", "emoji-only", "100k-characters"],
)
def test_unspeakable_text_gets_an_error_and_the_connection_stays_usable(server, text, code):
    async def go():
        async with AsyncClient.from_uri(server.uri) as client:
            await client.write_event(Synthesize(text=text).event())
            first = await _events_until(client, "audio-stop")
            await client.write_event(Describe().event())
            second = await _events_until(client, "info")
            return first, second

    first, second = run(go())
    assert [e.type for e in first] == ["error"]
    assert Error.from_event(first[0]).code == code
    assert second[-1].type == "info"


def test_unknown_voice_error_names_the_valid_voices(server):
    with pytest.raises(ServerError) as caught:
        run(say(server.uri, WELCOME, voice="zf_nobody"))
    assert caught.value.code == "unknown-voice"
    assert all(name in str(caught.value) for name in VOICES)


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
