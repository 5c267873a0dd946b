"""`wyoming-fasttts bench` end to end with tiny counts: our running server (the session fixture) against the
plain baseline the harness starts itself, every phase including the external wyoming-bench client.

Costs ~30-60 s on a 2-core machine (the baseline's start-up and ~40 short requests); the numbers are not
judged here (timings belong in benchmarks/), only that every row is measured, consistent and written out.
"""

from __future__ import annotations

import json

from wyoming_fasttts.__main__ import build_parser
from wyoming_fasttts.bench import run as bench
from wyoming_fasttts.cli.options import settings_from_args

TEXT = "你好。"
PARAGRAPH = "你好。再见。"
REPLY = "好的。谢谢。"


def test_bench_measures_both_servers_and_writes_the_report(server, tmp_path):
    args = build_parser("bench").parse_args([
        "bench", "--ours-uri", server.uri, "--engine", "onnxruntime", "--runs", "2", "--concurrency", "1,2",
        "--requests", "2", "--ttfa-rounds", "1", "--wb-rounds", "1", "--wb-passes", "1", "--text", TEXT,
        "--paragraph", PARAGRAPH, "--replies", REPLY, "--out", str(tmp_path),
    ])
    assert bench.run(args, settings_from_args(args)) == 0

    report = json.loads((tmp_path / "bench.json").read_text())
    names = {"fasttts", "baseline"}
    seq = report["sequential"]["rows"]
    assert set(seq) == names
    for row in seq.values():
        assert row["n"] == 2
        assert 0 < row["min"] <= row["p50"] <= row["p95"] <= row["p99"] <= row["max"]
        assert row["rtf"] > 0 and row["audio_s"] > 0.3
    # The baseline keeps the model's ~1.5 s of edge silence; our server trims it.
    assert seq["baseline"]["audio_s"] > seq["fasttts"]["audio_s"]

    for name in names:
        levels = report["load"]["levels"][name]
        assert [row["clients"] for row in levels] == [1, 2]
        assert [row["requests"] for row in levels] == [2, 4]
        assert all(row["qps"] > 0 and 0 < row["p50"] <= row["p99"] for row in levels)
        first = report["first_audio"]["rows"][name]
        assert set(first) == {"paragraph/one-shot", "paragraph/streaming", "reply1/one-shot", "reply1/streaming"}
        assert all(0 < row["ttfa_mean"] <= row["total_mean"] for row in first.values())
        # One audio cycle for a one-shot request, one per sentence for a stream: both servers speak the protocol.
        assert first["paragraph/one-shot"]["cycles"] == 1
        assert first["paragraph/streaming"]["cycles"] == 2

    servers = report["servers"]
    assert servers["baseline"]["peak_rss_mib"] > 100  # started by the harness, so its memory is read
    assert servers["fasttts"]["peak_rss_mib"] is None  # attached by address: no process to read

    pooled = {(row["name"], row["mode"]): row for row in report["wyoming_bench"]["pooled"]}
    assert set(pooled) == {(n, m) for n in names for m in ("non_streaming", "streaming")}
    assert all(row["runs"] == 1 and row["ttft_mean_ms"] > 0 for row in pooled.values())
    assert all(row["ours_ttfa_mean_ms"] > 0 for row in pooled.values())
    assert set(report["wyoming_bench"]["ttfa_ratio"]["fasttts"]) == {"non_streaming", "streaming"}
    assert "Summary (lower is better)" in report["wyoming_bench"]["outputs"][0]

    ratios = report["ratios"]["fasttts"]
    assert abs(ratios["speedup_p50"] - seq["baseline"]["p50"] / seq["fasttts"]["p50"]) < 1e-9
    assert {"throughput_x_c1", "throughput_x_c2"} <= set(ratios)
    goals = {g["goal"] for g in report["goals"]["fasttts"]}
    assert any(g.startswith("no collapse") for g in goals) and any(g.startswith("TTFA") for g in goals)

    md = (tmp_path / "bench.md").read_text()
    for heading in ("### Sequential", "### Concurrency", "### Time to first audio", "### wyoming-bench",
                    "### fasttts vs baseline", "### Goals: fasttts"):
        assert heading in md
    assert md.count("| fasttts |") >= 3 and md.count("| baseline |") >= 3
    png = (tmp_path / "bench.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000
