"""Text in, PCM out, sentence by sentence: the path every request takes (Wyoming, HTTP, benchmarks).

normalise → split → phonemize → ids → scheduler → engine → trimmed 16-bit PCM. Text work runs in a
thread (jieba and pypinyin take a few ms per sentence, which would stall every other client on the event
loop), and a request keeps only a few sentences in flight so a very long text never holds more than a
window of audio in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

import numpy as np

from . import text
from .audio import SAMPLE_WIDTH, SilenceTrimmer, to_pcm16
from .config import Settings
from .core import MAX_SPEED, MIN_SPEED, SAMPLE_RATE, EngineError, SynthesisItem
from .scheduler import BusyError, Scheduler
from .voices import UnknownVoiceError, VoiceBank

_LOGGER = logging.getLogger(__name__)


class TextError(ValueError):
    """A request that cannot be served as sent (too long, bad speed, no text field); the message is for the client.

    Text with nothing readable in it (empty, emoji, punctuation) is not an error: see ``NOTHING_TO_SAY_MS``.
    """


NOTHING_TO_SAY_MS = 200
"""A request whose text has no readable word (empty, only emoji or punctuation, e.g. a notification that was
just "👍") is answered with this much silence and an info log line, the same on every API. An error would
make an automation that announces such a notification fail or, in Home Assistant's streaming path, cache an
empty file that media players reject; silence is what the text says.
"""


def error_code(err: BaseException) -> str:
    """The code a client gets for a failed request (Wyoming ``error`` events, HTTP JSON errors, metrics)."""
    if isinstance(err, BusyError):
        return "busy"
    if isinstance(err, UnknownVoiceError):
        return "unknown-voice"
    if isinstance(err, TextError):
        return "bad-text"
    if isinstance(err, EngineError):
        return "engine"
    return "internal"


@dataclass(frozen=True)
class Sentence:
    """A piece the model takes at once; ``last`` marks the end of a sentence of the original text."""

    text: str
    ids: np.ndarray
    last: bool = True


class Synthesizer:
    def __init__(self, settings: Settings, voices: VoiceBank, vocab: dict[str, int], scheduler: Scheduler):
        self.settings = settings
        self.voices = voices
        self._vocab = vocab
        self.scheduler = scheduler
        self._silent = {vocab[p] for p in " ,.!?" if p in vocab}

    def check_request(self, raw: str, voice: str | None, speed: float | None) -> tuple[str, float]:
        """Validate what can be validated before any work starts; returns the voice and speed to use."""
        if len(raw) > self.settings.server.max_text_chars:
            raise TextError(
                f"text too long: {len(raw)} characters; the limit is {self.settings.server.max_text_chars} "
                "(server.max_text_chars); send it in parts or stream it"
            )
        name = self.voices.check(voice or self.settings.voice.default)
        speed = self.settings.voice.speed if speed is None else float(speed)
        if not MIN_SPEED <= speed <= MAX_SPEED:
            raise TextError(f"speed {speed} is outside {MIN_SPEED}..{MAX_SPEED}")
        return name, speed

    def sentences(self, raw: str, first: bool = True) -> list[Sentence]:
        """Readable pieces of ``raw``, each short enough for the model; blocking (call in a thread)."""
        spoken = text.normalize(raw)
        cfg = self.settings.text
        pieces = text.split_sentences(
            spoken, max_chars=cfg.max_sentence_chars, first_clause_chars=cfg.first_clause_chars if first else 0
        )
        out: list[Sentence] = []
        for n, piece in enumerate(pieces):
            chunks = self._ids(text.phonemize(piece, normalized=True))
            ends = n == len(pieces) - 1 or piece[-1] in "。！？"
            out.extend(Sentence(piece, ids, ends and k == len(chunks) - 1) for k, ids in enumerate(chunks))
        return out

    def _ids(self, phonemes: str) -> list[np.ndarray]:
        """Phoneme ids, cut at word boundaries where a piece would exceed the model's token limit."""
        limit = self.settings.engine.max_tokens
        chunks: list[list[int]] = [[]]
        for word in phonemes.split(" "):
            ids = [self._vocab[ch] for ch in word if ch in self._vocab]
            if chunks[-1] and len(chunks[-1]) + 1 + len(ids) > limit:
                chunks.append([])
            if chunks[-1] and ids:
                chunks[-1].append(self._vocab[" "])
            chunks[-1].extend(ids[:limit])
        return [np.array(c, np.int64) for c in chunks if any(i not in self._silent for i in c)]

    async def prepare(self, raw: str, first: bool = True) -> list[Sentence]:
        """``sentences`` off the event loop; text with nothing readable gives none, and says so in the log."""
        sentences = await asyncio.to_thread(self.sentences, raw, first)
        if not sentences and raw.strip():
            _LOGGER.info("no readable Chinese or Latin words in %r: nothing to say for it", raw[:80])
        return sentences

    def speech(self, voice: str, speed: float) -> Speech:
        return Speech(self, voice, speed)

    async def one_shot(self, sentences: list[Sentence], voice: str, speed: float) -> AsyncGenerator[bytes, None]:
        """PCM per piece of a request whose text is all known up front (Wyoming synthesize, /api/tts).

        Close it with ``contextlib.aclosing``: leaving early cancels the sentences not yet synthesised.
        """
        speech = self.speech(voice, speed)

        async def feed() -> None:
            await speech.add(sentences)
            speech.close()

        feeder = asyncio.create_task(feed())
        try:
            async for pcm, _last in speech.audio():
                yield pcm
            await feeder
        except BaseException:
            speech.cancel()
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feeder
            raise


@dataclass(frozen=True)
class _Rendering:
    """One piece in the scheduler: the task that ends when it is rendered, and the parts handed over before."""

    task: asyncio.Task[np.ndarray]
    queue: asyncio.Queue[np.ndarray]
    last: bool

    async def parts(self) -> AsyncIterator[np.ndarray]:
        """The piece's audio in the parts the engine rendered it in (one, for an engine that does not stream).

        Leaving early (the client went, or a failure) cancels the rendering, as awaiting the task would.
        """
        try:
            while not (self.queue.empty() and self.task.done()):
                getter = asyncio.ensure_future(self.queue.get())
                try:
                    await asyncio.wait({getter, self.task}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    getter.cancel()
                if getter.done() and not getter.cancelled():
                    yield getter.result()
            # Every part was queued before the task ended (both go through the event loop in order). Its result:
            # the whole audio of an engine that does not stream, else nothing; its exception, the engine's.
            rest = self.task.result()
            if len(rest):
                yield rest
        except BaseException:
            self.task.cancel()
            raise


class SpeechCancelled(ConnectionError):
    """Adding to a request whose audio can no longer be delivered."""


class Speech:
    """One request's audio: sentences go in as they arrive, PCM comes out in order as each is ready.

    At most one batch of sentences is in flight; ``add`` waits for room, which pushes back on a client that
    streams text faster than it can be spoken instead of filling the shared queue.
    """

    def __init__(self, synth: Synthesizer, voice: str, speed: float) -> None:
        self._synth = synth
        self._voice = voice
        self._speed = speed
        self._in_flight = 0
        self._room = asyncio.Event()
        """Set whenever a sentence leaves the window (or the request is cancelled): ``add`` looks again."""
        self._tasks: asyncio.Queue[_Rendering | None] = asyncio.Queue()
        self._order = 0
        self._cancelled = False
        self._heard_until = 0.0
        """When (monotonic) the audio sent so far will have played, were it played as it arrived."""

    def _window(self) -> int:
        """A request keeps as many sentences in flight as one batch of the current engine holds.

        Enough for a batching engine to render them together, and on a batch-1 engine its next sentence
        does not compete with the one the listener is waiting for (on the CPU that made the first audio
        ~40% later). Read per sentence: after an engine reload the new engine's batch size applies.
        """
        return max(1, self._synth.scheduler.engine.max_batch)

    async def add(self, sentences: list[Sentence]) -> None:
        """Queue sentences for synthesis; raises SpeechCancelled once the request has been cancelled."""
        for sentence in sentences:
            while self._in_flight >= self._window() and not self._cancelled:
                self._room.clear()
                await self._room.wait()
            if self._cancelled:
                raise SpeechCancelled("the request was cancelled")
            self._in_flight += 1
            style = self._synth.voices.style(self._voice, len(sentence.ids))
            item = SynthesisItem(sentence.ids, style, self._speed)
            parts: asyncio.Queue[np.ndarray] = asyncio.Queue()
            # A later piece is rendered while the audio before it plays: the engine plans its parts to be ready by
            # the time that runs out (in one piece where it has the time; rendered whole regardless, a long
            # sentence came 1-2 s late on a 2-core CPU without VNNI), read when it plans them. The first has its
            # listener waiting (as has one whose text came after the audio before it had played): no deadline.
            task = asyncio.create_task(self._synth.scheduler.synthesize(
                item, self._order, on_part=parts.put_nowait, deadline=self._heard_until_now if self._order else None))
            task.add_done_callback(self._rendered)
            self._tasks.put_nowait(_Rendering(task, parts, sentence.last))
            self._order += 1

    def _rendered(self, task: asyncio.Task[np.ndarray]) -> None:
        """A sentence has left the window (rendered, failed or cancelled): ``add`` may send the next."""
        self._in_flight -= 1
        self._room.set()

    def _heard_until_now(self) -> float:
        """When the audio sent so far will have played (monotonic); read by the engine's worker thread."""
        return self._heard_until

    def close(self) -> None:
        """No more sentences will be added."""
        self._tasks.put_nowait(None)

    async def audio(self) -> AsyncIterator[tuple[bytes, bool]]:
        """Trimmed 16-bit PCM as it is rendered, in order, and whether it ends a sentence (the last of a piece's
        parts does, where the piece ends one); ends after ``close``.

        A request that had nothing to say gets ``NOTHING_TO_SAY_MS`` of silence, so every request has audio.
        """
        while (entry := await self._tasks.get()) is not None:
            trimmer = SilenceTrimmer(self._synth.settings.audio)
            async for samples in entry.parts():
                if len(pcm := trimmer.part(samples)):
                    # Trimmed, as the listener gets it: Kokoro's ~1.4 s of edge silence a sentence is not heard.
                    self._heard_until = max(time.monotonic(), self._heard_until) + len(pcm) / SAMPLE_RATE
                    yield to_pcm16(pcm), False
            yield b"", entry.last
        if self._order == 0:
            _LOGGER.info("the request had nothing readable to say: answering with %d ms of silence", NOTHING_TO_SAY_MS)
            yield bytes(SAMPLE_RATE * SAMPLE_WIDTH * NOTHING_TO_SAY_MS // 1000), True

    def cancel(self) -> None:
        """The client is gone: drop what has not been synthesised, and wake an ``add`` waiting for room."""
        self._cancelled = True
        while not self._tasks.empty():
            entry = self._tasks.get_nowait()
            if entry is not None:
                entry.task.cancel()
        self._room.set()
