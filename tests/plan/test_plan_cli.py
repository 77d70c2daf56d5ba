"""`dlrig plan` and `dlrig upgrade` end to end: the built-in catalog, H3's rules, H4's model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def test_plan_json_has_the_design_keys() -> None:
    result = run_dlrig("plan", "--workload", "resnet50", "--budget", "8000", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {"workload", "budget_usd", "builds", "pareto", "search"} <= set(doc)
    assert doc["workload"] == "resnet50" and doc["budget_usd"] == 8000
    assert {"evaluated", "seconds"} <= set(doc["search"])
    assert 1 <= len(doc["builds"]) <= 3
    for rank, b in enumerate(doc["builds"], start=1):
        assert b["rank"] == rank
        assert b["price_usd"] <= 8000
        assert b["samples_per_s"] > 0
        assert b["bottleneck"] in {
            "storage", "cpu_preprocessing", "pcie", "gpu_compute", "gpu_memory_bandwidth",
            "interconnect", "network",
        }  # fmt: skip
        assert b["build"]["gpus"]
        assert b["why"]
    prices = [p["price_usd"] for p in doc["pareto"]]
    speeds = [p["weighted_samples_per_s"] for p in doc["pareto"]]
    assert prices == sorted(prices) and speeds == sorted(speeds)
    # Cards a server would hold, a card of each affordable at 8,000 USD (A100 SXM4 80GB at its
    # 8,000 USD street price, NVIDIA A40), named since no server for them has a price.
    homeless = doc["search"]["gpus_without_priced_server"]
    assert {"A100 SXM4 80GB", "NVIDIA A40"} <= set(homeless)
    assert "NVIDIA L40S" not in homeless  # 8,500 USD a card: beyond the budget


def test_nothing_fits_is_a_result_with_exit_1() -> None:
    result = run_dlrig("plan", "--workload", "llama-3-70b-qlora", "--budget", "1000")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    text = " ".join(result.stdout.split())
    assert (
        "nothing under 1,000 USD fits llama-3-70b-qlora: the cheapest feasible build costs" in text
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--workload", "resnet50", "--budget", "-5"),
        ("--workload", "no-such-job", "--budget", "5000"),
        ("--workload", "resnet50", "--budget", "5000", "--include", "Quantum 9000"),
        ("--workload", "resnet50:-1", "--budget", "5000"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: tuple[str, ...]) -> None:
    result = run_dlrig("plan", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("dlrig: error: ")
    assert "Traceback" not in result.stderr


def test_save_round_trips_through_dlrig_check(tmp_path: Path) -> None:
    out = tmp_path / "plans"
    result = run_dlrig(
        "plan", "--workload", "resnet50", "--budget", "8000", "--save", str(out), "--json"
    )
    assert result.returncode == 0, result.stderr
    files = sorted(out.glob("plan-*.yaml"))
    assert len(files) == len(json.loads(result.stdout)["builds"]) >= 1
    for path in files:
        assert yaml.safe_load(path.read_text())["gpus"]
        checked = run_dlrig("check", str(path), "--workload", "resnet50", "--json")
        assert checked.returncode == 0, checked.stdout
        assert json.loads(checked.stdout)["ok"] is True


def test_upgrade_json_ranks_changes(tmp_path: Path) -> None:
    out = tmp_path / "plans"
    planned = run_dlrig("plan", "--workload", "resnet50", "--budget", "3000", "--save", str(out))
    assert planned.returncode == 0, planned.stderr
    result = run_dlrig(
        "upgrade", str(out / "plan-1.yaml"), "--workload", "resnet50", "--budget", "2000", "--json"
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {"current", "changes", "verdict"} <= set(doc)
    gains = [c["gain_per_1000_usd"] for c in doc["changes"]]
    assert gains == sorted(gains, reverse=True)
    assert all(c["price_usd"] <= 2000 for c in doc["changes"])


def test_a_users_catalog_price_changes_the_plan(tmp_path: Path) -> None:
    # A user's quote: the RTX 5090 at 500 USD. At that price two of them fit 3000 USD, so the
    # plan must use 5090s, and the saved build must pass `check` against the same catalog.
    quote = tmp_path / "quote.yaml"
    quote.write_text("gpus:\n  - name: GeForce RTX 5090\n    price_usd: 500\n")
    out = tmp_path / "plans"
    result = run_dlrig(
        "plan", "--workload", "resnet50", "--budget", "3000", "--catalog", str(quote),
        "--save", str(out), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    best = json.loads(result.stdout)["builds"][0]
    assert best["build"]["gpus"][0]["model"] == "GeForce RTX 5090"
    checked = run_dlrig("check", str(out / "plan-1.yaml"), "--catalog", str(quote))
    assert checked.returncode == 0, checked.stdout
