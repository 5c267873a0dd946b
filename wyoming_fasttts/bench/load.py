"""What the benchmark asks of a server, through the real Wyoming client (``client.say``), one connection
per request as Home Assistant does it.

Servers compared in one run are measured interleaved wherever they are measured one request at a time, so
that whatever else the machine is doing slows both alike and the ratios stay meaningful.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from collections import defaultdict
from dataclasses import dataclass

from ..client import say
from .report import summary_ms


@dataclass(frozen=True)
class Sample:
    """One request: when it started and ended (perf_counter), first audio after start, seconds of audio, and
    how long its audio, played from the first chunk on as it came, would have stopped short (``Reply.stall_s``)."""

    start: float
    end: float
    first_audio_s: float
    audio_s: float
    cycles: int
    stall_s: float = 0.0

    @property
    def latency_s(self) -> float:
        return self.end - self.start

    @property
    def rtf(self) -> float:
        """Real-time factor: time to synthesise over the duration of the audio returned."""
        return self.latency_s / self.audio_s


class BatchLog:
    """The scheduler's batches, for a server run in the benchmark's own process (``build_runtime``'s observer):
    what a load level's throughput is made of, batch sizes and the engine's time for each."""

    def __init__(self) -> None:
        self._batches: list[tuple[int, float | None]] = []  # (size, engine seconds; None: the batch failed)

    def batch_done(self, engine: str, size: int, seconds: float, audio_seconds: float) -> None:
        self._batches.append((size, seconds))  # a worker thread's; list.append is atomic

    def batch_failed(self, engine: str, size: int, error: BaseException) -> None:
        self._batches.append((size, None))

    def queue_depth(self, depth: int) -> None:
        pass

    def take(self) -> dict[str, dict[str, float]]:
        """Since the last take, per batch size: how many batches, the engine's p50, p95 and std in ms over those that
        succeeded (the spread tells the engine's jitter from the server's around it), and how many failed (a
        failure's time says nothing of the engine's speed)."""
        batches, self._batches = self._batches, []
        by_size: dict[int, list[float | None]] = defaultdict(list)
        for size, seconds in batches:
            by_size[size].append(seconds)
        out: dict[str, dict[str, float]] = {}
        for size, times in sorted(by_size.items()):
            done = [t for t in times if t is not None]
            spread = summary_ms(done) if done else {}
            out[str(size)] = {"batches": len(times), "failed": len(times) - len(done),
                              **{f"engine_{k}_ms": spread.get(k, float("nan")) for k in ("p50", "p95", "std")}}
        return out


async def one(uri: str, text: str, stream: bool = False) -> Sample:
    start = time.perf_counter()
    reply = await say(uri, text, stream=stream)
    end = time.perf_counter()
    if not reply.pcm or reply.first_audio_s is None:
        raise RuntimeError(f"{uri} returned no audio for {text!r}")
    return Sample(start, end, reply.first_audio_s, reply.seconds, reply.cycles, reply.stall_s)


async def sequential(uris: dict[str, str], text: str, runs: int) -> dict[str, list[Sample]]:
    """``runs`` one-shot requests per server, one at a time, alternating servers (ABAB...)."""
    out: dict[str, list[Sample]] = {name: [] for name in uris}
    for _ in range(runs):
        for name, uri in uris.items():
            out[name].append(await one(uri, text))
    return out


@dataclass
class LoadResult:
    """Timed samples of one level, and the requests that ended inside the timed window(s)."""

    clients: int
    samples: list[Sample]
    finished: int
    window_s: float

    @property
    def qps(self) -> float:
        return self.finished / self.window_s

    def __add__(self, other: LoadResult) -> LoadResult:
        """Pool two passes at the same level (run apart, so their windows add up)."""
        return LoadResult(self.clients, self.samples + other.samples, self.finished + other.finished,
                          self.window_s + other.window_s)


async def load(uri: str, text: str, clients: int, requests: int) -> LoadResult:
    """``clients`` closed-loop clients share ``requests`` timed one-shot requests.

    Each client first sends one untimed request: they all arrive at once, and what is measured after that is
    the steady state, every request queued behind the others' (a burst from idle would report its own
    ramp, not the server's behaviour under load). QPS counts every request that ends inside the timed window.
    """
    remaining = requests
    timed: list[Sample] = []
    ends: list[float] = []

    async def client() -> None:
        nonlocal remaining
        ends.append((await one(uri, text)).end)
        while remaining > 0:
            remaining -= 1
            sample = await one(uri, text)
            timed.append(sample)
            ends.append(sample.end)

    await asyncio.gather(*(client() for _ in range(clients)))
    window_start = min(s.start for s in timed)
    window_end = max(ends)
    finished = sum(1 for end in ends if end > window_start)
    return LoadResult(clients, timed, finished, window_end - window_start)


def _load_into(queue: mp.Queue[LoadResult], uri: str, text: str, clients: int, requests: int) -> None:
    queue.put(asyncio.run(load(uri, text, clients, requests)))


async def load_from_child(uri: str, text: str, clients: int, requests: int) -> LoadResult:
    """``load`` with the clients in a child process, as a user's clients are elsewhere: a server benchmarked in the
    benchmark's own process otherwise shares its event loop and its GIL with its clients."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_load_into, args=(queue, uri, text, clients, requests), daemon=True)
    child.start()
    try:
        result: LoadResult = await asyncio.to_thread(queue.get)
    finally:
        await asyncio.to_thread(child.join)
    return result


async def first_audio(uris: dict[str, str], texts: dict[str, str], rounds: int) -> dict[str, dict[str, list[Sample]]]:
    """Per server, per ``text-name/mode``: one-shot and streamed requests, interleaved across servers."""
    out: dict[str, dict[str, list[Sample]]] = {name: {} for name in uris}
    for _ in range(rounds):
        for label, text in texts.items():
            for stream in (False, True):
                key = f"{label}/{'streaming' if stream else 'one-shot'}"
                for name, uri in uris.items():
                    out[name].setdefault(key, []).append(await one(uri, text, stream))
    return out
