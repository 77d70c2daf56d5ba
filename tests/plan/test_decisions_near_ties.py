"""Issue 11, near-ties: on main #1 cost 1,363 USD more than #2 for 0.1% more speed
(llama-3-8b-lora, 5,000 USD) and the "why" did not say so. Builds within the stated 3% band
(plan/explain.py NEAR_TIE_BAND; the model's 80% interval on one estimate is 0.73-1.24x, far
wider) are a tie, and the "why" sends the buyer to the cheaper one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("workload", "budget"), [("resnet50", "8000"), ("llama-3-8b-lora", "5000")]
)
def test_a_near_tie_with_a_cheaper_build_is_said_in_the_why(workload: str, budget: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "plan", "--workload", workload, "--budget", budget,
         "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    builds = json.loads(result.stdout)["builds"]
    first = builds[0]
    ties = [
        b
        for b in builds[1:]
        if b["price_usd"] < first["price_usd"] - 0.5
        and round(1 - b["weighted_samples_per_s"] / first["weighted_samples_per_s"], 3) < 0.03
    ]
    if ties:
        cheapest = min(ties, key=lambda b: b["price_usd"])
        assert f"the cheaper #{cheapest['rank']} is the better buy" in first["why"]
        for b in ties:
            assert "a tie inside the model's resolution, so the cheaper buy" in b["why"]
    else:
        assert "better buy" not in first["why"]
