"""``wyoming-fasttts serve``: the Wyoming server, its HTTP side server and the optional mDNS advertisement."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..config import Settings
from .options import add_settings_arguments

_HOSTNAME = "fasttts-<hostname>"
"""What a bare ``--zeroconf`` stands for; resolved in ``run`` so parsing never imports zeroconf."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings_arguments(parser)
    parser.add_argument("--uri", help="Wyoming listen address (default: tcp://0.0.0.0:10200)")
    parser.add_argument("--http-uri", help="health/metrics/HTTP API address; '' disables (default tcp://127.0.0.1:10201)")
    parser.add_argument("--zeroconf", nargs="?", const=_HOSTNAME,
                        help=f"advertise _wyoming._tcp over mDNS [as NAME; default {_HOSTNAME}]")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Serve until SIGTERM or SIGINT. What stops the server from starting is the user's to fix (an engine this
    machine cannot run, a model that cannot be fetched, a default voice that does not exist, an address in use),
    so it ends the process with one line that says so and exit status 1, not a traceback through the server's
    internals. A request's own failures never get here (each ends as its client waits for), nor does a failed
    reload (the running engine keeps serving)."""
    from ..assets import AssetError
    from ..core import EngineError
    from ..server.app import serve
    from ..voices import UnknownVoiceError

    if settings.server.zeroconf == _HOSTNAME:
        from ..server.discovery import default_name

        settings.server.zeroconf = default_name()
    try:
        return asyncio.run(serve(settings))
    except (AssetError, EngineError, UnknownVoiceError, OSError) as err:
        print(f"wyoming-fasttts: cannot serve: {err}", file=sys.stderr)
        return 1
