"""Time to first audio of several frame-window settings and the plain server, side by side in one run.

Issue 15 asks for first audio at <= 0.4x the plain server's. The settings of ``engine.windows`` trade it against the
first window's closeness to the whole render (``window_vocoder.py``, ``window_norms.py``), and runs on this shared
machine drift by more than the settings differ, so they are compared in one run: every setting's server and the
plain one are up at once, and each of the replies of ``announce_ear.py`` goes one-shot to each server in turn, the
order reversed every other round. Per server: mean and p50 time to the first audio chunk, its ratio to the plain
server's with a 95% interval (requests resampled in pairs), and the whole reply's time. wyoming-bench (PyPI) gives
the issue's own figure for the default setting (``wyoming-fasttts bench --phases wyoming-bench``).

    python benchmarks/window_ttfa.py [--set "" closing_frames=16 right_frames=16,closing_frames=0] [--rounds 4]
        [--checkout before=/tmp/before]   # also a server from another checkout (git worktree add /tmp/before REV)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from announce_ear import REPLIES, windows_yaml  # noqa: E402

from wyoming_fasttts.bench.load import Sample, one  # noqa: E402
from wyoming_fasttts.bench.servers import Served, baseline_command, free_port, start  # noqa: E402
from wyoming_fasttts.config import load_settings  # noqa: E402

PLAIN = "plain server"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="*", default=["", "closing_frames=16", "right_frames=16"],
                        help="engine.windows settings to compare, key=value,... each (\"\" = the defaults)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of the replies (each goes to every server)")
    parser.add_argument("--out", default="out/window-ttfa.json")
    parser.add_argument("--checkout", nargs="*", default=[],
                        help="LABEL=PATH: also a server, default settings, from the checkout at PATH (a plan before)")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp())
    servers: dict[str, Served] = {}
    try:
        for n, spec in enumerate(args.set):
            config, port = logs / f"windows{n}.yaml", free_port()
            config.write_text(windows_yaml(spec) or "{}\n", encoding="utf-8")
            cmd = [sys.executable, "-m", "wyoming_fasttts", "serve", "--uri", f"tcp://127.0.0.1:{port}",
                   "--http-uri", "", "--engine", "onnxruntime", "--config", str(config)]
            servers[spec or "defaults"] = start(f"windows{n}", cmd, port, logs)
        for n, item in enumerate(args.checkout):
            label, path = item.split("=", 1)
            port = free_port()
            cmd = ["env", f"PYTHONPATH={Path(path).resolve()}", sys.executable, "-m", "wyoming_fasttts", "serve",
                   "--uri", f"tcp://127.0.0.1:{port}", "--http-uri", "", "--engine", "onnxruntime"]
            servers[label] = start(f"checkout{n}", cmd, port, logs)
        port = free_port()
        servers[PLAIN] = start("plain", baseline_command(load_settings(), port, cuda=False), port, logs)
        for text in REPLIES[:2]:  # warm-up, not counted
            for served in servers.values():
                asyncio.run(one(served.uri, text))
        samples: dict[str, list[Sample]] = {name: [] for name in servers}
        for r in range(args.rounds):
            for text in REPLIES:
                order = list(servers.items())
                for name, served in order[::-1] if r % 2 else order:
                    samples[name].append(asyncio.run(one(served.uri, text)))
    finally:
        for served in servers.values():
            served.stop()
    plain = np.array([sample.first_audio_s for sample in samples[PLAIN]])
    picks = np.random.default_rng(0).integers(0, len(plain), (10000, len(plain)))
    print("| setting | TTFA mean (p50) ms | ratio to the plain server (95% interval) | whole reply mean ms "
          "| stalled requests, stall mean ms | requests |")
    print("|---|---|---|---|---|---|")
    report = {}
    for name, got in samples.items():
        first = np.array([sample.first_audio_s for sample in got])
        total = [sample.latency_s for sample in got]
        ratios = first[picks].mean(1) / plain[picks].mean(1)
        lo, hi = np.percentile(ratios, [2.5, 97.5])
        stalls = [sample.stall_s for sample in got]
        report[name] = {"ttfa_s": first.tolist(), "total_s": total, "ratio": first.mean() / plain.mean(),
                        "ratio_ci95": [lo, hi], "stall_s": stalls}
        print(f"| {name} | {1000 * first.mean():.0f} ({1000 * np.median(first):.0f}) | "
              f"{first.mean() / plain.mean():.3f} ({lo:.3f}-{hi:.3f}) | {1000 * np.mean(total):.0f} | "
              f"{sum(s > 0 for s in stalls)}, {1000 * np.mean(stalls):.0f} | {len(got)} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"settings": args.set, "rounds": args.rounds, "servers": report}, indent=1),
                              encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
