"""Derived files (converted or exported graphs) built once into a content-keyed folder of the data dir.

A folder is built under a temporary name and renamed into place, so a reader sees a complete folder or none,
and two processes building the same key at once both end up using one result.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

_LOGGER = logging.getLogger(__name__)

T = TypeVar("T")


def build_once(directory: Path, load: Callable[[Path], T | None], build: Callable[[Path], None]) -> T | None:
    """``load(directory)`` if it is complete, else ``build`` into a temporary folder, move it there, load it."""
    found = load(directory)
    if found is not None:
        return found
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}-"))
    tmp.chmod(0o755)
    try:
        build(tmp)
        shutil.rmtree(directory, ignore_errors=True)
        try:
            os.replace(tmp, directory)
        except OSError:  # another process finished the same build first: use theirs
            _LOGGER.debug("%s appeared concurrently", directory)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return load(directory)
