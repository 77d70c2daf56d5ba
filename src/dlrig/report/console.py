"""The only place output is written: stdout for results (so `--json | jq` works), stderr for
notes about them (a page written)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import RenderableType


def _write_line(stream: TextIO, text: str) -> None:
    stream.write(text if text.endswith("\n") else text + "\n")


def print_text(text: str) -> None:
    """A result on stdout, ending in one newline."""
    _write_line(sys.stdout, text)


def print_renderable(renderable: RenderableType) -> None:
    """A rich table or group on stdout, laid out to the terminal's width (rich is imported
    only when something is printed with it)."""
    from rich.console import Console

    Console(soft_wrap=False).print(renderable)


def print_note(text: str) -> None:
    """A note about the results on stderr, ending in one newline."""
    _write_line(sys.stderr, text)
