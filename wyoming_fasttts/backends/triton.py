"""``--engine triton``: synthesis on one or more Triton Inference Servers, over gRPC.

The front end keeps everything but the model: text, voices, protocol, streaming and the scheduler. Each
sentence goes to Triton as one request to the ``fasttts`` ensemble (``wyoming-fasttts triton-repo``), and
Triton's dynamic batcher forms the batches, so this engine takes sentences one at a time (``max_batch`` 1)
with many in flight (``slots``): batching across every front end that shares a server happens there.

Several servers: a request goes to the ready server with the fewest requests outstanding from this
process. A server that fails a request with a transport error (gone, refusing, reset) is marked down and
the request is sent to another one, so a server that goes away costs no request another server can take;
a background thread asks every server ``is_server_ready`` / ``is_model_ready`` and brings it back when it
answers. ``tritonclient`` is imported only here, when this engine is built (the ``triton`` extra).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import numpy as np

from ..config import Settings
from .base import EngineError, EngineMemory, PeerStatus, SynthesisItem
from .batching import stage1_feeds
from .memory import process_rss_bytes

_LOGGER = logging.getLogger(__name__)

RETRY_CODES = {"StatusCode.UNAVAILABLE", "StatusCode.CANCELLED", "StatusCode.UNKNOWN"}
"""gRPC codes that mean the server (or the connection to it) went away, not that the request was bad."""


@dataclass
class _Server:
    status: PeerStatus
    address: str
    client: Any = field(repr=False)


def grpc_address(url: str) -> str:
    """``grpc://host:8001`` (or a bare ``host:8001``) -> ``host:8001``."""
    parsed = urlparse(url if "://" in url else f"grpc://{url}")
    if parsed.scheme != "grpc" or not parsed.hostname or not parsed.port:
        raise EngineError(f"--triton-url must be grpc://HOST:PORT, not {url!r}")
    return f"{parsed.hostname}:{parsed.port}"


class TritonEngine:
    """Sentences to Triton's ``fasttts`` ensemble, spread over servers by outstanding requests and health."""

    name = "triton"
    max_batch = 1

    def __init__(self, urls: Sequence[str], *, model: str = "fasttts", timeout_s: float = 300.0,
                 health_interval_s: float = 1.0, in_flight: int = 32) -> None:
        try:
            import tritonclient.grpc as grpcclient
            from tritonclient.utils import InferenceServerException
        except ImportError as err:
            raise EngineError("--engine triton needs the Triton client: pip install 'wyoming-fasttts[triton]'") from err
        self._grpc = grpcclient
        self._error_type = InferenceServerException
        self._model = model
        self._timeout = timeout_s
        self._interval = health_interval_s
        addresses = [(url, grpc_address(url)) for url in urls]
        self._servers = [_Server(PeerStatus(url), address, grpcclient.InferenceServerClient(address))
                         for url, address in addresses]
        if not self._servers:
            raise EngineError("--engine triton needs at least one --triton-url")
        self.device = "triton:" + ",".join(s.address for s in self._servers)
        self.slots = in_flight * len(self._servers)
        self._lock = threading.Lock()
        self._turn = 0
        self._stop = threading.Event()
        self._token_bucket = 1
        self._wait_for_a_server()
        self._health = threading.Thread(target=self._watch, name="triton-health", daemon=True)
        self._health.start()

    # -- health ---------------------------------------------------------------------------------------------

    def _check(self, server: _Server) -> bool:
        try:
            ready = bool(server.client.is_server_ready(client_timeout=2.0)
                         and server.client.is_model_ready(self._model, client_timeout=2.0))
            error = "" if ready else f"model '{self._model}' not ready"
        except self._error_type as err:
            ready, error = False, str(err)
        with self._lock:
            if ready != server.status.ready:
                _LOGGER.log(logging.INFO if ready else logging.WARNING, "Triton %s is %s%s", server.status.url,
                            "ready" if ready else "not ready", f": {error}" if error else "")
            server.status.ready = ready
            if error:
                server.status.last_error = error
        return ready

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            for server in self._servers:
                self._check(server)

    def _wait_for_a_server(self) -> None:
        """Start-up: wait (up to the request timeout) for one server with the model loaded; read its buckets."""
        deadline = time.monotonic() + self._timeout
        while True:
            ready = [s for s in self._servers if self._check(s)]
            if ready:
                break
            if time.monotonic() > deadline:
                errors = "; ".join(f"{s.status.url}: {s.status.last_error}" for s in self._servers)
                raise EngineError(f"no Triton server has model '{self._model}' ready: {errors}")
            time.sleep(min(self._interval, 0.5))
        config = ready[0].client.get_model_config(self._model, as_json=True, client_timeout=5.0)["config"]
        params = config.get("parameters", {})
        self._token_bucket = max(1, int(params.get("token_bucket", {}).get("string_value", "1")))
        _LOGGER.info("Triton: model '%s' on %s (%d of %d servers ready, token bucket %d, %d requests in flight)",
                     self._model, ", ".join(s.status.url for s in ready), len(ready), len(self._servers),
                     self._token_bucket, self.slots)

    # -- requests -------------------------------------------------------------------------------------------

    def _pick(self, tried: set[int]) -> int | None:
        """The ready server with the fewest outstanding requests (turns break ties); then any not tried."""
        with self._lock:
            order = [(i + self._turn) % len(self._servers) for i in range(len(self._servers))]
            self._turn += 1
            left = [i for i in order if i not in tried]
            if not left:
                return None
            index = min(left, key=lambda i: (not self._servers[i].status.ready, self._servers[i].status.outstanding))
            self._servers[index].status.outstanding += 1
            return index

    def _inputs(self, item: SynthesisItem) -> list[Any]:
        feeds = stage1_feeds([item])
        tokens = feeds["tokens"]
        pad = -tokens.shape[1] % self._token_bucket
        arrays = {"tokens": np.pad(tokens, ((0, 0), (0, pad))), "lengths": feeds["lengths"].reshape(1, 1),
                  "style": feeds["style"], "speed": feeds["speed"].reshape(1, 1)}
        inputs = []
        for name, array in arrays.items():
            tensor = self._grpc.InferInput(name, list(array.shape), "INT64" if array.dtype == np.int64 else "FP32")
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        return inputs

    def _send(self, item: SynthesisItem) -> np.ndarray:
        """One sentence to the best server; on to the next when one went away."""
        inputs = self._inputs(item)
        outputs = [self._grpc.InferRequestedOutput("audio"), self._grpc.InferRequestedOutput("audio_lengths")]
        tried: set[int] = set()
        errors: list[str] = []
        while (index := self._pick(tried)) is not None:
            tried.add(index)
            server = self._servers[index]
            try:
                result = server.client.infer(self._model, inputs, outputs=outputs, client_timeout=self._timeout)
            except self._error_type as err:
                retry = str(err.status()) in RETRY_CODES
                with self._lock:
                    server.status.failures += 1
                    server.status.last_error = str(err)
                    if retry:
                        server.status.ready = False
                errors.append(f"{server.status.url}: {err}")
                if not retry:
                    raise EngineError(f"Triton {server.status.url} refused the request: {err}") from err
                _LOGGER.warning("Triton %s failed (%s); trying another server", server.status.url, err)
                continue
            finally:
                with self._lock:
                    server.status.outstanding -= 1
            with self._lock:
                server.status.requests += 1
            length = int(result.as_numpy("audio_lengths").reshape(-1)[0])
            return np.ascontiguousarray(result.as_numpy("audio")[0, :length], dtype=np.float32)
        raise EngineError("no Triton server could take the request: " + "; ".join(errors))

    # -- Engine ---------------------------------------------------------------------------------------------

    def warmup(self) -> None:
        """One short sentence through the whole ensemble: proves the path (Triton keeps its models warm).

        Short on purpose: 24 equal ids with a zero style make stage 1 predict ~950 frames, a minute of
        stage 2 on a busy 2-core CPU."""
        self._send(SynthesisItem(ids=np.full(8, 16, np.int64), style=np.zeros(256, np.float32)))

    def run(self, items: Sequence[SynthesisItem]) -> list[np.ndarray]:
        return [self._send(item) for item in items]

    def peers(self) -> list[PeerStatus]:
        with self._lock:
            return [PeerStatus(**vars(s.status)) for s in self._servers]

    def memory(self) -> EngineMemory:
        ready = sum(p.ready for p in self.peers())
        return EngineMemory(host_rss_bytes=process_rss_bytes(), extra={"triton_ready_servers": float(ready)})

    def close(self) -> None:
        self._stop.set()
        self._health.join(timeout=5)
        for server in self._servers:
            server.client.close()


def create_triton_engine(settings: Settings) -> TritonEngine:
    t = settings.triton
    return TritonEngine(t.urls, model=t.model, timeout_s=t.timeout_s, health_interval_s=t.health_interval_s,
                        in_flight=t.in_flight)
