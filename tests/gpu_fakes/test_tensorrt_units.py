"""What the TensorRT path decides without a GPU: pool sizing, plan keys and cache checks, --engine auto (<1 s)."""

from __future__ import annotations

import json
import sys
import threading
import types
from pathlib import Path

import pytest

from wyoming_fasttts.backends.base import EngineError
from wyoming_fasttts.backends.cuda import Cuda, aligned, arena_layout
from wyoming_fasttts.backends.memory import GpuInfo
from wyoming_fasttts.backends.plans import PlanCache, PlanKey, stage_profiles
from wyoming_fasttts.backends.select import Probe, choose_backend
from wyoming_fasttts.backends.tensorrt import Limits, choose_slots, slot_bytes, tensor_bytes
from wyoming_fasttts.config import load_settings

MB = 10**6


def test_arena_blocks_are_aligned_and_disjoint() -> None:
    offsets, total = arena_layout([("a", 1), ("b", 300), ("c", 256)])
    assert offsets == {"a": 0, "b": 256, "c": 768}
    assert total == 1024 == aligned(1) + aligned(300) + aligned(256)
    with pytest.raises(ValueError):
        arena_layout([("a", 1), ("a", 2)])


def test_slot_holds_the_shared_scratch_and_every_tensor_at_the_limits() -> None:
    """The two contexts of a slot run one after the other on its stream, so they share one scratch block."""
    limits = Limits(tokens=512, frames=1024)
    sizes = tensor_bytes(limits)
    assert sizes["alignment"] == 512 * 1024 * 4
    assert sizes["audio"] == 1024 * 600 * 4
    assert sizes["d"] == 512 * 640 * 4
    contexts = {"stage1": 42_001_408, "stage2": 650 * MB}
    assert 650 * MB + sum(sizes.values()) <= slot_bytes(contexts, sizes) < 650 * MB + sum(sizes.values()) + 256 * 10


def test_slots_fit_the_budget() -> None:
    weights, per_slot = 325 * MB, 700 * MB
    assert choose_slots(0, 2048 * 2**20, weights, per_slot) == 2   # the RTX 3060 default: 2 GiB
    assert choose_slots(0, 1100 * MB, weights, per_slot) == 1
    assert choose_slots(3, 1100 * MB, weights, per_slot) == 3       # asked for: given, with a warning
    with pytest.raises(EngineError, match="memory_budget_mb"):
        choose_slots(0, 900 * MB, weights, per_slot)


def _key(**changes: object) -> PlanKey:
    profile = stage_profiles(load_settings())["stage2"]
    fields = {"stage": "stage2", "graph_sha256": "ab" * 32, "backend": "tensorrt-rtx", "backend_version": "1.7.1.116",
              "compute_capability": "8.6", "precision": "fp32", "profiles": profile, **changes}
    return PlanKey(**fields)


def test_plan_key_covers_graph_backend_version_gpu_and_profile() -> None:
    base = _key()
    other_profile = stage_profiles(load_settings(), max_frames=512)["stage2"]
    variants = [_key(graph_sha256="cd" * 32), _key(backend_version="1.8.0"), _key(compute_capability="8.9"),
                _key(profiles=other_profile), _key(backend="tensorrt")]
    assert len({base.digest(), *(v.digest() for v in variants)}) == 6
    assert base.filename.startswith("stage2-tensorrt-rtx-sm86-")
    assert stage_profiles(load_settings())["stage2"][0].shapes["alignment"][2] == (1, 512, 1024)


def test_plan_cache_serves_intact_plans_and_discards_corrupt_or_foreign_ones(tmp_path: Path) -> None:
    cache = PlanCache(tmp_path)
    key = _key()
    assert cache.load(key) is None
    record = cache.store(key, b"plan-bytes" * 100, 1.5, {"weights_bytes": 7})
    assert cache.load(key) == (b"plan-bytes" * 100, record)
    assert cache.load(_key(backend_version="1.8.0")) is None          # another key never sees this plan
    plan = tmp_path / key.filename
    plan.write_bytes(plan.read_bytes()[:-1])                           # truncated
    assert cache.load(key) is None and not plan.exists()
    cache.store(key, b"x" * 10, 1.0, {})
    meta = plan.with_suffix(".json")
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "key": _key(precision="fp16").fields()}))
    assert cache.load(key) is None                                      # record of another key
    cache.store(key, b"old", 1.0, {})
    newer = _key(graph_sha256="ef" * 32)
    cache.store(newer, b"new", 1.0, {})
    assert not plan.exists() and cache.load(newer) is not None         # superseded plans are removed


def _gpu(cc: tuple[int, int]) -> GpuInfo:
    return GpuInfo("Test GPU", cc, 12 * 2**30, 11 * 2**30, "580.1", (13, 0))


def _probe(gpu: GpuInfo | None, modules: set[str], providers: list[str]) -> Probe:
    return Probe(gpu=lambda _: (gpu, "ok" if gpu else "no NVIDIA driver"), has_module=modules.__contains__,
                 ort_providers=lambda: providers)


@pytest.mark.parametrize(("gpu", "modules", "providers", "expected"), [
    (None, {"tensorrt_rtx", "cuda.bindings"}, ["CUDAExecutionProvider"], "onnxruntime"),
    ((8, 6), {"tensorrt_rtx", "tensorrt", "cuda.bindings"}, [], "tensorrt-rtx"),
    ((9, 0), {"tensorrt_rtx", "tensorrt", "cuda.bindings"}, [], "tensorrt"),        # RTX refuses Hopper
    ((9, 0), {"tensorrt_rtx", "cuda.bindings"}, ["CUDAExecutionProvider"], "onnxruntime-cuda"),
    ((8, 6), {"tensorrt_rtx"}, ["CUDAExecutionProvider"], "onnxruntime-cuda"),      # no cuda-bindings
    ((8, 6), set(), ["CPUExecutionProvider"], "onnxruntime"),
    ((12, 0), {"tensorrt_rtx", "cuda.bindings"}, [], "tensorrt-rtx"),
])
def test_auto_selection_order(gpu, modules, providers, expected) -> None:
    backend, reason = choose_backend(load_settings(), _probe(gpu and _gpu(gpu), modules, providers))
    assert backend == expected
    assert reason


def test_every_thread_that_uses_the_engine_selects_its_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA runtime's current device is per thread: workers other than the builder must select it too."""
    selected: list[tuple[int, int]] = []

    class Runtime:
        class cudaError_t:
            cudaSuccess = 0

        @staticmethod
        def cudaSetDevice(device: int) -> tuple[int]:
            selected.append((threading.get_ident(), device))
            return (0,)

    bindings = types.ModuleType("cuda.bindings")
    bindings.runtime = Runtime  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    cuda = Cuda(1)
    worker = threading.Thread(target=lambda: (cuda.bind(), cuda.bind()))
    worker.start()
    worker.join()
    cuda.bind()
    assert selected == [(threading.get_ident(), 1), (worker.ident, 1)]
