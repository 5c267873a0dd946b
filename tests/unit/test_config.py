"""Settings from the packaged defaults, a user file and flags: wrong values are config errors; plans go to the cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wyoming_fasttts.config import ConfigError, load_settings


def _user_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "my.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "where"), [
    ("scheduler:\n  preferred_batch_sizes: ['4']\n", "scheduler.preferred_batch_sizes[0]"),
    ("scheduler:\n  max_batch: true\n", "scheduler.max_batch"),
    ("engine:\n  threads: '2'\n", "engine.threads"),
    ("voice:\n  speed: fast\n", "voice.speed"),
    ("engine:\n  buckets:\n    rows: ['4']\n", "engine.buckets.rows[0]"),
    ("engine:\n  cuda_provider_options:\n    cudnn_conv_use_max_workspace: 0\n",
     "engine.cuda_provider_options[...]"),
])
def test_a_value_of_the_wrong_type_is_a_config_error_naming_the_setting(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"setting {where}:")):
        load_settings(_user_file(tmp_path, text))


@pytest.mark.parametrize("uri", ["10200", "tcp://0.0.0.0", "tcp://0.0.0.0:port", "tcp://0.0.0.0:70000", "http://x:1",
                                 "unix://"])
def test_a_wyoming_address_the_server_cannot_listen_on_is_refused_before_anything_loads(tmp_path: Path,
                                                                                       uri: str) -> None:
    with pytest.raises(ConfigError, match=re.escape("server.uri (--uri) must be tcp://HOST:PORT or unix://PATH")):
        load_settings(_user_file(tmp_path, f"server:\n  uri: '{uri}'\n"))


def test_a_side_server_address_it_cannot_listen_on_is_refused_and_empty_turns_it_off(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("server.http_uri (--http-uri) must be tcp://HOST:PORT")):
        load_settings(_user_file(tmp_path, "server:\n  http_uri: '127.0.0.1:10201'\n"))
    assert load_settings(_user_file(tmp_path, "server:\n  http_uri: ''\n")).server.http_uri == ""


def test_a_bucket_step_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("engine.buckets.frames must be positive")):
        load_settings(_user_file(tmp_path, "engine:\n  buckets:\n    frames: [0, 64]\n"))
    with pytest.raises(ConfigError, match=re.escape("engine.batch_tokens must be 0 (no cap)")):
        load_settings(_user_file(tmp_path, "engine:\n  batch_tokens: -1\n"))
    with pytest.raises(ConfigError, match=re.escape("engine.cublas_workspace_kib must be 0 (PyTorch's own)")):
        load_settings(_user_file(tmp_path, "engine:\n  cublas_workspace_kib: -4096\n"))
    with pytest.raises(ConfigError, match=re.escape("engine.half_lstms must be none, audio or all")):
        load_settings(_user_file(tmp_path, "engine:\n  half_lstms: fp16\n"))


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_stage_2_precision_is_fp32_or_fp16(tmp_path: Path, precision: str) -> None:
    settings = load_settings(_user_file(tmp_path, f"engine:\n  precision: {precision}\n"))
    assert settings.engine.precision == precision
    assert load_settings(overrides={"engine.precision": precision}).engine.precision == precision


def test_onnxruntime_cuda_refuses_fp16_with_the_reason_before_loading_anything() -> None:
    """fp16 stage 2 is for TensorRT: ONNX Runtime CUDA's cuDNN fails it at capture with a message naming no cause."""
    from wyoming_fasttts.backends.onnxruntime import create_onnxruntime_engine
    from wyoming_fasttts.core import EngineError

    settings = load_settings(overrides={"engine.precision": "fp16"})
    with pytest.raises(EngineError, match=r"fp16 is for the TensorRT engines.*use fp32 with onnxruntime-cuda"):
        create_onnxruntime_engine(settings, None, backend="onnxruntime-cuda")  # type: ignore[arg-type]


@pytest.mark.parametrize("precision", ["int8", "bf16", "FP16", "half"])
def test_any_other_precision_is_refused(tmp_path: Path, precision: str) -> None:
    with pytest.raises(ConfigError, match=re.escape("engine.precision must be fp32 or fp16")):
        load_settings(_user_file(tmp_path, f"engine:\n  precision: {precision}\n"))


def test_an_unknown_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("unknown setting scheduler.max_bach")):
        load_settings(_user_file(tmp_path, "scheduler:\n  max_bach: 4\n"))


def test_a_provider_option_the_defaults_do_not_name_is_added_over_them(tmp_path: Path) -> None:
    """ONNX Runtime's provider options are its names, not ours: any of them may be set (ORT refuses a wrong one)."""
    settings = load_settings(_user_file(tmp_path, "engine:\n  cuda_provider_options:\n    prefer_nhwc: '1'\n"))
    assert settings.engine.cuda_provider_options["prefer_nhwc"] == "1"
    assert settings.engine.cuda_provider_options == {**load_settings().engine.cuda_provider_options,
                                                     "prefer_nhwc": "1"}


def test_the_plan_cache_defaults_to_the_platform_cache_not_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir("/")
    assert load_settings().engine.engine_path == tmp_path / "cache" / "wyoming-fasttts" / "engines"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert load_settings().engine.engine_path == Path.home() / ".cache" / "wyoming-fasttts" / "engines"
    chosen = load_settings(overrides={"engine.engine_dir": str(tmp_path / "plans")}).engine.engine_path
    assert chosen == tmp_path / "plans"


@pytest.mark.parametrize("command", ["build-engine"])
def test_the_cli_offers_both_precisions(command: str) -> None:
    """``build-engine --precision fp16`` reaches the settings (plans are keyed on it); other values are refused."""
    from wyoming_fasttts.__main__ import build_parser

    parser = build_parser(command)
    assert parser.parse_args([command, "--precision", "fp16"]).precision == "fp16"
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--precision", "int8"])


def test_both_gpu_stages_share_one_arena_by_default() -> None:
    """One ONNX Runtime arena for both stages took 3402 MiB against 4558 for one each, at the same replay times
    (H200, 2026-12-01, docs/BENCHMARKS.md fifth pass); the arena keeps ONNX Runtime's own settings."""
    engine = load_settings().engine
    assert engine.shared_arena is True
    assert engine.cuda_arena == {}


def test_an_arena_setting_is_one_of_onnx_runtimes_arena_keys(tmp_path: Path) -> None:
    settings = load_settings(_user_file(tmp_path, "engine:\n  cuda_arena:\n    arena_extend_strategy: 1\n"))
    assert settings.engine.cuda_arena == {"arena_extend_strategy": 1}
    with pytest.raises(ConfigError, match=re.escape("engine.cuda_arena: arena_extend not among ONNX Runtime's")):
        load_settings(_user_file(tmp_path, "engine:\n  cuda_arena:\n    arena_extend: 1\n"))
    with pytest.raises(ConfigError, match=re.escape("setting engine.cuda_arena[...]")):
        load_settings(_user_file(tmp_path, "engine:\n  cuda_arena:\n    max_mem: lots\n"))
    # ONNX Runtime takes this key in OrtArenaCfg and does not apply it (its next region stays 1 GiB): a user who
    # sets it must hear so, not get an arena that grows as before.
    with pytest.raises(ConfigError, match="max_power_of_two_extend_bytes is not applied"):
        load_settings(_user_file(tmp_path, "engine:\n  cuda_arena:\n    max_power_of_two_extend_bytes: 67108864\n"))


EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_a_shipped_example_config_loads(example: Path) -> None:
    """A user starts these as they are: a setting renamed or retyped since must fail here, not at their start. Each
    example is named for the engine it sets up."""
    settings = load_settings(example)
    assert settings.engine.backend == example.stem
