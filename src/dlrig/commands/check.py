"""`dlrig check BUILD [--workload W]`: the guide's rules on a build.

Exit codes: 0 no error-level finding, 1 errors found, 2 bad input (the CLI's DlrigError path).
"""

from __future__ import annotations

from typing import Annotated

import typer

from dlrig.commands.config import CircuitOption, with_mains
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import BUILD_HELP, CatalogOption, build_document


def check(
    build: Annotated[str, typer.Argument(help=BUILD_HELP)],
    workload: Annotated[
        str | None,
        typer.Option("--workload", "-w", help="zoo name or workload file: workload-aware rules"),
    ] = None,
    catalog: CatalogOption = None,
    circuit: CircuitOption = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    html: HtmlOption = None,
) -> None:
    """Judge BUILD by the guide's rules: power, connectors, lanes, cores, RAM, cooling, fit."""
    from dlrig.catalog import load_catalog
    from dlrig.machine.loader import resolve_build
    from dlrig.report import check as report
    from dlrig.report.console import print_renderable, print_text
    from dlrig.rules import check_build

    cat = load_catalog(catalog)
    source, doc = build_document(build)
    resolved = with_mains(resolve_build(doc, source, cat), circuit)
    wl = None
    if workload is not None:
        from dlrig.workloads import load_workload

        wl = load_workload(workload)
    result = check_build(resolved, wl)
    if json:
        print_text(report.check_json(resolved, result, cat))
    else:
        print_renderable(report.check_renderable(resolved, result, wl.name if wl else None))
    if html is not None:
        from dlrig.report.html.pages import check_page

        save_page(html, check_page(resolved, result, report.verdict(result)))
    if not result.ok:
        raise typer.Exit(1)
