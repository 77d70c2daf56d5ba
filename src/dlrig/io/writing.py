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
