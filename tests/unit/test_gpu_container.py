"""The GPU container's start script and image recipe, without Docker or a GPU.

``docker/entrypoint.sh`` runs here against a stand-in ``wyoming-fasttts`` that records its arguments and
fails ``build-engine`` on demand: the container must then serve (ONNX Runtime CUDA when it runs, else the
CPU) with a log line that says why, instead of exiting into a restart loop. The Dockerfile is read for what
the running image depends on: batched graphs exported at build time, where the start script links them from.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "docker/entrypoint.sh"
DOCKERFILE = ROOT / "Dockerfile.gpu"

FAKE = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
case "$1" in
    build-engine) exit "${FAKE_BUILD_RC:-0}" ;;
    doctor) [[ "$*" == *--onnxruntime-cuda-only* ]] && exit "${FAKE_CUDA_RC:-1}"; exit 0 ;;
    serve) echo "serving: $*" ;;
esac
"""


def _start(tmp_path: Path, *args: str, build_rc: int = 0,
           cuda_rc: int = 1) -> tuple[subprocess.CompletedProcess, list[str]]:
    fake = tmp_path / "wyoming-fasttts"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    log.write_text("")
    env = {**os.environ, "FASTTTS_BIN": str(fake), "FAKE_LOG": str(log), "FAKE_BUILD_RC": str(build_rc),
           "FAKE_CUDA_RC": str(cuda_rc), "FASTTTS_DATA_DIR": str(tmp_path / "data"),
           "FASTTTS_ENGINE_DIR": str(tmp_path / "engines"), "FASTTTS_SHIPPED_GRAPHS": str(tmp_path / "shipped")}
    proc = subprocess.run(["bash", str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, timeout=60)
    return proc, log.read_text().splitlines()


def test_serves_on_the_plans_when_they_build(tmp_path: Path) -> None:
    proc, calls = _start(tmp_path, "--uri", "tcp://0.0.0.0:10200", "--zeroconf")
    assert proc.returncode == 0, proc.stderr
    assert calls[0].startswith("build-engine --backend tensorrt-rtx --batched always")
    assert calls[1:] == [f"serve --engine tensorrt-rtx --data-dir {tmp_path}/data --engine-dir {tmp_path}/engines "
                         "--uri tcp://0.0.0.0:10200 --zeroconf"]


@pytest.mark.parametrize(("cuda_rc", "fallback"), [(0, "onnxruntime-cuda"), (1, "onnxruntime")])
def test_a_failed_build_serves_on_onnxruntime_and_says_why(tmp_path: Path, cuda_rc: int, fallback: str) -> None:
    proc, calls = _start(tmp_path, "--zeroconf", build_rc=3, cuda_rc=cuda_rc)
    assert proc.returncode == 0, proc.stderr
    assert calls[1] == "doctor --onnxruntime-cuda-only"
    dirs = f"--data-dir {tmp_path}/data --engine-dir {tmp_path}/engines"
    assert calls[2] == f"serve --engine {fallback} {dirs} --zeroconf"
    assert f"build-engine failed (exit 3; its reason is above), so tensorrt-rtx is not used: serving on {fallback}" \
        in proc.stderr


def test_shipped_graphs_are_linked_and_a_users_own_export_is_kept(tmp_path: Path) -> None:
    for name in ("batched-new", "batched-mine"):
        (tmp_path / "shipped" / name).mkdir(parents=True)
    own = tmp_path / "data/graphs/batched-mine"
    own.mkdir(parents=True)
    stale = tmp_path / "data/graphs/batched-new"
    stale.symlink_to(tmp_path / "gone")  # a link left by an older image
    proc, _ = _start(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert stale.is_symlink() and stale.resolve() == (tmp_path / "shipped/batched-new").resolve()
    assert own.is_dir() and not own.is_symlink()


def test_doctor_runs_on_the_containers_caches(tmp_path: Path) -> None:
    proc, calls = _start(tmp_path, "doctor", "--runs", "5")
    assert proc.returncode == 0, proc.stderr
    assert calls == [f"doctor --data-dir {tmp_path}/data --engine-dir {tmp_path}/engines --runs 5"]


def test_image_ships_batched_graphs_where_the_entrypoint_links_them_from() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    assert len(stages) == 2 and stages[0].startswith("${CUDA_IMAGE} AS graphs")
    builder, runtime = stages
    assert '".[cpu,export]"' in builder and "kokoro==0.9.4" in builder
    assert "python -m wyoming_fasttts.graphs.batched --data-dir /opt/export-data" in builder
    assert "mv /opt/export-data/graphs/batched-* /opt/graphs/" in builder
    default = re.search(r"shipped_graphs=\$\{FASTTTS_SHIPPED_GRAPHS:-(\S+)\}", ENTRYPOINT.read_text()).group(1)
    assert f"COPY --from=graphs /opt/graphs {default}" in runtime
    assert "torch" not in runtime and "export" not in re.findall(r'"\.\[([^]]+)\]"', runtime)[0]
    assert 'ENTRYPOINT ["wyoming-fasttts-entrypoint"]' in runtime
    assert "install -m 0755 docker/entrypoint.sh /usr/local/bin/wyoming-fasttts-entrypoint" in runtime
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "!docker/entrypoint.sh" in ignore
