"""`dlrig check BUILD [--workload W]`: the guide's rules on a build.

Exit codes: 0 no error-level finding, 1 errors found, 2 bad input (the CLI's DlrigError path).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dlrig.commands.config import CircuitOption, with_mains
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import (
    BUILD_HELP,
    PROBE_LATEST,
    CatalogOption,
    build_document,
    complete_workload,
)


def check(
    build: Annotated[str, typer.Argument(help=BUILD_HELP)],
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload",
            "-w",
            metavar="WORKLOAD",
            help="zoo name or workload file: workload-aware rules",
            autocompletion=complete_workload,
        ),
    ] = None,
    catalog: CatalogOption = None,
    circuit: CircuitOption = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    html: HtmlOption = None,
) -> None:
    """Judge BUILD by the guide's rules: power, connectors, lanes, cores, RAM, cooling, fit."""
    from dlrig.commands.inputs import user_catalog
    from dlrig.machine.loader import resolve_build
    from dlrig.report import check as report
    from dlrig.report.console import print_renderable, print_text
    from dlrig.rules import check_build

    cat = user_catalog(catalog)
    source, doc = build_document(build)
    resolved = with_mains(resolve_build(doc, source, cat), circuit)
    wl = None
    if workload is not None:
        from dlrig.workloads import load_workload

        wl = load_workload(workload)
    result = check_build(resolved, wl)
    health = _probe_health() if build == PROBE_LATEST else None
    if json:
        from dlrig.report.jsonout import dumps

        document = report.check_document(resolved, result, cat)
        if build == PROBE_LATEST:
            document["health"] = health
        print_text(dumps(document))
    else:
        print_renderable(report.check_renderable(resolved, result, wl.name if wl else None))
        if health is not None:
            from dlrig.report.probe import health_lines

            print_renderable(health_lines(health))
    if html is not None:
        from dlrig.report.html.pages import check_page

        name = wl.name if wl else None
        save_page(html, check_page(resolved, result, report.verdict(result), name))
    if not result.ok:
        raise typer.Exit(1)


def _probe_health() -> dict[str, Any] | None:
    """The health summary the last saved probe carries (None from a probe saved without one)."""
    from dlrig.commands.inputs import history_path
    from dlrig.history import db
    from dlrig.history.probes import latest_probe

    conn = db.connect(history_path(), create=False)
    try:
        row = latest_probe(conn)
    finally:
        conn.close()
    return None if row is None else row.report.health
