"""``wyoming-fasttts serve``: the Wyoming server, its HTTP side server and the optional mDNS advertisement."""

from __future__ import annotations

import argparse
import asyncio

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
    from ..server.app import serve

    if settings.server.zeroconf == _HOSTNAME:
        from ..server.discovery import default_name

        settings.server.zeroconf = default_name()
    return asyncio.run(serve(settings))
