"""What stops the server from starting ends the process with one line the user can act on and exit status 1."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from conftest import ROOT, free_port


def _failed_start(*flags: str) -> str:
    """The server's stderr, once it has ended with status 1 and no traceback."""
    proc = subprocess.run([sys.executable, "-m", "wyoming_fasttts", "--engine", "onnxruntime", *flags],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc.stderr


@pytest.mark.parametrize("taken", ["wyoming", "http"])
def test_an_address_in_use_ends_the_server_before_the_model_loads(taken: str) -> None:
    """One line naming the address, not a traceback through asyncio (as the server printed until 2026-12-06), and
    before the engine loads: the Wyoming address was first bound after it (minutes for a GPU engine that compiles)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        uris = {"wyoming": f"tcp://127.0.0.1:{free_port()}", "http": f"tcp://127.0.0.1:{free_port()}"}
        uris[taken] = f"tcp://127.0.0.1:{port}"
        stderr = _failed_start("--uri", uris["wyoming"], "--http-uri", uris["http"])
    assert "Engine:" not in stderr, stderr[-2000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("wyoming-fasttts: cannot serve:") and str(port) in last
    assert "address already in use" in last.lower()


def test_a_default_voice_that_does_not_exist_ends_the_server_with_the_valid_ones() -> None:
    stderr = _failed_start("--voice", "zf_nope", "--uri", f"tcp://127.0.0.1:{free_port()}", "--http-uri", "")
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("wyoming-fasttts: cannot serve: unknown voice 'zf_nope'") and "zf_xiaobei" in last
