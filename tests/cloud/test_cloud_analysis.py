"""Buy or rent for one job (cloud/analysis.py): the owned side from a build (used parts,
lead times), and no break-even where it would rest on a partial price or a build that cannot
run the job."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.cloud.analysis import (
    DATACENTER_LEAD_TIME_DAYS,
    WORKSTATION_LEAD_TIME_DAYS,
    analyse,
    owned_from,
)
from dlrig.cloud.loader import load_prices
from dlrig.cloud.ownership import retention
from dlrig.machine import load_build
from dlrig.model import estimate
from dlrig.workloads import load_workload

BUILDS = Path(__file__).resolve().parents[2] / "examples" / "builds"
TODAY = dt.date(2026, 12, 6)


def test_a_used_card_resells_on_the_used_curve_from_its_used_price() -> None:
    """budget-1gpu-3090.yaml prices its RTX 3090 at the catalog's used street price (800 USD,
    GPUDojo 2026-02): bought used, it keeps 0.875 a year of that, with no first-year drop."""
    cat = load_catalog()
    build = load_build(BUILDS / "budget-1gpu-3090.yaml", cat)
    owned = owned_from(build, estimate(build, load_workload("resnet50")))
    card = next(p for p in owned.parts if p.price_usd == 800.0)
    assert card.bought_used and card.used_market_usd == 800.0
    assert retention(12, card.bought_used) == pytest.approx(0.875)
    assert owned.lead_time_days == WORKSTATION_LEAD_TIME_DAYS


def test_datacenter_gpus_wait_the_datacenter_lead_time() -> None:
    """36 weeks for H100-class parts (Cliff Center, 2026-05-18: 'NVIDIA H100 is 36-52 weeks
    direct purchase'; the low end)."""
    cat = load_catalog()
    build = load_build(BUILDS / "8x-l40s-pcie-server.yaml", cat)
    owned = owned_from(build, estimate(build, load_workload("llama-3-8b-lora")))
    assert owned.lead_time_days == DATACENTER_LEAD_TIME_DAYS == 252


def test_a_partly_priced_build_gets_offers_but_no_break_even() -> None:
    """The 2-node HGX H100 example has a server and RAM without a public price: owning it
    cannot be weighed, and the note says which parts lack a price."""
    cat = load_catalog()
    build = load_build(BUILDS / "8x-h100-hgx-server.yaml", cat)
    job = load_workload("llama-3-8b-lora")
    owned = owned_from(build, estimate(build, job))
    result = analyse(load_prices(cat), job, owned, utilisation=0.5, horizon_months=36,
                     today=TODAY)  # fmt: skip
    assert result.offers and result.break_even is None
    assert any("Supermicro SYS-821GE-TNHR" in n and "--catalog" in n for n in result.notes)


def test_without_an_owned_build_only_the_offers_are_priced() -> None:
    cat = load_catalog()
    job = load_workload("llama-3-70b-qlora")
    result = analyse(load_prices(cat), job, None, utilisation=0.5, horizon_months=36,
                     today=TODAY, notes=["no build to weigh renting against"])  # fmt: skip
    assert result.break_even is None and result.offers
    assert all(r.hours_per_run > 0 for r in result.offers)
    assert result.notes == ("no build to weigh renting against",)


def test_the_stale_offers_are_the_listed_ones_older_than_90_days() -> None:
    """On 2026-12-06 the listed offers read before 2026-09-07 (Vultr's MI300X of 2026-05-18,
    Vast.ai's June captures, AWS p5en of 2026-08-06) are named; a day later, those of 90 days."""
    cat = load_catalog()
    job = load_workload("llama-3-8b-lora")
    result = analyse(load_prices(cat), job, None, utilisation=0.5, horizon_months=36,
                     today=TODAY)  # fmt: skip
    assert {o.price_date for o in result.stale} <= {d for d in (
        dt.date(2026, 5, 18), dt.date(2026, 6, 1), dt.date(2026, 8, 6))}  # fmt: skip
    assert all(o.stale(TODAY) for o in result.stale)
    assert all(not r.offer.stale(TODAY) for r in result.offers if r.offer not in result.stale)
