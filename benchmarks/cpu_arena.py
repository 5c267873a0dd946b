"""CPU memory of the CPU engine's three session pairs: one arena per session against one shared arena.

    python benchmarks/cpu_arena.py [--tokens 200]

Each mode runs in a fresh process: it loads the int8 stage graphs as three session pairs (2, 1 and 1
threads, as the CPU engine does on 2 cores), runs one long sentence through each pair and prints the resident
memory above the interpreter's and the process's peak (VmHWM).

Measured 2026-12-01 on the shared 2-core machine (200 tokens): per-session arenas 863 MiB after the runs,
peak 937 MiB; one shared arena 510 MiB, peak 581 MiB. Not adopted yet: a shared arena keeps its high-water
mark, and during an engine reload it holds both engines' runs, so RSS after three reloads under load stayed
264 MiB above the pre-reload steady state (tests/integration/test_reload.py allows 250 MiB). Next to try:
the run option ``memory.enable_memory_arena_shrinkage`` (its throughput cost needs a side-by-side bench).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = """
import json, sys
import numpy as np
from wyoming_fasttts.assets import ensure_assets
from wyoming_fasttts.backends.alignment import alignment, frame_counts
from wyoming_fasttts.backends.memory import peak_rss_bytes, process_rss_bytes
from wyoming_fasttts.backends.onnxruntime import pad_tokens, session_options
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.graphs.convert import ensure_graphs
import onnxruntime as ort, os
ort.create_and_register_allocator(
    ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT), None)
shared, tokens = sys.argv[1] == "shared", int(sys.argv[2])
settings = load_settings()
graphs = ensure_graphs(ensure_assets(settings.assets, voices=[]).model, settings.assets.data_path)
base = process_rss_bytes()
def options(threads):
    opts = session_options(threads)
    opts.add_session_config_entry("session.use_env_allocators", "1" if shared else "0")
    return opts
pairs = [tuple(ort.InferenceSession(str(graphs.path("int8", s)), options(t)) for s in ("stage1", "stage2"))
         for t in (2, 1, 1)]
loaded = process_rss_bytes()
rng = np.random.default_rng(0)
ids, style = rng.integers(1, 170, tokens), (rng.standard_normal(256) * 0.1).astype(np.float32).reshape(1, -1)
for stage1, stage2 in pairs:
    speed = np.array([1.0], np.float32)
    durations, d, t_en = stage1.run(None, {"tokens": pad_tokens(ids), "style": style, "speed": speed})
    frames = frame_counts(durations, 10)
    stage2.run(None, {"alignment": alignment(frames), "d": d, "t_en": t_en, "style": style})
print(json.dumps({"loaded_mib": (loaded - base) >> 20, "after_runs_mib": (process_rss_bytes() - base) >> 20,
                  "peak_mib": peak_rss_bytes(os.getpid()) >> 20, "frames": int(frames.sum())}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=200, help="phoneme ids of the sentence each pair runs")
    args = parser.parse_args()
    for mode in ("per-session", "shared"):
        out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(args.tokens)], check=True,
                             capture_output=True, text=True).stdout
        print(mode, json.loads(out.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
