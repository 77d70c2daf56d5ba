"""`dlrig upgrade`: the changes to a build ranked by speed gained per dollar."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

PROBE_LATEST = "probe:latest"


def upgrade(
    build: Annotated[str, typer.Argument(help="build file, - for stdin, or probe:latest")],
    workload: Annotated[str, typer.Option("--workload", "-w", help="zoo name or workload file")],
    budget: Annotated[float, typer.Option("--budget", help="the most to spend, USD")],
    catalog: Annotated[
        Path | None, typer.Option("--catalog", help="YAML/TOML file of parts to add or override")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
) -> None:
    """The changes to a build, most speed gained per dollar first.

    Each single change (and what it forces), priced from the catalog, scored by the model."""
    from dlrig.build import load_build, resolve_build
    from dlrig.catalog import load_catalog
    from dlrig.errors import ValidationError
    from dlrig.plan.evaluate import ModelEvaluator
    from dlrig.plan.upgrade import upgrade as run_upgrade
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.plan import upgrade_json, upgrade_renderable
    from dlrig.workloads import load_workload

    if not budget > 0:
        raise ValidationError("--budget must be a positive amount of USD")
    cat = load_catalog(catalog)
    if build == PROBE_LATEST:
        resolved = resolve_build(_latest_probe_document(), PROBE_LATEST, cat)
    else:
        resolved = load_build(build, cat)
    job = load_workload(workload)
    result = run_upgrade(resolved, job, budget, cat, ModelEvaluator())
    if json:
        print_text(upgrade_json(result))
    else:
        print_renderable(upgrade_renderable(result))


def _latest_probe_document() -> dict[str, object]:
    """The build document of this machine's last saved probe (H5's dlrig.probe)."""
    from dlrig.errors import ValidationError

    try:
        from dlrig import probe
    except ImportError:
        probe = None  # type: ignore[assignment]
    latest = getattr(probe, "latest_build_document", None)
    if latest is None:
        raise ValidationError(
            "probe:latest needs the probe, which this install lacks",
            hint="give a build file instead",
        )
    doc = latest()
    if doc is None:
        raise ValidationError(
            "no saved probe of this machine yet", hint="run `dlrig probe --save` first"
        )
    return dict(doc)
