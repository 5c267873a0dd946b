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
import contextlib
import dataclasses
import mmap
import platform
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from typing import TYPE_CHECKING

import numpy as np

from ..assets import ModelAssets
from ..backends.base import Engine, InspectableEngine
from ..cli.options import add_settings_arguments
from ..config import Settings
from ..core import SynthesisItem

if TYPE_CHECKING:
    from ..backends.memory import GpuInfo

SENTENCES = (
    "欢迎使用语音合成系统。",
    "今天天气很好，我们一起去公园散步吧。",
    "现在是下午三点二十五分，室外温度二十三度。",
)
MEL_LIMIT_DB = 1.0
"""GPU vs CPU on the same float graph: only kernel rounding differs (float vs int8 graphs differ by ~1 dB)."""
GPU_BACKENDS = ("tensorrt-rtx", "tensorrt", "onnxruntime-cuda", "torch-cuda")
_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnx", "numpy", "tensorrt-rtx-cu12", "tensorrt-cu12",
                  "tensorrt", "cuda-bindings", "nvidia-ml-py")


@dataclass
class Check:
    """One finding; ``engines`` names the backends it matters to (empty: every one). The verdict counts only
    the checks of the engine the server will run: a TensorRT-RTX refusal says nothing about ONNX Runtime CUDA."""

    ok: bool
    what: str
    engines: tuple[str, ...] = ()

    def concerns(self, backend: str) -> bool:
        return not self.engines or backend in self.engines


_TENSORRT = ("tensorrt", "tensorrt-rtx")
_WHEEL_ENGINES = {"tensorrt-rtx-cu12": ("tensorrt-rtx",), "tensorrt-cu12": ("tensorrt",)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per sentence and engine (default 20)")
    parser.add_argument("--cpu-runs", type=int, default=3, help="timed CPU reference runs per sentence (default 3)")
    parser.add_argument("--onnxruntime-cuda-only", action="store_true",
                        help="only check that ONNX Runtime runs on CUDA here; exit 0 if it does (seconds, no model)")


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


def _ort_cuda_major() -> int | None:
    """CUDA major the installed ONNX Runtime CUDA provider links against (``libcudart.so.13`` -> 13)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for lib in Path(location, "capi").glob("libonnxruntime_providers_cuda.so*"):
            with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                at = data.find(b"libcudart.so.")  # re cannot search an mmap on every Python (3.12: TypeError)
                match = re.match(rb"(\d+)", data[at + 13:at + 16]) if at >= 0 else None
            if match:
                return int(match.group(1))
    return None


@dataclass(frozen=True)
class OrtModule:
    """The ``onnxruntime`` module as Python imports it: version and providers, or why it does not import."""

    version: str | None
    providers: tuple[str, ...] = ()
    site: str | None = None
    """The folder holding the imported package (a site-packages directory)."""
    problem: str = ""


def _ort_module() -> OrtModule:
    try:
        import onnxruntime
    except Exception as err:  # a half-removed install fails in many ways; each is a finding
        return OrtModule(None, problem=f"{type(err).__name__}: {err}")
    from pathlib import Path

    return OrtModule(onnxruntime.__version__, tuple(onnxruntime.get_available_providers()),
                     str(Path(onnxruntime.__file__).parents[1]))


def _ort_sites() -> dict[str, str]:
    """The folder each installed ONNX Runtime distribution put its files in."""
    sites = {}
    for dist in ("onnxruntime", "onnxruntime-gpu"):
        try:
            sites[dist] = str(metadata.distribution(dist).locate_file(""))
        except metadata.PackageNotFoundError:
            continue
    return sites


def onnxruntime_checks(versions: dict[str, str], module: Callable[[], OrtModule] = _ort_module,
                       sites: dict[str, str] | None = None) -> tuple[list[str], list[Check]]:
    """Which ONNX Runtime Python really imports, and whether the install is one of the two, whole.

    ``onnxruntime`` and ``onnxruntime-gpu`` install the same module: installed into one environment, the one
    pip installed last has overwritten the other's files, and uninstalling either deletes files the other
    still lists. (In two folders, say a virtual environment over the system's packages, the first on the path
    shadows the other and neither is damaged.) Every engine needs ONNX Runtime (the CPU engine, ONNX Runtime
    CUDA, and the CPU reference the GPU engines are compared with), so a mixed or broken install fails every
    verdict.
    """
    found, sites = module(), _ort_sites() if sites is None else sites
    cpu, gpu = versions.get("onnxruntime"), versions.get("onnxruntime-gpu")
    lines = [f"onnxruntime module: {found.version} from {found.site}, providers {', '.join(found.providers)}"
             if found.version else f"onnxruntime module: does not import ({found.problem})"]
    fix = ("pip uninstall -y onnxruntime onnxruntime-gpu, then install the server again with one ONNX Runtime "
           "extra: '[gpu]' for ONNX Runtime CUDA, '[cpu]' otherwise (pip install '.[gpu]' in a clone)")
    if cpu and gpu and sites.get("onnxruntime") != sites.get("onnxruntime-gpu") and found.site in sites.values():
        imported = "onnxruntime" if sites.get("onnxruntime") == found.site else "onnxruntime-gpu"
        shadowed = "onnxruntime-gpu" if imported == "onnxruntime" else "onnxruntime"
        lines.append(f"{shadowed} in {sites[shadowed]} is shadowed by {imported} in {found.site} (separate "
                     f"folders: neither overwrote the other)")
        cpu, gpu = (cpu, None) if imported == "onnxruntime" else (None, gpu)
    if cpu and gpu:
        build = "the CUDA build" if "CUDAExecutionProvider" in found.providers else "the CPU-only build"
        return lines, [Check(False, f"onnxruntime {cpu} and onnxruntime-gpu {gpu} are both installed: they are one "
                                    f"module, so the last one pip installed overwrote the other (Python now "
                                    f"imports {build}) and removing either breaks the other. Fix: {fix}")]
    if not cpu and not gpu:
        return lines, [Check(False, "ONNX Runtime is not installed: install the server with one ONNX Runtime "
                                    "extra, '[cpu]' or '[gpu]' (pip install '.[cpu]' in a clone)")]
    if found.version is None:
        return lines, [Check(False, f"{'onnxruntime-gpu' if gpu else 'onnxruntime'} is listed as installed but its "
                                    f"module does not import: files were removed with another package. "
                                    f"Fix: {fix}")]
    if gpu:
        has_cuda = "CUDAExecutionProvider" in found.providers
        return lines, [Check(has_cuda, f"onnxruntime-gpu {gpu} has its CUDA provider: "
                                       f"{'yes' if has_cuda else 'NO, reinstall it: ' + fix}", ("onnxruntime-cuda",))]
    return lines, [Check(False, "ONNX Runtime CUDA: not installed (onnxruntime is the CPU build); for it, "
                                "pip uninstall -y onnxruntime, then install the '[gpu]' extra", ("onnxruntime-cuda",))]


def environment_checks(settings: Settings, probe: Callable[[int], tuple[GpuInfo | None, str]] | None = None,
                       versions: dict[str, str] | None = None,
                       ort_module: Callable[[], OrtModule] = _ort_module, ort_sites: dict[str, str] | None = None
                       ) -> tuple[list[str], list[Check]]:
    """Lines describing the machine, and whether its pieces fit together (each check tagged with the engines
    it concerns). ``probe``, ``versions``, ``ort_module`` and ``ort_sites`` are the machine's unless a test passes
    fakes."""
    from ..backends.memory import probe_gpu
    from ..backends.select import tensorrt_rtx_supports

    versions = _versions() if versions is None else versions
    lines = [f"python {platform.python_version()} on {platform.platform()}"]
    lines += [f"{name} {version}" for name, version in versions.items()]
    ort_lines, checks = onnxruntime_checks(versions, ort_module, ort_sites)
    lines += ort_lines
    gpu, why = (probe or probe_gpu)(settings.engine.device_id)
    if gpu is None:
        checks.append(Check(False, f"GPU: none usable ({why})", GPU_BACKENDS))
        return lines, checks
    lines.append(f"GPU {settings.engine.device_id}: {gpu.name}, compute capability {gpu.cc}, "
                 f"{gpu.total_bytes / 2**30:.1f} GiB ({gpu.free_bytes / 2**30:.1f} free), driver {gpu.driver_version}, "
                 f"supports CUDA up to {gpu.cuda_driver_version[0]}.{gpu.cuda_driver_version[1]}")
    driver_major = gpu.cuda_driver_version[0]
    for dist, version in versions.items():
        major = _cuda_major(dist)
        if major is not None:
            fits = major <= driver_major
            checks.append(Check(fits, f"{dist} {version} needs a CUDA {major} driver: "
                                      f"{'yes' if fits else 'NO, update the NVIDIA driver'}",
                                _WHEEL_ENGINES.get(dist, _TENSORRT)))
    if "onnxruntime-gpu" in versions and (major := _ort_cuda_major()) is not None:
        fits = major <= driver_major
        checks.append(Check(fits, f"onnxruntime-gpu {versions['onnxruntime-gpu']} is built for CUDA {major}: the "
                                  f"driver {'supports it' if fits else 'does NOT, update the NVIDIA driver'}",
                            ("onnxruntime-cuda",)))
    if "tensorrt-rtx-cu12" in versions:
        ok = tensorrt_rtx_supports(gpu)
        checks.append(Check(ok, f"TensorRT-RTX runs on compute capability {gpu.cc}: {'yes' if ok else 'no'}",
                            ("tensorrt-rtx",)))
    if "cuda-bindings" in versions:
        try:
            from ..backends.cuda import Cuda

            runtime = Cuda(settings.engine.device_id).runtime_version()
            lines.append(f"CUDA runtime (cuda-bindings) {runtime // 1000}.{runtime % 1000 // 10}")
            fits = runtime // 1000 <= driver_major
            checks.append(Check(fits, f"CUDA runtime {runtime // 1000} under this driver: {'yes' if fits else 'NO'}",
                                _TENSORRT))
        except Exception as err:  # any failure here is a finding to report, not a crash
            checks.append(Check(False, f"CUDA runtime not usable: {err}", _TENSORRT))
    return lines, checks


def report_checks(checks: list[Check], backend: str) -> bool:
    """Print every check, marking those that do not concern ``backend``; True when all of its own pass."""
    print("Checks:")
    for check in checks:
        mark = "ok" if check.ok else ("!!" if check.concerns(backend) else "--")
        aside = "" if check.concerns(backend) else f" (not for {backend}: {', '.join(check.engines)} only)"
        print(f"  [{mark}] {check.what}{aside}")
    return all(check.ok for check in checks if check.concerns(backend))


def _items(settings: Settings, assets: ModelAssets) -> list[SynthesisItem]:
    from ..assets import load_vocab, phoneme_ids
    from ..text.g2p import phonemize
    from ..text.normalize import normalize

    vocab = load_vocab(assets.vocab)
    voice = np.fromfile(assets.voice(settings.voice.default), np.float32).reshape(510, 256)
    items = []
    for text in SENTENCES:
        ids = phoneme_ids(phonemize(normalize(text)), vocab)
        items.append(SynthesisItem(ids=ids, style=voice[len(ids) - 1]))
    return items


def _timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(max(1, runs)):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), float(np.percentile(times, 99))


def _render(engine: InspectableEngine, items: list[SynthesisItem], runs: int, label: str
            ) -> list[tuple[np.ndarray, np.ndarray]]:
    outputs = [engine.synthesize(item) for item in items]
    for item, (audio, _) in zip(items, outputs, strict=True):
        p50, p99 = _timed(partial(engine.synthesize, item), runs)
        print(f"  {label:18} {len(item.ids):3d} ids, {len(audio) / 24000:5.2f} s audio: "
              f"p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  ({runs} runs)")
    return outputs


def _reference(settings: Settings, assets: ModelAssets, backend: str) -> InspectableEngine:
    """ONNX Runtime on the CPU over the graphs the GPU engine will run."""
    from ..backends.onnxruntime import create_onnxruntime_engine

    if backend in GPU_BACKENDS and settings.engine.batched != "never":
        batched = dataclasses.replace(settings, engine=dataclasses.replace(settings.engine, batched="always"))
        return create_onnxruntime_engine(batched, assets, "onnxruntime")
    return create_onnxruntime_engine(settings, assets, "onnxruntime", flavour="float")


def _batch_parity(engine: Engine, items: list[SynthesisItem], expected: list[tuple[np.ndarray, np.ndarray]],
                  runs: int) -> bool:
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


def _windows_report(settings: Settings, assets: ModelAssets, items: list[SynthesisItem], runs: int) -> None:
    """The CPU engine the server runs, stage 2 in frame windows: how soon a sentence starts to sound, and whether this
    machine renders a frame within ``engine.windows.frame_ms``, which the later windows are sized for (slower, a
    sentence's next window may come after its first has played: a gap). Advice, not part of the verdict: the fix is
    a setting, and a busy machine reads slower than it is."""
    from ..backends.base import StreamingEngine
    from ..backends.onnxruntime import create_onnxruntime_engine
    from ..backends.windows import slow_machine

    windows = settings.engine.windows
    if windows.first_frames <= 0:
        print("CPU engine: frame windows off (engine.windows.first_frames 0): sentences are rendered whole")
        return
    engine = create_onnxruntime_engine(settings, assets, "onnxruntime")
    assert isinstance(engine, StreamingEngine)  # the CPU engine streams its windows
    item = max(items, key=lambda i: len(i.ids))  # the longest sentence: the most windows

    def first_part() -> None:
        with contextlib.closing(engine.stream(item)) as parts:  # closing it stops the rendering
            next(parts)

    try:
        engine.warmup()
        frames = int(engine.synthesize(item)[1].sum())
        first_ms, _ = _timed(first_part, runs)
        whole_ms, _ = _timed(partial(engine.synthesize, item), runs)
    finally:
        engine.close()
    seconds = whole_ms / 1000
    print(f"CPU engine (int8, stage 2 in frame windows of {windows.first_frames} speech frames first): "
          f"{len(item.ids)} ids, {frames} frames: first audio p50 {first_ms:.0f} ms, "
          f"the sentence whole p50 {whole_ms:.0f} ms ({runs} runs)")
    problem = slow_machine(windows, frames, seconds)
    fits = ("engine.windows.frame_ms 0: the server measures it at start-up and sizes later windows for it"
            if windows.frame_ms <= 0 else f"within engine.windows.frame_ms {windows.frame_ms}")
    print(f"  [{'!!' if problem else 'ok'}] " + (problem or f"{1000 * seconds / frames:.1f} ms a frame (stage 1 "
          f"included), {fits}: later windows come in time"))


def _onnxruntime_cuda_only(settings: Settings) -> int:
    """The GPU container asks this before it falls back to ONNX Runtime: CUDA if it really loads, else the CPU."""
    from ..core import EngineError

    try:
        from ..backends.onnxruntime import cuda_provider_problem

        problem = cuda_provider_problem(settings.engine.device_id)
    except EngineError as err:
        problem = str(err)
    print(f"ONNX Runtime CUDA: {'works' if problem is None else 'NO, ' + problem}")
    return 0 if problem is None else 1


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ..assets import AssetError, ensure_assets
    from ..backends import create_engine
    from ..backends.select import choose_backend
    from ..core import EngineError
    from .parity import mel_distance_db

    if args.onnxruntime_cuda_only:
        return _onnxruntime_cuda_only(settings)
    lines, checks = environment_checks(settings)
    print("Environment:\n" + "\n".join(f"  {line}" for line in lines))
    backend, reason = (settings.engine.backend, "requested") if settings.engine.backend != "auto" \
        else choose_backend(settings)
    checks_pass = report_checks(checks, backend)
    print(f"Engine: {backend} ({reason}); the verdict is about this engine")
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
        missing = [c.what for c in checks if not c.ok and not c.concerns(backend)] or ["no GPU backend selected"]
        print("No GPU engine to check: " + "; ".join(missing))
        if backend == "onnxruntime":
            _windows_report(settings, assets, items, args.cpu_runs)
        if not checks_pass:
            print("FAIL: the CPU path runs, but the install needs the fix marked [!!] above")
            return 1
        print("PASS (CPU only): the CPU path works; install a GPU extra on a machine with an NVIDIA GPU to check it")
        return 0
    settings.engine.backend = backend
    try:
        engine = create_engine(settings, assets)
    except EngineError as err:
        print(f"FAIL: {backend} could not be built or loaded: {err}")
        return 1
    if not isinstance(engine, InspectableEngine):
        engine.close()
        print(f"FAIL: {backend} cannot report the frames it renders, so parity cannot be checked")
        return 1
    print(f"GPU engine ({engine.name} on {engine.device}, {engine.slots} slot(s)):")
    replay = getattr(engine, "replay", None)  # bucketed engines: whether each stage replays a CUDA graph
    if replay:
        print(f"  replay: {replay}")
    got = _render(engine, items, args.runs, engine.name)
    passed = checks_pass
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
