"""`dlrig compare`: builds side by side on one workload, as a table, JSON or an HTML page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from dlrig.enums import Severity
from dlrig.machine.model import Build
from dlrig.machine.price import BuildPrice
from dlrig.model import Estimate
from dlrig.report.jsonout import dumps
from dlrig.rules import CheckResult


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


def compare_rows(items: Sequence[Compared]) -> list[dict[str, Any]]:
    """One row per build with the figures people compare builds by."""
    rows = []
    for c in items:
        est = c.estimate
        rows.append(
            {
                "name": c.build.name,
                "price_usd": round(c.price.total_usd, 2) if c.price.complete else None,
                "unpriced_parts": list(c.price.unpriced),
                "samples_per_s": est.samples_per_s,
                "samples_per_s_low": est.samples_per_s_low,
                "samples_per_s_high": est.samples_per_s_high,
                "bottleneck": est.bottleneck.value,
                "fits": est.memory.fits,
                "gpu_required_gb": est.memory.gpu_required_gb,
                "gpu_available_gb": est.memory.gpu_available_gb,
                "system_peak_w": est.power.system_peak_w,
                "ok": c.check.ok,
                "findings": _findings(c.check),
                "run_time_h": est.run.time_h,
                "energy_cost_per_run": round(est.run.energy_cost, 2),
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


def compare_table(workload: str, items: Sequence[Compared]) -> Table:
    """The builds side by side, one row each, in the order given."""
    table = Table(title=f"{len(items)} builds on {workload}", title_justify="left")
    for name, justify in (
        ("build", "left"),
        ("price (USD)", "right"),
        ("samples/s", "right"),
        ("bottleneck", "left"),
        ("GPU memory", "left"),
        ("peak W", "right"),
        ("findings", "left"),
        ("run", "right"),
        ("energy per run", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in compare_rows(items):
        price = f"{r['price_usd']:,.0f}" if r["price_usd"] is not None else "unknown"
        memory = (
            f"{'fits' if r['fits'] else 'DOES NOT FIT'} "
            f"({r['gpu_required_gb']:.1f}/{r['gpu_available_gb']:g} GiB)"
        )
        table.add_row(
            r["name"],
            price,
            f"{r['samples_per_s']:,.1f}",
            r["bottleneck"],
            memory,
            f"{r['system_peak_w']:,.0f}",
            r["findings"],
            f"{r['run_time_h']:.3g} h",
            f"{r['energy_cost_per_run']:,.2f} {r['currency']}",
        )
    return table
