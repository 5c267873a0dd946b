"""``triton-repo``: every variant's configs parse as Triton's own ModelConfig and wire up.

The ``onnxruntime`` and ``tensorrt`` variants cannot be served here (their backends come with NVIDIA's
container); parsing them with Triton's protobuf schema (shipped in tritonclient) catches a misspelt or
misplaced field, and the checks below catch a broken ensemble or a batching setting lost on the way.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from wyoming_fasttts.config import load_settings
from wyoming_fasttts.triton.repository import ENSEMBLE, RepositoryError, write_repository

ROOT = Path(__file__).resolve().parents[2]
MODELS = (ENSEMBLE, f"{ENSEMBLE}_stage1", f"{ENSEMBLE}_align", f"{ENSEMBLE}_stage2")


def _repository(tmp_path: Path, **kwargs) -> dict[str, model_config_pb2.ModelConfig]:
    graphs = tmp_path / "graphs"
    graphs.mkdir(exist_ok=True)
    for stage in ("stage1", "stage2"):
        (graphs / f"{stage}.onnx").write_bytes(b"graph " + stage.encode())
    out = tmp_path / "repo"
    write_repository(out, load_settings(), graphs / "stage1.onnx", graphs / "stage2.onnx", **kwargs)
    return {m: text_format.Parse((out / m / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
            for m in MODELS}


@pytest.mark.parametrize("backend", ["python", "onnxruntime", "tensorrt"])
def test_every_variant_parses_and_the_ensemble_is_wired(tmp_path, backend):
    configs = _repository(tmp_path, backend=backend, instances=2, gpus=(0, 1) if backend != "python" else ())
    ensemble = configs[ENSEMBLE]
    available = {i.name for i in ensemble.input}
    for step in ensemble.ensemble_scheduling.step:
        model = configs[step.model_name]
        assert set(step.input_map) == {i.name for i in model.input}, step.model_name
        assert set(step.input_map.values()) <= available, f"{step.model_name} reads a tensor nobody wrote"
        assert set(step.output_map) <= {o.name for o in model.output}
        available |= set(step.output_map.values())
    assert {o.name for o in ensemble.output} <= available
    for name in (f"{ENSEMBLE}_stage1", f"{ENSEMBLE}_stage2"):
        config = configs[name]
        assert config.max_batch_size == 16
        assert list(config.dynamic_batching.preferred_batch_size) == [4, 8]
        assert config.dynamic_batching.max_queue_delay_microseconds == 5000
        assert config.instance_group[0].count == 2
        ragged = [i.name for i in config.input if i.allow_ragged_batch]
        reshaped = [i.name for i in config.input if i.HasField("reshape")]
        if backend == "python":
            assert ragged and not reshaped  # the Python model pads ragged requests itself
        else:  # native backends batch only equal shapes: fixed [1] inputs become the graphs' [B]
            assert not ragged and reshaped
            assert list(config.instance_group[0].gpus) == [0, 1]
            assert config.instance_group[0].kind == model_config_pb2.ModelInstanceGroup.KIND_GPU
    bucket = ensemble.parameters["token_bucket"].string_value
    assert bucket == ("1" if backend == "python" else "16")


def test_the_python_variant_carries_its_models_and_host_step(tmp_path):
    _repository(tmp_path, backend="python")
    repo = tmp_path / "repo"
    for stage in ("stage1", "stage2"):
        assert (repo / f"{ENSEMBLE}_{stage}" / "1" / f"{stage}.onnx").read_bytes() == b"graph " + stage.encode()
        assert (repo / f"{ENSEMBLE}_{stage}" / "1" / "model.py").is_file()
    align = repo / f"{ENSEMBLE}_align" / "1"
    assert (align / "alignment.py").read_text() == (ROOT / "wyoming_fasttts" / "backends" / "alignment.py").read_text()
    # Regenerating keeps the Python environment scripts/triton-local linked in, and replaces the rest.
    env = repo / f"{ENSEMBLE}_stage1" / "python-env"
    env.symlink_to(tmp_path)
    _repository(tmp_path, backend="python", instances=3)
    assert env.is_symlink()
    assert "count: 3" in (repo / f"{ENSEMBLE}_stage1" / "config.pbtxt").read_text()


def test_tensorrt_variant_leaves_a_plan_build_script_for_the_container(tmp_path):
    _repository(tmp_path, backend="tensorrt")
    script = tmp_path / "repo" / "build-plans.sh"
    assert script.stat().st_mode & stat.S_IXUSR
    text = script.read_text()
    assert text.count("trtexec --onnx=") == 2 and "--maxShapes=tokens:16x" in text


def test_bad_choices_are_refused(tmp_path):
    with pytest.raises(RepositoryError):
        _repository(tmp_path, backend="python", instances=0)
    result = subprocess.run([sys.executable, "-m", "wyoming_fasttts", "triton-repo", "--out", str(tmp_path / "r"),
                             "--gpus", "zero"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode != 0 and "--gpus takes GPU numbers" in result.stderr


def test_triton_local_and_the_frontend_image_pass_their_linters():
    bin_dir = Path(sys.executable).parent
    checks = ([str(bin_dir / "shellcheck"), "--shell=bash", str(ROOT / "scripts" / "triton-local")],
              [str(bin_dir / "hadolint"), str(ROOT / "examples" / "triton" / "Dockerfile.frontend")])
    for check in checks:
        result = subprocess.run(check, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
