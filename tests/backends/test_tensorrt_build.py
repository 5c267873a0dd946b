"""Real TensorRT-RTX plans built on this CPU-only machine from the cached stage graphs (~30 s; needs the
``tensorrt-rtx`` extra, which CI installs). A second call serves both plans from the cache; a corrupted
plan is rebuilt, not loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from wyoming_fasttts.assets import ensure_assets
from wyoming_fasttts.backends.plans import ensure_plans
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.model.graphs import ensure_graphs

pytest.importorskip("tensorrt_rtx", reason="the tensorrt-rtx extra is not installed")


def test_build_cache_and_rebuild_corrupt_plan(tmp_path: Path) -> None:
    settings = load_settings(overrides={"engine.engine_dir": str(tmp_path), "engine.compute_capability": "8.6"})
    assets = ensure_assets(settings.assets, voices=[])
    graphs = ensure_graphs(assets.model, settings.assets.data_path)

    built = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    assert all(p.built for p in built.values())
    s1, s2 = built["stage1"].record, built["stage2"].record
    assert 70e6 < s1.weights_bytes < 90e6 and 240e6 < s2.weights_bytes < 260e6
    assert s1.activation_bytes < 100e6 and s2.activation_bytes < 1.5e9     # 1024 frames: ~0.65 GB
    assert s1.weights_bytes + s2.weights_bytes + s1.activation_bytes + s2.activation_bytes < 2 * 2**30

    cached = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    assert not any(p.built for p in cached.values())
    assert cached["stage2"].data == built["stage2"].data

    plan = tmp_path / built["stage1"].key.filename
    data = bytearray(plan.read_bytes())
    data[len(data) // 2] ^= 0xFF
    plan.write_bytes(bytes(data))
    again = ensure_plans(settings, graphs, "tensorrt-rtx", progress=False)
    assert again["stage1"].built and not again["stage2"].built
