"""Which stage-2 shapes ONNX Runtime CUDA can run, per precision and provider option set: every (rows, tokens,
frames) of the shipped buckets, one plain session per option set (no CUDA graphs), features random but shaped
as the engine binds them (the convolution algorithms depend on shapes, not values).

    python benchmarks/gpu_fp16_shapes.py --data-dir D [--precision fp16] --out shapes.json

For each option set: the shapes that failed with the failing node, and the time of a second run of the others.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OPTION_SETS = {"shipped": {}, "nc1d off": {"cudnn_conv1d_pad_to_nc1d": "0"}}


def main() -> None:
    import onnxruntime as ort

    from wyoming_fasttts.assets import ModelAssets
    from wyoming_fasttts.backends.buckets import Buckets
    from wyoming_fasttts.backends.onnxruntime import cuda_providers
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.graphs.batched import ensure_batched_graphs
    from wyoming_fasttts.graphs.cuda_fixes import replace_atan, shape_bounds_on_gpu

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--precision", default="fp16")
    parser.add_argument("--sets", default=",".join(OPTION_SETS))
    parser.add_argument("--out", default="gpu_fp16_shapes.json")
    args = parser.parse_args()
    data = Path(args.data_dir)
    graphs = ensure_batched_graphs(ModelAssets(data / "kokoro-v1.0.int8.onnx", data / "vocab.json", data), data,
                                   args.precision)
    import onnx

    model = onnx.load(str(graphs.stage2))
    replace_atan(model)
    shape_bounds_on_gpu(model)
    blob = model.SerializeToString()
    settings = load_settings()
    eng = settings.engine
    buckets = Buckets.for_limits(settings.scheduler.max_batch, eng.max_tokens, eng.max_frames, eng.batch_frames,
                                 rows=eng.buckets.rows, tokens=eng.buckets.tokens, frames=eng.buckets.frames)
    rng = np.random.default_rng(0)
    report: dict[str, dict[str, object]] = {}
    for name in args.sets.split(","):
        session = ort.InferenceSession(blob, providers=cuda_providers(0, {**eng.cuda_provider_options,
                                                                          **OPTION_SETS[name]}))
        session.disable_fallback()  # else the first failure moves every later shape to the CPU
        failed: dict[str, str] = {}
        ms: dict[str, float] = {}
        for b, t, f in buckets.stage2_shapes():
            alignment = np.zeros((b, t, f), np.float32)
            alignment[:, np.minimum(np.arange(f) * t // f, t - 1), np.arange(f)] = 1
            feeds = {"alignment": alignment, "d": rng.standard_normal((b, t, 640)).astype(np.float32) * 0.3,
                     "t_en": rng.standard_normal((b, 512, t)).astype(np.float32) * 0.3,
                     "style": rng.standard_normal((b, 256)).astype(np.float32) * 0.2,
                     "frames": np.full(b, f, np.int64)}
            try:
                session.run(None, feeds)
                start = time.perf_counter()
                audio = session.run(None, feeds)[0]
                ms[f"{b}x{t}x{f}"] = round((time.perf_counter() - start) * 1000, 1)
                if not np.isfinite(audio).all():
                    failed[f"{b}x{t}x{f}"] = "NaN/inf in audio"
            except Exception as err:  # the failing node is the finding
                node = re.search(r"running (\w+) node\. Name:'([^']*)'", str(err))
                failed[f"{b}x{t}x{f}"] = f"{node.group(1)} {node.group(2)}" if node else str(err)[:200]
            print(f"{name} {b}x{t}x{f}: {failed.get(f'{b}x{t}x{f}', ms.get(f'{b}x{t}x{f}'))}", flush=True)
        report[name] = {"failed": failed, "ms": ms}
        print(name, "failed", len(failed), "of", len(buckets.stage2_shapes()), json.dumps(failed), flush=True)
        del session
    Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
