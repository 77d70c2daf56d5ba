"""Issue 11, "prices in the user's currency": a rule that states money states it in the currency
the command shows prices in. CPU.4 calls a CPU oversized past max(16, 4 x 2 cores per GPU)
(guide CPU.4) and gives its price: `plan -w resnet50 --budget 8000 --currency EUR` printed
"20 cores (USD 409) for 2 GPUs" next to a plan in EUR. Here every build has 2 GPUs on the
24-core Core i9-14900K, which CPU.4 flags on a desktop."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def plan_json(*args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "plan", "-w", "resnet50", "--budget", "8000", "--json",
         "--gpus", "2", "--include", "Intel Core i9-14900K", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def cpu4_with_cpu_price(doc: dict[str, Any]) -> list[tuple[str, float]]:
    """(CPU.4's message, the build's CPU unit price in USD) for every build CPU.4 warns about."""
    found = []
    for build in doc["builds"]:
        cpu = build["build"]["cpu"]
        (price,) = [p["unit_price_usd"] for p in build["prices"] if p["part"] == cpu]
        found += [(w["message"], price) for w in build["warnings"] if w["rule"] == "CPU.4"]
    return found


def test_cpu4_states_the_cpus_price_in_the_plans_currency() -> None:
    # An exact rate (--fx-rate 2: 2 EUR per USD) makes the expected figure exact.
    found = cpu4_with_cpu_price(plan_json("--currency", "EUR", "--fx-rate", "2"))
    assert found, "24 cores for 2 GPUs: CPU.4 warns"
    for message, cpu_usd in found:
        assert f"({cpu_usd * 2:,.0f} EUR)" in message
        assert "USD" not in message


def test_cpu4_states_usd_without_currency() -> None:
    found = cpu4_with_cpu_price(plan_json())
    assert found
    for message, cpu_usd in found:
        assert f"({cpu_usd:,.0f} USD)" in message
