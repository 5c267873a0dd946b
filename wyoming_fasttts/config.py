"""One typed Settings object from the packaged defaults.yaml, an optional user file and CLI overrides.

The packaged ``defaults.yaml`` is the only place defaults live; the dataclasses below only give them types.
(Not ``config.yaml``: Home Assistant's add-on store reads every ``config.yaml`` in the repository as an
add-on manifest.)
A key that is not known is an error, so a typo in a user's file cannot be silently ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import msgspec
import yaml

from .core import HALF_LSTMS, MAX_SPEED, MIN_SPEED, PRECISIONS


@dataclass
class ServerSettings:
    uri: str
    http_uri: str
    zeroconf: str | None
    max_text_chars: int
    audio_chunk_ms: int
    shutdown_grace_s: float


@dataclass
class LimitSettings:
    """What one client may take: sizes are checked before anything is read, times bound every wait on a peer."""

    max_connections: int
    max_connections_per_peer: int
    max_requests_per_peer: int
    max_header_bytes: int
    max_data_bytes: int
    max_payload_bytes: int
    max_json_depth: int
    idle_timeout_s: float
    read_timeout_s: float
    write_timeout_s: float
    socket_send_buffer_bytes: int
    http_max_body_bytes: int
    http_allowed_hosts: list[str]
    http_allowed_origins: list[str]
    reload_min_interval_s: float


@dataclass
class VoiceSettings:
    default: str
    speed: float
    languages: list[str]


@dataclass
class AssetSettings:
    data_dir: str
    source: str
    model_path: str | None
    voices_path: str | None

    @property
    def data_path(self) -> Path:
        return Path(os.path.expanduser(self.data_dir))


@dataclass
class BucketSettings:
    """Shape buckets of the GPU engines (``backends/buckets.py``); an empty list: derived from the limits."""

    rows: list[int]
    tokens: list[int]
    frames: list[int]


@dataclass
class WindowSettings:
    """Stage 2 in frame windows on the CPU (``backends/windows.py``): frames of 25 ms."""

    first_frames: int
    """Speech frames in a sentence's first window (what the listener waits for); 0 renders sentences whole."""
    left_frames: int
    right_frames: int
    closing_frames: int
    """The sentence's last frames rendered beside its first window, seen by that window's instance norms alone."""
    closing_weight: float
    """How many times the first window's norms count each of those frames."""
    pad_frames: int
    """The start pad's frames the first window renders (the last ones), counted for the whole pad; 0 = all of it."""
    later_pad_frames: int
    """The start pad's last frames each later window renders for its norms alone, counted for the whole pad."""
    fade_frames: int
    frame_ms: float
    """What rendering one frame is taken to cost when sizing the later windows; 0: measured by the engine at
    start-up. A number pins it (the engine warns where it measures more)."""
    margin: float
    """Share of the audio already handed over that the next window may take to render (the rest is slack)."""


@dataclass
class EngineSettings:
    backend: str
    engine_dir: str
    threads: int
    precision: str
    max_tokens: int
    max_frames: int
    batched: str
    batch_frames: int
    batch_tokens: int
    tail_frames: int
    device_id: int
    opt_tokens: int
    opt_frames: int
    memory_budget_mb: int
    arena_shrinkage: bool
    compute_capability: str
    fallback_compute_capability: str
    buckets: BucketSettings
    windows: WindowSettings
    cuda_provider_options: dict[str, str]
    shared_arena: bool
    cuda_arena: dict[str, int]
    torch_compile: bool
    half_lstms: str
    torch_expandable_segments: bool
    cublas_workspace_kib: int

    @property
    def engine_path(self) -> Path:
        """``engine_dir``, or where the platform keeps caches: plans are rebuilt if lost, never user data,
        and a server started from ``/`` must not write ``/engines``."""
        if self.engine_dir:
            return Path(os.path.expanduser(self.engine_dir))
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        return Path(cache) / "wyoming-fasttts" / "engines"


@dataclass
class TritonSettings:
    urls: list[str]
    model: str
    timeout_s: float
    health_interval_s: float
    in_flight: int


@dataclass
class AudioSettings:
    lead_ms: int
    tail_ms: int
    silence_db: float


@dataclass
class TextSettings:
    first_clause_chars: int
    max_sentence_chars: int


@dataclass
class SchedulerSettings:
    workers: int
    max_batch: int
    preferred_batch_sizes: list[int]
    max_queue_delay_ms: float
    max_queue: int


@dataclass
class WatchdogSettings:
    interval_s: float
    latency_drift_ratio: float
    latency_window: int
    memory_growth_mb: float
    min_free_mb: float
    alloc_failures: int
    backoff_s: float
    backoff_max_s: float
    fault_injection: bool


@dataclass
class Settings:
    server: ServerSettings
    limits: LimitSettings
    voice: VoiceSettings
    assets: AssetSettings
    engine: EngineSettings
    triton: TritonSettings
    audio: AudioSettings
    text: TextSettings
    scheduler: SchedulerSettings
    watchdog: WatchdogSettings
    debug: bool = field(default=False)


class ConfigError(ValueError):
    """A configuration file or override that does not fit the schema."""


BACKENDS = ("auto", "onnxruntime", "onnxruntime-cuda", "tensorrt", "tensorrt-rtx", "torch-cuda", "triton")


ARENA_KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
              "initial_growth_chunk_size_bytes")
"""ONNX Runtime's ``OrtArenaCfg`` keys, the ones ``engine.cuda_arena`` may set."""

REFUSED_ARENA_KEYS = {
    "max_power_of_two_extend_bytes": "is not applied by ONNX Runtime's CUDA arena when set this way (measured: its "
                                     "next region stays 1 GiB); use max_mem or arena_extend_strategy",
}
"""``OrtArenaCfg`` keys that ONNX Runtime takes but does not honour, each with the reason given when it is set:
refused, not accepted and ignored (docs/BENCHMARKS.md, device memory seventh pass)."""

OPEN_MAPPINGS = ("engine.cuda_provider_options.", "engine.cuda_arena.")
"""Mappings whose keys are another library's names (ONNX Runtime's provider options): a user may add any of
them; the defaults are merged under, and the library itself refuses a name it does not know."""


def _merge(base: dict[str, Any], over: dict[str, Any], where: str) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if key not in base:
            if where in OPEN_MAPPINGS:
                out[key] = value
                continue
            raise ConfigError(f"unknown setting {where}{key}")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ConfigError(f"setting {where}{key} must be a mapping")
            out[key] = _merge(base[key], value, f"{where}{key}.")
        else:
            out[key] = value
    return out


def _build(data: dict[str, Any]) -> Settings:
    """Every value checked against its type, list elements included (msgspec, strict: ``"4"`` is not 4)."""
    try:
        return msgspec.convert(data, Settings, strict=True)
    except msgspec.ValidationError as err:
        message, _, where = str(err).partition(" - at `$.")
        raise ConfigError(f"setting {where.rstrip('`')}: {message}" if where else f"settings: {message}") from err


def default_dict() -> dict[str, Any]:
    text = resources.files("wyoming_fasttts").joinpath("defaults.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def load_settings(
    config_file: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Defaults, then the user's file, then dotted overrides such as ``{"engine.backend": "onnxruntime"}``."""
    data = default_dict()
    if config_file:
        try:
            user = yaml.safe_load(Path(config_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"cannot read config file {config_file}: {err}") from err
        if not isinstance(user, dict):
            raise ConfigError(f"config file {config_file} must hold a mapping")
        data = _merge(data, user, "")
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        *path, leaf = dotted.split(".")
        nested: dict[str, Any] = {leaf: value}
        for part in reversed(path):
            nested = {part: nested}
        data = _merge(data, nested, "")
    settings = _build(data)
    validate(settings)
    return settings


def validate(settings: Settings) -> None:
    """Reject values that would only fail later: at start, after the engine has loaded, or deep inside a request.
    The listeners (``server.wyoming``, ``server.http``) take their addresses' form from here."""
    if settings.engine.backend not in BACKENDS:
        raise ConfigError(f"engine.backend must be one of {', '.join(BACKENDS)}")
    if not _listen_uri(settings.server.uri):
        raise ConfigError(f"server.uri (--uri) must be tcp://HOST:PORT or unix://PATH, not {settings.server.uri!r}")
    if settings.server.http_uri and not _listen_uri(settings.server.http_uri):
        raise ConfigError("server.http_uri (--http-uri) must be tcp://HOST:PORT, unix://PATH or '' (off), not "
                          f"{settings.server.http_uri!r}")
    if settings.engine.backend == "triton" and not settings.triton.urls:
        raise ConfigError("--engine triton needs at least one --triton-url grpc://HOST:PORT (or triton.urls)")
    if settings.engine.batched not in ("auto", "always", "never"):
        raise ConfigError("engine.batched must be auto, always or never")
    if settings.engine.precision not in PRECISIONS:
        raise ConfigError(f"engine.precision must be {' or '.join(PRECISIONS)} (stage 2 of the batched GPU graphs)")
    if not MIN_SPEED <= settings.voice.speed <= MAX_SPEED:
        raise ConfigError(f"voice.speed must be between {MIN_SPEED} and {MAX_SPEED}")
    if settings.assets.source not in ("registry", "hub"):
        raise ConfigError("assets.source must be registry or hub")
    if not 1 <= settings.engine.max_tokens <= 510:
        raise ConfigError("engine.max_tokens must be between 1 and 510")
    if settings.engine.batch_tokens < 0:
        raise ConfigError("engine.batch_tokens must be 0 (no cap) or a number of rows x tokens")
    if settings.engine.half_lstms not in HALF_LSTMS:
        raise ConfigError(f"engine.half_lstms must be {', '.join(HALF_LSTMS[:-1])} or {HALF_LSTMS[-1]} (torch-cuda)")
    if settings.engine.cublas_workspace_kib < 0:
        raise ConfigError("engine.cublas_workspace_kib must be 0 (PyTorch's own) or a size in KiB")
    unknown = sorted(set(settings.engine.cuda_arena) - set(ARENA_KEYS))
    for key in unknown:
        if key in REFUSED_ARENA_KEYS:
            raise ConfigError(f"engine.cuda_arena: {key} {REFUSED_ARENA_KEYS[key]}")
    if unknown:
        raise ConfigError(f"engine.cuda_arena: {', '.join(unknown)} not among ONNX Runtime's arena keys "
                          f"({', '.join(ARENA_KEYS)})")
    for name in ("rows", "tokens", "frames"):
        if any(step < 1 for step in getattr(settings.engine.buckets, name)):
            raise ConfigError(f"engine.buckets.{name} must be positive")
    sched = settings.scheduler
    if sched.max_batch < 1 or any(not 1 <= b <= sched.max_batch for b in sched.preferred_batch_sizes):
        raise ConfigError("scheduler.preferred_batch_sizes must lie between 1 and scheduler.max_batch")
    if sched.max_queue < 1:
        raise ConfigError("scheduler.max_queue must be at least 1")
    _validate_limits(settings.limits, settings.server.max_text_chars)


def _listen_uri(uri: str) -> bool:
    """Whether a server can listen on ``uri`` as written (the address itself is tried at start)."""
    try:
        parsed = urlparse(uri)
        return (parsed.scheme == "tcp" and parsed.port is not None) or (parsed.scheme == "unix" and bool(parsed.path))
    except ValueError:  # a port that is no number, or out of range
        return False


def _validate_limits(limits: LimitSettings, max_text_chars: int) -> None:
    counts = ("max_connections", "max_connections_per_peer", "max_requests_per_peer", "max_json_depth")
    for name in counts:
        if getattr(limits, name) < 1:
            raise ConfigError(f"limits.{name} must be at least 1")
    if limits.max_connections_per_peer > limits.max_connections:
        raise ConfigError("limits.max_connections_per_peer may not exceed limits.max_connections")
    for name in ("idle_timeout_s", "read_timeout_s", "write_timeout_s"):
        if not getattr(limits, name) > 0:
            raise ConfigError(f"limits.{name} must be more than 0")
    for name in ("reload_min_interval_s", "max_payload_bytes", "socket_send_buffer_bytes"):
        if getattr(limits, name) < 0:
            raise ConfigError(f"limits.{name} may not be negative")
    # The longest text a request may carry, every character \u-escaped, must still fit in one event.
    needed = 6 * max_text_chars + 1024
    for name in ("max_header_bytes", "max_data_bytes", "http_max_body_bytes"):
        if getattr(limits, name) < needed:
            raise ConfigError(f"limits.{name} must be at least {needed} bytes to carry server.max_text_chars "
                              f"({max_text_chars}) of text")
    for name in ("http_allowed_hosts", "http_allowed_origins"):
        if not all(isinstance(item, str) and item for item in getattr(limits, name)):
            raise ConfigError(f"limits.{name} must be a list of names")
