"""Issue 11 on `upgrade`: changes are priced at the street price where the catalog has one,
shown in the user's currency, and a change that rests on a price over a year old says so.

The RTX 5080's street price is USD 1,599 (Best Buy's ASUS Prime RTX 5080 listing, reported by
AI Hardware Index on 2026-01-24,
https://aihardwareindex.com/blog/gpu-shortage-week-4-rtx-5090-hits-5-000-nvidia-pivots-to-rtx);
its launch MSRP was USD 999. The EUR rate is the ECB's of 2026-10-05, EUR 1 = USD 1.1204
(https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.xml, catalog/data/fx.toml)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

BUDGET_3090 = str(Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml")
STREET_5080_USD = 1599.0
ECB_USD_PER_EUR = 1.1204


def test_upgrade_prices_the_5080_swap_at_its_street_price_in_euros_with_old_prices_named() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "upgrade", BUDGET_3090, "--workload", "resnet50",
         "--budget", "1500", "--currency", "EUR", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["budget_usd"] == pytest.approx(1500 * ECB_USD_PER_EUR)
    (swap,) = [
        c for c in doc["changes"] if c["change"].startswith("swap GPUs -> 1x GeForce RTX 5080")
    ]
    assert swap["price_usd"] == STREET_5080_USD
    assert swap["price"] == pytest.approx(STREET_5080_USD / ECB_USD_PER_EUR, abs=0.01)
    (card,) = [p for p in swap["bought_prices"] if p["part"] == "GeForce RTX 5080"]
    assert (card["kind"], card["market"], card["date"]) == ("street", "new", "2026-01-24")
    today = dt.date.today()
    for change in doc["changes"]:
        for stale in change["stale_prices"]:
            assert (today - dt.date.fromisoformat(stale["date"])).days > 365
            assert stale["part"] in doc["price_warning"]
