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
