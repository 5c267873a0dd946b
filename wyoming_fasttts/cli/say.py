"""``wyoming-fasttts say``: a Wyoming client for a running server; imports no engine, onnx or zeroconf."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..core import MAX_SPEED, MIN_SPEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", help="text to speak ('-' reads standard input)")
    parser.add_argument("-o", "--output", default="out.wav", help="WAV file, or '-' for raw 16-bit PCM on stdout")
    parser.add_argument("--uri", dest="target", default="tcp://127.0.0.1:10200", help="server address")
    parser.add_argument("--voice", help="voice name")
    parser.add_argument("--speed", type=float, help=f"speaking rate, {MIN_SPEED}..{MAX_SPEED}")
    parser.add_argument("--stream", action="store_true",
                        help="send the text as a synthesize stream, sentence by sentence")


def run(args: argparse.Namespace) -> int:
    from ..client import ServerError, say, write_output

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
