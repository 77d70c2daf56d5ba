"""Render buy-or-rent (cloud/analysis.py): the offers as a table, the break-even in words, and
the `rent` JSON block (docs/contracts.md)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from dlrig.cloud.analysis import CLOUD_START_MINUTES, BreakEven, RentAnalysis
from dlrig.cloud.offers import STALE_AFTER_DAYS
from dlrig.cloud.ownership import FIRST_YEAR_RETENTION, LATER_YEARLY_RETENTION
from dlrig.cloud.rent import RentedRun, spot_overhead_fraction, spot_overhead_text

DEPRECIATION_TEXT = (
    f"resale: {1 - FIRST_YEAR_RETENTION:.0%} of a part's price lost in its first year, "
    f"{1 - LATER_YEARLY_RETENTION:.1%} a year after (calcbee.com used-GPU depreciation, "
    "midpoints of 20-30% and 10-15%); a part bought used, or with a dated used price in the "
    "catalog, from that price"
)


def _usd(x: float) -> str:
    return f"{x:,.0f} USD" if x >= 100 else f"{x:,.2f} USD"


def _months(m: float | None) -> str:
    return "not within 10 years" if m is None else f"{m:.1f} months"


def _duration(hours: float) -> str:
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    if hours >= 1:
        return f"{hours:.1f} h"
    return f"{hours * 60:.0f} min"


def stale_line(analysis: RentAnalysis) -> str | None:
    """One line naming the shown offers whose price is older than 90 days."""
    if not analysis.stale:
        return None
    named = ", ".join(
        f"{o.label} ({o.price_date.isoformat()})"
        for o in sorted(analysis.stale, key=lambda o: o.price_date)
    )
    n = len(analysis.stale)
    return (
        f"warning: {n} cloud price{'s' if n != 1 else ''} older than {STALE_AFTER_DAYS} days "
        f"(check today's, or give your own with --prices): {named}"
    )


def verdict_lines(be: BreakEven) -> list[str]:
    """The break-even in words: against what, the utilisation, the payback, first results."""
    o, a = be.owned, be.against
    lines = [
        f"buy or rent: {o.name} ({_usd(o.price_usd)}) against {a.label} "
        f"({_usd(a.cost_per_run_usd)} a run, {be.rent_usd_per_busy_hour:.2f} USD for each hour "
        f"of the build's work)"
    ]
    u = be.break_even_utilisation
    energy = (
        f"energy {be.energy_usd_per_busy_hour:.2f} USD per busy hour at "
        f"{o.electricity_per_kwh:g} USD/kWh"
    )
    if u is None:
        lines.append(
            "  owning never pays off: renting costs no more than the build's electricity "
            f"({energy})"
        )
    elif u > 1:
        lines.append(
            f"  owning does not pay off within {be.horizon_months:g} months even at 100% "
            f"utilisation (it would need {u:.0%}); resale after {be.horizon_months:g} months "
            f"{_usd(be.resale_usd)}; {energy}"
        )
    else:
        lines.append(
            f"  owning is cheaper above {u:.0%} utilisation over {be.horizon_months:g} months "
            f"(resale then {_usd(be.resale_usd)}; {energy})"
        )
    lines.append(
        f"  at {be.utilisation:.0%} utilisation it pays off after {_months(be.payback_months)}; "
        f"over {be.horizon_months:g} months owning costs {_usd(be.owning_usd)}, renting "
        f"{_usd(be.renting_usd)}"
    )
    lines.append(
        f"  first result: owned in {_duration(be.owned_first_result_h)} "
        f"({o.lead_time_days:g} days to buy and set up, then {_duration(o.hours_per_run)}), "
        f"rented in {_duration(be.rented_first_result_h)} ({CLOUD_START_MINUTES:g} min to start, "
        f"then {_duration(a.hours_per_run)})"
    )
    lines.append(f"  {DEPRECIATION_TEXT}")
    return lines


def rent_renderable(analysis: RentAnalysis) -> RenderableType:
    """The offers table, the stale-price warning, the spot overhead and the verdict."""
    parts: list[RenderableType] = []
    if not analysis.offers:
        said = (
            "no offer in the price list rents those GPUs (--rent-gpu)"
            if not analysis.priced
            else f"none of the {analysis.priced} offers holds the job"
        )
        parts.append(Text(f"renting {analysis.job}: {said}", style="yellow"))
        return RichGroup(*parts)
    table = Table(
        title=f"renting instead: {analysis.job} on the cheapest offer of each provider that "
        "holds it",
        title_justify="left",
    )
    for col in ("offer", "GPUs", "USD/h", "h/run", "USD/run", "priced"):
        table.add_column(col, justify="right" if col in ("USD/h", "h/run", "USD/run") else "left")
    for r in analysis.offers:
        o = r.offer
        table.add_row(
            f"{o.provider} {o.instance}" + (" (spot)" if o.spot else ""),
            f"{r.gpus}x {o.gpu.name}",
            f"{r.price_per_hour_usd:,.2f}",
            f"{r.hours_per_run:,.2f}",
            f"{r.cost_per_run_usd:,.2f}",
            o.price_date.isoformat() + (" old" if o.stale(analysis.today) else ""),
        )
    parts.append(table)
    notes = [f"{analysis.priced} offers priced, {analysis.not_fitting} do not hold the job"]
    if any(r.offer.spot for r in analysis.offers):
        notes.append(spot_overhead_text())
    parts.append(Text("; ".join(notes), style="dim"))
    stale = stale_line(analysis)
    if stale:
        parts.append(Text(stale, style="yellow"))
    for note in analysis.notes:
        parts.append(Text(note, style="dim"))
    if analysis.break_even is not None:
        for i, line in enumerate(verdict_lines(analysis.break_even)):
            parts.append(Text(line, style="bold" if i == 0 else ""))
    return RichGroup(*parts)


def _offer_json(r: RentedRun, analysis: RentAnalysis) -> dict[str, Any]:
    o = r.offer
    return {
        "provider": o.provider,
        "instance": o.instance,
        "gpu": o.gpu.name,
        "gpus": r.gpus,
        "price_per_hour_usd": round(r.price_per_hour_usd, 4),
        "spot": o.spot,
        "price_date": o.price_date.isoformat(),
        "source": o.source,
        "hours_per_run": round(r.hours_per_run, 4),
        "cost_per_run_usd": round(r.cost_per_run_usd, 2),
        "region": o.region,
        "interconnect": o.interconnect.value,
        "peer_to_peer": o.peer_to_peer,
        "price_age_days": o.age_days(analysis.today),
        "stale": o.stale(analysis.today),
        "spot_overhead": round(spot_overhead_fraction(), 4) if o.spot else 0.0,
        "samples_per_s": round(r.samples_per_s, 4),
        "bottleneck": r.bottleneck.value,
        "gpu_required_gb": round(r.gpu_required_gb, 2),
    }


def _num(x: float | None, digits: int = 4) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, digits)


def break_even_json(be: BreakEven) -> dict[str, Any]:
    o, a = be.owned, be.against
    return {
        "utilisation": _num(be.break_even_utilisation),
        "months": _num(be.payback_months, 2),
        "horizon_months": be.horizon_months,
        "at_utilisation": be.utilisation,
        "build": o.name,
        "build_price_usd": round(o.price_usd, 2),
        "against": {
            "provider": a.offer.provider,
            "instance": a.offer.instance,
            "gpus": a.gpus,
            "spot": a.offer.spot,
            "cost_per_run_usd": round(a.cost_per_run_usd, 2),
        },
        "owned_hours_per_run": round(o.hours_per_run, 4),
        "rent_usd_per_busy_hour": round(be.rent_usd_per_busy_hour, 4),
        "energy_usd_per_busy_hour": round(be.energy_usd_per_busy_hour, 4),
        "electricity_per_kwh": o.electricity_per_kwh,
        "resale_usd": round(be.resale_usd, 2),
        "owning_usd": round(be.owning_usd, 2),
        "renting_usd": round(be.renting_usd, 2),
        "lead_time_days": o.lead_time_days,
        "time_to_first_result_h": {
            "owned": round(be.owned_first_result_h, 2),
            "rented": round(be.rented_first_result_h, 2),
        },
        "depreciation": DEPRECIATION_TEXT,
        "sensitivity": {
            "payback_months": [
                {"utilisation": u, "electricity_per_kwh": p, "months": _num(m, 2)}
                for u, p, m in be.payback_grid
            ],
            "break_even_utilisation": [
                {"electricity_per_kwh": p, "utilisation": _num(u)}
                for p, u in be.utilisation_by_electricity
            ],
        },
        "curve": [
            {"months": c.months, "owning_usd": round(c.owning_usd, 2),
             "renting_usd": round(c.renting_usd, 2)}
            for c in be.curve
        ],
    }  # fmt: skip


def rent_dict(analysis: RentAnalysis) -> dict[str, Any]:
    """The `rent` block of plan's and estimate's JSON."""
    return {
        "job": analysis.job,
        "today": analysis.today.isoformat(),
        "offers": [_offer_json(r, analysis) for r in analysis.offers],
        "offers_priced": analysis.priced,
        "offers_not_fitting": analysis.not_fitting,
        "spot_overhead": round(spot_overhead_fraction(), 4),
        "spot_overhead_note": spot_overhead_text(),
        "price_warning": stale_line(analysis),
        "break_even": None if analysis.break_even is None else break_even_json(analysis.break_even),
        "notes": list(analysis.notes),
    }
