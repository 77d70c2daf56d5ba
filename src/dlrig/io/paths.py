"""How a path the user gave is named in a message: whole when it is short, its ends around an
ellipsis when it is not (a 300-character name would push the reason off the line)."""

from __future__ import annotations

from pathlib import Path

# A name longer than this is shown by its ends (the start says where, the end which file).
LONGEST_SHOWN = 100
SHOWN_HEAD = 40
SHOWN_TAIL = 40


def shown(path: str | Path) -> str:
    """The path as a message names it."""
    text = str(path)
    if len(text) <= LONGEST_SHOWN:
        return text
    return f"{text[:SHOWN_HEAD]}...{text[-SHOWN_TAIL:]} ({len(text)} characters)"


def is_there(path: str | Path) -> bool:
    """Whether something is at path; a name the system refuses (too long, a loop of links) is
    nothing there, not an error."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # ValueError: a NUL byte in the name
        return False


def file_in_the_way(path: str | Path) -> Path | None:
    """The first folder of path that is a file instead (`n.html` of `n.html/x.html`), if any."""
    for parent in reversed(Path(path).parents):
        try:
            if parent.exists() and not parent.is_dir():
                return parent
        except OSError:
            return None
    return None


def not_a_folder(path: str | Path) -> str:
    """Why a path whose folder is a file cannot be used (the reason of ENOTDIR)."""
    in_the_way = file_in_the_way(path)
    if in_the_way is None:
        return "a part of the path is not a folder"
    return f"{shown(in_the_way)} is not a folder"
