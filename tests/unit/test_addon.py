"""The Home Assistant add-on and the GPU container, checked as far as a machine without Docker allows.

What is checked: the add-on's config.yaml (keys Home Assistant needs, every option valid against its
schema, the voice list equal to what the server announces, the version equal to the package's), its
translations, the s6 service layout, shellcheck on its scripts, hadolint on both Dockerfiles, the health
check against a real Wyoming round trip, and the compose file's GPU, restart and volume settings.
What is not: building or running either image.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from wyoming.event import async_read_event, async_write_event
from wyoming.info import Describe, Info

from wyoming_fasttts import __version__
from wyoming_fasttts.assets import VOICES
from wyoming_fasttts.config import load_settings
from wyoming_fasttts.server.wyoming import build_info

ROOT = Path(__file__).resolve().parents[2]
ADDON = ROOT / "addon"
S6 = ADDON / "rootfs/etc/s6-overlay/s6-rc.d"
HEALTHCHECK = ADDON / "rootfs/usr/local/bin/wyoming-fasttts-healthcheck"
SCRIPTS = [S6 / "fasttts/run", S6 / "fasttts/finish", S6 / "discovery/run", ROOT / "docker/entrypoint.sh",
           ROOT / "scripts/build-addon"]
DOCKERFILES = [ADDON / "Dockerfile", ROOT / "Dockerfile.gpu"]


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _pyproject_field(key: str) -> str:
    """The value of a top-level ``key = ...`` line of pyproject.toml (tomllib needs Python 3.11)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(rf"^{re.escape(key)} = (.+)$", text, re.M)
    assert match, f"pyproject.toml has no {key}"
    return match.group(1).strip().strip('"')


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return _yaml(ADDON / "config.yaml")


# ---- Home Assistant's option schema language (the subset an add-on may use) ---------------------------

_RANGE = re.compile(r"^(int|float|str)(?:\((-?[\d.]*),(-?[\d.]*)\))?$")


def check_option(value: Any, rule: str) -> None:
    """Raise AssertionError when ``value`` does not satisfy ``rule``; unknown rule types fail loudly so a
    new kind of option cannot slip past this test unchecked."""
    rule = rule.strip().removesuffix("?")
    if rule == "bool":
        assert isinstance(value, bool), f"{value!r} is not a bool"
        return
    if rule.startswith("list(") and rule.endswith(")"):
        choices = rule[5:-1].split("|")
        assert value in choices, f"{value!r} is not one of {choices}"
        return
    match = _RANGE.match(rule)
    assert match, f"schema rule {rule!r} is not understood by this test"
    kind, low, high = match.groups()
    if kind == "str":
        assert isinstance(value, str), f"{value!r} is not a str"
        value = len(value)
    elif kind == "int":
        assert isinstance(value, int) and not isinstance(value, bool), f"{value!r} is not an int"
    else:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{value!r} is not a float"
    assert not low or value >= float(low), f"{value!r} is below {low}"
    assert not high or value <= float(high), f"{value!r} is above {high}"


def test_schema_checker_rejects_what_home_assistant_rejects() -> None:
    check_option(1.0, "float(0.5,2.0)")
    check_option(0, "int(0,64)")
    check_option("zf_xiaobei", "list(zf_xiaobei|zm_yunxi)")
    for value, rule in ((2.5, "float(0.5,2.0)"), (-1, "int(0,64)"), ("x", "list(a|b)"), (1, "bool"),
                        (True, "int"), (1.5, "int")):
        with pytest.raises(AssertionError):
            check_option(value, rule)
    with pytest.raises(AssertionError, match="not understood"):
        check_option("a@b", "email")


# ---- config.yaml ----------------------------------------------------------------------------------------


def test_config_has_what_home_assistant_and_wyoming_need(config: dict[str, Any]) -> None:
    for key in ("name", "version", "slug", "description", "url", "arch", "options", "schema", "map", "ports",
                "discovery", "backup_exclude", "homeassistant"):
        assert key in config, f"addon/config.yaml lacks {key}"
    assert config["url"].startswith("https://") and config["url"].rstrip("/").endswith("/addon")
    assert re.fullmatch(r"20\d\d\.\d+\.\d+", config["homeassistant"])
    assert config["map"] == ["app_config:rw"], "the add-on's own config folder, mounted at /config"
    assert re.fullmatch(r"[a-z0-9_]+", config["slug"])
    assert set(config["arch"]) <= {"amd64", "aarch64", "armv7", "armhf", "i386"}
    assert config["ports"] == {"10200/tcp": None}
    assert config["discovery"] == ["wyoming"]
    assert config["init"] is False, "s6-overlay v3 in the base image is the init; Docker's must stay off"
    assert "*.onnx" in config["backup_exclude"]


def test_base_images_are_home_assistants_own_on_current_debian() -> None:
    build = _yaml(ADDON / "build.yaml")
    assert build["build_from"] == {arch: f"ghcr.io/home-assistant/{arch}-base-debian:trixie"
                                   for arch in ("amd64", "aarch64")}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path.name} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_icon_and_logo_are_pngs_of_the_store_sizes() -> None:
    assert _png_size(ADDON / "icon.png") == (128, 128)
    assert _png_size(ADDON / "logo.png") == (250, 100)


def test_server_announces_itself_both_ways() -> None:
    """Supervisor discovery for this Home Assistant, zeroconf for every other Wyoming client."""
    run = (S6 / "fasttts/run").read_text(encoding="utf-8")
    assert "--zeroconf" in run
    assert "bashio::discovery 'wyoming'" in (S6 / "discovery/run").read_text(encoding="utf-8")


def test_no_addon_manifest_outside_the_addon_folder() -> None:
    """The Supervisor's store scan takes every ``config.json|yaml|yml`` in the repository, at any depth outside
    hidden folders and ``rootfs``, for an add-on manifest (and warns on every reload when it is not one)."""
    found = [path.relative_to(ROOT).as_posix() for path in ROOT.glob("**/config.*")
             if path.suffix in (".json", ".yaml", ".yml")
             and not any(part.startswith(".") or part == "rootfs" for part in path.relative_to(ROOT).parts)]
    assert found == ["addon/config.yaml"]


def test_version_follows_the_package(config: dict[str, Any]) -> None:
    build = _yaml(ADDON / "build.yaml")
    assert config["version"] == __version__ == _pyproject_field("version")
    assert build["args"]["WYOMING_FASTTTS_VERSION"] == __version__


def test_every_option_matches_its_schema(config: dict[str, Any]) -> None:
    options, schema = config["options"], config["schema"]
    required = {key for key, rule in schema.items() if not str(rule).strip().endswith("?")}
    assert required <= set(options), f"options without a default: {required - set(options)}"
    assert set(options) <= set(schema), f"options without a schema: {set(options) - set(schema)}"
    for key, value in options.items():
        check_option(value, schema[key])


def test_voice_list_is_what_the_server_announces(config: dict[str, Any]) -> None:
    listed = config["schema"]["voice"].strip()[5:-1].split("|")
    announced = [voice.name for voice in build_info(list(VOICES), ["zh_CN"]).tts[0].voices]
    assert listed == announced == list(VOICES)


def test_defaults_match_the_server_defaults(config: dict[str, Any]) -> None:
    settings = load_settings()
    options = config["options"]
    assert options["voice"] == settings.voice.default
    assert options["speed"] == settings.voice.speed
    assert options["threads"] == settings.engine.threads


def test_every_option_reaches_the_server(config: dict[str, Any]) -> None:
    """An option the run script never reads would be a setting that silently does nothing."""
    run = (S6 / "fasttts/run").read_text(encoding="utf-8")
    for key in config["schema"]:
        assert f"bashio::config.true '{key}'" in run or f"bashio::config '{key}'" in run, key


@pytest.mark.parametrize("language", ["en", "zh-Hans"])
def test_translations_cover_every_option_and_port(config: dict[str, Any], language: str) -> None:
    translation = _yaml(ADDON / "translations" / f"{language}.yaml")
    for key in config["schema"]:
        entry = translation["configuration"][key]
        assert entry["name"].strip() and entry["description"].strip(), f"{language}: {key}"
    assert set(translation["network"]) == set(config["ports"])


# ---- the add-on folder builds on its own ---------------------------------------------------------------


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [line for line in dockerfile.read_text(encoding="utf-8").splitlines()
             if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(m.group(1).upper(), m.group(2).strip()) for m in re.finditer(r"^(\w+)\s+(.*)$", joined, re.M)]


def _wheel() -> Path:
    wheels = sorted((ADDON / "wheels").glob("*.whl"))
    assert [w.name for w in wheels] == [f"wyoming_fasttts-{__version__}-py3-none-any.whl"], \
        "addon/wheels/ must hold exactly the package's wheel at its version: bash scripts/build-addon"
    return wheels[0]


def test_addon_dockerfile_needs_only_its_folder_and_the_registries() -> None:
    """The Supervisor clones the repository and builds addon/ alone: every COPY source must be in that folder,
    every local path pip installs must come from one, and everything else must be a pinned registry package."""
    args = {"BUILD_ARCH": "amd64", **{k: str(v) for k, v in _yaml(ADDON / "build.yaml")["args"].items()}}
    copied: dict[str, Path] = {}
    installs: list[str] = []
    for op, rest in _instructions(ADDON / "Dockerfile"):
        assert op != "ADD", "ADD may fetch URLs; COPY only"
        if op == "COPY":
            *sources, dest = shlex.split(rest)
            assert not any(s.startswith("--from") for s in sources), "no other image's files"
            for source in sources:
                assert (ADDON / source).resolve().is_relative_to(ADDON) and (ADDON / source).exists(), \
                    f"COPY {source}: not in addon/"
                copied[dest.rstrip("/") + "/"] = ADDON / source
        elif op == "RUN":
            installs += re.findall(r"pip install ([^&;|]+)", rest)
    assert installs, "the Dockerfile installs the package"
    local = []
    for command in installs:
        for word in shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], command)):
            if word.startswith("-"):
                continue
            if word.startswith("/"):
                path = re.sub(r"\[[\w,-]+\]$", "", word)
                dest = next((d for d in copied if path.startswith(d)), None)
                assert dest, f"pip installs {word}, which no COPY from addon/ put there"
                assert (copied[dest] / path[len(dest):]).is_file(), f"{word}: not in addon/"
                local.append(copied[dest] / path[len(dest):])
            else:
                assert re.fullmatch(r"[A-Za-z0-9_.-]+(\[[\w,-]+\])?==[\w.]+", word), f"{word} is not a pinned package"
    assert local == [_wheel()]


def test_addon_wheel_carries_the_package_source() -> None:
    """A fast check of the committed wheel against the tree (scripts/build-addon --check compares a full rebuild,
    in the integration tier): the same files, byte for byte, and the same pins."""
    with zipfile.ZipFile(_wheel()) as wheel:
        names = [n for n in wheel.namelist() if n.startswith("wyoming_fasttts/")]
        stale = [n for n in names if not (ROOT / n).is_file() or wheel.read(n) != (ROOT / n).read_bytes()]
        metadata = next(wheel.read(n).decode() for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    tracked = subprocess.run(["git", "ls-files", "wyoming_fasttts"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    missing = [f for f in tracked if f.endswith((".py", ".yaml")) and f not in names]
    assert not stale and not missing, f"run bash scripts/build-addon: stale {stale}, missing {missing}"
    pins = dict(re.findall(r"^Requires-Dist: ([\w.-]+)(?:\[[\w,]+\])?==([\w.]+)$", metadata, re.M))
    dockerfile = (ADDON / "Dockerfile").read_text(encoding="utf-8")
    assert f"misaki=={pins['misaki']}" in dockerfile, "the Dockerfile's misaki pin must be the wheel's"


# ---- s6 services -------------------------------------------------------------------------------------------


def test_s6_services_are_wired() -> None:
    assert (S6 / "fasttts/type").read_text().strip() == "longrun"
    assert (S6 / "discovery/type").read_text().strip() == "oneshot"
    assert (S6 / "discovery/up").read_text().strip() == "/etc/s6-overlay/s6-rc.d/discovery/run"
    assert (S6 / "discovery/dependencies.d/fasttts").exists(), "discovery must wait for the server"
    assert (S6 / "fasttts/dependencies.d/base").exists()
    assert {p.name for p in (S6 / "user/contents.d").iterdir()} == {"fasttts", "discovery"}
    for script in [*SCRIPTS, HEALTHCHECK]:
        assert os.access(script, os.X_OK), f"{script} is not executable"


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]')")
    return path


def test_shell_scripts_pass_shellcheck() -> None:
    result = subprocess.run([_tool("shellcheck"), "--shell=bash", *map(str, SCRIPTS)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_dockerfile_passes_hadolint(dockerfile: Path) -> None:
    result = subprocess.run([_tool("hadolint"), str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


# ---- health check: a real describe round trip -------------------------------------------------------------


async def _healthcheck_against(info: Info | None) -> tuple[int, str]:
    """Run the health check script against a tiny Wyoming server answering describe with ``info``
    (None: a closed port)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        event = await async_read_event(reader)
        if event is not None and Describe.is_type(event.type) and info is not None:
            await async_write_event(info.event(), writer)
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    if info is None:
        server.close()
        await server.wait_closed()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(HEALTHCHECK), "--uri", f"tcp://127.0.0.1:{port}", "--timeout", "5",
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(proc.communicate(), 30)
    if info is not None:
        server.close()
        await server.wait_closed()
    return proc.returncode, stderr.decode()


def test_healthcheck_passes_when_the_server_announces_voices() -> None:
    code, err = asyncio.run(_healthcheck_against(build_info(list(VOICES), ["zh_CN"])))
    assert code == 0, err


def test_healthcheck_fails_without_voices() -> None:
    code, err = asyncio.run(_healthcheck_against(Info()))
    assert code == 1
    assert "no installed text-to-speech voice" in err


def test_healthcheck_fails_when_nothing_listens() -> None:
    code, err = asyncio.run(_healthcheck_against(None))
    assert code == 1
    assert "no answer" in err


# ---- GPU container -----------------------------------------------------------------------------------------


def test_compose_requests_the_gpu_restarts_and_keeps_caches() -> None:
    compose = _yaml(ROOT / "docker-compose.yml")
    (service,) = compose["services"].values()
    assert service["build"]["dockerfile"] == "Dockerfile.gpu"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert service["restart"] in ("on-failure", "unless-stopped", "always")
    mounts = {volume.split(":")[1] for volume in service["volumes"]}
    assert {"/data", "/engines"} <= mounts
    named = {volume.split(":")[0] for volume in service["volumes"]}
    assert named <= set(compose["volumes"]), "caches must live on named volumes that survive rebuilds"
    assert service["network_mode"] == "host", "mDNS discovery needs the host network"


def test_gpu_image_offers_both_tensorrt_flavours() -> None:
    text = (ROOT / "Dockerfile.gpu").read_text(encoding="utf-8")
    assert re.search(r"^FROM \$\{CUDA_IMAGE\}", text, re.M)
    assert re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:12\.\d+\.\d+-runtime-", text, re.M)
    assert re.search(r"^ARG BACKEND=tensorrt-rtx$", text, re.M)
    assert "tensorrt-rtx|tensorrt)" in text
    assert _pyproject_field("tensorrt-rtx") and _pyproject_field("tensorrt"), "the extras pip installs"
    assert 'VOLUME ["/data", "/engines"]' in text
    entrypoint = (ROOT / "docker/entrypoint.sh").read_text(encoding="utf-8")
    assert "build-engine" in entrypoint and "engine_dir=${FASTTTS_ENGINE_DIR:-/engines}" in entrypoint


def test_build_context_carries_what_the_gpu_image_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    kept = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert {"pyproject.toml", "wyoming_fasttts", HEALTHCHECK.relative_to(ROOT).as_posix()} <= kept
