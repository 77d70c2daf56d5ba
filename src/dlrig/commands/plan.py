"""`dlrig plan`: the best builds for a budget and a set of jobs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from dlrig.commands.config import CircuitOption, resolve_mains
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import (
    CatalogOption,
    CurrencyOption,
    FxRateOption,
    complete_workload,
    finite,
)
from dlrig.commands.outputs import SaveFolderOption
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
from dlrig.enums import Vendor
from dlrig.plan.kinds import BuildForm, ObjectiveKind

if TYPE_CHECKING:
    from dlrig.catalog.loader import Catalog
    from dlrig.plan.results import PlanResult
    from dlrig.workloads import Workload


def parse_workload_weight(arg: str) -> tuple[str, float]:
    """'resnet50:0.3' -> ('resnet50', 0.3); a bare name or path has weight 1."""
    from dlrig.errors import ValidationError
    from dlrig.io.paths import is_there

    ref, sep, tail = arg.rpartition(":")
    if not sep:
        return arg, 1.0
    try:
        weight = float(tail)
    except ValueError:
        return arg, 1.0
    if not ref.strip():
        raise ValidationError(
            f"--workload {arg}: no workload before the weight", hint="e.g. resnet50:0.3"
        )
    if _has_weight(ref) and not is_there(ref):
        raise ValidationError(
            f"--workload {arg}: more than one weight; expected NAME or NAME:WEIGHT",
            hint="e.g. resnet50:0.3",
        )
    if not weight > 0 or not math.isfinite(weight):
        raise ValidationError(f"--workload {arg}: the weight must be a positive, finite number")
    return ref, weight


def _has_weight(ref: str) -> bool:
    _, sep, tail = ref.rpartition(":")
    try:
        float(tail)
    except ValueError:
        return False
    return bool(sep)


def plan(
    workload: Annotated[
        list[str],
        typer.Option(
            "--workload",
            "-w",
            metavar="W[:WEIGHT]",
            help="zoo name or workload file, optionally with a weight: resnet50:0.3 (repeat)",
            autocompletion=complete_workload,
        ),
    ],
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            metavar="AMOUNT",
            help="the most to spend, USD (or --currency's)",
            callback=finite,
        ),
    ],
    top: Annotated[int, typer.Option("--top", help="how many builds to show", min=1)] = 3,
    form: Annotated[
        BuildForm | None, typer.Option("--form", help="workstation or server (default: both)")
    ] = None,
    objective: Annotated[
        ObjectiveKind, typer.Option("--objective", help="what 'best' means")
    ] = ObjectiveKind.THROUGHPUT,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="exactly this many GPUs per node")
    ] = None,
    max_gpus: Annotated[
        int, typer.Option("--max-gpus", help="at most this many GPUs per node")
    ] = 8,
    nodes: Annotated[
        int, typer.Option("--nodes", help="identical nodes joined by the platform's network")
    ] = 1,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include", metavar="PART", help="a catalog part or vendor the build must use (repeat)"
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude", metavar="PART", help="a catalog part or vendor never to use (repeat)"
        ),
    ] = None,
    exclude_vendor: Annotated[
        list[Vendor] | None,
        typer.Option("--exclude-vendor", help="leave out this vendor's GPUs and CPUs (repeat)"),
    ] = None,
    min_gpu_memory: Annotated[
        float,
        typer.Option(
            "--min-gpu-memory", metavar="GIB", help="GiB per GPU at least", callback=finite
        ),
    ] = 0.0,
    electricity_price: Annotated[
        float,
        typer.Option("--electricity-price", metavar="USD", help="USD per kWh", callback=finite),
    ] = 0.20,
    lifetime_years: Annotated[
        float,
        typer.Option(
            "--lifetime-years",
            metavar="YEARS",
            help="years the purchase is spread over (cost-per-run)",
            callback=finite,
        ),
    ] = 3.0,
    save: SaveFolderOption = None,
    catalog: CatalogOption = None,
    circuit: CircuitOption = None,
    own: Annotated[
        str | None,
        typer.Option(
            "--own",
            metavar="FILE",
            help="YAML/TOML file of parts you already have (cost 0; a build file works)",
        ),
    ] = None,
    currency: CurrencyOption = "USD",
    fx_rate: FxRateOption = None,
    new_only: Annotated[
        bool,
        typer.Option("--new-only", help="price parts new: ignore used-market street prices"),
    ] = False,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    html: HtmlOption = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", metavar="KEY=VALUE", help="KEY=VALUE what-if on every workload (repeatable)"
        ),
    ] = None,
    rent: RentOption = False,
    prices_file: PricesOption = None,
    utilisation: UtilisationOption = DEFAULT_UTILISATION,
    horizon_months: HorizonOption = DEFAULT_HORIZON_MONTHS,
    rent_gpu: RentGpuOption = None,
    lead_time_days: LeadTimeOption = None,
) -> None:
    """The best builds under a budget for your jobs; exit 1 when nothing fits.

    Every build passes the guide's rules (dlrig check) and is scored by the performance model
    (dlrig estimate). With --rent, the first job's cost on cloud GPUs and when owning the
    first build pays off."""
    import datetime as dt
    import time

    from dlrig.catalog.currency import currency as find_currency
    from dlrig.commands.inputs import user_catalog
    from dlrig.commands.rent import check_rent_options, print_rent, rent_html, with_rent
    from dlrig.errors import ValidationError
    from dlrig.plan.constraints import Constraints
    from dlrig.plan.evaluate import ModelEvaluator
    from dlrig.plan.objectives import make_objective
    from dlrig.plan.results import WeightedWorkload
    from dlrig.plan.search import plan as run_plan
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.plan import plan_json, plan_renderable
    from dlrig.report.prices import PriceView

    money = find_currency(currency, fx_rate)
    if not budget > 0:
        raise ValidationError(f"--budget must be a positive amount of {money.code}")
    if electricity_price < 0 or not lifetime_years > 0:
        raise ValidationError("--electricity-price must be >= 0 and --lifetime-years > 0")
    if rent:
        check_rent_options(utilisation, horizon_months, lead_time_days)  # before the search
    if save is not None:
        _refuse_old_plans(Path(save))  # before the search, not after it
    cat = user_catalog(catalog)
    if new_only:
        cat = cat.without_used_prices()
    if own is not None:
        cat = _with_owned(cat, own)
    mix = [parse_workload_weight(w) for w in workload]
    workloads = [WeightedWorkload(_workload(ref, set_ or []), weight) for ref, weight in mix]
    constraints = Constraints(
        gpus=gpus,
        max_gpus=max_gpus,
        form=form,
        nodes=nodes,
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        exclude_vendors=tuple(exclude_vendor or ()),
        min_gpu_memory_gb=min_gpu_memory,
        mains=resolve_mains(circuit),
    )
    goal = make_objective(objective, [w.weight for w in workloads], lifetime_years=lifetime_years)
    started = time.perf_counter()
    result = run_plan(
        cat,
        workloads,
        money.to_usd(budget),
        goal,
        ModelEvaluator(),
        constraints=constraints,
        top_k=top,
        electricity_per_kwh=electricity_price,
    )
    seconds = time.perf_counter() - started
    if save is not None:
        _save(result, Path(save), cat)
    renting = None
    if rent:
        from dlrig.commands.rent import rent_analysis

        top_build = result.builds[0] if result.builds else None
        renting = rent_analysis(
            cast("Workload", result.workloads[0].workload),
            top_build.build if top_build else None, cat, prices_file=prices_file,
            utilisation=utilisation, horizon_months=horizon_months, rent_gpus=rent_gpu,
            lead_time_days=lead_time_days, electricity_per_kwh=electricity_price,
            price_usd=top_build.price_usd if top_build else None,
        )  # fmt: skip
    view = PriceView(currency=money, today=dt.date.today())
    if json:
        print_text(with_rent(plan_json(result, seconds, cat, view), renting))
    else:
        print_renderable(plan_renderable(result, seconds, view))
        print_rent(renting)
    if html is not None:
        from dlrig.model import estimate
        from dlrig.report.html.pages import plan_page

        first = cast("Workload", result.workloads[0].workload)
        estimates = [estimate(s.build, first) for s in result.builds]
        save_page(html, plan_page(result, estimates, view, seconds, rent_html(renting)))
    if not result.builds:
        raise typer.Exit(1)


def _workload(ref: str, edits: list[str]) -> Any:
    """The workload with the --set edits applied (only workload keys: the planner picks the
    build), e.g. `serve.users=50`."""
    from dlrig.commands.overrides import apply_overrides, blame, parse_assignment
    from dlrig.errors import ValidationError
    from dlrig.workloads import load_workload, resolve_workload, workload_document
    from dlrig.workloads.loader import expand_document

    if not edits:
        return load_workload(ref)
    assignments = [parse_assignment(text) for text in edits]
    for a in assignments:
        if a.target != "workload":
            raise ValidationError(
                f"--set {a.text}: plan takes workload keys only (the planner picks the parts)",
                hint="e.g. --set serve.users=50 or --set batch_size=64",
            )
    source, doc = workload_document(ref)
    _, wdoc = apply_overrides({}, doc, assignments)
    try:
        return resolve_workload(wdoc, source)
    except ValidationError as exc:
        raise blame(exc, assignments, "workload", expand_document(doc, source)) from None


def _with_owned(cat: Catalog, path: str) -> Catalog:
    """The catalog with the parts of an --own file priced 0 (up to the count owned)."""
    from dlrig.io.documents import read_document
    from dlrig.plan.owned import owned_parts, with_owned

    source, doc = read_document(path)
    return with_owned(cat, owned_parts(doc, source, cat))


def _refuse_old_plans(folder: Path) -> None:
    """A folder that already holds plan files (the user's, or an earlier run's) is refused."""
    from dlrig.errors import InputFileError

    old = sorted(folder.glob("plan-*.yaml")) if folder.is_dir() else []
    if old:
        raise InputFileError(
            f"{old[0]}: exists; dlrig writes only new files",
            hint="save to an empty folder, or move the old plan files away",
        )


def _save(result: PlanResult, folder: Path, catalog: Catalog) -> None:
    """Write each planned build to folder/plan-<rank>.yaml (a build file `dlrig check` reads);
    refuses, writing nothing, when any of those files exists."""
    import yaml

    from dlrig.io.writing import write_new_files
    from dlrig.report.plan import build_document

    write_new_files(
        {
            folder / f"plan-{rank}.yaml": yaml.safe_dump(
                build_document(scored.build, catalog), sort_keys=False, allow_unicode=True
            )
            for rank, scored in enumerate(result.builds, start=1)
        }
    )
