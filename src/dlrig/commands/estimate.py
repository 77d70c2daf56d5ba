"""`dlrig estimate BUILD --workload W`: step time by stage, bottleneck, memory, power, run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from dlrig.commands.config import CircuitOption, with_mains
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import BUILD_HELP, CatalogOption, build_document, finite
from dlrig.enums import Severity


def estimate(
    build: Annotated[str, typer.Argument(help=BUILD_HELP)],
    workload: Annotated[str, typer.Option("--workload", "-w", help="zoo name or workload file")],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE what-if on the build or workload (repeatable)"),
    ] = None,
    compare: Annotated[
        str | None, typer.Option("--compare", help="KEY=V1,V2,...: one estimate per value")
    ] = None,
    catalog: CatalogOption = None,
    circuit: CircuitOption = None,
    electricity_price: Annotated[
        float | None,
        typer.Option(
            "--electricity-price",
            help="price per kWh (default: the build's prices)",
            callback=finite,
            min=0,
        ),
    ] = None,
    co2_per_kwh: Annotated[
        float | None,
        typer.Option(
            "--co2-per-kwh", help="grid intensity, kg CO2 per kWh", callback=finite, min=0
        ),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    html: HtmlOption = None,
) -> None:
    """How fast BUILD runs the workload, which part holds it back, and what a run costs."""
    from dlrig.errors import ValidationError
    from dlrig.io.overrides import Assignment, parse_assignment, parse_value
    from dlrig.report import estimate as report
    from dlrig.report.console import print_renderable, print_text

    for name, value in (("--electricity-price", electricity_price), ("--co2-per-kwh", co2_per_kwh)):
        if value is not None and not value >= 0:
            raise ValidationError(f"{name} must be zero or more, got {value}")
    assignments = [parse_assignment(text) for text in set_ or []]
    build_source, build_doc = build_document(build)
    workload_source, workload_doc = _workload_document(workload)
    prices = {"electricity_per_kwh": electricity_price, "co2_kg_per_kwh": co2_per_kwh}
    inputs = _Inputs(catalog, prices, circuit)

    if compare is None:
        est, serving, checked = _one(
            build_doc, build_source, workload_doc, workload_source, assignments, inputs
        )
        misfit = _misfit(est, serving, checked)
        if misfit is not None and not json:
            # A job that does not fit is said first, in check's words (GPU.4), fix included.
            fix = f"; fix: {misfit.fix}" if misfit.fix else ""
            print_text(
                f"DOES NOT FIT ({misfit.rule} {misfit.severity.value}): {misfit.message}{fix}"
            )
        if serving is not None:
            _print_serving(est, serving, json)
        elif json:
            print_text(report.estimate_json(est))
        else:
            print_renderable(report.estimate_renderable(est))
        if html is not None:
            from dlrig.report.html.pages import estimate_page

            save_page(html, estimate_page(est))
        if misfit is not None and misfit.severity.value == "error":
            raise typer.Exit(1)  # as `dlrig check` exits on the same error
        return

    key, sep, raw = compare.partition("=")
    if not sep or not raw.strip():
        raise ValidationError(
            f"--compare {compare!r}: expected KEY=V1,V2,...", hint="e.g. gpus.0.pcie.lanes=4,8,16"
        )
    values = parse_value(f"[{raw}]")
    if not isinstance(values, list) or not values:
        raise ValidationError(f"--compare {compare!r}: cannot read the values as a list")
    base = parse_assignment(f"{key}=0")
    estimates = []
    refused: list[str] = []
    for v in values:
        one = Assignment(base.target, base.path, v, f"{key}={v}")
        est, _, checked = _one(
            build_doc, build_source, workload_doc, workload_source, [*assignments, one], inputs,
        )  # fmt: skip
        estimates.append(est)
        # A value the build cannot take (an AM5 chip on an sTR5 board) is estimated all the
        # same; say which rules it breaks, as `dlrig check` would.
        refused.extend(
            f"{key}={v}: {f.rule} error: {f.message}" for f in checked.errors if f.rule != "GPU.4"
        )
    if json:
        print_text(report.compare_json(key, values, estimates))
    else:
        as_built, _, _ = _one(
            build_doc, build_source, workload_doc, workload_source, assignments, inputs
        )
        print_renderable(report.compare_renderable(key, values, estimates, as_built))
        for line in refused:
            print_text(line)
    if html is not None:
        from dlrig.report.html.pages import estimate_compare_page

        save_page(html, estimate_compare_page(key, values, estimates))


class _Inputs(NamedTuple):
    """What every estimate of one command shares: the --catalog file, the price options and the
    --circuit."""

    catalog_file: Path | None
    prices: dict[str, float | None]
    circuit: str | None


def _one(
    build_doc: dict[str, Any],
    build_source: str,
    workload_doc: dict[str, Any],
    workload_source: str,
    assignments: list[Any],
    inputs: _Inputs,
) -> Any:
    from dlrig.catalog import load_catalog
    from dlrig.errors import ValidationError
    from dlrig.io.overrides import apply_overrides, blame
    from dlrig.machine import resolve_build
    from dlrig.model import estimate as run_estimate
    from dlrig.workloads import resolve_workload

    catalog_file, prices = inputs.catalog_file, inputs.prices
    cat = load_catalog(catalog_file)
    bdoc, wdoc = apply_overrides(build_doc, workload_doc, assignments, cat)
    changed = [a.text for a in assignments if a.target == "build"]
    if changed:
        # The build's name describes the file ("2 nodes of 8x H100"); a what-if changes it.
        bdoc = {**bdoc, "name": f"{bdoc.get('name', 'build')} with {', '.join(changed)}"}
    try:
        resolved = resolve_build(bdoc, build_source, cat)
    except ValidationError as exc:
        raise blame(exc, assignments, "build") from None
    resolved = with_mains(resolved, inputs.circuit)
    try:
        job = resolve_workload(wdoc, workload_source)
    except ValidationError as exc:
        raise blame(exc, assignments, "workload") from None
    est = run_estimate(
        resolved,
        job,
        electricity_per_kwh=prices["electricity_per_kwh"],
        co2_kg_per_kwh=prices["co2_kg_per_kwh"],
    )
    serving = None
    if job.serve is not None:
        from dlrig.model.serving import serving_estimate

        serving = serving_estimate(resolved, job.serve, job.model_name or job.name)
    from dlrig.rules import check_build

    return est, serving, check_build(resolved, job)


def _misfit(est: Any, serving: Any, checked: Any) -> Any:
    """check's GPU.4 finding when the job as written does not fit in the GPUs' memory (also
    when it then runs split into accumulated micro-batches), else None."""
    if serving is not None:
        return None
    finding = next(iter(checked.by_rule("GPU.4")), None)
    if finding is None or (est.memory.fits and finding.severity is Severity.INFO):
        return None
    return finding


def _print_serving(est: Any, serving: Any, json: bool) -> None:
    """The estimate with its serving figures (issue 14): a `serving` key, a serving block."""
    from rich.console import Group

    from dlrig.report import estimate as report
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.serving import serving_dict, serving_renderable

    power_w, price = est.power.system_peak_w, est.run.electricity_per_kwh
    if json:
        doc = report.estimate_dict(est)
        doc["serving"] = serving_dict(serving, power_w, price)
        print_text(dumps(doc))
    else:
        block = serving_renderable(serving, power_w, price, est.run.currency, est.memory.fits)
        print_renderable(Group(report.estimate_renderable(est), block))


def _workload_document(ref: str) -> tuple[str, dict[str, Any]]:
    from dlrig.workloads import workload_document

    return workload_document(ref)
