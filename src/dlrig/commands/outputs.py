"""Options that name a folder dlrig writes new files into (`plan --save FOLDER`), checked when
the option is read, before any work: a command declares `save: SaveFolderOption = None` and
writes with `io.writing.write_new_files`. (`--html FILE` is in commands/html.py.)"""

from __future__ import annotations

from typing import Annotated

import typer


def checked_save_folder(value: str | None) -> str | None:
    """--save's callback: a folder, or a new one whose parent is there; refused otherwise."""
    if value is None:
        return None
    from dlrig.io.writing import check_new_files_folder

    check_new_files_folder(value)
    return value


SaveFolderOption = Annotated[
    str | None,
    typer.Option(
        "--save",
        metavar="FOLDER",
        help="write each result as a build file in FOLDER (made if its parent is there)",
        callback=checked_save_folder,
    ),
]
