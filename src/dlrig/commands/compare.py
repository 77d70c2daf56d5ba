"""`dlrig compare BUILD BUILD... --workload W`: builds side by side."""

from __future__ import annotations

from typing import Annotated

import typer

from dlrig.commands.config import CircuitOption, with_mains
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import BUILD_HELP, CatalogOption, WorkloadOption, build_document


def compare(
    builds: Annotated[
        list[str], typer.Argument(metavar="BUILD", help=f"two or more builds; each {BUILD_HELP}")
    ],
    workload: WorkloadOption,
    catalog: CatalogOption = None,
    circuit: CircuitOption = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    html: HtmlOption = None,
) -> None:
    """Two or more builds side by side on one workload: price, speed, bottleneck, memory,
    power, findings and what a run costs."""
    from dlrig.commands.inputs import user_catalog
    from dlrig.errors import ValidationError
    from dlrig.machine.loader import resolve_build
    from dlrig.machine.price import build_price
    from dlrig.model import estimate
    from dlrig.report import compare as report
    from dlrig.report.console import print_renderable, print_text
    from dlrig.rules import check_build
    from dlrig.workloads import load_workload

    if len(builds) < 2:
        raise ValidationError(
            "compare needs two or more builds", hint="dlrig compare a.yaml b.yaml"
        )
    cat = user_catalog(catalog)
    job = load_workload(workload)
    items = []
    for ref in builds:
        source, doc = build_document(ref)
        resolved = with_mains(resolve_build(doc, source, cat), circuit)
        items.append(
            report.Compared(
                resolved, build_price(resolved), estimate(resolved, job), check_build(resolved, job)
            )
        )
    if json:
        print_text(report.compare_json(job.name, items))
    else:
        print_renderable(report.compare_table(job.name, items))
    if html is not None:
        from dlrig.report.html.pages import compare_page

        save_page(html, compare_page(items, job.name))
