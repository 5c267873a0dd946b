"""The servers a benchmark measures: started as real processes on free ports, or attached by address.

Both ours and the plain baseline run as separate processes, so each one's memory is its own (peak RSS from
``/proc/PID/status`` VmHWM, GPU memory from NVML's per-process accounting) and neither slows the client.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..backends.memory import gpu_process_bytes, peak_rss_bytes
from ..config import Settings

BASELINE_MODULE = "wyoming_fasttts.bench.baseline_server"
"""Run with ``-m``: inside the package, so ``bench`` finds it in an installed wheel too."""
_PASSED_FLAGS = ("config", "data_dir", "model", "voices", "engine_dir", "threads", "workers", "voice")


@dataclass
class Served:
    """One server under test; ``process`` is None for a server the benchmark did not start."""

    name: str
    uri: str
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def host_port(self) -> str:
        return self.uri.removeprefix("tcp://")

    def peak_rss_bytes(self) -> int | None:
        """Peak resident memory since the process started (the kernel's high-water mark)."""
        return None if self.process is None else peak_rss_bytes(self.process.pid)

    def gpu_bytes(self) -> int | None:
        """GPU memory NVML charges to this process, or None without NVML, a GPU or a process."""
        return None if self.process is None else gpu_process_bytes(self.process.pid)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ours_command(args: argparse.Namespace, engine: str, port: int) -> list[str]:
    """``wyoming-fasttts serve`` with the bench's own settings flags, no side HTTP server."""
    cmd = [sys.executable, "-m", "wyoming_fasttts", "serve", "--uri", f"tcp://127.0.0.1:{port}", "--http-uri", "",
           "--engine", engine]
    for name in _PASSED_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            cmd += [f"--{name.replace('_', '-')}", str(value)]
    for url in getattr(args, "triton_urls", None) or ():  # --engine triton: the servers it sends to
        cmd += ["--triton-url", url]
    return cmd


def baseline_command(settings: Settings, port: int, cuda: bool) -> list[str]:
    """The plain baseline on the same model file, voice and thread count as our server."""
    cmd = [sys.executable, "-m", BASELINE_MODULE, "--uri", f"tcp://127.0.0.1:{port}",
           "--data-dir", settings.assets.data_dir, "--voice", settings.voice.default,
           "--threads", str(settings.engine.threads)]
    if settings.assets.model_path:
        cmd += ["--model", settings.assets.model_path]
    return [*cmd, "--cuda"] if cuda else cmd


def start(name: str, cmd: list[str], port: int, log_dir: Path, timeout: float = 600.0) -> Served:
    """Start ``cmd`` and wait until it accepts connections on ``port`` (model loading takes a while)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    served = Served(name, f"tcp://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        with socket.socket() as sock, contextlib.suppress(OSError):
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return served
        time.sleep(0.2)
    served.stop()
    raise TimeoutError(f"{name} did not open port {port} within {timeout:.0f} s; see {log}")
