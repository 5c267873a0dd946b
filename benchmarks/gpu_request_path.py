"""Where a one-shot request's time goes above the engine's: the real server in this process (as
``gpu_table.py measure`` starts it), one request at a time through the Wyoming client, every step
timestamped by wrappers around the package's own functions, and the engine alone run the same way in between.

    python benchmarks/gpu_request_path.py --inputs inputs.json --model M --vocab V --data-dir D \\
        [--engine onnxruntime-cuda] [--runs 200] [--config FILE] --out gpu_request_path.json

Variants, interleaved request by request so that the machine's drift hits them alike: the server as
configured; the same with the whole sentence in one audio-chunk event (``server.audio_chunk_ms`` large);
the same with the text front end on the event loop instead of a worker thread (one thread hop less each way).
The steps (medians, ms): before_text (connection, event read, checks), text (front end), to_queue (back on
the loop, request set up), to_engine (worker thread wakes), engine (its own steps: stage 1, host alignment,
stage 2, audio read back), to_loop (result back on the event loop), pcm (trim, 16-bit), send (chunk events,
audio-stop, the client reading them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEPS = (("before_text", "start", "text0"), ("text", "text0", "text1"), ("to_queue", "text1", "enqueue"),
         ("to_engine", "enqueue", "engine0"), ("engine", "engine0", "engine1"), ("to_loop", "engine1", "resolved"),
         ("pcm", "resolved", "pcm1"), ("send", "pcm1", "end"), ("total", "start", "end"),
         ("e.feeds+stage1", "engine0", "s1_1"), ("e.align", "s1_1", "s2_0"), ("e.stage2", "s2_0", "s2_1"),
         ("e.readback", "s2_1", "engine1"))


class Marks:
    """Timestamps of the request in flight (one at a time), by step name."""

    def __init__(self) -> None:
        self.now: dict[str, float] = {}
        self.events = 0

    def mark(self, name: str) -> None:
        self.now[name] = time.perf_counter()

    def around(self, fn: Callable[..., Any], before: str, after: str) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.mark(before)
            try:
                return fn(*args, **kwargs)
            finally:
                self.mark(after)
        return wrapped


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from wyoming_fasttts import synthesizer
    from wyoming_fasttts.backends.base import SynthesisItem
    from wyoming_fasttts.bench.load import one
    from wyoming_fasttts.bench.servers import free_port
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.server import wyoming as wyoming_server
    from wyoming_fasttts.server.app import start_wyoming
    from wyoming_fasttts.server.runtime import build_runtime

    inputs = json.loads(Path(args.inputs).read_text())
    text = inputs["text"]
    item = inputs["items"][0]
    sentence = SynthesisItem(np.asarray(item["ids"], np.int64), np.asarray(item["style"], np.float32))
    uri = f"tcp://127.0.0.1:{free_port()}"
    settings = load_settings(args.config, {"engine.backend": args.engine, "server.uri": uri, "server.http_uri": "",
                                           "assets.data_dir": args.data_dir, "assets.model_path": args.model})
    runtime = await build_runtime(settings)
    engine = runtime.scheduler.engine
    marks = Marks()
    synth, scheduler = runtime.synth, runtime.scheduler
    synth.sentences = marks.around(synth.sentences, "text0", "text1")  # type: ignore[method-assign]
    engine.run = marks.around(engine.run, "engine0", "engine1")  # type: ignore[method-assign]
    for stage, (a, b) in (("stage1", ("s1_0", "s1_1")), ("stage2", ("s2_0", "s2_1"))):
        part = getattr(engine, stage, None)
        if part is not None:
            part.run = marks.around(part.run, a, b)
    synthesize = scheduler.synthesize

    async def timed_synthesize(*a: Any, **k: Any) -> Any:
        marks.mark("enqueue")
        try:
            return await synthesize(*a, **k)
        finally:
            marks.mark("resolved")

    scheduler.synthesize = timed_synthesize  # type: ignore[method-assign]
    synthesizer.to_pcm16 = marks.around(synthesizer.to_pcm16, "pcm0", "pcm1")
    chunk_ms = {"value": 0}
    pcm_chunks = wyoming_server.pcm_chunks

    def chunks(pcm: bytes, ms: int) -> list[bytes]:
        out = pcm_chunks(pcm, chunk_ms["value"] or ms)
        marks.events += len(out)
        return out

    wyoming_server.pcm_chunks = chunks
    prepare = synth.prepare

    async def on_loop(raw: str, first: bool = True) -> Any:
        return synth.sentences(raw, first)

    variants: dict[str, dict[str, Any]] = {
        "as configured": {"chunk_ms": 0, "prepare": prepare},
        "one chunk per sentence": {"chunk_ms": 60_000, "prepare": prepare},
        "text on the loop": {"chunk_ms": 0, "prepare": on_loop},
    }
    server = await start_wyoming(runtime)
    rows: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in (*variants, "engine alone")}
    try:
        for n in range(args.warmup + args.runs):
            for name, variant in variants.items():
                chunk_ms["value"] = variant["chunk_ms"]
                synth.prepare = variant["prepare"]  # type: ignore[method-assign]
                marks.now, marks.events = {}, 0
                marks.mark("start")
                sample = await one(uri, text)
                marks.now["end"] = sample.end
                if n >= args.warmup:
                    for step, a, b in STEPS:
                        if a in marks.now and b in marks.now:
                            rows[name][step].append((marks.now[b] - marks.now[a]) * 1000)
                    rows[name]["chunk events"].append(marks.events)
            marks.now = {}
            start = time.perf_counter()
            await asyncio.to_thread(engine.run, [sentence])
            if n >= args.warmup:
                rows["engine alone"]["total"].append((time.perf_counter() - start) * 1000)
                for step, a, b in STEPS:
                    if step.startswith("e.") and a in marks.now and b in marks.now:
                        rows["engine alone"][step].append((marks.now[b] - marks.now[a]) * 1000)
    finally:
        server.close()
        await runtime.scheduler.stop(timeout=10)
    return {name: {step: {"p50": round(statistics.median(v), 3), "mean": round(statistics.fmean(v), 3),
                          "p90": round(float(np.percentile(v, 90)), 3)} for step, v in steps.items()}
            for name, steps in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--engine", default="onnxruntime-cuda")
    parser.add_argument("--config")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--out", default="gpu_request_path.json")
    args = parser.parse_args()
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "engine": args.engine, "runs": args.runs,
              "steps_ms": asyncio.run(measure(args))}
    Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1))
    names = [step for step, _, _ in STEPS] + ["chunk events"]
    print("| step | " + " | ".join(report["steps_ms"]) + " |")
    for step in names:
        cells = [f"{v[step]['p50']:.2f}" if step in v else "" for v in report["steps_ms"].values()]
        print(f"| {step} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
