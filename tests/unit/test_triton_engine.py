"""The Triton engine's routing, with the gRPC client replaced by in-memory servers.

The real server is exercised in tests/peers/test_triton.py (including a server killed mid-load); these
cover the choices that are hard to provoke there: which server a request goes to, what is retried and
what is not, and the error when no server can take a request.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tritonclient.grpc
from tritonclient.utils import InferenceServerException

from wyoming_fasttts.backends.triton import TritonEngine, grpc_address
from wyoming_fasttts.core import EngineError, SynthesisItem

ITEM = SynthesisItem(ids=np.arange(1, 6), style=np.zeros(256, np.float32))


class _Result:
    def __init__(self, samples: int) -> None:
        self._out = {"audio": np.ones((1, samples + 7), np.float32), "audio_lengths": np.array([[samples]])}

    def as_numpy(self, name: str) -> np.ndarray:
        return self._out[name]


class FakeServer:
    """What one Triton server does: answers, fails with a gRPC status, or holds requests until released."""

    def __init__(self, name: str, entries: queue.Queue) -> None:
        self.name = name
        self.ready = True
        self.fail_with: str | None = None
        self.hold = threading.Event()
        self.hold.set()
        self.entries = entries
        self.served = 0
        self.token_shapes: list[list[int]] = []

    def infer(self, model, inputs, outputs=None, client_timeout=None):
        self.entries.put(self.name)
        self.hold.wait(10)
        if self.fail_with:
            raise InferenceServerException("simulated", status=self.fail_with)
        self.token_shapes.append(inputs[0].shape())
        self.served += 1
        return _Result(600 * self.served)


@pytest.fixture
def servers(monkeypatch):
    entries: queue.Queue = queue.Queue()
    farm = {name: FakeServer(name, entries) for name in ("a:1", "b:2")}

    class Client:
        def __init__(self, address: str) -> None:
            self.server = farm[address]

        def is_server_ready(self, client_timeout=None) -> bool:
            if not self.server.ready:
                raise InferenceServerException("connection refused", status="StatusCode.UNAVAILABLE")
            return True

        def is_model_ready(self, model, client_timeout=None) -> bool:
            return True

        def get_model_config(self, model, as_json=False, client_timeout=None) -> dict:
            return {"config": {"parameters": {"token_bucket": {"string_value": "16"}}}}

        def infer(self, *args, **kwargs):
            return self.server.infer(*args, **kwargs)

        def close(self) -> None:
            pass

    monkeypatch.setattr(tritonclient.grpc, "InferenceServerClient", Client)
    return farm


def _engine(**kwargs) -> TritonEngine:
    return TritonEngine(["grpc://a:1", "grpc://b:2"], health_interval_s=60, **kwargs)


def test_urls_are_grpc_host_and_port():
    assert grpc_address("grpc://triton-0:8001") == "triton-0:8001"
    assert grpc_address("localhost:8001") == "localhost:8001"
    for bad in ("http://host:8000", "grpc://host", "grpc://:8001"):
        with pytest.raises(EngineError):
            grpc_address(bad)


def test_a_request_goes_to_the_server_with_fewer_outstanding(servers):
    engine = _engine()
    entries = servers["a:1"].entries
    for server in servers.values():
        server.hold.clear()
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(engine.run, [ITEM])
        busy = entries.get(timeout=5)
        second = pool.submit(engine.run, [ITEM])
        assert entries.get(timeout=5) != busy, "the second request joined the busy server"
        for server in servers.values():
            server.hold.set()
        first.result(timeout=5), second.result(timeout=5)
    assert [s.served for s in servers.values()] == [1, 1]
    engine.close()


def test_tokens_are_padded_to_the_repository_bucket_and_audio_cut_to_its_length(servers):
    engine = _engine()
    audio = engine.run([ITEM])[0]
    served = servers["a:1"] if servers["a:1"].served else servers["b:2"]
    assert served.token_shapes == [[1, 16]]  # 5 ids + 2 pads -> one bucket of 16
    assert audio.shape == (600,) and audio.dtype == np.float32
    engine.close()


def test_a_server_that_went_away_costs_no_request(servers):
    engine = _engine()
    servers["a:1"].fail_with = "StatusCode.UNAVAILABLE"
    servers["b:2"].fail_with = None
    for _ in range(4):
        assert len(engine.run([ITEM])[0]) > 0
    peers = {p.url: p for p in engine.peers()}
    assert servers["b:2"].served == 4
    assert peers["grpc://a:1"].failures == 1 and peers["grpc://a:1"].ready is False
    assert peers["grpc://b:2"].requests == 4 and peers["grpc://b:2"].outstanding == 0
    engine.close()


def test_a_refused_request_is_not_retried_elsewhere(servers):
    engine = _engine()
    servers["a:1"].fail_with = servers["b:2"].fail_with = "StatusCode.INVALID_ARGUMENT"
    with pytest.raises(EngineError, match="refused the request"):
        engine.run([ITEM])[0]
    assert sum(p.failures for p in engine.peers()) == 1
    engine.close()


def test_no_server_left_is_an_engine_error_naming_them(servers):
    engine = _engine()
    servers["a:1"].fail_with = servers["b:2"].fail_with = "StatusCode.UNAVAILABLE"
    with pytest.raises(EngineError, match="no Triton server could take the request") as caught:
        engine.run([ITEM])[0]
    assert "grpc://a:1" in str(caught.value) and "grpc://b:2" in str(caught.value)
    engine.close()


def test_start_up_fails_clearly_when_no_server_is_ready(servers):
    servers["a:1"].ready = servers["b:2"].ready = False
    with pytest.raises(EngineError, match="no Triton server has model 'fasttts' ready"):
        _engine(timeout_s=0.1)
