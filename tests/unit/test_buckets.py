"""Shape buckets: every batch lands on shapes the engine warmed, stage-1 calls stay within batch_tokens and stage-2
calls within batch_frames."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from wyoming_fasttts.backends.base import EngineError, SynthesisItem
from wyoming_fasttts.backends.buckets import (
    Buckets,
    bucket_feeds,
    in_stage1_groups,
    paired_rows,
    stage1_groups,
    stage2_groups,
)
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.graphs.cuda_fixes import replace_atan

DEFAULT = Buckets.for_limits(max_batch=16, max_tokens=510, max_frames=1024, batch_frames=2048)
_ENGINE = load_settings().engine
SHIPPED = Buckets.for_limits(16, _ENGINE.max_tokens, _ENGINE.max_frames, _ENGINE.batch_frames,
                             rows=_ENGINE.buckets.rows, tokens=_ENGINE.buckets.tokens, frames=_ENGINE.buckets.frames)
"""What onnxruntime-cuda runs with the shipped defaults.yaml (engine.buckets)."""
PAIRED = paired_rows(Buckets.for_limits(16, _ENGINE.max_tokens, _ENGINE.max_frames, 1024, rows=_ENGINE.buckets.rows,
                                        tokens=_ENGINE.buckets.tokens, frames=_ENGINE.buckets.frames))
"""torch-cuda compiled, at half the shipped batch_frames: no one-row bucket, and a pair at 1024 frames is over it."""
CAPPED = replace(PAIRED, batch_tokens=1024)
"""PAIRED with stage 1 capped at 1024 rows x tokens: sentences over 126 ids (the 512-token bucket) two at a time."""


def test_default_buckets_cover_the_limits() -> None:
    assert DEFAULT.rows == (1, 2, 4, 8, 16)
    assert DEFAULT.tokens == (32, 128, 512)
    assert DEFAULT.frames == (32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
    assert DEFAULT.token_bucket(42) == 128 and DEFAULT.frame_bucket(94) == 96 and DEFAULT.row_bucket(5) == 8
    with pytest.raises(EngineError, match="largest bucket"):
        DEFAULT.frame_bucket(1025)


def test_chosen_steps_end_at_the_limits() -> None:
    """engine.buckets: steps above a limit are dropped and the limit itself is always a bucket, so every
    sentence the engine accepts still has one."""
    assert SHIPPED.rows == (1, 4, 8, 16) and SHIPPED.tokens == (32, 64, 128, 512)
    assert SHIPPED.frames == (64, 128, 192, 256, 384, 512, 768, 1024)
    small = Buckets.for_limits(8, 100, 300, 512, rows=[16, 4, 1], tokens=[64, 32, 200], frames=[256, 64, 512])
    assert (small.rows, small.tokens, small.frames) == ((1, 4, 8), (32, 64, 102), (64, 256, 300))
    assert small.token_bucket(102) == 102 and small.row_bucket(5) == 8


@pytest.mark.parametrize("buckets", [DEFAULT, SHIPPED, PAIRED, CAPPED], ids=["derived", "shipped", "paired", "capped"])
@pytest.mark.parametrize("seed", range(20))
def test_every_call_is_a_warmed_shape_within_its_cap(seed: int, buckets: Buckets) -> None:
    """Random batches: each stage-1 call's shape (``stage1_groups``) and each stage-2 call's (rows, tokens, frames)
    are among the shapes warmed at start-up, each row is rendered once, no stage-1 call exceeds batch_tokens and no
    stage-2 call batch_frames but a lone row in the smallest row bucket (a pair, ``paired_rows``)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 17))
    lengths = rng.integers(1, 200, rows)
    items = [SynthesisItem(np.ones(n, np.int64), np.zeros(256, np.float32)) for n in lengths]
    # every token lasts >= 1 frame; long pauses make some rows much longer than their tokens
    frames = np.minimum(lengths + 2 + rng.integers(0, 6, rows) * lengths, 1024)
    warmed1, warmed2 = set(buckets.stage1_shapes()), set(buckets.stage2_shapes())
    seen: list[int] = []
    for call in stage1_groups(items, buckets):
        feeds, real = bucket_feeds([items[i] for i in call], buckets)
        b, t = feeds["tokens"].shape
        assert (b, t) in warmed1 and real == len(call)
        assert b * t <= (buckets.batch_tokens or b * t) or (len(call) == 1 and b == buckets.rows[0])
        for group, gb, f in stage2_groups(frames[call], t, buckets):
            assert (gb, t, f) in warmed2
            assert len(group) <= gb and frames[call][group].max() <= f
            assert gb * f <= buckets.batch_frames or (len(group) == 1 and gb == buckets.rows[0] == 2)
            seen += call[group].tolist()
    assert sorted(seen) == list(range(rows))


def test_a_stage_1_cap_drops_the_long_shapes_and_runs_long_sentences_a_few_at_a_time() -> None:
    """At 1024 rows x tokens the 512-token bucket keeps only its pair; a batch of 8 with three long sentences runs
    longest first: the two longest, the third with the longest short one (a pair at 512 tokens), the other four
    short ones in one call at their own bucket, and the results come back in the batch's order."""
    assert {(b, t) for b, t in PAIRED.stage1_shapes()} - set(CAPPED.stage1_shapes()) == {
        (4, 512), (8, 512), (16, 512), (16, 128)}
    assert (2, 512) in CAPPED.stage1_shapes() and CAPPED.stage1_rows(512) == 2 and CAPPED.stage1_rows(64) == 16
    lengths = [20, 300, 15, 200, 30, 250, 10, 25]
    items = [SynthesisItem(np.full(n, n, np.int64), np.zeros(256, np.float32)) for n in lengths]
    calls: list[list[int]] = []

    def run(part: list[SynthesisItem]) -> list[int]:
        calls.append([len(item) for item in part])
        return [len(item) for item in part]

    assert in_stage1_groups(items, CAPPED, run) == lengths
    assert calls == [[300, 250], [200, 30], [20, 15, 10, 25]]
    assert [len(call) for call in stage1_groups(items, PAIRED)] == [8]


def test_paired_rows_leave_no_one_row_bucket_and_keep_every_frame_bucket_runnable() -> None:
    assert PAIRED.rows == (2, 4, 8, 16) and paired_rows(Buckets.for_limits(1, 510, 1024, 2048)).rows == (2,)
    assert PAIRED.row_bucket(1) == 2 and PAIRED.max_rows(1024) == 1
    assert {f for b, _, f in PAIRED.stage2_shapes() if b == 2} == set(PAIRED.frames)
    assert max(b * f for b, _, f in PAIRED.stage2_shapes() if b > 2) <= 1024


def test_padded_rows_repeat_the_first_and_tokens_are_zero_padded() -> None:
    items = [SynthesisItem(np.arange(1, n + 1), np.full(256, n, np.float32), 1.0 + n / 100) for n in (3, 20, 7)]
    feeds, real = bucket_feeds(items, DEFAULT)
    assert real == 3 and feeds["tokens"].shape == (4, 32) and len(DEFAULT.stage2_shapes()) == 90
    assert feeds["lengths"].tolist() == [5, 22, 9, 5]
    assert np.array_equal(feeds["tokens"][3], feeds["tokens"][0]) and feeds["tokens"][1, 22:].sum() == 0
    assert np.array_equal(feeds["style"][3], feeds["style"][0]) and feeds["speed"][3] == feeds["speed"][0]


def test_atan_rewrite_matches_atan_where_onnx_runtime_runs_it() -> None:
    """The polynomial that replaces Atan for the CUDA provider, run by ONNX Runtime against numpy."""
    graph = helper.make_graph([helper.make_node("Atan", ["x"], ["y"])], "atan",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    assert replace_atan(model) == 1 and not [n for n in model.graph.node if n.op_type == "Atan"]
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000) * s for s in (1e-3, 0.3, 1, 3, 1e3)]).astype(np.float32)
    x = np.concatenate([x, np.array([0, -0.0, 1, -1, np.inf, -np.inf, 1e30, -1e-30], np.float32)])
    y = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(y - np.arctan(x.astype(np.float64))).max() < 5e-7
    nan = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.array([np.nan], np.float32)})[0]
    assert np.isnan(nan).all()
