"""Shared fixtures (one real server process per session: the console entry point, the real model) and the tiers.

Every test lives in a tier directory and gets that tier's marker, so ``-m unit`` (or a directory) selects
a tier: ``unit`` (no torch, no TensorRT, no model; seconds), ``integration`` (real server, real model),
``peers`` (the real clients users run against our server), ``model`` (graph export and conversion, torch),
``gpu_fakes`` (the TensorRT engine code against fakes and CPU-built plans), ``hostile`` (hostile and careless
clients against a real server of their own with small limits).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).parent
TIERS = ("unit", "integration", "peers", "model", "gpu_fakes", "hostile")
sys.path.insert(0, str(TESTS))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its directory's tier; a test outside every tier is an error, not a silent pass."""
    for item in items:
        tier = item.path.relative_to(TESTS).parts[0]
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: tests belong in a tier directory ({', '.join(TIERS)})")
        item.add_marker(getattr(pytest.mark, tier))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    uri: str
    http_uri: str
    process: subprocess.Popen
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def wait_for_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"server did not open port {port}:\n{log.read_text()[-4000:]}")


def start_server(tmp: Path, *extra: str, env: dict[str, str] | None = None) -> ServerProcess:
    """Start ``wyoming-fasttts`` on free ports; the data dir is the user's, so the model is fetched once."""
    port, http_port = free_port(), free_port()
    log = tmp / f"server-{port}.log"
    cmd = [sys.executable, "-m", "wyoming_fasttts", "--uri", f"tcp://127.0.0.1:{port}",
           "--http-uri", f"tcp://127.0.0.1:{http_port}", "--engine", "onnxruntime", *extra]
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, **(env or {})})
    wait_for_port(port, process, log)
    return ServerProcess(f"tcp://127.0.0.1:{port}", f"http://127.0.0.1:{http_port}", process, log)


def stop_server(server: ServerProcess) -> int:
    server.process.terminate()
    try:
        return server.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Shared by the end-to-end tests; at the end it must still shut down cleanly and promptly.

    A request left counted as running (a client that vanished mid-stream, a failed request) would hold
    shutdown for the whole grace period, so the time to exit checks that nothing leaked.
    """
    proc = start_server(tmp_path_factory.mktemp("server"))
    yield proc
    started = time.monotonic()
    assert stop_server(proc) == 0, proc.log_text()[-2000:]
    assert time.monotonic() - started < 10, "shutdown waited for requests that had already ended"


def run(coro):
    return asyncio.run(coro)
