"""Render plans and upgrades: rich tables for people, JSON (design.md keys) for programs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from dlrig.catalog.currency import USD, Currency
from dlrig.catalog.loader import Catalog
from dlrig.machine.model import Build
from dlrig.plan.circuit import CircuitNote, circuit_note, circuit_phrase
from dlrig.plan.explain import (
    chances,
    gpu_set,
    objective_phrase,
    odds_line,
    rate,
    value_pick_line,
    warnings_of,
    why,
)
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.results import PlanResult, Scored
from dlrig.plan.upgrade import UpgradeResult
from dlrig.report.jsonout import dumps
from dlrig.report.prices import (
    PriceView,
    age_line,
    build_price_json,
    change_price_json,
    currency_line,
    mark_used,
    owned_names,
    stale_bought_warning,
    stale_warning,
    used_names,
)
from dlrig.report.serving import planned_serving, planned_serving_cell


def build_document(build: Build, catalog: Catalog | None = None) -> dict[str, Any]:
    """A build file's content for build (H3's serialiser; catalog: the one it was planned
    from, so that a user's own parts are written by name)."""
    from dlrig.machine.document import build_to_document

    return build_to_document(build, catalog)


def infeasible_message(result: PlanResult, currency: Currency = USD) -> str:
    """'nothing under 3,000 USD fits llama-3-70b-qlora: the cheapest feasible build costs ...'."""
    names = ", ".join(w.workload.name for w in result.workloads)
    head = f"nothing under {currency.format(result.budget_usd)} fits {names}"
    cheapest = result.cheapest
    if cheapest is None:
        why = f"; most often {result.stats.blocked[0]}" if result.stats.blocked else ""
        return (
            f"{head}: no build the catalog and these constraints allow passes the rules and "
            f"holds the job in GPU memory{why}{_off_circuit(result)}"
        )
    g = cheapest.candidate.group
    o = cheapest.outcomes[0]
    return (
        f"{head}: the cheapest feasible build costs {currency.format(cheapest.price_usd)} "
        f"({gpu_set(cheapest)}, {o.gpu_available_gb:g} GiB each, on {g.chassis.name}; the job "
        f"needs {o.gpu_required_gb:.1f} GiB per GPU; {rate(o.samples_per_s)} {result.rate_unit})"
    )


def _off_circuit(result: PlanResult) -> str:
    """'; 12 GPU sets (8x H100 PCIe 80GB, ...) draw more than us-15a carries at any power
    limit: --circuit' (empty when none)."""
    st = result.stats
    if not st.off_circuit or st.mains is None:
        return ""
    shown = ", ".join(st.off_circuit[:3]) + (", ..." if len(st.off_circuit) > 3 else "")
    return (
        f"; {len(st.off_circuit)} GPU sets ({shown}) draw more than {st.mains.name} carries at "
        "any power limit their cards take (--circuit for a larger one)"
    )


def _workload_rows(result: PlanResult, s: Scored) -> list[dict[str, Any]]:
    return [
        {
            "name": w.workload.name,
            "weight": w.weight,
            "samples_per_s": o.samples_per_s,
            "bottleneck": o.bottleneck.value,
            "gpu_required_gb": o.gpu_required_gb,
            "time_h": o.time_h,
            "energy_cost": o.energy_cost,
            **planned_serving(o),
        }
        for w, o in zip(result.workloads, s.outcomes, strict=True)
    ]


def _scored_json(
    result: PlanResult, s: Scored, catalog: Catalog | None, view: PriceView
) -> dict[str, Any]:
    o = s.outcomes[0]
    return {
        "price_usd": round(s.price_usd, 2),
        "price": view.amount(s.price_usd),
        **build_price_json(s.build, view),
        "samples_per_s": o.samples_per_s,
        "bottleneck": o.bottleneck.value,
        **planned_serving(o),
        "gpus": gpu_set(s),
        "weighted_samples_per_s": s.throughput,
        "objective_value": result.objective.display(s.value),
        "workloads": _workload_rows(result, s),
        "parts": [
            {"part": part, "price_usd": round(price, 2), "used": marked != part}
            for (part, price), (marked, _) in zip(
                s.candidate.price_lines(), bom_lines(s), strict=True
            )
        ],
        "power": power_json(circuit_note(s.build)),
        "build": build_document(s.build, catalog),
    }


def power_json(note: CircuitNote) -> dict[str, Any]:
    """A planned build against its circuit (docs/contracts.md, plan `power`)."""
    return {
        "circuit": note.mains.name,
        "circuit_origin": note.mains.origin,
        "circuit_continuous_w": note.mains.circuit.continuous_w,
        "wall_w": round(note.wall_w, 1),
        "headroom_w": round(note.headroom_w, 1),
        "power_limit_w": note.power_limit_w,
        "stock_wall_w": round(note.stock_wall_w, 1),
        "stock_circuits": list(note.stock_circuits),
    }


def plan_json(
    result: PlanResult,
    seconds: float,
    catalog: Catalog | None = None,
    view: PriceView | None = None,
) -> str:
    """The plan as JSON: workload, budget_usd, builds (rank, price_usd, samples_per_s,
    bottleneck, build, ...), pareto, search (evaluated, seconds, ...); prices also in the
    user's currency (`currency`, `budget`, each build's `price`) with their age."""
    view = view or PriceView()
    reasons = why(result, currency=view.currency)
    odds = chances(result)
    builds = []
    for rank, (s, reason) in enumerate(zip(result.builds, reasons, strict=True), start=1):
        warnings = [
            {"rule": f.rule, "message": f.message, "fix": f.fix}
            for f in warnings_of(result, s, view.currency)
        ]
        builds.append(
            {
                "rank": rank,
                **_scored_json(result, s, catalog, view),
                "why": reason,
                "warnings": warnings,
                "chance_ahead_of_next": _rounded(odds[rank - 1]),
            }
        )
    out: dict[str, Any] = {
        "workload": result.workloads[0].workload.name,
        "workloads": [{"name": w.workload.name, "weight": w.weight} for w in result.workloads],
        "budget_usd": result.budget_usd,
        "budget": view.amount(result.budget_usd),
        "currency": view.currency.to_json(),
        "price_warning": stale_warning((s.build for s in result.builds), view),
        "objective": {
            "kind": result.objective.kind.value,
            "unit": result.objective.unit,
        },
        "builds": builds,
        "pareto": [_scored_json(result, s, catalog, view) for s in result.pareto],
        "value_pick": _value_pick_json(result, catalog, view),
        "search": {
            "evaluated": result.stats.evaluated,
            "seconds": round(seconds, 4),
            "groups": result.stats.groups,
            "estimates": result.stats.estimates,
            "checks": result.stats.checks,
            "unpriced_parts": list(result.stats.unpriced),
            "gpus_without_priced_server": affordable_without_server(result),
            "circuit": result.stats.mains.name if result.stats.mains else None,
            "off_circuit": list(result.stats.off_circuit),
            "loop_parts_unpriced": list(result.stats.loop_parts_unpriced),
        },
    }
    if not result.builds:
        out["infeasible"] = {
            "message": infeasible_message(result, view.currency),
            "cheapest": _scored_json(result, result.cheapest, catalog, view)
            if result.cheapest
            else None,
        }
    return dumps(out)


def _rounded(chance: float | None) -> float | None:
    return None if chance is None else round(chance, 4)


def _value_pick_json(
    result: PlanResult, catalog: Catalog | None, view: PriceView
) -> dict[str, Any] | None:
    """The value pick (plan.ties.value_pick) with the sentence that names it; None: none."""
    pick = result.value_pick
    if pick is None:
        return None
    ranked = next((i for i, s in enumerate(result.builds, start=1) if s is pick), None)
    return {
        "rank": ranked,
        **_scored_json(result, pick, catalog, view),
        "why": value_pick_line(result, view.currency),
    }


def _search_line(result: PlanResult, seconds: float) -> Text:
    st = result.stats
    text = (
        f"search: {st.groups} GPU groups in the space, "
        f"{st.evaluated} build{'' if st.evaluated == 1 else 's'} evaluated "
        f"({st.estimates} estimates, {st.checks} rule checks) in {seconds:.2f} s"
    )
    if st.unpriced:
        text += f"; {len(st.unpriced)} catalog parts without a price left out"
    serverless = without_server_line(result, shown=3)
    if serverless:
        text += f"; {serverless}"
    if st.mains is not None:
        origin = "assumed" if st.mains.origin == "default" else f"from {st.mains.origin}"
        text += f"; every build judged on {st.mains.name} ({origin}; --circuit to change)"
        if st.off_circuit:
            text += f", {len(st.off_circuit)} GPU sets left out as too much for it"
    if st.loop_parts_unpriced:
        names = ", ".join(st.loop_parts_unpriced[:3])
        more = len(st.loop_parts_unpriced) - 3
        text += (
            f"; water loops not planned for want of a price: {names}"
            + (f" and {more} more" if more > 0 else "")
            + " (no dated public price: give a quote with --catalog, cooling:)"
        )
    return Text(text, style="dim")


def affordable_without_server(result: PlanResult) -> list[str]:
    """The GPUs a card of which the budget affords that no priced server could hold."""
    return [n for n, usd in result.stats.no_priced_server if usd <= result.budget_usd]


def without_server_line(result: PlanResult, shown: int | None = None) -> str:
    """What the plan left out for want of a priced server, naming `shown` GPUs (None: all of
    them; "" if none)."""
    names = affordable_without_server(result)
    if not names:
        return ""
    shown = len(names) if shown is None else shown
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" * (len(names) > shown))
    return (
        f"not planned for want of a priced server: {listed} (the catalog's servers for them "
        "have no public price: give a quote with --catalog)"
    )


def plan_renderable(
    result: PlanResult, seconds: float, view: PriceView | None = None
) -> RenderableType:
    """Top builds, each with its parts, the age of its prices and why it wins, the Pareto
    frontier, the search; prices in the user's currency."""
    view = view or PriceView()
    obj = result.objective
    names = ", ".join(
        f"{w.workload.name}" + (f" (x{w.weight:g})" if len(result.workloads) > 1 else "")
        for w in result.workloads
    )
    parts: list[RenderableType] = [
        Text(f"plan for {names} under {view.money(result.budget_usd)}, by {obj.kind.value}", "bold")
    ]
    rate_line = currency_line(view)
    if rate_line:
        parts.append(Text(rate_line, style="dim"))
    if not result.builds:
        parts.append(Text(infeasible_message(result, view.currency), style="yellow"))
        parts.append(_search_line(result, seconds))
        return RichGroup(*parts)
    several = len(result.workloads) > 1
    first = result.workloads[0].workload.name
    extra = [] if obj.kind is ObjectiveKind.THROUGHPUT and not several else [_score_label(result)]
    top = Table(title="best builds", title_justify="left")
    unit = _unit(result.workloads[0].workload)
    speed = f"{first} {unit}" if several else unit
    for col in ("#", "GPUs", "price", speed, "bottleneck", *extra):
        top.add_column(col, justify="right" if col not in ("GPUs", "bottleneck") else "left")
    for rank, s in enumerate(result.builds, start=1):
        o = s.outcomes[0]
        score = [objective_phrase(result, s, view.currency)] if extra else []
        top.add_row(
            str(rank),
            gpu_label(s),
            view.money(s.price_usd),
            rate(o.samples_per_s),
            o.bottleneck.value if o.serving_limit is None else planned_serving_cell(o),
            *score,
        )
    parts.append(top)
    for line in (odds_line(result), value_pick_line(result, view.currency)):
        if line:
            parts.append(Text(line, style="cyan"))
    stale = stale_warning((s.build for s in result.builds), view)
    if stale:
        parts.append(Text(stale, style="yellow"))
    reasons = why(result, currency=view.currency)
    for rank, (s, reason) in enumerate(zip(result.builds, reasons, strict=True), start=1):
        bom = Table(title=f"#{rank}: {s.candidate.describe()}", title_justify="left", box=None)
        bom.add_column("part")
        bom.add_column(view.currency.code, justify="right")
        for part, price in bom_lines(s):
            bom.add_row(part, f"{view.currency.from_usd(price):,.0f}")
        if s.candidate.group.nodes > 1:
            bom.add_row(f"x {s.candidate.group.nodes} nodes", view.money(s.price_usd))
        parts.append(bom)
        owned = owned_names(s.build)
        if owned:
            parts.append(Text(f"yours already (priced 0): {', '.join(owned)}", style="dim"))
        ages = age_line(s.build, view)
        if ages:
            parts.append(Text(ages, style="dim"))
        parts.append(Text(f"why: {reason}", style="green"))
        parts.append(Text(circuit_phrase(circuit_note(s.build)), style="cyan"))
        for f in warnings_of(result, s, view.currency):
            fix = f" (fix: {f.fix})" if f.fix else ""
            parts.append(Text(f"warning {f.rule}: {f.message}{fix}", style="yellow"))
    if len(result.workloads) > 1:
        per = Table(title="per workload (#1)", title_justify="left")
        for col in ("workload", "weight", "rate", "bottleneck"):
            per.add_column(col)
        for w, o in zip(result.workloads, result.builds[0].outcomes, strict=True):
            per.add_row(
                w.workload.name, f"{w.weight:g}", f"{rate(o.samples_per_s)} {_unit(w.workload)}",
                o.bottleneck.value,
            )  # fmt: skip
        parts.append(per)
    parts.append(pareto_table(result.pareto, several, view, result.rate_unit))
    parts.append(_search_line(result, seconds))
    return RichGroup(*parts)


def bom_lines(s: Scored) -> list[tuple[str, float]]:
    """The build's bill of materials, (part, USD), each part priced used marked so."""
    used = used_names(s.build)
    return [(mark_used(part, used), price) for part, price in s.candidate.price_lines()]


def gpu_label(s: Scored) -> str:
    """'3x GeForce RTX 3090 (used, water)': the GPUs, how they are bought and cooled."""
    notes = []
    if s.candidate.group.gpu.name in used_names(s.build):
        notes.append("used")
    if s.candidate.group.water:
        notes.append("water")
    return gpu_set(s) + (f" ({', '.join(notes)})" if notes else "")


def _score_label(result: PlanResult) -> str:
    kind = result.objective.kind
    if kind is ObjectiveKind.THROUGHPUT:
        return f"weighted {result.rate_unit}"
    return kind.value


def _unit(workload: object) -> str:
    """A workload's rate: a serving workload's output tokens/s, another's samples/s."""
    return "tokens/s" if getattr(workload, "serve", None) is not None else "samples/s"


def pareto_table(
    pareto: Sequence[Scored],
    weighted: bool = False,
    view: PriceView | None = None,
    unit: str = "samples/s",
) -> Table:
    """Price against (weighted) throughput: each row the cheapest way to that speed."""
    money = (view or PriceView()).money
    speed = f"weighted {unit}" if weighted else unit
    table = Table(title="Pareto frontier: price vs throughput", title_justify="left")
    for col in ("price", speed, "GPUs", "bottleneck"):
        table.add_column(col, justify="right" if col in ("price", speed) else "left")
    for s, speed_text in zip(pareto, distinct_rates([s.throughput for s in pareto]), strict=True):
        table.add_row(money(s.price_usd), speed_text, gpu_set(s), s.outcomes[0].bottleneck.value)
    return table


def distinct_rates(values: Sequence[float]) -> list[str]:
    """The rates as `rate` prints them, with more decimals for all when two neighbours would
    read the same: every Pareto row is faster than the one before, and "1.26" twice (2,846
    and 2,886 USD for llama-3-8b-lora) read as a dearer build at the same speed."""
    texts = [rate(v) for v in values]
    for extra in range(1, 5):
        if all(a != b for a, b in itertools.pairwise(texts)):
            break
        texts = [f"{v:,.{(0 if v >= 100 else 1 if v >= 10 else 2) + extra}f}" for v in values]
    return texts


def upgrade_json(
    result: UpgradeResult, view: PriceView | None = None, before: Build | None = None
) -> str:
    """The upgrade as JSON: the build's current figures and each change, best first (with
    before, the build upgraded: what each change buys and how old those prices are)."""
    view = view or PriceView()
    return dumps(
        {
            "build": result.build_name,
            "workload": result.workload_name,
            "budget_usd": result.budget_usd,
            "budget": view.amount(result.budget_usd),
            "currency": view.currency.to_json(),
            "price_warning": stale_bought_warning(before, (c.build for c in result.changes), view)
            if before is not None
            else None,
            "current": {
                "samples_per_s": result.current.samples_per_s,
                "bottleneck": result.current.bottleneck.value,
            },
            "changes": [
                {
                    "rank": rank,
                    "change": c.summary,
                    "steps": list(c.steps),
                    "price_usd": round(c.price_usd, 2),
                    "price": view.amount(c.price_usd),
                    "resale_usd": round(c.resale_usd, 2),
                    "resale_basis": c.resale_basis or None,
                    "net_price_usd": round(c.net_price_usd, 2),
                    "chance_faster": round(c.chance_faster, 4),
                    "worth_it": c.worth_it,
                    **(change_price_json(before, c.build, view) if before is not None else {}),
                    "samples_per_s": c.outcome.samples_per_s,
                    "speedup": c.speedup,
                    "gain_per_1000_usd": c.gain_per_1000_usd,
                    "bottleneck": c.outcome.bottleneck.value,
                    "errors_left": sorted(c.errors),
                }
                for rank, c in enumerate(result.changes, start=1)
            ],
            "errors": list(result.errors),
            "repair": result.repair.summary if result.repair is not None else None,
            "verdict": result.verdict,
            "search": {"evaluated": result.evaluated},
        }
    )


def upgrade_renderable(
    result: UpgradeResult, view: PriceView | None = None, before: Build | None = None
) -> RenderableType:
    """The changes ranked by speed gained per dollar, each with its new bottleneck; costs in
    the user's currency, with a warning naming the parts bought at prices over a year old."""
    view = view or PriceView()
    cur = result.current
    unit = "samples/s" if cur.serving_limit is None else "tokens/s"  # a serving job's output
    now = (
        f"now {rate(cur.samples_per_s)} {unit}, {cur.bottleneck.value}-bound"
        if cur.fits
        else f"the job does not fit now ({cur.gpu_required_gb:.1f} GiB needed per GPU, "
        f"{cur.gpu_available_gb:g} GiB there)"
    )
    if result.errors:
        now += f"; fails check ({', '.join(result.errors)})"
    parts: list[RenderableType] = [
        Text(
            f"upgrades for {result.build_name} on {result.workload_name} under "
            f"{view.money(result.budget_usd)}: {now}",
            style="bold",
        )
    ]
    rate_line = currency_line(view)
    if rate_line:
        parts.append(Text(rate_line, style="dim"))
    if result.changes:
        table = Table(title="changes, most speed per dollar first", title_justify="left")
        per = f"per 1000 {view.currency.code}"
        for col in ("#", "change", "cost", "resale", unit, "speedup", "sure", per,
                    "bottleneck"):  # fmt: skip
            table.add_column(col, justify="left" if col in ("change", "bottleneck") else "right")
        for rank, c in enumerate(result.changes, start=1):
            table.add_row(
                str(rank),
                # a change that leaves the build failing check says so
                c.summary + (f" (still fails {', '.join(sorted(c.errors))})" if c.errors else ""),
                view.money(c.price_usd),
                f"-{view.money(c.resale_usd)}" if c.resale_usd > 0 else "-",
                rate(c.outcome.samples_per_s),
                f"{c.speedup:.2f}x" if math.isfinite(c.speedup) else "fits now",
                # how sure the model is that the change is faster at all
                f"{c.chance_faster:.0%}" if math.isfinite(c.speedup) else "-",
                # speed gained per 1000 units of the shown currency
                f"+{c.gain_per_1000_usd / view.currency.per_usd:.1%}"
                if math.isfinite(c.gain_per_1000_usd)
                else "-",
                c.outcome.bottleneck.value,
            )
        parts.append(table)
        stale = (
            stale_bought_warning(before, (c.build for c in result.changes), view)
            if before is not None
            else None
        )
        if stale:
            parts.append(Text(stale, style="yellow"))
    parts.append(Text(result.verdict, style="green" if result.changes else "yellow"))
    parts.append(Text(f"evaluated {result.evaluated} changed builds", style="dim"))
    return RichGroup(*parts)
