"""The graph engine's device memory choices that need no GPU: the warm-up order and the one shared arena.

On an H200 (2026-12-01, docs/BENCHMARKS.md fifth pass) ONNX Runtime's arena ended at 3402 MiB with both stages in
one arena and the largest shapes first, against 4428 MiB shared but smallest first and 4558 MiB one per session.
"""

from __future__ import annotations

import types

import pytest

from wyoming_fasttts.backends import ort_graphs
from wyoming_fasttts.backends.buckets import Buckets
from wyoming_fasttts.backends.ort_graphs import GraphOnnxRuntimeEngine
from wyoming_fasttts.core import EngineError


def _engine(largest_first: bool) -> types.SimpleNamespace:
    buckets = Buckets.for_limits(16, 510, 1024, 2048, rows=[1, 4, 8, 16], tokens=[32, 64, 128],
                                 frames=[64, 128, 192, 256, 384, 512, 768])
    return types.SimpleNamespace(largest_first=largest_first, stage1="stage 1", stage2="stage 2",
                                 shapes1=buckets.stage1_shapes(), shapes2=buckets.stage2_shapes())


def test_warm_up_runs_stage_2_first_and_the_largest_shapes_first() -> None:
    engine = _engine(largest_first=True)
    assert GraphOnnxRuntimeEngine.warm_stages(engine) == ("stage 2", "stage 1")  # type: ignore[arg-type]
    second = GraphOnnxRuntimeEngine.warm_shapes(engine, "stage 2")  # type: ignore[arg-type]
    first = GraphOnnxRuntimeEngine.warm_shapes(engine, "stage 1")  # type: ignore[arg-type]
    assert sorted(second) == sorted(engine.shapes2) and sorted(first) == sorted(engine.shapes1)
    sizes = [b * f for b, _, f in second]
    assert sizes == sorted(sizes, reverse=True) and second[0] == (4, 512, 512)
    assert first[0] == (16, 512) and [b for b, _ in first] == sorted((b for b, _ in first), reverse=True)


def test_the_order_before_stays_available() -> None:
    engine = _engine(largest_first=False)
    assert GraphOnnxRuntimeEngine.warm_stages(engine) == ("stage 1", "stage 2")  # type: ignore[arg-type]
    assert GraphOnnxRuntimeEngine.warm_shapes(engine, "stage 2") == engine.shapes2  # type: ignore[arg-type]


def test_the_shared_arena_is_registered_once_per_device_and_only_with_one_config(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(ort_graphs, "_SHARED", {})
    monkeypatch.setattr(ort_graphs.ort, "create_and_register_allocator_v2",
                        lambda provider, info, options, cfg: calls.append((provider, options)), raising=False)
    ort_graphs.shared_arena(0, {})
    ort_graphs.shared_arena(0, {})
    assert calls == [("CUDAExecutionProvider", {"device_id": "0"})]
    with pytest.raises(EngineError, match="already registered"):
        ort_graphs.shared_arena(0, {"arena_extend_strategy": 1})
    ort_graphs.shared_arena(1, {"arena_extend_strategy": 1})
    assert calls[-1] == ("CUDAExecutionProvider", {"device_id": "1"})
