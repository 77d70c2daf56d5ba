"""What several commands share on the input side: the BUILD argument (`build_document`: a
file, '-' for standard input, probe:latest or probe:ID), `WorkloadOption` (with shell
completion of zoo names), `CatalogOption` read through `user_catalog`, folders to read
(`checked_folders`), the history path, finite numbers and the money options.

A new command reads its files through these (and so through `io.documents.read_document`): a
missing, too long, looping or pipe-without-writer path is then one line naming it, for free.
Output paths are in commands/html.py (`HtmlOption`) and commands/outputs.py (`SaveFolderOption`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from dlrig.catalog.loader import Catalog

PROBE_PREFIX = "probe:"
PROBE_LATEST = "probe:latest"

# The money options `plan` and `upgrade` share.
CurrencyOption = Annotated[
    str,
    typer.Option(
        "--currency", metavar="CODE", help="show prices and read --budget in this currency"
    ),
]
FxRateOption = Annotated[
    float | None,
    typer.Option(
        "--fx-rate", metavar="RATE", help="units of --currency per USD (default: dated ECB rate)"
    ),
]
BUILD_HELP = "build file (YAML or TOML), - for stdin, probe:latest or probe:ID"
CatalogOption = Annotated[
    str | None,
    typer.Option("--catalog", metavar="FILE", help="YAML/TOML file of parts to add or override"),
]


def complete_workload(incomplete: str) -> list[str]:
    """Shell completion of --workload: the zoo names that start so, else the paths that do
    (folders end in '/', to go on into them)."""
    import glob

    from dlrig.workloads.loader import zoo_documents

    names = [name for name in zoo_documents() if name.startswith(incomplete)]
    if names:
        return names
    paths = sorted(glob.glob(glob.escape(incomplete) + "*"))
    return [f"{p}/" if os.path.isdir(p) else p for p in paths]


WorkloadOption = Annotated[
    str,
    typer.Option(
        "--workload",
        "-w",
        metavar="WORKLOAD",
        help="zoo name or workload file",
        autocompletion=complete_workload,
    ),
]


def user_catalog(path: str | None) -> Catalog:
    """The catalog with the user's --catalog file, whose prices may not be dated in the
    future (today is read here, in the command layer); the built-in parts are read through
    the cache in `cache_folder()`."""
    import datetime as dt

    from dlrig.catalog import load_catalog

    return load_catalog(path, today=dt.date.today(), cache_dir=cache_folder())


def cache_folder() -> Path:
    """Where dlrig keeps what it can rebuild (the validated catalog): $DLRIG_CACHE, else the
    user cache directory (platformdirs: ~/.cache/dlrig on Linux)."""
    folder = os.environ.get("DLRIG_CACHE")
    if folder:
        return Path(folder)
    from platformdirs import user_cache_path

    return user_cache_path("dlrig")


def history_path() -> Path:
    """The history database: $DLRIG_HOME/dlrig.sqlite3 or the user data dir.

    The CLI layer is the one place that reads the environment; core code takes paths.
    """
    from dlrig.history.db import database_path

    home = os.environ.get("DLRIG_HOME")
    return database_path(Path(home) if home else None)


def nccl_p2p_disabled() -> bool:
    """NCCL_P2P_DISABLE as NCCL reads it: a non-zero integer turns its P2P transport off, over
    NVLink and PCIe alike, for the jobs started from this environment."""
    try:
        return int(os.environ.get("NCCL_P2P_DISABLE", "0")) != 0
    except ValueError:
        return False


def build_document(ref: str) -> tuple[str, dict[str, Any]]:
    """(source, document) of a build file, standard input ('-'), or a saved probe
    (probe:latest, probe:ID)."""
    if not ref.startswith(PROBE_PREFIX):
        from dlrig.io.documents import read_document

        return read_document(ref)
    from dlrig.errors import HistoryError, ValidationError
    from dlrig.history.probes import latest_build_document, probe_build_document

    path = history_path()
    which = ref.removeprefix(PROBE_PREFIX)
    if which != "latest" and not which.isdigit():
        raise ValidationError(
            f"{ref}: expected probe:latest or probe:ID (a saved probe's number)",
            hint="dlrig probe --history lists the saved probes; ./NAME for a file named so",
        )
    if not path.exists():
        raise HistoryError(f"no saved probe to use as {ref}", hint="run `dlrig probe --save` first")
    if which == "latest":
        return PROBE_LATEST, latest_build_document(path)
    return ref, probe_build_document(path, int(which))


def checked_folders(values: list[str] | None) -> list[str] | None:
    """A callback for options that name folders to read (`probe --path`): each must be a
    folder, checked before any work; the error names the path and why."""
    from dlrig.errors import InputFileError
    from dlrig.io.paths import shown

    for value in values or ():
        if not value.strip():
            raise InputFileError("--path: an empty folder name", hint="e.g. --path /data")
        try:
            is_folder = Path(value).is_dir()
        except OSError as exc:
            raise InputFileError(
                f"--path {shown(value)}: cannot use this path ({exc.strerror})"
            ) from None
        if not is_folder:
            why = "not a folder" if Path(value).exists() else "no such folder"
            raise InputFileError(f"--path {shown(value)}: {why}")
    return values


def finite(value: float | None) -> float | None:
    """A number option's value (a typer callback), refused when not finite: `--budget inf`."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value
