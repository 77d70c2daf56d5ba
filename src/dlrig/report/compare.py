"""`dlrig compare`: builds side by side on one workload, as a table, JSON or an HTML page.

The table has a column per build and a row per figure, so that three or four builds stay
readable at 80 columns; each error and warning `check` gives a build follows it in full."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from dlrig.enums import Severity
from dlrig.machine.model import Build
from dlrig.machine.price import BuildPrice
from dlrig.model import Estimate
from dlrig.report.estimate import hours, rate
from dlrig.report.jsonout import dumps
from dlrig.rules import CheckResult, Finding


@dataclass(frozen=True)
class Compared:
    """One build of a comparison: the build, its price, its estimate and its check."""

    build: Build
    price: BuildPrice
    estimate: Estimate
    check: CheckResult


def _findings(check: CheckResult) -> str:
    errors, warnings = len(check.of(Severity.ERROR)), len(check.of(Severity.WARNING))
    return f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"


def _finding_dict(f: Finding) -> dict[str, Any]:
    return {"rule": f.rule, "severity": f.severity.value, "message": f.message, "fix": f.fix}


def _unit(est: Estimate) -> str:
    return "tokens/s" if est.serving is not None else "samples/s"


def compare_rows(items: Sequence[Compared]) -> list[dict[str, Any]]:
    """One row per build with the figures people compare builds by; a build whose job does
    not fit has no speed or run (None)."""
    rows = []
    for c in items:
        est = c.estimate
        runs = est.runs
        rows.append(
            {
                "name": c.build.name,
                "price_usd": round(c.price.total_usd, 2) if c.price.complete else None,
                "unpriced_parts": list(c.price.unpriced),
                "samples_per_s": est.samples_per_s if runs else None,
                "samples_per_s_low": est.samples_per_s_low if runs and est.has_interval else None,
                "samples_per_s_high": (
                    est.samples_per_s_high if runs and est.has_interval else None
                ),
                "rate_unit": _unit(est),
                "bottleneck": est.bottleneck.value,
                "fits": est.memory.fits,
                "gpu_required_gb": est.memory.gpu_required_gb,
                "gpu_available_gb": est.memory.gpu_available_gb,
                "system_peak_w": est.power.system_peak_w,
                "wall_w": round(est.power.wall_w, 1),
                "circuit": est.power.circuit,
                "circuit_headroom_w": round(est.power.circuit_headroom_w, 1),
                "ok": c.check.ok,
                "findings": _findings(c.check),
                "errors": [_finding_dict(f) for f in c.check.errors],
                "warnings": [_finding_dict(f) for f in c.check.warnings],
                "run_time_h": est.run.time_h if runs else None,
                "energy_cost_per_run": round(est.run.energy_cost, 2) if runs else None,
                "currency": est.run.currency,
                "exposed_s": est.exposed_s,
            }
        )
    return rows


def compare_json(workload: str, items: Sequence[Compared]) -> str:
    """`dlrig compare --json`: the workload and one object a build, as `compare_rows`."""
    rows = [
        {**r, "exposed_s": {k.value: v for k, v in r["exposed_s"].items()}}
        for r in compare_rows(items)
    ]
    return dumps({"workload": workload, "builds": rows})


def _speed(r: dict[str, Any]) -> str:
    if r["samples_per_s"] is None:
        return "none: does not fit"
    speed = rate(r["samples_per_s"])
    if r["samples_per_s_low"] is not None:
        speed += f" ({rate(r['samples_per_s_low'])}-{rate(r['samples_per_s_high'])})"
    return speed


def _cells(r: dict[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) pairs of one build, in the table's row order."""
    price = (
        f"{r['price_usd']:,.0f} USD"
        if r["price_usd"] is not None
        else f"unknown (no price: {', '.join(r['unpriced_parts'])})"
    )
    fits = "fits" if r["fits"] else "DOES NOT FIT"
    return [
        ("price", price),
        (r["rate_unit"], _speed(r)),
        ("bottleneck", r["bottleneck"]),
        ("GPU memory", f"{fits}, {r['gpu_required_gb']:.1f} of {r['gpu_available_gb']:g} GiB"),
        ("peak power", f"{r['system_peak_w']:,.0f} W"),
        ("check", r["findings"]),
        ("run time", "none" if r["run_time_h"] is None else hours(r["run_time_h"])),
        (
            "run energy",
            "none"
            if r["energy_cost_per_run"] is None
            else f"{r['energy_cost_per_run']:,.2f} {r['currency']}",
        ),
    ]


def compare_table(workload: str, items: Sequence[Compared]) -> RenderableType:
    """The builds side by side, a column each in the order given, then each build's errors
    and warnings in full."""
    rows = compare_rows(items)
    table = Table(
        title=f"{len(items)} builds on {workload}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("", no_wrap=True)
    for r in rows:
        table.add_column(r["name"], overflow="fold")
    figures = [_cells(r) for r in rows]
    units = {r["rate_unit"] for r in rows}
    for i, (label, _) in enumerate(figures[0]):
        if i == 1 and len(units) > 1:
            label = "throughput"
        table.add_row(label, *(cells[i][1] for cells in figures))
    named = [
        Text(f"{r['name']}: {f['severity']} {f['rule']}: {f['message']}" + _fix(f), style=style)
        for r in rows
        for key, style in (("errors", "red"), ("warnings", "yellow"))
        for f in r[key]
    ]
    return Group(table, *named)


def _fix(f: dict[str, Any]) -> str:
    return f" (fix: {f['fix']})" if f["fix"] else ""
