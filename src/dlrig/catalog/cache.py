"""A cache of the built-in catalog's validated parts, so that a command starts by reading one
pickle (~2 ms) instead of parsing and validating the TOML files (~60 ms; issue 39).

The cache is never required: a file that is missing, stale, unreadable, corrupt or not the
user's own is ignored and the parts are read from the data files as before; a folder that
cannot be written leaves no cache. A file holds its key, then the parts, as two pickles, so
that a stale file is known before its parts are read. The key is a digest of every data
file's bytes, of the source of the code that validates them (the part models and their types:
a new field or bound makes a new key, even within one dlrig version), and of the versions of
dlrig, pydantic and Python (pickles hold pydantic's state of each part). Writers write a
temporary file in the same folder and rename it over the cache, so a reader sees a whole
file, whichever of two concurrent writers renames last.

A pickle runs code when read: the file is read only from the folder the command layer names
(the user's cache directory) and only when this user owns it and no one else may write to it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CACHE_FILE = "catalog-parts.pickle"


def cache_key(data: Mapping[str, bytes], code: Iterable[bytes], versions: Iterable[str]) -> str:
    """The digest that names one set of validated parts: the data files (by kind), the code
    that validates them and the versions that shape a pickle."""
    digest = hashlib.sha256()
    for kind in sorted(data):
        digest.update(f"{kind}\0{len(data[kind])}\0".encode())
        digest.update(data[kind])
    for source in code:
        digest.update(f"{len(source)}\0".encode())
        digest.update(source)
    for version in versions:
        digest.update(f"{version}\0".encode())
    return digest.hexdigest()


def runtime_versions() -> tuple[str, ...]:
    """The versions a pickle of pydantic models depends on, beside dlrig's own."""
    import pydantic

    from dlrig import __version__

    return (__version__, pydantic.VERSION, sys.version)


def _owned_and_private(fd: int) -> bool:
    """The open file is this user's and no one else may write to it (on systems with users)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # Windows: the cache directory's own permissions decide
        return True
    return info.st_uid == getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_cache(folder: Path, key: str) -> dict[str, Any] | None:
    """The parts cached in folder under key, or None when there are none to trust."""
    try:
        with open(folder / CACHE_FILE, "rb") as fh:
            if not _owned_and_private(fh.fileno()) or pickle.load(fh) != key:
                return None
            parts = pickle.load(fh)
    # Reading a damaged pickle can raise nearly anything (UnpicklingError, EOFError,
    # AttributeError, ImportError, ValueError, ...): each means "no cache", not an error.
    except Exception:
        return None
    return parts if isinstance(parts, dict) else None


def write_cache(folder: Path, key: str, parts: Mapping[str, Any]) -> bool:
    """Store parts under key in folder (created if missing); False when it cannot be written
    (a read-only or full disk, a file where the folder should be): the cache is optional."""
    tmp: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".catalog-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(key, fh, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(dict(parts), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / CACHE_FILE)
        tmp = None
    except (OSError, pickle.PicklingError):
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return True
