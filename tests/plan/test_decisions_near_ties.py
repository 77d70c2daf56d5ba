"""Issue 11, near-ties: on main #1 cost 1,363 USD more than #2 for 0.1% more speed
(llama-3-8b-lora, 5,000 USD) and `make run`'s #1 cost 1,754 USD more than #3 for 2.8%.
Builds whose difference is inside the model's uncertainty are ties and a tie goes to the
cheaper build (plan/ties.py): a build ties with the best one when its value reaches RATIO_LOW
(about 0.82) of the best one's samples/s, how far the model misjudges one GPU against another
on the same job in 80% of comparisons (model/data/calibration.toml [uncertainty]
comparison_ratio_low, leave-one-architecture-out on the Lambda rows, scripts/calibrate.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from dlrig.model.calibration import default_calibration

# calibration.toml [uncertainty] comparison_ratio_low, refitted with the model
RATIO_LOW = default_calibration().comparison_ratio_low


def _plan(workload: str, budget: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "plan", "--workload", workload, "--budget", budget,
         "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.parametrize(
    ("workload", "budget"), [("llama-3-8b-lora", "5000"), ("resnet50", "8000")]
)
def test_a_near_tie_goes_to_the_cheaper_build(workload: str, budget: str) -> None:
    """#1 is the cheapest build within the model's uncertainty of the fastest build under the
    budget: the Pareto list holds the fastest build (its last) and, for any speed, the
    cheapest build that reaches it."""
    doc = _plan(workload, budget)
    first = doc["builds"][0]
    fastest = doc["pareto"][-1]
    floor = RATIO_LOW * fastest["weighted_samples_per_s"]
    reaching = [p for p in doc["pareto"] if p["weighted_samples_per_s"] >= floor * (1 - 1e-9)]
    assert first["price_usd"] == pytest.approx(min(p["price_usd"] for p in reaching), abs=0.01)
    assert first["weighted_samples_per_s"] >= floor * (1 - 1e-9)
    if first["price_usd"] < fastest["price_usd"] - 0.5:
        assert "within the model's uncertainty of" in first["why"]
        assert "ranked first" in first["why"]
    for b in doc["builds"][1:]:
        # The symptom, reversed: no later build is cheaper than #1 for a speed inside
        # the model's uncertainty of the fastest build.
        if b["price_usd"] < first["price_usd"] - 0.5:
            assert b["weighted_samples_per_s"] < floor


def test_the_dearer_build_that_was_passed_says_why() -> None:
    """`make run`: #1 names the faster build it was ranked before; that build, when ranked,
    names the cheaper #1 in turn."""
    doc = _plan("resnet50", "8000")
    first = doc["builds"][0]
    passed = [
        b
        for b in doc["builds"][1:]
        if f"within the model's uncertainty of #{b['rank']} " in first["why"]
    ]
    for b in passed:
        assert b["weighted_samples_per_s"] > first["weighted_samples_per_s"]
        assert b["price_usd"] > first["price_usd"]
        assert "within the model's uncertainty of the cheaper #1" in b["why"]
