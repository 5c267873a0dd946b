"""``wyoming-fasttts doctor``: can this machine run the GPU engine, and does it say the same as the CPU?

The classic failure of GPU inference at home is version hell: a driver too old for the CUDA runtime a
wheel was built against, a TensorRT that does not support the GPU, two ONNX Runtime packages shadowing
each other. The doctor reports each piece and whether they fit, then builds or loads the engine the server
would pick, renders fixed sentences on it and on the CPU reference (ONNX Runtime on the very graphs the
GPU engine runs: the batched graphs unless ``engine.batched`` is ``never``, else the float stage graphs),
and prints parity (per-token durations equal, log-mel distance) and latency with a clear PASS/FAIL. A
batching engine also renders the sentences as one batch, each row checked against the reference alone.
On a machine without a GPU it says what is missing, runs the CPU reference and exits 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from ..assets import ModelAssets
from ..cli.options import add_settings_arguments
from ..config import Settings
from ..core import SynthesisItem

SENTENCES = (
    "欢迎使用语音合成系统。",
    "今天天气很好，我们一起去公园散步吧。",
    "现在是下午三点二十五分，室外温度二十三度。",
)
MEL_LIMIT_DB = 1.0
"""GPU vs CPU on the same float graph: only kernel rounding differs (float vs int8 graphs differ by ~1 dB)."""
GPU_BACKENDS = ("tensorrt-rtx", "tensorrt", "onnxruntime-cuda")
_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnx", "numpy", "tensorrt-rtx-cu12", "tensorrt-cu12",
                  "tensorrt", "cuda-bindings", "nvidia-ml-py")


@dataclass
class Check:
    ok: bool
    what: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per sentence and engine (default 20)")
    parser.add_argument("--cpu-runs", type=int, default=3, help="timed CPU reference runs per sentence (default 3)")


def _versions() -> dict[str, str]:
    found = {}
    for dist in _DISTRIBUTIONS:
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def _cuda_major(dist: str) -> int | None:
    """CUDA major a wheel was built for, from its name (``tensorrt-rtx-cu12`` -> 12)."""
    return int(dist.rsplit("-cu", 1)[1]) if "-cu" in dist else None


def environment_checks(settings: Settings) -> tuple[list[str], list[Check]]:
    """Lines describing the machine, and whether its pieces fit together."""
    from ..backends.cuda import probe_gpu
    from ..backends.select import tensorrt_rtx_supports

    versions = _versions()
    lines = [f"python {platform.python_version()} on {platform.platform()}"]
    lines += [f"{name} {version}" for name, version in versions.items()]
    checks: list[Check] = []
    gpu, why = probe_gpu(settings.engine.device_id)
    if gpu is None:
        checks.append(Check(False, f"GPU: none usable ({why})"))
        return lines, checks
    lines.append(f"GPU {settings.engine.device_id}: {gpu.name}, compute capability {gpu.cc}, "
                 f"{gpu.total_bytes / 2**30:.1f} GiB ({gpu.free_bytes / 2**30:.1f} free), driver {gpu.driver_version}, "
                 f"supports CUDA up to {gpu.cuda_driver_version[0]}.{gpu.cuda_driver_version[1]}")
    for dist, version in versions.items():
        major = _cuda_major(dist)
        if major is not None:
            fits = major <= gpu.cuda_driver_version[0]
            checks.append(Check(fits, f"{dist} {version} needs a CUDA {major} driver: "
                                      f"{'yes' if fits else 'NO, update the NVIDIA driver'}"))
    if "tensorrt-rtx-cu12" in versions:
        ok = tensorrt_rtx_supports(gpu)
        checks.append(Check(ok, f"TensorRT-RTX runs on compute capability {gpu.cc}: {'yes' if ok else 'no'}"))
    if "onnxruntime" in versions and "onnxruntime-gpu" in versions:
        checks.append(Check(False, "onnxruntime and onnxruntime-gpu are both installed and shadow each other: "
                                   "pip uninstall onnxruntime onnxruntime-gpu, then install one"))
    try:
        from ..backends.cuda import Cuda

        runtime = Cuda(settings.engine.device_id).runtime_version()
        lines.append(f"CUDA runtime (cuda-bindings) {runtime // 1000}.{runtime % 1000 // 10}")
        fits = runtime // 1000 <= gpu.cuda_driver_version[0]
        checks.append(Check(fits, f"CUDA runtime {runtime // 1000} under this driver: {'yes' if fits else 'NO'}"))
    except Exception as err:  # any failure here is a finding to report, not a crash
        checks.append(Check(False, f"CUDA runtime not usable: {err}"))
    return lines, checks


def _items(settings: Settings, assets: ModelAssets) -> list[SynthesisItem]:
    from ..assets import load_vocab
    from ..text.g2p import phonemize
    from ..text.normalize import normalize

    vocab = load_vocab(assets.vocab)
    voice = np.fromfile(assets.voice(settings.voice.default), np.float32).reshape(510, 256)
    items = []
    for text in SENTENCES:
        ids = np.array([vocab[p] for p in phonemize(normalize(text)) if p in vocab], np.int64)
        items.append(SynthesisItem(ids=ids, style=voice[len(ids) - 1]))
    return items


def _timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(max(1, runs)):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), float(np.percentile(times, 99))


def _render(engine: object, items: list, runs: int, label: str) -> list[tuple[np.ndarray, np.ndarray]]:
    outputs = [engine.synthesize(item) for item in items]
    for item, (audio, _) in zip(items, outputs, strict=True):
        p50, p99 = _timed(lambda item=item: engine.synthesize(item), runs)
        print(f"  {label:18} {len(item.ids):3d} ids, {len(audio) / 24000:5.2f} s audio: "
              f"p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  ({runs} runs)")
    return outputs


def _reference(settings: Settings, assets: ModelAssets, backend: str) -> object:
    """ONNX Runtime on the CPU over the graphs the GPU engine will run."""
    from ..backends.onnxruntime import create_onnxruntime_engine

    if backend in GPU_BACKENDS and settings.engine.batched != "never":
        batched = dataclasses.replace(settings, engine=dataclasses.replace(settings.engine, batched="always"))
        return create_onnxruntime_engine(batched, assets, "onnxruntime")
    return create_onnxruntime_engine(settings, assets, "onnxruntime", flavour="float")


def _batch_parity(engine: object, items: list, expected: list, runs: int) -> bool:
    """All sentences as one batch; each row against the reference alone (same frames, log-mel distance)."""
    from .parity import mel_distance_db

    rows = engine.run(items)
    p50, p99 = _timed(lambda: engine.run(items), runs)
    print(f"  batch of {len(items)}: p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  ({runs} runs)")
    passed = True
    for item, (ref_audio, _), audio in zip(items, expected, rows, strict=True):
        same = len(audio) == len(ref_audio)
        distance = mel_distance_db(ref_audio, audio) if same and np.isfinite(audio).all() else float("inf")
        ok = same and distance < MEL_LIMIT_DB
        passed &= ok
        print(f"  batch row {len(item.ids):3d} ids: frames {'equal' if same else 'DIFFER'}, "
              f"log-mel distance {distance:.2f} dB (limit {MEL_LIMIT_DB}) {'ok' if ok else '!!'}")
    return passed


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ..assets import AssetError, ensure_assets
    from ..backends import create_engine
    from ..backends.select import choose_backend
    from ..core import EngineError
    from .parity import mel_distance_db

    lines, checks = environment_checks(settings)
    print("Environment:\n" + "\n".join(f"  {line}" for line in lines))
    print("Checks:\n" + "\n".join(f"  [{'ok' if c.ok else '!!'}] {c.what}" for c in checks))
    backend, reason = (settings.engine.backend, "requested") if settings.engine.backend != "auto" \
        else choose_backend(settings)
    print(f"Engine: {backend} ({reason})")
    try:
        assets = ensure_assets(settings.assets, voices=[settings.voice.default])
        items = _items(settings, assets)
        reference = _reference(settings, assets, backend)
        print(f"CPU reference (ONNX Runtime, the graphs the GPU engine runs, batch up to {reference.max_batch}):")
        expected = _render(reference, items, args.cpu_runs, "cpu reference")
        reference.close()
    except (AssetError, EngineError) as err:
        print(f"FAIL: the CPU reference does not run: {err}")
        return 1
    if backend not in GPU_BACKENDS:
        missing = [c.what for c in checks if not c.ok] or ["no GPU backend selected"]
        print("No GPU engine to check: " + "; ".join(missing))
        print("PASS (CPU only): the CPU path works; install a GPU extra on a machine with an NVIDIA GPU to check it")
        return 0
    settings.engine.backend = backend
    try:
        engine = create_engine(settings, assets)
    except EngineError as err:
        print(f"FAIL: {backend} could not be built or loaded: {err}")
        return 1
    print(f"GPU engine ({engine.name} on {engine.device}, {engine.slots} slot(s)):")
    got = _render(engine, items, args.runs, engine.name)
    passed = all(c.ok for c in checks)
    if engine.max_batch > 1:
        passed &= _batch_parity(engine, items, expected, args.runs)
    mem = engine.memory()
    engine.close()
    for item, (ref_audio, ref_frames), (audio, frames) in zip(items, expected, got, strict=True):
        same = np.array_equal(ref_frames, frames)
        distance = mel_distance_db(ref_audio, audio) if np.isfinite(audio).all() else float("inf")
        ok = same and distance < MEL_LIMIT_DB
        passed &= ok
        print(f"  parity {len(item.ids):3d} ids: durations {'equal' if same else 'DIFFER'}, "
              f"log-mel distance {distance:.2f} dB (limit {MEL_LIMIT_DB}) {'ok' if ok else '!!'}")
    if mem.device_used_bytes is not None:
        print(f"  GPU memory: weights {(mem.weights_bytes or 0) / 2**20:.0f} MiB, pool "
              f"{(mem.workspace_bytes or 0) / 2**20:.0f} MiB, device in use {mem.device_used_bytes / 2**20:.0f} MiB")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1
