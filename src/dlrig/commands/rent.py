"""`--rent` on `plan` and `estimate`: the options they share, and the one call each makes to
weigh renting the job in the cloud against owning the build (cloud/analysis.py)."""

from __future__ import annotations

import datetime as dt
import json as jsonlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dlrig.commands.inputs import finite

if TYPE_CHECKING:
    from markupsafe import Markup

    from dlrig.catalog.loader import Catalog
    from dlrig.cloud.analysis import RentAnalysis
    from dlrig.machine.model import Build
    from dlrig.workloads.model import Workload

RentOption = Annotated[
    bool,
    typer.Option(
        "--rent", help="also price the job on cloud GPUs and say when owning the build pays off"
    ),
]
PricesOption = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="your cloud price list (YAML/TOML/CSV, or SkyPilot's vms.csv), added to dlrig's "
        "dated snapshot",
    ),
]
UtilisationOption = Annotated[
    float,
    typer.Option(
        "--utilisation",
        help="share of the time the owned build runs the job, 0-1 (--rent)",
        callback=finite,
    ),
]
HorizonOption = Annotated[
    float,
    typer.Option(
        "--horizon-months", help="months the build is kept before resale (--rent)", callback=finite
    ),
]
RentGpuOption = Annotated[
    list[str] | None,
    typer.Option("--rent-gpu", help="rent only this GPU model (repeat; --rent)"),
]
LeadTimeOption = Annotated[
    float | None,
    typer.Option(
        "--lead-time-days",
        help="days until the bought build runs (default: a week, 36 weeks for datacenter GPUs)",
        callback=finite,
    ),
]
DEFAULT_UTILISATION = 0.5
DEFAULT_HORIZON_MONTHS = 36.0


def check_rent_options(
    utilisation: float, horizon_months: float, lead_time_days: float | None
) -> None:
    """One line, exit 2, for a value the break-even cannot use."""
    from dlrig.errors import ValidationError

    if not 0 < utilisation <= 1:
        raise ValidationError(
            f"--utilisation {utilisation:g}: expected a share of the time above 0 and at most 1",
            hint="e.g. --utilisation 0.5 for twelve hours a day",
        )
    if not 0 < horizon_months <= 240:
        raise ValidationError(
            f"--horizon-months {horizon_months:g}: expected more than 0 and at most 240"
        )
    if lead_time_days is not None and not 0 <= lead_time_days <= 3650:
        raise ValidationError(f"--lead-time-days {lead_time_days:g}: expected 0 to 3650")


def rent_analysis(
    job: Workload,
    build: Build | None,
    catalog: Catalog,
    *,
    prices_file: Path | None,
    utilisation: float,
    horizon_months: float,
    rent_gpus: list[str] | None,
    lead_time_days: float | None,
    electricity_per_kwh: float | None = None,
    price_usd: float | None = None,
) -> RentAnalysis:
    """The job priced on the snapshot's (and the user's) offers, weighed against owning
    `build` (None: offers only) at `price_usd` (default: its parts' prices)."""
    from dlrig.catalog.schema import GPU
    from dlrig.cloud.analysis import analyse, owned_from
    from dlrig.cloud.loader import load_prices
    from dlrig.errors import ValidationError
    from dlrig.model import estimate

    check_rent_options(utilisation, horizon_months, lead_time_days)
    if job.serve is not None:
        raise ValidationError(
            f"--rent: {job.name} is a serving workload; --rent prices a training or batch run",
            hint="its cost per million tokens is in the estimate's serving block",
        )
    gpus = [catalog.find(GPU, name) for name in rent_gpus or []]
    owned = None
    notes: list[str] = []
    if build is None:
        notes.append("no build to weigh renting against")
    else:
        est = estimate(build, job, electricity_per_kwh=electricity_per_kwh)
        if est.memory.fits:
            owned = owned_from(build, est, price_usd=price_usd, lead_days=lead_time_days)
        else:
            notes.append(f"{build.name} does not hold {job.name}: no break-even to find")
    return analyse(
        load_prices(catalog, prices_file),
        job,
        owned,
        utilisation=utilisation,
        horizon_months=horizon_months,
        today=dt.date.today(),
        gpus=gpus,
        notes=notes,
    )


def resolved_for_rent(
    build_doc: dict[str, Any],
    build_source: str,
    workload_doc: dict[str, Any],
    workload_source: str,
    assignments: list[Any],
    catalog_file: str | None,
) -> tuple[Build, Workload, Catalog]:
    """The build and workload `estimate` ran, --set edits applied (errors were already
    reported by the estimate itself)."""
    from dlrig.catalog import load_catalog
    from dlrig.commands.overrides import apply_overrides
    from dlrig.machine import resolve_build
    from dlrig.workloads import resolve_workload

    cat = load_catalog(catalog_file)
    bdoc, wdoc = apply_overrides(build_doc, workload_doc, assignments, cat)
    return resolve_build(bdoc, build_source, cat), resolve_workload(wdoc, workload_source), cat


def with_rent(json_text: str, analysis: RentAnalysis | None) -> str:
    """A command's JSON with the `rent` block added (unchanged without --rent)."""
    if analysis is None:
        return json_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.rent import rent_dict

    doc: dict[str, Any] = jsonlib.loads(json_text)
    doc["rent"] = rent_dict(analysis)
    return dumps(doc)


def print_rent(analysis: RentAnalysis | None) -> None:
    """The offers and the verdict under the command's own output (nothing without --rent)."""
    if analysis is None:
        return
    from dlrig.report.console import print_renderable
    from dlrig.report.rent import rent_renderable

    print_renderable(rent_renderable(analysis))


def rent_html(analysis: RentAnalysis | None) -> Markup | None:
    """The page's buy-or-rent section (None without --rent)."""
    if analysis is None:
        return None
    from dlrig.report.html.rent import rent_section

    return rent_section(analysis)
