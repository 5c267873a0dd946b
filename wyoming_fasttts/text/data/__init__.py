"""Reading rules and dictionaries of the text front end, kept as data so they can be reviewed and extended.

Loaded once, lazily: importing the package stays cheap for processes that never speak.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml


def read_text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@functools.cache
def load_yaml(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(read_text(name))
    return data


@functools.cache
def load_table(name: str) -> tuple[tuple[str, ...], ...]:
    """Tab-separated rows; ``#`` starts a comment line, blank lines are skipped."""
    rows = []
    for line in read_text(name).splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(tuple(line.rstrip("\n").split("\t")))
    return tuple(rows)
