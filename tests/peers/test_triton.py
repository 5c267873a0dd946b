"""``--engine triton`` against the real Triton server: the repository loads, the audio is the in-process
engine's, Triton batches concurrent clients, and a Triton server killed mid-load costs no request."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest
from conftest import run, start_server, stop_server

from wyoming_fasttts.client import say

MODELS = ("fasttts", "fasttts_stage1", "fasttts_align", "fasttts_stage2")
# Short sentences of different lengths: a ragged batch that a busy 2-core CI machine renders in seconds.
TEXTS = ("好。", "开灯。", "十点。", "二十度。", "是。", "晚安。", "好的。", "收到。")


def _frontend(tmp_path, *urls: str):
    args = ["--engine", "triton"]
    for url in urls:
        args += ["--triton-url", url]
    return start_server(tmp_path, *args)


def _http_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _batch_sizes(triton, model: str) -> dict[int, int]:
    """Executions per batch size, from Triton's own statistics."""
    stats = triton.get(f"/v2/models/{model}/stats")["model_stats"][0]
    return {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in stats["batch_stats"]}


async def _many(uri: str, texts) -> list:
    return await asyncio.gather(*(say(uri, text) for text in texts))


def test_python_repository_loads_with_the_configured_batching(triton):
    for model in MODELS:
        assert triton.get(f"/v2/models/{model}/ready") == {}, model  # 200 with an empty body
    config = triton.get("/v2/models/fasttts_stage2/config")
    assert config["max_batch_size"] == 16
    assert config["dynamic_batching"]["preferred_batch_size"] == [4, 8]
    assert int(config["dynamic_batching"]["max_queue_delay_microseconds"]) == 5000
    assert all(i.get("allow_ragged_batch") for i in config["input"] if -1 in i["dims"])


def test_audio_through_triton_equals_the_in_process_engine(triton, tmp_path):
    """Same graphs, same host step, same ONNX Runtime version (pinned on both sides), batch 1 on both:
    the PCM must be identical, not merely close (any difference would mean the paths diverged)."""
    config = tmp_path / "batched.yaml"
    config.write_text("engine:\n  batched: always\n")
    local = start_server(tmp_path, "--config", str(config))
    remote = _frontend(tmp_path, triton.grpc_url)
    try:
        for text, voice in (("欢迎使用。", "zf_xiaobei"), ("七点提醒我。", "zm_yunxi")):
            ours = run(say(local.uri, text, voice=voice))
            theirs = run(say(remote.uri, text, voice=voice))
            assert ours.seconds > 0.5
            assert bytes(theirs.pcm) == bytes(ours.pcm), f"{text}: audio differs"
        ready = _http_json(remote.http_uri + "/readyz")
        assert ready["engine"] == "triton" and ready["triton"][0]["ready"] is True
    finally:
        assert stop_server(remote) == 0
        assert stop_server(local) == 0


def test_sixteen_concurrent_clients_are_batched_on_triton(triton, tmp_path):
    before = _batch_sizes(triton, "fasttts_stage1")
    frontend = _frontend(tmp_path, triton.grpc_url)
    try:
        replies = run(_many(frontend.uri, [TEXTS[i % len(TEXTS)] for i in range(16)]))
        assert all(r.seconds > 0.3 for r in replies)
        after = _batch_sizes(triton, "fasttts_stage1")
        new = {size: after.get(size, 0) - before.get(size, 0) for size in after}
        assert sum(size * count for size, count in new.items()) >= 16
        assert max(size for size, count in new.items() if count) > 1, f"no batch larger than 1: {new}"
        metrics = urllib.request.urlopen(frontend.http_uri + "/metrics", timeout=10).read().decode()
        assert f'fasttts_triton_server_ready{{url="{triton.grpc_url}"}} 1.0' in metrics
    finally:
        assert stop_server(frontend) == 0


@pytest.mark.timeout(600)
def test_a_triton_server_killed_mid_load_loses_no_request(triton, start_triton, tmp_path):
    shm = Path("/dev/shm")
    before = set(shm.glob("triton_python_backend_shm_region_*"))
    doomed = start_triton()
    # A killed server cannot release its Python-backend shared memory: the test does, afterwards.
    leftovers = set(shm.glob("triton_python_backend_shm_region_*")) - before
    frontend = _frontend(tmp_path, triton.grpc_url, doomed.grpc_url)

    async def load_then_kill() -> list:
        requests = asyncio.gather(*(say(frontend.uri, TEXTS[i % len(TEXTS)]) for i in range(16)))
        # Kill it while it holds requests of this front end (seen through the front end's /readyz).
        while True:
            peers = await asyncio.to_thread(_http_json, frontend.http_uri + "/readyz")
            if any(p["url"] == doomed.grpc_url and p["outstanding"] > 0 for p in peers["triton"]):
                break
            await asyncio.sleep(0.05)
        doomed.kill()
        return await requests

    try:
        replies = run(load_then_kill())
        assert len(replies) == 16 and all(r.seconds > 0.3 for r in replies)
        metrics = urllib.request.urlopen(frontend.http_uri + "/metrics", timeout=10).read().decode()
        assert f'fasttts_triton_failures_total{{url="{doomed.grpc_url}"}}' in metrics
        failed = [line for line in metrics.splitlines()
                  if line.startswith(f'fasttts_triton_failures_total{{url="{doomed.grpc_url}"}}')]
        assert float(failed[0].split()[-1]) >= 1, "the killed server held no request: the test proved nothing"
        assert "fasttts_request_errors_total{" not in metrics
        ready = _http_json(frontend.http_uri + "/readyz")
        assert ready["ready"] is True
        assert {p["url"]: p["ready"] for p in ready["triton"]} == {triton.grpc_url: True, doomed.grpc_url: False}
    finally:
        assert stop_server(frontend) == 0
        for region in leftovers:
            region.unlink(missing_ok=True)
