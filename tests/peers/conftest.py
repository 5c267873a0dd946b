"""Real peers: Triton Inference Server (nvidia-pytriton's), started and stopped by ``scripts/triton-local``.

The server's own environment (numpy < 2, onnxruntime, the server wheel; pinned in
``scripts/triton-requirements.txt``) is built by the script on first use and cached under
``~/.cache/wyoming-fasttts-tests/triton``; the model repository is written once per session from the
batched graphs the package exports (cached in the data dir).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, free_port

TRITON_CACHE = Path.home() / ".cache" / "wyoming-fasttts-tests" / "triton"


@dataclass
class TritonProcess:
    grpc_url: str
    http: str
    process: subprocess.Popen
    log: Path

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.http + path, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def kill(self) -> None:
        """What a machine or container dying looks like: the server and its model processes, at once."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def _wait_ready(triton: TritonProcess, timeout: float = 600.0) -> None:
    """Ready = the server answers /v2/health/ready (every model loaded); a first run builds the environment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if triton.process.poll() is not None:
            raise RuntimeError(f"Triton exited with {triton.process.returncode}:\n{triton.log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(triton.http + "/v2/health/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.25)
    triton.stop()
    raise TimeoutError(f"Triton not ready after {timeout} s:\n{triton.log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def triton_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``python`` repository, as ``wyoming-fasttts triton-repo --out DIR`` writes it."""
    from wyoming_fasttts.assets import ensure_assets
    from wyoming_fasttts.config import load_settings
    from wyoming_fasttts.graphs.batched import ensure_batched_graphs
    from wyoming_fasttts.triton.repository import write_repository

    settings = load_settings()
    graphs = ensure_batched_graphs(ensure_assets(settings.assets), settings.assets.data_path)
    out = tmp_path_factory.mktemp("triton") / "repo"
    write_repository(out, settings, graphs.stage1, graphs.stage2, backend="python")
    return out


@pytest.fixture(scope="session")
def start_triton(triton_repo: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Callable[[], TritonProcess]]:
    """Starts Triton servers on the repository; each is stopped with SIGTERM at the end and must exit cleanly."""
    started: list[TritonProcess] = []
    logs = tmp_path_factory.mktemp("triton-logs")

    def start() -> TritonProcess:
        grpc_port, http_port = free_port(), free_port()
        log = logs / f"triton-{grpc_port}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(ROOT / "scripts" / "triton-local"), "--repo", str(triton_repo), "--grpc-port", str(grpc_port),
                 "--http-port", str(http_port)],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "FASTTTS_TRITON_CACHE": str(TRITON_CACHE)},
                start_new_session=True,  # its own process group: kill() takes the Python-backend stubs with it
            )
        triton = TritonProcess(f"grpc://127.0.0.1:{grpc_port}", f"http://127.0.0.1:{http_port}", process, log)
        started.append(triton)
        _wait_ready(triton)
        return triton

    yield start
    for triton in started:
        if triton.process.poll() is None:
            began = time.monotonic()
            assert triton.stop() == 0, triton.log.read_text()[-2000:]
            assert time.monotonic() - began < 15, "Triton took too long to stop on SIGTERM"


@pytest.fixture(scope="session")
def triton(start_triton: Callable[[], TritonProcess]) -> TritonProcess:
    return start_triton()
