"""doctor's findings and verdict on machines this project has no access to, from fake machine reports.

The fakes stand for what NVML, package metadata and ``import onnxruntime`` say on a user's machine; what is
checked is doctor's own logic: which ONNX Runtime install is whole, and that the verdict counts only the
findings about the engine the server will run.
"""

from __future__ import annotations

import pytest

from wyoming_fasttts.backends.memory import GpuInfo
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.doctor.checks import Check, OrtModule, environment_checks, onnxruntime_checks, report_checks

H200 = GpuInfo("NVIDIA H200", (9, 0), 141 * 2**30, 140 * 2**30, "580.159.04", (13, 0))
RTX3060_OLD_DRIVER = GpuInfo("NVIDIA GeForce RTX 3060", (8, 6), 12 * 2**30, 11 * 2**30, "575.57.08", (12, 9))
VENV, SYSTEM = "/srv/venv/lib/python3.12/site-packages", "/usr/lib/python3/dist-packages"
ORT_GPU = OrtModule("1.31.1", ("CUDAExecutionProvider", "CPUExecutionProvider"), VENV)
ORT_CPU = OrtModule("1.31.1", ("CPUExecutionProvider",), VENV)


def _checks(gpu: GpuInfo | None, versions: dict[str, str], module: OrtModule = ORT_GPU,
            sites: dict[str, str] | None = None) -> list[Check]:
    probe = (lambda _device: (gpu, "no NVIDIA driver")) if gpu else (lambda _device: (None, "no NVIDIA driver"))
    sites = sites or {dist: VENV for dist in versions if dist.startswith("onnxruntime")}
    return environment_checks(load_settings(), probe=probe, versions=versions, ort_module=lambda: module,
                              ort_sites=sites)[1]


def test_h200_with_onnxruntime_cuda_passes_though_tensorrt_rtx_refuses_the_gpu(capsys) -> None:
    """The issue's case: TensorRT-RTX installed beside ONNX Runtime CUDA on an sm 9.0 GPU."""
    checks = _checks(H200, {"onnxruntime-gpu": "1.31.1", "tensorrt-rtx-cu12": "1.7.1.116"})
    refusal = [c for c in checks if "TensorRT-RTX runs on compute capability 9.0" in c.what]
    assert len(refusal) == 1 and not refusal[0].ok
    assert report_checks(checks, "onnxruntime-cuda")
    assert not report_checks(checks, "tensorrt-rtx")
    out = capsys.readouterr().out
    assert "[--] TensorRT-RTX runs on compute capability 9.0: no (not for onnxruntime-cuda: tensorrt-rtx only)" in out
    assert "[!!] TensorRT-RTX runs on compute capability 9.0: no\n" in out


@pytest.mark.parametrize("module", [ORT_GPU, ORT_CPU], ids=["gpu-build-last", "cpu-build-last"])
def test_both_onnxruntime_packages_fail_every_engine_and_say_how_to_fix(module) -> None:
    checks = _checks(H200, {"onnxruntime": "1.31.1", "onnxruntime-gpu": "1.31.1"}, module)
    (mixed,) = [c for c in checks if "both installed" in c.what]
    assert not mixed.ok and not mixed.engines
    assert ("the CUDA build" if module is ORT_GPU else "the CPU-only build") in mixed.what
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in mixed.what and "'[gpu]'" in mixed.what
    for backend in ("onnxruntime", "onnxruntime-cuda", "tensorrt-rtx", "tensorrt"):
        assert not report_checks(checks, backend), backend


def test_a_venv_over_system_packages_shadows_without_damage() -> None:
    """onnxruntime-gpu in a virtual environment, the CPU build in the system's packages: two folders."""
    versions = {"onnxruntime": "1.31.1", "onnxruntime-gpu": "1.31.1"}
    sites = {"onnxruntime": SYSTEM, "onnxruntime-gpu": VENV}
    checks = _checks(H200, versions, ORT_GPU, sites)
    assert not [c for c in checks if "both installed" in c.what]
    assert report_checks(checks, "onnxruntime-cuda")
    system_first = OrtModule("1.31.1", ("CPUExecutionProvider",), SYSTEM)
    assert not report_checks(_checks(H200, versions, system_first, sites), "onnxruntime-cuda")


def test_a_half_removed_install_is_named() -> None:
    """``pip uninstall onnxruntime`` after both were installed deletes files onnxruntime-gpu still lists."""
    lines, checks = onnxruntime_checks({"onnxruntime-gpu": "1.31.1"},
                                       lambda: OrtModule(None, problem="ModuleNotFoundError: No module named 'x'"),
                                       {"onnxruntime-gpu": VENV})
    assert "does not import" in lines[0]
    assert [c.ok for c in checks] == [False] and "files were removed" in checks[0].what


def test_no_onnxruntime_at_all_is_named() -> None:
    _, checks = onnxruntime_checks({}, lambda: OrtModule(None, problem="ModuleNotFoundError"), {})
    assert [c.ok for c in checks] == [False] and "'[cpu]' or '[gpu]'" in checks[0].what


def test_cpu_machine_passes_on_the_cpu_engine_only() -> None:
    checks = _checks(None, {"onnxruntime": "1.31.1"}, ORT_CPU)
    assert report_checks(checks, "onnxruntime")
    assert not report_checks(checks, "onnxruntime-cuda")


def test_an_old_driver_fails_the_cuda_12_wheel_it_cannot_run() -> None:
    checks = _checks(RTX3060_OLD_DRIVER, {"onnxruntime-gpu": "1.31.1", "tensorrt-cu12": "10.13.0"})
    assert report_checks(checks, "tensorrt")  # CUDA 12 wheel, driver up to 12.9
    old_driver = GpuInfo("old", (8, 6), 2**33, 2**33, "470", (11, 4))
    old = _checks(old_driver, {"onnxruntime": "1.31.1", "tensorrt-cu12": "10.13.0"}, ORT_CPU)
    assert not report_checks(old, "tensorrt")
    assert report_checks(old, "onnxruntime")
