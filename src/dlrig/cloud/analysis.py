"""Buy or rent, for one job: the cheapest offers that hold it and, against the owned build, the
utilisation above which owning is cheaper over the horizon, the months until it pays off, the
time to a first result either way, and how both move with utilisation and electricity."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from dlrig.catalog.schema import GPU
from dlrig.cloud.loader import PriceList
from dlrig.cloud.offers import CloudOffer
from dlrig.cloud.ownership import (
    MAX_PAYBACK_MONTHS,
    OwnedPart,
    break_even_utilisation,
    busy_hours,
    first_result_hours,
    owning_cost_usd,
    payback_months,
    renting_cost_usd,
    resale_value_usd,
)
from dlrig.cloud.rent import RentedRun, cheapest_per_provider, price_job
from dlrig.enums import FormFactor, Segment
from dlrig.machine.model import Build
from dlrig.machine.price import build_price
from dlrig.model.result import Estimate
from dlrig.workloads.model import Workload

# Time to a first result. A workstation of parts in stock at retail: an assumption of a week
# (a few days' delivery and a day to assemble and set up). Datacenter GPUs: "NVIDIA H100 is
# 36-52 weeks direct purchase" (Cliff Center research note, 2026-05-18,
# https://www.cliffcenter.com/research/amd-inference-economics); the low end is used.
# `--lead-time-days` gives the buyer's own.
WORKSTATION_LEAD_TIME_DAYS = 7.0
DATACENTER_LEAD_TIME_DAYS = 36 * 7.0
# A rented instance: minutes to start and set the environment up (an assumption; the job's
# weights load is in the run's hours already).
CLOUD_START_MINUTES = 10.0

SENSITIVITY_UTILISATIONS = (0.1, 0.25, 0.5, 0.75, 1.0)
SENSITIVITY_ELECTRICITY_USD_PER_KWH = (0.10, 0.20, 0.30, 0.40)


@dataclass(frozen=True)
class Owned:
    """The build one would buy: its price, its parts for resale, and the job on it (hours a
    run, kWh at the wall per busy hour, the electricity price)."""

    name: str
    price_usd: float
    parts: tuple[OwnedPart, ...]
    hours_per_run: float
    kwh_per_busy_hour: float
    electricity_per_kwh: float
    lead_time_days: float
    unpriced: tuple[str, ...] = ()

    def energy_usd_per_busy_hour(self, electricity_per_kwh: float | None = None) -> float:
        price = self.electricity_per_kwh if electricity_per_kwh is None else electricity_per_kwh
        return self.kwh_per_busy_hour * price


def lead_time_days(build: Build) -> float:
    """How long a buyer waits for the build: datacenter GPUs (or an SXM/OAM server) take the
    datacenter lead time, parts sold at retail a week."""
    datacenter = any(
        g.gpu.segment is Segment.DATACENTER or g.gpu.form is not FormFactor.PCIE for g in build.gpus
    )
    return DATACENTER_LEAD_TIME_DAYS if datacenter else WORKSTATION_LEAD_TIME_DAYS


def owned_from(
    build: Build,
    est: Estimate,
    *,
    price_usd: float | None = None,
    lead_days: float | None = None,
) -> Owned:
    """The build as bought: its parts' prices in use (catalog/prices.py), each marked bought
    used where its price is a used street price and capped by a dated used price of its model;
    `price_usd` when the caller's total has more (a plan's water cooling), the rest as one
    part bought new."""
    bp = build_price(build)
    gpus: dict[str, GPU] = {g.gpu.name: g.gpu for g in build.gpus}
    parts: list[OwnedPart] = []
    for (name, price), n in zip(bp.prices, bp.paid_counts, strict=True):
        units = n * build.nodes
        gpu = gpus.get(name)
        used_market = (
            float(gpu.street_price_usd) * units
            if gpu is not None and gpu.street_market == "used" and gpu.street_price_usd
            else None
        )
        parts.append(OwnedPart(price.usd * units, price.market == "used", used_market))
    total = bp.total_usd if price_usd is None else price_usd
    if total > bp.total_usd + 0.5:
        parts.append(OwnedPart(total - bp.total_usd))
    hours = est.run.time_h
    kwh_per_hour = est.run.energy_kwh / hours if hours > 0 and math.isfinite(hours) else 0.0
    return Owned(
        name=build.name,
        price_usd=total,
        parts=tuple(parts),
        hours_per_run=hours,
        kwh_per_busy_hour=kwh_per_hour,
        electricity_per_kwh=est.run.electricity_per_kwh,
        lead_time_days=lead_time_days(build) if lead_days is None else lead_days,
        unpriced=bp.unpriced,
    )


@dataclass(frozen=True)
class CostPoint:
    """Cumulative cost after `months`: owning (bought, powered, sold then) and renting."""

    months: float
    owning_usd: float
    renting_usd: float


@dataclass(frozen=True)
class BreakEven:
    """Owning against renting the same work from `against` (the cheapest on-demand offer that
    holds the job) at `utilisation`, over `horizon_months`."""

    owned: Owned
    against: RentedRun
    utilisation: float
    horizon_months: float
    break_even_utilisation: float | None
    payback_months: float | None
    resale_usd: float
    owning_usd: float
    renting_usd: float
    rent_usd_per_busy_hour: float
    energy_usd_per_busy_hour: float
    owned_first_result_h: float
    rented_first_result_h: float
    curve: tuple[CostPoint, ...]
    # Months to pay off at each (utilisation, electricity USD/kWh); None: not within 10 years.
    payback_grid: tuple[tuple[float, float, float | None], ...]
    # Break-even utilisation over the horizon at each electricity price.
    utilisation_by_electricity: tuple[tuple[float, float | None], ...]


@dataclass(frozen=True)
class RentAnalysis:
    """The offers shown (each provider's cheapest on demand and on spot), how many offers were
    priced and how many could not hold the job, the shown offers' prices older than 90 days,
    and the break-even against the owned build (None without one)."""

    job: str
    offers: tuple[RentedRun, ...]
    priced: int
    not_fitting: int
    stale: tuple[CloudOffer, ...]
    break_even: BreakEven | None
    today: dt.date
    notes: tuple[str, ...] = ()


def analyse(
    prices: PriceList,
    job: Workload,
    owned: Owned | None,
    *,
    utilisation: float,
    horizon_months: float,
    today: dt.date,
    gpus: Sequence[GPU] = (),
    notes: Sequence[str] = (),
) -> RentAnalysis:
    """Price the job on every offer (of `gpus` only, when given) and weigh renting against
    owning; `notes` say why there is no owned side when there is none."""
    wanted = {g.name for g in gpus}
    offers = [o for o in prices.offers if not wanted or o.gpu.name in wanted]
    runs = price_job(offers, job)
    shown = tuple(cheapest_per_provider(runs))
    stale = tuple(dict.fromkeys(r.offer for r in shown if r.offer.stale(today)))
    said = list(notes)
    if owned is not None and owned.unpriced:
        said.append(
            f"{owned.name} has parts without a price ({', '.join(owned.unpriced)}): no "
            "break-even on a partial price; give them one with --catalog"
        )
    if prices.left_out:
        named = ", ".join(f"{name} ({n})" for name, n in prices.left_out)
        said.append(
            f"{prices.user_file}: rows of accelerators dlrig does not know left out: {named}"
        )
    be = None
    if owned is not None and not owned.unpriced and runs:
        be = break_even(owned, runs, utilisation, horizon_months)
    return RentAnalysis(
        job=job.name,
        offers=shown,
        priced=len(offers),
        not_fitting=len(offers) - len(runs),
        stale=stale,
        break_even=be,
        today=today,
        notes=tuple(said),
    )


def break_even(
    owned: Owned, runs: Sequence[RentedRun], utilisation: float, horizon_months: float
) -> BreakEven | None:
    """Owning `owned` against the cheapest on-demand run (the cheapest spot run when no offer
    rents on demand); None when the owned build cannot run the job."""
    if not (owned.hours_per_run > 0 and math.isfinite(owned.hours_per_run)):
        return None
    on_demand = [r for r in runs if not r.offer.spot]
    against = min(on_demand or runs, key=lambda r: r.cost_per_run_usd)
    rent_h = against.cost_per_run_usd / owned.hours_per_run
    energy_h = owned.energy_usd_per_busy_hour()

    def resale_at(months: float) -> float:
        return resale_value_usd(owned.parts, months)

    def payback(u: float, energy: float) -> float | None:
        return payback_months(owned.price_usd, resale_at, u, rent_h, energy)

    months = payback(utilisation, energy_h)
    resale = resale_at(horizon_months)
    hours = busy_hours(utilisation, horizon_months)
    span = max(horizon_months, min(MAX_PAYBACK_MONTHS, math.ceil((months or 0.0) * 1.5)))
    curve = tuple(
        CostPoint(
            float(m),
            owning_cost_usd(owned.price_usd, resale_at(m), energy_h, busy_hours(utilisation, m)),
            renting_cost_usd(rent_h, busy_hours(utilisation, m)),
        )
        for m in range(0, math.ceil(span) + 1)
    )
    prices_kwh = sorted({*SENSITIVITY_ELECTRICITY_USD_PER_KWH, owned.electricity_per_kwh})
    grid = tuple(
        (u, p, payback(u, owned.energy_usd_per_busy_hour(p)))
        for u in SENSITIVITY_UTILISATIONS
        for p in prices_kwh
    )
    by_price = tuple(
        (
            p,
            break_even_utilisation(
                owned.price_usd, resale, horizon_months, rent_h, owned.energy_usd_per_busy_hour(p)
            ),
        )
        for p in prices_kwh
    )
    return BreakEven(
        owned=owned,
        against=against,
        utilisation=utilisation,
        horizon_months=horizon_months,
        break_even_utilisation=break_even_utilisation(
            owned.price_usd, resale, horizon_months, rent_h, energy_h
        ),
        payback_months=months,
        resale_usd=resale,
        owning_usd=owning_cost_usd(owned.price_usd, resale, energy_h, hours),
        renting_usd=renting_cost_usd(rent_h, hours),
        rent_usd_per_busy_hour=rent_h,
        energy_usd_per_busy_hour=energy_h,
        owned_first_result_h=first_result_hours(owned.lead_time_days, 0.0, owned.hours_per_run),
        rented_first_result_h=first_result_hours(0.0, CLOUD_START_MINUTES, against.hours_per_run),
        curve=curve,
        payback_grid=grid,
        utilisation_by_electricity=by_price,
    )
