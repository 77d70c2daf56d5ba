"""`dlrig check BUILD [--workload W]`: the guide's rules on a build.

Exit codes: 0 no error-level finding, 1 errors found, 2 bad input (the CLI's DlrigError path).
"""

from __future__ import annotations

from typing import Annotated

import typer

from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import BUILD_HELP, CatalogOption, build_document, complete_workload


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
    if html is not None:
        from dlrig.report.html.pages import check_page

        name = wl.name if wl else None
        save_page(html, check_page(resolved, result, report.verdict(result), name))
    if not result.ok:
        raise typer.Exit(1)
