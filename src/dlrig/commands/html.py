"""`--html FILE` on every command that prints a result: the option, and writing the page.

The option checks its path when it is read, before the command does any work (a search, a
measurement, a job run for an hour), so that a path dlrig will not write is refused first;
any command that declares `html: HtmlOption = None` and ends with `save_page` gets that.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

STDOUT = "-"


def checked_page_path(value: str | None) -> str | None:
    """--html's callback: '-' (or a path that is this process's standard output, such as a
    piped /dev/stdout) gives stdout to the page; any other path must be one dlrig may write."""
    if value is None:
        return None
    from dlrig.report.console import page_to_stdout

    if value == STDOUT or _is_stdout(value):
        page_to_stdout()
        return STDOUT
    from dlrig.io.writing import check_page_path

    check_page_path(value)
    return value


def _is_stdout(value: str) -> bool:
    try:
        return os.path.samestat(os.stat(value), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no such file, a name refused, no fd
        return False


HtmlOption = Annotated[
    str | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="also write the result as a self-contained HTML page to FILE (- for standard "
        "output; the result then goes to stderr)",
        callback=checked_page_path,
    ),
]


def save_page(target: str, html: str) -> None:
    """Write the page and say where (the terminal output stays as it is)."""
    from dlrig.report.console import print_note, print_page

    if target == STDOUT:
        print_page(html)
        return
    from dlrig.io.writing import write_page

    write_page(target, html)
    print_note(f"page written: {target}")
