"""`dlrig estimate BUILD --workload W`: step time by stage, bottleneck, memory, power, run."""

from __future__ import annotations

from typing import Annotated, Any, NamedTuple

import typer

from dlrig.commands.config import CircuitOption, with_mains
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import BUILD_HELP, CatalogOption, WorkloadOption, build_document, finite
from dlrig.commands.rent import (
    DEFAULT_HORIZON_MONTHS,
    DEFAULT_UTILISATION,
    HorizonOption,
    LeadTimeOption,
    PricesOption,
    RentGpuOption,
    RentOption,
    UtilisationOption,
)
from dlrig.enums import Severity


def estimate(
    build: Annotated[str, typer.Argument(help=BUILD_HELP)],
    workload: WorkloadOption,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="KEY=VALUE what-if on the build or workload (repeatable)",
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare", metavar="KEY=V1,V2,...", help="KEY=V1,V2,...: one estimate per value"
        ),
    ] = None,
    catalog: CatalogOption = None,
    electricity_price: Annotated[
        float | None,
        typer.Option(
            "--electricity-price",
            metavar="PRICE",
            help="price per kWh (default: the build's prices)",
            callback=finite,
            min=0,
        ),
    ] = None,
    co2_per_kwh: Annotated[
        float | None,
        typer.Option(
            "--co2-per-kwh",
            metavar="KG",
            help="grid intensity, kg CO2 per kWh",
            callback=finite,
            min=0,
        ),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    html: HtmlOption = None,
    rent: RentOption = False,
    prices_file: PricesOption = None,
    utilisation: UtilisationOption = DEFAULT_UTILISATION,
    horizon_months: HorizonOption = DEFAULT_HORIZON_MONTHS,
    rent_gpu: RentGpuOption = None,
    lead_time_days: LeadTimeOption = None,
    circuit: CircuitOption = None,
) -> None:
    """How fast BUILD runs the workload, which part holds it back, and what a run costs;
    with --rent, what the run costs in the cloud and when owning BUILD pays off."""
    from dlrig.commands.overrides import (
        MAX_COMPARE_VALUES,
        assignment,
        parse_assignment,
        parse_key,
        parse_value,
    )
    from dlrig.commands.rent import print_rent, rent_html, with_rent
    from dlrig.errors import ValidationError
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
        est, checked = _one(
            build_doc, build_source, workload_doc, workload_source, assignments, inputs
        )
        memory_note = _memory_note(est, checked)
        renting = None
        if rent:
            from dlrig.commands.rent import rent_analysis, resolved_for_rent

            owned, job, cat = resolved_for_rent(
                build_doc, build_source, workload_doc, workload_source, assignments, catalog
            )
            renting = rent_analysis(
                job, owned, cat, prices_file=prices_file, utilisation=utilisation,
                horizon_months=horizon_months, rent_gpus=rent_gpu,
                lead_time_days=lead_time_days, electricity_per_kwh=electricity_price,
            )  # fmt: skip
        if memory_note is not None and not json:
            print_text(memory_note)  # said first, in check's words (GPU.4), fix included
        if json:
            print_text(with_rent(report.estimate_json(est), renting))
        else:
            print_renderable(report.estimate_renderable(est))
            print_rent(renting)
        if html is not None:
            from dlrig.report.html.pages import estimate_page

            save_page(html, estimate_page(est, memory_note, rent_html(renting)))
        if not est.runs:
            raise typer.Exit(1)  # README: 1 if the job does not fit
        return

    if rent:
        raise ValidationError("--rent prices one estimate; leave out --compare")
    key, sep, raw = compare.partition("=")
    if not sep or not raw.strip():
        raise ValidationError(
            f"--compare {compare!r}: expected KEY=V1,V2,...", hint="e.g. gpus.0.pcie.lanes=4,8,16"
        )
    routed = parse_key(key, "--compare")
    try:
        values = parse_value(f"[{raw}]", "--compare")
    except ValidationError:
        values = None
    if not isinstance(values, list) or not values:
        raise ValidationError(
            f"--compare {compare}: cannot read {raw!r} as a list of values",
            hint="values are separated by commas, e.g. batch_size=32,64",
        )
    if len(values) > MAX_COMPARE_VALUES:
        raise ValidationError(
            f"--compare {key}: {len(values)} values; it takes at most {MAX_COMPARE_VALUES}"
        )
    key = key.strip()
    compared = [assignment(routed, v, f"{key}={v}", "--compare") for v in values]
    estimates = []
    refused: list[str] = []
    for one, v in zip(compared, values, strict=True):
        est, checked = _one(
            build_doc, build_source, workload_doc, workload_source, [*assignments, one], inputs,
        )  # fmt: skip
        estimates.append(est)
        # A value the build cannot take (an AM5 chip on an sTR5 board) is estimated all the
        # same; say which rules it breaks, as `dlrig check` would.
        refused.extend(
            f"{key}={v}: {f.rule} error: {f.message}" for f in checked.errors if f.rule != "GPU.4"
        )
    as_built = None
    if not json or html is not None:
        as_built, _ = _one(
            build_doc, build_source, workload_doc, workload_source, assignments, inputs
        )
    if json:
        print_text(report.compare_json(key, values, estimates))
    else:
        print_renderable(report.compare_renderable(key, values, estimates, as_built))
        for line in refused:
            print_text(line)
    if html is not None:
        from dlrig.report.html.pages import estimate_compare_page

        save_page(html, estimate_compare_page(key, values, estimates, as_built, refused))


class _Inputs(NamedTuple):
    """What every estimate of one command shares: the --catalog file, the price options and the
    --circuit."""

    catalog_file: str | None
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
    from dlrig.commands.inputs import user_catalog
    from dlrig.commands.overrides import apply_overrides, blame
    from dlrig.errors import ValidationError
    from dlrig.machine import resolve_build
    from dlrig.model import estimate as run_estimate
    from dlrig.workloads import resolve_workload
    from dlrig.workloads.loader import expand_document

    catalog_file, prices = inputs.catalog_file, inputs.prices
    cat = user_catalog(catalog_file)
    bdoc, wdoc = apply_overrides(build_doc, workload_doc, assignments, cat)
    changed = [a.text for a in assignments if a.target == "build"]
    if changed:
        # The build's name describes the file ("2 nodes of 8x H100"); a what-if changes it.
        bdoc = {**bdoc, "name": f"{bdoc.get('name', 'build')} with {', '.join(changed)}"}
    try:
        resolved = resolve_build(bdoc, build_source, cat)
    except ValidationError as exc:
        raise blame(exc, assignments, "build", build_doc) from None
    resolved = with_mains(resolved, inputs.circuit)
    try:
        job = resolve_workload(wdoc, workload_source)
    except ValidationError as exc:
        before = expand_document(workload_doc, workload_source)
        raise blame(exc, assignments, "workload", before) from None
    est = run_estimate(
        resolved,
        job,
        electricity_per_kwh=prices["electricity_per_kwh"],
        co2_kg_per_kwh=prices["co2_kg_per_kwh"],
        arrivals=True,
    )
    from dlrig.rules import check_build

    return est, check_build(resolved, job)


def _memory_note(est: Any, checked: Any) -> str | None:
    """The line that opens an estimate whose job does not fit its GPUs' memory as written:
    check's GPU.4 finding, fix included. 'DOES NOT FIT' only when the job cannot run; a batch
    that runs split into accumulated micro-batches is check's warning, said as such."""
    finding = next(iter(checked.by_rule("GPU.4")), None)
    if est.runs and (finding is None or finding.severity is Severity.INFO):
        return None
    if finding is None or finding.severity is Severity.INFO:
        m = est.memory
        return f"DOES NOT FIT: {m.gpu_required_gb:.1f} GiB needed of {m.gpu_available_gb:g} GiB"
    fix = f"; fix: {finding.fix}" if finding.fix else ""
    head = f"{finding.rule} {finding.severity.value}"
    head = head if est.runs else f"DOES NOT FIT ({head})"
    return f"{head}: {finding.message}{fix}"


def _workload_document(ref: str) -> tuple[str, dict[str, Any]]:
    from dlrig.workloads import workload_document

    return workload_document(ref)
