"""Issue 11, `--own`: a CPU the user already has costs nothing, so CPU.4 ("don't buy an
overpowered CPU") has nothing to save on it. `plan --own` with a Core i9-14900K (24 cores)
under 2 GPUs warned "24 cores (589 USD) ... fix: a CPU with 16 cores", quoting the price of
the CPU that the same plan priced at 0 as "yours already"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import CPU
from dlrig.machine import resolve_build
from dlrig.plan.owned import owned_parts, with_owned
from dlrig.rules import check_build
from dlrig.workloads import load_workload

I9 = "Intel Core i9-14900K"


def plan_json(*args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "plan", "-w", "resnet50", "--budget", "8000", "--json",
         "--gpus", "2", "--include", I9, *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def cpu4(build: dict[str, Any]) -> list[str]:
    return [w["message"] for w in build["warnings"] if w["rule"] == "CPU.4"]


def test_cpu4_does_not_ask_to_replace_a_cpu_the_user_owns(tmp_path: Path) -> None:
    # Control: bought, the 24-core CPU is oversized for 2 GPUs (guide CPU.4: > max(16, 4 x 4)).
    bought = plan_json()["builds"]
    assert bought and all(cpu4(b) for b in bought)
    own = tmp_path / "own.yaml"
    own.write_text(f"cpu: {I9}\n")
    owned = plan_json("--own", str(own))["builds"]
    assert owned
    for build in owned:
        assert build["build"]["cpu"] == I9 and I9 in build["owned_parts"]
        assert cpu4(build) == []


def test_cpu4_says_an_owned_cpu_is_yours_and_quotes_no_price() -> None:
    # The plan's first build (bought CPU), checked against a catalog where the user owns it.
    saved = plan_json()["builds"][0]["build"]
    catalog = builtin_catalog()
    catalog = with_owned(catalog, owned_parts({"cpu": I9}, "own.yaml", catalog))
    assert catalog.find(CPU, I9).owned_count == 1
    build = resolve_build(saved, "plan.json", catalog)
    findings = check_build(build, load_workload("resnet50")).findings
    (finding,) = [f for f in findings if f.rule == "CPU.4"]
    assert finding.severity.value == "info"
    assert "(yours already)" in finding.message and "USD" not in finding.message
    assert finding.evidence["cpus_to_buy"] == 0
