"""`dlrig check BUILD [--workload W]`: the guide's rules on a build.

Exit codes: 0 no error-level finding, 1 errors found, 2 bad input (the CLI's DlrigError path).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

PROBE_LATEST = "probe:latest"


def check(
    build: Annotated[
        str, typer.Argument(help="build file (YAML or TOML), - for stdin, or probe:latest")
    ],
    workload: Annotated[
        str | None,
        typer.Option("--workload", "-w", help="zoo name or workload file: workload-aware rules"),
    ] = None,
    catalog: Annotated[
        Path | None, typer.Option("--catalog", help="YAML/TOML file of parts to add or override")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
) -> None:
    """Judge BUILD by the guide's rules: power, connectors, lanes, cores, RAM, cooling, fit."""
    from dlrig.build.loader import resolve_build
    from dlrig.catalog import load_catalog
    from dlrig.report import check as report
    from dlrig.report.console import print_renderable, print_text
    from dlrig.rules import check_build

    cat = load_catalog(catalog)
    source, doc = _build_document(build)
    resolved = resolve_build(doc, source, cat)
    wl = None
    if workload is not None:
        from dlrig.workloads import load_workload

        wl = load_workload(workload)
    result = check_build(resolved, wl)
    if json:
        print_text(report.check_json(resolved, result, cat))
    else:
        print_renderable(report.check_renderable(resolved, result, wl.name if wl else None))
    if not result.ok:
        raise typer.Exit(1)


def _build_document(ref: str) -> tuple[str, dict[str, Any]]:
    """(source, document) of a build file, standard input ('-'), or the last saved probe."""
    if ref == PROBE_LATEST:
        from dlrig.history.db import database_path
        from dlrig.probe import latest_build_document

        # The CLI layer is the one place that reads the environment (core code takes paths).
        home = os.environ.get("DLRIG_HOME")
        path = database_path(Path(home) if home else None)
        if not path.exists():
            from dlrig.errors import HistoryError

            raise HistoryError(
                "no saved probe to use as probe:latest", hint="run `dlrig probe --save` first"
            )
        return PROBE_LATEST, latest_build_document(path)
    from dlrig.io.documents import read_document

    return read_document(ref)
