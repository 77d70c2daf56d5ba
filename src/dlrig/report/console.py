"""The only place output is written: stdout for results (so `--json | jq` works), stderr for
notes about them (a page written). With `--html -` the page has stdout to itself, and the
result a command prints goes to stderr instead."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import RenderableType

# Set by `--html -` (commands/html.py) for the one command a process runs.
_page_on_stdout = False


def page_to_stdout(on: bool = True) -> None:
    """Give standard output to the page (`--html -`): results are printed to stderr."""
    global _page_on_stdout  # one command per process; main() resets it
    _page_on_stdout = on


def page_on_stdout() -> bool:
    """Whether standard output is the page's (a job's own output then goes to stderr)."""
    return _page_on_stdout


def _results() -> TextIO:
    return sys.stderr if _page_on_stdout else sys.stdout


def _write_line(stream: TextIO, text: str) -> None:
    stream.write(text if text.endswith("\n") else text + "\n")


def print_text(text: str) -> None:
    """A result on stdout, ending in one newline."""
    _write_line(_results(), text)


def print_renderable(renderable: RenderableType) -> None:
    """A rich table or group on stdout, laid out to the terminal's width (rich is imported
    only when something is printed with it)."""
    from rich.console import Console

    Console(file=_results(), soft_wrap=False).print(renderable)


def print_page(html: str) -> None:
    """An HTML page on stdout (`--html -`)."""
    sys.stdout.write(html)
    sys.stdout.flush()


def print_note(text: str) -> None:
    """A note about the results on stderr, ending in one newline."""
    _write_line(sys.stderr, text)
