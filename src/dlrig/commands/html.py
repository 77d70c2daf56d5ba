"""`--html FILE` on every command that prints a result: the option, and writing the page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

HtmlOption = Annotated[
    Path | None,
    typer.Option("--html", help="also write the result as a self-contained HTML page to FILE"),
]


def save_page(path: Path, html: str) -> None:
    """Write the page and say where (the terminal output stays as it is)."""
    from dlrig.io.writing import write_page
    from dlrig.report.console import print_note

    write_page(path, html)
    print_note(f"page written: {path}")
