"""What several commands share: the BUILD argument (a file, '-' for standard input, or
probe:latest), the --catalog file, the history path, finite numbers and the money options."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any

import typer

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
BUILD_HELP = "build file (YAML or TOML), - for stdin, or probe:latest"
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
    """(source, document) of a build file, standard input ('-'), or the last saved probe."""
    if ref != PROBE_LATEST:
        from dlrig.io.documents import read_document

        return read_document(ref)
    from dlrig.errors import HistoryError
    from dlrig.history.probes import latest_build_document

    path = history_path()
    if not path.exists():
        raise HistoryError(
            "no saved probe to use as probe:latest", hint="run `dlrig probe --save` first"
        )
    return PROBE_LATEST, latest_build_document(path)


def finite(value: float | None) -> float | None:
    """A number option's value (a typer callback), refused when not finite: `--budget inf`."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value
