"""Writing files for the user: only new files, never one that is already there."""

from __future__ import annotations

from pathlib import Path

from dlrig.errors import InputFileError


def write_new_files(files: dict[Path, str]) -> None:
    """Write each text to its path, all or none: if any path exists (a file the user has, or one
    an earlier run wrote) nothing is written, so no file of the user's is ever overwritten."""
    taken = [p for p in files if p.exists() or p.is_symlink()]
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise InputFileError(
            f"{taken[0]}: exists{more}; dlrig writes only new files",
            hint="save to an empty folder, or move the old files away",
        )
    written: list[Path] = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            # "x": fails if the file appeared since the check (another process); never truncates.
            with path.open("x", encoding="utf-8") as fh:
                written.append(path)
                fh.write(text)
    except FileExistsError as exc:
        _remove(written)
        raise InputFileError(f"{exc.filename}: exists; dlrig writes only new files") from None
    except OSError as exc:
        _remove(written)
        raise InputFileError(f"{exc.filename or path}: cannot write ({exc.strerror})") from None


def _remove(paths: list[Path]) -> None:
    """Undo a partial write: remove the files this call created (and only those)."""
    for path in paths:
        path.unlink(missing_ok=True)


DLRIG_PAGE_MARK = '<meta name="generator" content="dlrig'


def write_page(path: Path, html: str) -> None:
    """Write an HTML page (`--html FILE`). An existing file is replaced only when it is a page
    dlrig wrote (its generator tag), so a mistyped path never destroys a file of the user's;
    the new page goes to a temporary file first, so a failed write leaves the old one whole."""
    if path.is_dir():
        raise InputFileError(f"{path}: is a folder; --html takes a file name", hint="page.html")
    if path.exists():
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:2000]
        except OSError as exc:
            raise InputFileError(f"{path}: cannot read ({exc.strerror})") from None
        if DLRIG_PAGE_MARK not in head:
            raise InputFileError(
                f"{path}: exists and is not a page dlrig wrote; not overwritten",
                hint="give a new file name",
            )
    tmp = path.with_name(f".{path.name}.dlrig-tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(html, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputFileError(f"{exc.filename or path}: cannot write ({exc.strerror})") from None
