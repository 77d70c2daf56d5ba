"""README's worked example (owned 2x RTX 4090 against rented H100 for llama-3-8b-lora): the
same computation as `dlrig estimate ... --rent --rent-gpu "H100 SXM"` on the day the README
shows (2026-12-06), rendered at its 100 columns, must print the README's block line for line,
and the prose's figures must be the computation's."""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.cloud.analysis import RentAnalysis, analyse, owned_from
from dlrig.cloud.loader import load_prices
from dlrig.machine import load_build
from dlrig.model import estimate
from dlrig.report.rent import rent_renderable
from dlrig.workloads import load_workload

REPO = Path(__file__).resolve().parents[2]
COMMAND = (
    "$ dlrig estimate examples/builds/2x-4090-spaced-workstation.yaml --workload "
    'llama-3-8b-lora --rent --rent-gpu "H100 SXM"'
)


def _readme_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    start = text.index(COMMAND)
    block = text[start : text.index("```", start)]
    return [line.rstrip() for line in block.splitlines()[2:] if line.strip()]  # after "..."


def _analysis() -> RentAnalysis:
    cat = load_catalog()
    build = load_build(REPO / "examples" / "builds" / "2x-4090-spaced-workstation.yaml", cat)
    job = load_workload("llama-3-8b-lora")
    owned = owned_from(build, estimate(build, job))
    return analyse(
        load_prices(cat), job, owned, utilisation=0.5, horizon_months=36,
        today=dt.date(2026, 12, 6), gpus=[cat.find(GPU, "H100 SXM")],
    )  # fmt: skip


def test_the_readme_block_is_what_the_computation_prints() -> None:
    out = io.StringIO()
    Console(file=out, width=100, soft_wrap=False, color_system=None).print(
        rent_renderable(_analysis())
    )
    printed = [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
    assert _readme_block() == printed


def test_the_readme_prose_figures_are_the_computations() -> None:
    """9.7 h owned and 5.5 h rented a run; RunPod's H100 SXM (Community Cloud) at 2.69 USD/h
    (runpod.io/pricing, 2026-09-25): 14.86 USD a run, 1.53 USD per hour of the workstation's
    work, against 0.24 USD of its electricity (0.2 USD/kWh); 7,282 USD bought (the cards at
    their used price), resold after 36 months for 0.875^3 of the used cards and 0.75 x 0.875^2
    of the parts bought new (catalog/prices.py's curve); break-even 8%, payback 2.6 months."""
    be = _analysis().break_even
    assert be is not None
    text = (REPO / "README.md").read_text()
    prose = text[text.index("The workstation takes") :]
    prose = " ".join(prose[: prose.index("`tests/cloud")].split())
    assert f"{be.owned.hours_per_run:.1f} h a run" in prose
    assert f"one H100 {be.against.hours_per_run:.1f} h" in prose
    assert f"{be.against.price_per_hour_usd:.2f} USD an hour" in prose
    assert f"a run costs {be.against.cost_per_run_usd:.2f} USD" in prose
    assert f"{be.rent_usd_per_busy_hour:.2f} USD for each hour" in prose
    assert f"{be.energy_usd_per_busy_hour:.2f} USD of its electricity" in prose
    assert f"Its {be.owned.price_usd:,.0f} USD" in prose
    assert f"the {be.resale_usd:,.0f} USD it resells for" in prose
    assert any(p.bought_used for p in be.owned.parts)
    assert be.resale_usd == pytest.approx(
        sum(p.price_usd * (0.875**3 if p.bought_used else 0.75 * 0.875**2) for p in be.owned.parts)
    )
    assert be.break_even_utilisation is not None
    assert f"above {be.break_even_utilisation:.0%} utilisation" in prose
    assert f"after {be.payback_months:.1f} months" in prose
    assert be.rented_first_result_h < 6 and re.search(r"under six hours", prose)
