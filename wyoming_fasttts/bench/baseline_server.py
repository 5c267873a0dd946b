"""A plain Wyoming TTS server on the same model: the yardstick ``wyoming-fasttts bench`` measures against.

It does on purpose what the common Wyoming TTS servers and the ``kokoro-onnx`` package do, so that the
benchmark's ratios say what this project's server adds over the obvious way:

- one ONNX Runtime session on the shipped int8 graph, batch 1 (kokoro-onnx's ``Kokoro.create``);
- misaki's legacy ``ZHG2P()`` for the phonemes (what kokoro-onnx and Kokoro's pipelines use for Mandarin);
- the text split into sentences, each synthesised in turn, *on the event loop* under one global lock, as
  wyoming-piper's handler does (it calls the model inside ``async with _VOICE_LOCK`` with no thread), so
  one client's answer holds every other client until it is finished;
- the model's audio sent as it is, its ~0.4 s of leading and ~1 s of trailing silence included;
- describe, one-shot synthesize (one audio cycle, each sentence's audio sent as soon as it is ready) and
  streaming like wyoming-piper: complete sentences out of the synthesize-chunk text (sentence-stream, the
  splitter wyoming-piper uses), one audio cycle per sentence, then synthesize-stopped.

    python -m wyoming_fasttts.bench.baseline_server --uri tcp://127.0.0.1:10300 [--threads N] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import onnxruntime as ort
from sentence_stream import SentenceBoundaryDetector, stream_to_sentences
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from ..assets import ensure_assets
from ..audio import to_pcm16
from ..config import load_settings

RATE = 24000
SAMPLES_PER_CHUNK = 1024  # wyoming-piper's default --samples-per-chunk
MAX_TOKENS = 510

_LOCK = asyncio.Lock()  # one model for every client, as wyoming-piper's _VOICE_LOCK


class PlainKokoro:
    """kokoro-onnx's recipe: G2P → ids → one session run of the whole graph → float audio → int16."""

    def __init__(self, model: Path, vocab: Path, voice: Path, threads: int, cuda: bool = False) -> None:
        from misaki import zh

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if cuda else ["CPUExecutionProvider"]
        self._session = ort.InferenceSession(str(model), options, providers=providers)
        self._vocab: dict[str, int] = json.loads(vocab.read_text(encoding="utf-8"))["vocab"]
        self._voice = np.fromfile(voice, np.float32).reshape(-1, 256)
        self._g2p = zh.ZHG2P()

    def synthesize(self, sentence: str) -> bytes:
        phonemes, _ = self._g2p(sentence)
        ids = [self._vocab[p] for p in phonemes if p in self._vocab][:MAX_TOKENS]
        if not ids:
            return b""
        audio = self._session.run(None, {
            "tokens": np.array([[0, *ids, 0]], np.int64),
            "style": self._voice[len(ids) - 1][None, :],
            "speed": np.array([1.0], np.float32),
        })[0]
        return to_pcm16(audio.reshape(-1))


class BaselineHandler(AsyncEventHandler):
    def __init__(self, info: Info, model: PlainKokoro, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._info = info
        self._model = model
        self._stream: SentenceBoundaryDetector | None = None

    async def handle_event(self, event: Event) -> bool:
        try:
            await self._dispatch(event)
        except Exception as err:
            await self.write_event(Error(text=str(err), code=err.__class__.__name__).event())
            raise
        return True

    async def _dispatch(self, event: Event) -> None:
        if Describe.is_type(event.type):
            await self.write_event(self._info.event())
        elif Synthesize.is_type(event.type):
            if self._stream is None:  # inside a stream it is only the copy sent for older servers
                parts = list(stream_to_sentences([Synthesize.from_event(event).text]))
                await self.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
                for part in parts:
                    await self._speak(part)
                await self.write_event(AudioStop().event())
        elif SynthesizeStart.is_type(event.type):
            self._stream = SentenceBoundaryDetector()
        elif SynthesizeChunk.is_type(event.type) and self._stream is not None:
            for part in self._stream.add_chunk(SynthesizeChunk.from_event(event).text):
                await self._speak_cycle(part)
        elif SynthesizeStop.is_type(event.type) and self._stream is not None:
            for part in filter(None, [self._stream.finish()]):
                await self._speak_cycle(part)
            self._stream = None
            await self.write_event(SynthesizeStopped().event())

    async def _speak(self, sentence: str) -> None:
        async with _LOCK:
            pcm = self._model.synthesize(sentence)  # blocks the event loop, as the common servers do
        step = SAMPLES_PER_CHUNK * 2
        for start in range(0, len(pcm), step):
            await self.write_event(AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[start:start + step]).event())

    async def _speak_cycle(self, sentence: str) -> None:
        await self.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        await self._speak(sentence)
        await self.write_event(AudioStop().event())


def build_info(voice: str) -> Info:
    return Info(tts=[TtsProgram(
        name="baseline", description="plain Kokoro ONNX server (one session, one lock, sentence by sentence)",
        attribution=Attribution(name="wyoming-fasttts benchmarks", url=""), installed=True, version="1.0",
        supports_synthesize_streaming=True,
        voices=[TtsVoice(name=voice, description=voice, attribution=Attribution(name="hexgrad", url=""),
                         installed=True, version="1.0", languages=["zh_CN"])],
    )])


async def serve(uri: str, model: PlainKokoro, voice: str) -> None:
    info = build_info(voice)

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = BaselineHandler(info, model, reader, writer)
        try:
            await handler.run()
        finally:
            writer.close()

    parsed = urlparse(uri)
    server = await asyncio.start_server(partial(on_connect), host=parsed.hostname, port=parsed.port)
    logging.info("baseline listening on %s", uri)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uri", default="tcp://127.0.0.1:10300")
    parser.add_argument("--data-dir", help="where the model and voices are (default: defaults.yaml's)")
    parser.add_argument("--model", help="a local Kokoro v1.0 ONNX file instead of the shipped int8 one")
    parser.add_argument("--voice", default="zf_xiaobei")
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0 = its default)")
    parser.add_argument("--cuda", action="store_true", help="ONNX Runtime's CUDA provider (kokoro-onnx on a GPU)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s baseline: %(message)s")
    logging.getLogger("jieba").setLevel(logging.WARNING)
    settings = load_settings(None, {"assets.data_dir": args.data_dir, "assets.model_path": args.model})
    assets = ensure_assets(settings.assets, voices=[args.voice])
    model = PlainKokoro(assets.model, assets.vocab, assets.voice(args.voice), args.threads, args.cuda)
    model.synthesize("你好。")  # load jieba's dictionary before the port opens, as a server's start-up would
    asyncio.run(serve(args.uri, model, args.voice))


if __name__ == "__main__":
    main()
