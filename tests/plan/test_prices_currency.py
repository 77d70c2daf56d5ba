"""Issue 11, prices in the user's currency: `plan --currency EUR` reads --budget in euros and
shows prices in euros at a dated rate, which `--fx-rate` overrides. The shipped rate is the
ECB's euro reference rate of 2026-10-05, EUR 1 = USD 1.1204 (the ECB's daily file that day,
https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.xml; catalog/data/fx.toml)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ECB_USD_PER_EUR = 1.1204


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, timeout=300
    )


def plan_json(*args: str) -> dict[str, Any]:
    result = run_dlrig("plan", "--workload", "resnet50", "--json", "--top", "2", *args)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_a_budget_in_euros_is_read_at_the_dated_ecb_rate_and_prices_shown_in_euros() -> None:
    doc = plan_json("--budget", "4000", "--currency", "EUR")
    assert doc["budget"] == 4000.0
    assert doc["budget_usd"] == pytest.approx(4000 * ECB_USD_PER_EUR)
    assert doc["currency"]["code"] == "EUR" and doc["currency"]["date"] == "2026-10-05"
    assert "ecb.europa.eu" in doc["currency"]["source"]
    for build in doc["builds"]:
        assert build["price"] == pytest.approx(build["price_usd"] / ECB_USD_PER_EUR, abs=0.01)
        assert build["price_usd"] <= doc["budget_usd"]


def test_fx_rate_overrides_the_reference_rate() -> None:
    doc = plan_json("--budget", "2000", "--currency", "GBP", "--fx-rate", "0.5")
    assert doc["budget_usd"] == 4000.0
    assert doc["currency"] == {
        "code": "GBP",
        "per_usd": 0.5,
        "date": None,
        "source": "--fx-rate (your rate)",
    }


def test_the_text_plan_says_the_rate_its_source_and_its_age() -> None:
    result = run_dlrig(
        "plan", "-w", "resnet50", "--budget", "500000", "--currency", "JPY", "--top", "1"
    )
    assert result.returncode == 0, result.stderr
    flat = " ".join(result.stdout.split())
    assert "under 500,000 JPY" in flat
    # JPY per USD = 177.28 / 1.1204 = 158.23 on 2026-10-05 (ECB per-euro rates, fx.toml).
    assert "1 USD = 158.2 JPY" in flat and "2026-10-05" in flat and " old" in flat


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # ARS is ISO 4217's Argentine peso, without an ECB reference rate in fx.toml.
        (("--currency", "ARS"), "known: CNY, EUR, GBP, JPY, USD"),
        # XYZ is no ISO 4217 code (data/iso4217.toml, ISO 4217 Table A.1 of 2024-06-25).
        (("--currency", "XYZ"), "not an ISO 4217 currency code"),
        (("--currency", "XYZ", "--fx-rate", "2"), "not an ISO 4217 currency code"),
        (("--currency", "EUR", "--fx-rate", "0"), "--fx-rate 0.0"),
        (("--currency", "EUR", "--fx-rate", "nan"), "--fx-rate nan"),
    ],
)
def test_an_unknown_currency_or_a_bad_rate_is_one_line_and_exit_2(
    args: tuple[str, ...], expected: str
) -> None:
    result = run_dlrig("plan", "-w", "resnet50", "--budget", "3000", *args)
    assert result.returncode == 2
    assert expected in result.stderr and "Traceback" not in result.stderr


def test_the_why_and_the_nothing_fits_line_speak_the_users_currency() -> None:
    # --fx-rate 2 GBP per USD: every amount in a sentence is twice its USD figure, in GBP.
    doc = plan_json("--budget", "16000", "--currency", "GBP", "--fx-rate", "2")
    for build in doc["builds"]:
        assert " USD" not in build["why"], build["why"]
    nothing = run_dlrig(
        "plan", "-w", "llama-3-70b", "--budget", "2000", "--currency", "GBP", "--fx-rate", "2"
    )
    assert nothing.returncode == 1, nothing.stderr
    flat = " ".join(nothing.stdout.split())
    sentence = flat[flat.index("nothing under") : flat.index("search:")]
    assert sentence.startswith("nothing under 2,000 GBP fits") and " USD" not in sentence


def test_the_plan_page_shows_prices_in_the_users_currency_with_their_age(tmp_path: Path) -> None:
    page = tmp_path / "plan.html"
    result = run_dlrig(
        "plan", "-w", "resnet50", "--budget", "4000", "--currency", "GBP", "--fx-rate", "2",
        "--top", "1", "--html", str(page),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert "under 4,000 GBP" in html and "price (GBP)" in html
    assert "prices in GBP at 1 USD = 2 GBP" in html
    assert "prices: oldest" in html  # each build's price age
    assert " USD," not in html  # no build price left in dollars
