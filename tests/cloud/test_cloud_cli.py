"""`--rent` through the real CLI: issue 38's "done when" (plan --rent --json), the estimate's
page with the cumulative-cost chart and the sensitivity grid, and bad input as one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from browser import console_errors, needs_chromium, render

SPACED = Path(__file__).parents[2] / "examples" / "builds" / "2x-4090-spaced-workstation.yaml"


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def test_plan_rent_json_lists_dated_offers_and_a_break_even() -> None:
    """Issue 38: at least 5 offers from at least 4 providers, with dates and sources, each
    cost_per_run_usd = hours_per_run x price_per_hour_usd within 1%, and a break-even
    utilisation and months."""
    out = dlrig("plan", "--workload", "llama-3-8b-lora", "--budget", "10000", "--rent", "--json")
    assert out.returncode == 0, out.stderr
    rent = json.loads(out.stdout)["rent"]
    offers = rent["offers"]
    assert len(offers) >= 5 and len({o["provider"] for o in offers}) >= 4
    for o in offers:
        assert {"provider", "instance", "gpu", "gpus", "price_per_hour_usd", "spot",
                "price_date", "source", "hours_per_run", "cost_per_run_usd"} <= set(o)  # fmt: skip
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", o["price_date"]) and o["source"]
        assert o["cost_per_run_usd"] == pytest.approx(
            o["hours_per_run"] * o["price_per_hour_usd"], rel=0.01
        )
    costs = [o["cost_per_run_usd"] for o in offers]
    assert costs == sorted(costs)
    be = rent["break_even"]
    assert 0 < be["utilisation"] <= 1 and be["months"] > 0
    assert be["build_price_usd"] <= 10_000 and be["horizon_months"] == 36
    assert be["time_to_first_result_h"]["owned"] > be["lead_time_days"] * 24


@pytest.mark.slow
@needs_chromium
def test_estimate_rent_page_draws_the_costs_crossing_and_the_sensitivity(tmp_path: Path) -> None:
    page = tmp_path / "rent.html"
    out = dlrig("estimate", str(SPACED), "--workload", "llama-3-8b-lora", "--rent",
                "--rent-gpu", "H100 SXM", "--html", str(page))  # fmt: skip
    assert out.returncode == 0, out.stderr
    shot = render(page, tmp_path / "rent.png", height=3400)
    assert console_errors(shot.log) == []
    assert "Buy or rent: llama-3-8b-lora in the cloud" in shot.dom
    chart = re.search(
        r'<svg class="chart"[^>]*aria-label="Cumulative cost.*?</svg>', shot.dom, re.S
    )
    assert chart is not None
    assert chart.group(0).count('class="line') == 2 and 'class="alarm"' in chart.group(0)
    assert "Months until owning pays off, by utilisation and electricity price" in shot.dom
    assert "0.4 USD/kWh" in shot.dom and "break-even utilisation over 36 months" in shot.dom


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--prices", "{missing}"], "no such file"),
        (["--prices", "{bad}"], "field 'on_demand_price_per_hour_usd'"),
        (["--utilisation", "0"], "--utilisation 0: expected a share"),
        (["--horizon-months", "-3"], "--horizon-months -3"),
        (["--rent-gpu", "H100 SXXM"], "unknown gpu 'H100 SXXM'"),
    ],
)
def test_bad_rent_input_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "provider,instance,gpu,gpus,on_demand_price_per_hour_usd,price_date,source\n"
        "X,y,4090,1,-2,2026-01-01,s\n"
    )
    filled = [a.format(missing=tmp_path / "none.yaml", bad=bad) for a in args]
    out = dlrig("estimate", str(SPACED), "--workload", "llama-3-8b-lora", "--rent", *filled)
    assert out.returncode == 2, out.stdout
    assert "Traceback" not in out.stderr
    first = out.stderr.strip().splitlines()[0]
    assert expected in first, out.stderr


def test_a_serving_workload_is_refused_with_a_hint() -> None:
    out = dlrig("estimate", str(SPACED), "--workload", "llama-3.1-8b-serve", "--rent")
    assert out.returncode == 2
    assert "serving workload" in out.stderr and "Traceback" not in out.stderr
