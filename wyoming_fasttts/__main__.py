"""Command line: serve (the default), say, build-engine, doctor, bench, triton-repo.

Dispatch only: the parser names every subcommand, but a subcommand's module (and so its dependencies:
ONNX Runtime, onnx, zeroconf, torch ...) is imported only when that subcommand runs, so ``say`` and
``--help`` stay light. Each module offers ``add_arguments(parser)`` and ``run(args[, settings])``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from dataclasses import dataclass

from . import __version__


@dataclass(frozen=True)
class Command:
    module: str
    help: str
    settings: bool = True
    """Whether ``run`` takes the loaded Settings (config file plus the settings flags)."""


COMMANDS = {
    "serve": Command("wyoming_fasttts.cli.serve", "run the Wyoming server (the default when no command is given)"),
    "say": Command("wyoming_fasttts.cli.say", "speak text through a running server and write a WAV", settings=False),
    "build-engine": Command("wyoming_fasttts.cli.build_engine",
                            "build TensorRT / TensorRT-RTX plans into the engine cache"),
    "doctor": Command("wyoming_fasttts.doctor.checks",
                      "check GPU, drivers and engines; parity and latency against the CPU"),
    "bench": Command("wyoming_fasttts.bench.run", "benchmark the server against the plain baseline"),
    "triton-repo": Command("wyoming_fasttts.cli.triton_repo", "write a Triton Inference Server model repository"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; only ``command``'s module is imported, to add its flags."""
    parser = argparse.ArgumentParser(prog="wyoming-fasttts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}")
    for name, spec in COMMANDS.items():
        child = sub.add_parser(name, help=spec.help)
        if name != command:
            continue
        try:
            module = importlib.import_module(spec.module)
        except ImportError as err:
            child.set_defaults(unavailable=f"'{name}' is not part of this installation ({err})")
            continue
        module.add_arguments(child)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["serve", *argv]
    args = build_parser(argv[0]).parse_args(argv)
    if getattr(args, "unavailable", None):
        print(f"wyoming-fasttts: {args.unavailable}", file=sys.stderr)
        return 2
    spec = COMMANDS[args.command]
    module = importlib.import_module(spec.module)
    if not spec.settings:
        return int(module.run(args))

    from .cli.options import settings_from_args
    from .config import ConfigError

    try:
        settings = settings_from_args(args)
    except ConfigError as err:
        print(f"wyoming-fasttts: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.DEBUG if settings.debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return int(module.run(args, settings))


if __name__ == "__main__":
    sys.exit(main())
