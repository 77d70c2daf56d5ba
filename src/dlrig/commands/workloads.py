"""`dlrig workloads`: the workload zoo."""

from __future__ import annotations

from typing import Annotated

import typer


def workloads(
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
) -> None:
    """The workload zoo: name, kind, parameters, forward FLOPs, GPU memory at the preset batch."""
    from dlrig.model import workload_memory_gb
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.estimate import workloads_json, workloads_table
    from dlrig.workloads import zoo

    items = [(w, workload_memory_gb(w)) for w in zoo()]
    if json:
        print_text(workloads_json(items))
    else:
        print_renderable(workloads_table(items))
