"""Derived files (converted or exported graphs) built once into a content-keyed folder of the data dir.

A folder is built under a temporary name and renamed into place, so a reader sees a complete folder or none,
and two processes building the same key at once both end up using one result. A cached file is trusted only
after its sha256 matched the one recorded at build time: a flipped byte of the same size would otherwise load
silently and change the audio. The check is recorded in a stamp keyed on each file's size and mtime, so later
starts only stat the files; a file written since (same size or not) is hashed again.

A folder's ``manifest.json``, written last, names the key it was built for and each file's name, size and
sha256; ``read_manifest`` is the one reader of both caches (the stage graphs and the batched graphs).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..assets import sha256_of

_LOGGER = logging.getLogger(__name__)

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

_STAMP = ".verified.json"
_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class CachedFile:
    path: Path
    sha256: str


def file_entry(path: Path) -> dict[str, str | int]:
    """What a manifest records of a file it vouches for."""
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": sha256_of(path)}


def write_manifest(directory: Path, manifest: Mapping[str, Any]) -> None:
    """The last file a build writes: its presence marks the folder complete."""
    (directory / _MANIFEST).write_text(json.dumps(manifest, indent=2))


def read_manifest(directory: Path, key: str, entries: Callable[[Any], Mapping[K, Any]], labels: set[K],
                  what: str) -> dict[K, CachedFile] | None:
    """The files of a complete cache folder by label, or None to build it again.

    ``entries`` picks the ``{label: file entry}`` pairs out of the manifest. None unless the manifest was written
    for ``key``, lists exactly ``labels``, and every file still has the size and the sha256 it was built with.
    """
    try:
        manifest = json.loads((directory / _MANIFEST).read_text())
        if manifest.get("key") != key:
            return None
        listed = {label: (entry["file"], entry["bytes"], entry["sha256"]) for label, entry in entries(manifest).items()}
    except (OSError, ValueError, LookupError, TypeError, AttributeError):  # absent, or not a manifest we wrote
        return None
    if set(listed) != labels:
        return None
    files: dict[K, CachedFile] = {}
    for label, (name, size, sha256) in listed.items():
        path = directory / name
        if not path.is_file() or path.stat().st_size != size:
            return None
        files[label] = CachedFile(path, sha256)
    changed = changed_files(directory, {f.path.name: f.sha256 for f in files.values()})
    if changed:
        _LOGGER.warning("cached %s in %s changed since they were built (%s): building them again",
                        what, directory, ", ".join(changed))
        return None
    return files


def changed_files(directory: Path, expected: dict[str, str]) -> list[str]:
    """Names (relative to ``directory``) whose content no longer has the ``expected`` sha256."""
    stamp_path = directory / _STAMP
    try:
        stamp = json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        stamp = {}
    stamp = stamp if isinstance(stamp, dict) else {}
    changed, checked = [], {}
    for name, sha256 in expected.items():
        path = directory / name
        try:
            info = path.stat()
        except OSError:
            changed.append(name)
            continue
        mark = [info.st_size, info.st_mtime_ns, sha256]
        if stamp.get(name) != mark and sha256_of(path) != sha256:
            changed.append(name)
            continue
        checked[name] = mark
    if checked != stamp:
        try:
            tmp = stamp_path.with_name(f"{_STAMP}.{os.getpid()}")
            tmp.write_text(json.dumps(checked))
            os.replace(tmp, stamp_path)
        except OSError as err:  # a read-only cache still works; it is only hashed at every start
            _LOGGER.debug("cannot record verified cache files in %s: %s", directory, err)
    return changed


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
