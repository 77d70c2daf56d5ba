"""`dlrig workloads`: the workload zoo."""

from __future__ import annotations

from typing import Annotated

import typer

KIND_HELP = (
    "only presets of this kind: a mode (training, inference), a model family (language, "
    "vision, ...) or 'serving' (presets with a serve: block)"
)


def workloads(
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    kind: Annotated[str | None, typer.Option("--kind", metavar="KIND", help=KIND_HELP)] = None,
) -> None:
    """The workload zoo: name, kind, parameters, forward FLOPs, GPU memory at the preset batch."""
    from dlrig.errors import ValidationError
    from dlrig.model import workload_memory_gb
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.estimate import workloads_json, workloads_table
    from dlrig.workloads import Mode, WorkloadKind, zoo

    presets = zoo()
    if kind is not None:
        wanted = kind.strip().lower()
        kinds = [m.value for m in Mode] + [k.value for k in WorkloadKind] + ["serving"]
        if wanted not in kinds:
            raise ValidationError(
                f"--kind {kind!r}: expected one of {', '.join(kinds)}",
                hint="e.g. dlrig workloads --kind inference",
            )
        presets = tuple(
            w
            for w in presets
            if wanted in (w.mode.value, w.kind.value) or (wanted == "serving" and w.serve)
        )
    items = [(w, workload_memory_gb(w)) for w in presets]
    if json:
        print_text(workloads_json(items))
    else:
        print_renderable(workloads_table(items))
