"""`dlrig upgrade`: the changes to a build ranked by speed gained per dollar."""

from __future__ import annotations

from typing import Annotated

import typer

from dlrig.commands.config import CircuitOption, with_mains
from dlrig.commands.inputs import (
    BUILD_HELP,
    CatalogOption,
    CurrencyOption,
    FxRateOption,
    WorkloadOption,
    finite,
)


def upgrade(
    build: Annotated[str, typer.Argument(help=BUILD_HELP)],
    workload: WorkloadOption,
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            metavar="AMOUNT",
            help="the most to spend, USD (or --currency's)",
            callback=finite,
        ),
    ],
    catalog: CatalogOption = None,
    circuit: CircuitOption = None,
    own: Annotated[
        str | None,
        typer.Option(
            "--own",
            metavar="FILE",
            help="YAML/TOML file of parts you have beyond the build's (cost 0; a build file works)",
        ),
    ] = None,
    currency: CurrencyOption = "USD",
    fx_rate: FxRateOption = None,
    new_only: Annotated[
        bool,
        typer.Option("--new-only", help="price parts new: ignore used-market street prices"),
    ] = False,
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
) -> None:
    """The changes to a build, most speed gained per dollar first.

    Each single change (and what it forces), priced from the catalog, scored by the model;
    parts you own beyond the build's (--own) cost nothing; --new-only prices every part new."""
    import datetime as dt

    from dlrig.catalog.currency import currency as find_currency
    from dlrig.commands.inputs import build_document, user_catalog
    from dlrig.errors import ValidationError
    from dlrig.io.documents import read_document
    from dlrig.machine import resolve_build
    from dlrig.plan.evaluate import ModelEvaluator
    from dlrig.plan.owned import owned_parts, with_owned
    from dlrig.plan.upgrade import upgrade as run_upgrade
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.plan import upgrade_json, upgrade_renderable
    from dlrig.report.prices import PriceView
    from dlrig.workloads import load_workload

    money = find_currency(currency, fx_rate)
    if not budget > 0:
        raise ValidationError(f"--budget must be a positive amount of {money.code}")
    cat = user_catalog(catalog)
    market = cat  # the used market the build's own cards sell into, whatever the user buys
    if new_only:
        # before the build is resolved: "add 1x <the build's GPU>" prices the build's own card
        cat = cat.without_used_prices()
    source, doc = build_document(build)
    resolved = with_mains(resolve_build(doc, source, cat), circuit)
    if own is not None:
        # the build is resolved first: its own parts are not the spares --own names
        own_source, own_doc = read_document(own)
        cat = with_owned(cat, owned_parts(own_doc, own_source, cat))
    job = load_workload(workload)
    result = run_upgrade(
        resolved,
        job,
        money.to_usd(budget),
        cat,
        ModelEvaluator(expert_bar=False),
        money,
        market=market,
        today=dt.date.today(),
    )
    view = PriceView(currency=money, today=dt.date.today())
    if json:
        print_text(upgrade_json(result, view, resolved))
    else:
        print_renderable(upgrade_renderable(result, view, resolved))
