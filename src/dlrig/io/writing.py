"""Writing files for the user: only new files, never one that is already there."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from dlrig.errors import InputFileError
from dlrig.io.paths import not_a_folder, shown


def check_new_files_folder(text: str) -> Path:
    """The folder new files go to (`plan --save FOLDER`), checked before any work: a folder, or
    a new one in an existing folder (dlrig creates that one level, as `mkdir` would, and
    no folders above it)."""
    if not text.strip():
        raise InputFileError("--save: an empty folder name", hint="e.g. --save plans/")
    path = Path(text)
    try:
        info = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise InputFileError(
                f"{shown(text)}: a symbolic link to a folder that is not there; not followed"
            ) from None
        _check_folder(path)
        return path
    except OSError as exc:
        raise _path_error(path, exc) from None
    if not stat.S_ISDIR(info.st_mode):
        raise InputFileError(
            f"{shown(text)}: exists and is not a folder", hint="give a folder to save into"
        )
    return path


def write_new_files(files: dict[Path, str]) -> None:
    """Write each text to its path, all or none: if any path exists (a file the user has, or one
    an earlier run wrote) nothing is written, so no file of the user's is ever overwritten. The
    files' folder is created when it is not there (not the folders above it)."""
    taken = [p for p in files if p.exists() or p.is_symlink()]
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise InputFileError(
            f"{shown(taken[0])}: exists{more}; dlrig writes only new files",
            hint="save to an empty folder, or move the old files away",
        )
    written: list[Path] = []
    path: Path | None = None
    try:
        for path, text in files.items():
            path.parent.mkdir(exist_ok=True)
            # "x": fails if the file appeared since the check (another process); never truncates.
            with path.open("x", encoding="utf-8") as fh:
                written.append(path)
                fh.write(text)
    except FileExistsError as exc:
        _remove(written)
        raise InputFileError(
            f"{shown(exc.filename)}: exists; dlrig writes only new files"
        ) from None
    except OSError as exc:
        _remove(written)
        where = shown(path.parent if path is not None and not path.parent.is_dir() else path or "")
        raise InputFileError(f"{where}: cannot write ({exc.strerror})") from None


def _remove(paths: list[Path]) -> None:
    """Undo a partial write: remove the files this call created (and only those)."""
    for path in paths:
        path.unlink(missing_ok=True)


DLRIG_PAGE_MARK = '<meta name="generator" content="dlrig'
# The mark sits in the page's head, within its first few hundred bytes: only this much of an
# existing file is read to find it (never the whole of a large file or a device).
PAGE_HEAD_BYTES = 2000


def check_page_path(text: str) -> Path:
    """The file `--html FILE` may write, checked before any work is done: a new file in an
    existing folder, or a page dlrig wrote (a symbolic link to one is followed, the link
    kept). Anything else is an InputFileError naming the path: a folder, a missing folder (as
    curl without --create-dirs, dlrig creates none), a file of the user's, a pipe or a device
    (`-` is standard output), a name the system refuses."""
    name = shown(text)
    if not text.strip():
        raise InputFileError("--html: an empty file name", hint="e.g. --html page.html")
    if text.endswith(("/", os.sep)):
        raise InputFileError(f"{name}: names a folder; --html takes a file name", hint="page.html")
    path = Path(text)
    try:
        info: os.stat_result | None = path.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _path_error(path, exc) from None
    if info is None:
        if path.is_symlink():
            raise InputFileError(
                f"{name}: a symbolic link to a file that is not there; not followed",
                hint="give the link's target, or a new file name",
            )
        _check_folder(path)
        return path
    if stat.S_ISDIR(info.st_mode):
        raise InputFileError(f"{name}: is a folder; --html takes a file name", hint="page.html")
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(
            f"{name}: not a regular file (a pipe or a device); not written",
            hint="--html - writes the page to standard output",
        )
    if not _is_dlrig_page(path):
        raise InputFileError(
            f"{name}: exists and is not a page dlrig wrote; not overwritten",
            hint="give a new file name",
        )
    return Path(os.path.realpath(path))


def _check_folder(path: Path) -> None:
    """The folder a new file goes in must be there and be a folder."""
    folder = path.parent
    try:
        info = folder.stat()
    except FileNotFoundError:
        raise InputFileError(
            f"{shown(path)}: no folder {shown(folder)}; dlrig creates no folders",
            hint=f"mkdir -p {shown(folder)}",
        ) from None
    except OSError as exc:
        raise _path_error(path, exc) from None
    if not stat.S_ISDIR(info.st_mode):
        raise InputFileError(f"{shown(path)}: {shown(folder)} is not a folder")


def _path_error(path: Path, exc: OSError) -> InputFileError:
    if exc.errno == errno.ENOTDIR:
        return InputFileError(f"{shown(path)}: {not_a_folder(path)}")
    return InputFileError(f"{shown(path)}: cannot use this path ({exc.strerror})")


def _is_dlrig_page(path: Path) -> bool:
    """Whether the file's head carries dlrig's generator tag. Opened without blocking and
    read only when still a regular file (it may have become a pipe since it was looked at)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            head = os.read(fd, PAGE_HEAD_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputFileError(f"{shown(path)}: cannot read ({exc.strerror})") from None
    return DLRIG_PAGE_MARK.encode() in head


def write_page(text: str, html: str) -> Path:
    """Write an HTML page (`--html FILE`) and return the file written. The path is checked
    again (a file may have appeared since the option was read); the new page goes to a
    temporary file in the same folder first, so a failed write leaves an old page whole."""
    path = check_page_path(text)
    folder = path.parent
    tmp = folder / f".dlrig-page-{secrets.token_hex(6)}.tmp"  # short: any legal name fits
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(html)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputFileError(f"{shown(text)}: cannot write ({exc.strerror})") from None
    return path
