"""Real TensorRT-RTX plans built on this CPU-only machine from the cached graphs (needs the ``tensorrt-rtx``
extra, which CI installs). Batch-1 stages ~30 s: a second call serves both plans from the cache; a
corrupted plan is rebuilt, not loaded. Batched stages at the default profiles ~30 s (stage 2 carries four
(rows, frames) profiles), peak host RSS ~2.1 GB."""

from __future__ import annotations

from pathlib import Path

import pytest

from wyoming_fasttts.assets import ensure_assets
from wyoming_fasttts.backends.plans import batch1_stage_graphs, ensure_plans, gpu_stage_graphs
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.graphs.convert import ensure_graphs

pytest.importorskip("tensorrt_rtx", reason="the tensorrt-rtx extra is not installed")

GiB = 2**30


def _settings(engine_dir: Path, batched: str):
    return load_settings(overrides={"engine.engine_dir": str(engine_dir), "engine.compute_capability": "8.6",
                                    "engine.batched": batched})


def test_build_cache_and_rebuild_corrupt_plan(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "never")
    assets = ensure_assets(settings.assets, voices=[])
    graphs = gpu_stage_graphs(settings, assets)
    assert graphs == batch1_stage_graphs(ensure_graphs(assets.model, settings.assets.data_path))

    built = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    assert all(p.built for p in built.values())
    s1, s2 = built["stage1"].record, built["stage2"].record
    assert 70e6 < s1.weights_bytes < 90e6 and 240e6 < s2.weights_bytes < 260e6
    assert s1.activation_bytes < 100e6 and s2.activation_bytes < 1.5e9     # 1024 frames: ~0.65 GB
    assert s1.weights_bytes + s2.weights_bytes + s1.activation_bytes + s2.activation_bytes < 2 * GiB

    cached = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    assert not any(p.built for p in cached.values())
    assert cached["stage2"].data == built["stage2"].data

    plan = tmp_path / built["stage1"].key.filename
    data = bytearray(plan.read_bytes())
    data[len(data) // 2] ^= 0xFF
    plan.write_bytes(bytes(data))
    again = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    assert again["stage1"].built and not again["stage2"].built


def test_batched_plans_build_at_the_default_profiles_within_the_budget(tmp_path: Path) -> None:
    """Stage 2's profiles (2 x 1024 ... 16 x 128) each need ~1.35 GB of scratch; stage 1 (16 x 512 tokens)
    ~0.74 GB, which a slot shares with stage 2's: weights + the larger scratch stay under 2 GiB."""
    settings = _settings(tmp_path, "auto")
    graphs = gpu_stage_graphs(settings, ensure_assets(settings.assets, voices=[]))
    assert graphs.batched

    built = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    s1, s2 = built["stage1"], built["stage2"]
    assert s1.key.batched and len(s2.key.profiles) == 4 and s1.key.filename.startswith("batched-stage1-")
    assert 70e6 < s1.record.weights_bytes < 90e6 and 240e6 < s2.record.weights_bytes < 260e6
    assert s1.record.activation_bytes < s2.record.activation_bytes < 1.5e9
    weights = s1.record.weights_bytes + s2.record.weights_bytes
    assert weights + s2.record.activation_bytes < 1.8e9


def test_fp16_batched_stage_2_builds_strongly_typed_at_half_the_memory(tmp_path: Path) -> None:
    """``engine.precision: fp16`` is for TensorRT: its stage 2 (fp16 with float32 islands, exported here, ~1 min)
    must build as a strongly typed plan, with about half the float32 plan's weights (133 vs 235 MiB measured)
    and scratch (650 vs 1289 MiB at the same four profiles), so a slot's weights and larger scratch fit in 1 GB."""
    settings = load_settings(overrides={"engine.engine_dir": str(tmp_path), "engine.compute_capability": "8.6",
                                        "engine.batched": "auto", "engine.precision": "fp16"})
    graphs = gpu_stage_graphs(settings, ensure_assets(settings.assets, voices=[]))
    built = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    s1, s2 = built["stage1"].record, built["stage2"].record
    assert built["stage2"].key.precision == "fp16" and len(built["stage2"].key.profiles) == 4
    assert 125e6 < s2.weights_bytes < 150e6 and s2.activation_bytes < 0.8e9
    assert s1.weights_bytes + s2.weights_bytes + max(s1.activation_bytes, s2.activation_bytes) < 1e9
