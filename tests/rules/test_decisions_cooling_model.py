"""Issue 11, "rules that speak about speed must read the same model the estimate uses": GPU.5
said "about 30% slower when hot" (the guide's figure) on 2 open-air cards in adjacent slots,
on the #1 build of `plan --workload llama-3-8b-lora --budget 5000`, while `estimate` put the
same build 5% behind its twin with a free slot between the cards. The rule now quotes the
estimate's loss (model/thermal.py at the shipped calibration)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import Motherboard

BOARD = "MSI MAG Z790 TOMAHAWK WIFI"  # x16 slots at positions 1 and 4: two 3-slot cards touch
BUILD: dict[str, Any] = {
    "name": "2x 4090 on Z790",
    "gpus": [{"model": "GeForce RTX 4090", "count": 2}],  # open-air, 3 slots wide
    "cpu": "Intel Core i5-14600K",
    "motherboard": BOARD,
    "memory": "G.Skill Flare X5 32GB (2x16GB) DDR5-6000",
    "storage": [{"model": "Samsung 990 Pro 2TB"}],
    "psu": "Corsair HX1500i (2023)",
    "case": "Corsair 4000D Airflow",
}


def dlrig_json(*args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", *args, "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_gpu5_quotes_the_slowdown_the_estimate_gives_adjacent_open_air_cards(
    tmp_path: Path,
) -> None:
    adjacent = tmp_path / "adjacent.yaml"
    adjacent.write_text(yaml.safe_dump(BUILD))
    # The same board but for its second x16 slot, one position lower: a free slot between.
    spec = builtin_catalog().find(Motherboard, BOARD).model_dump(mode="json", exclude_none=True)
    spec["name"] = f"{BOARD} (second slot one lower)"
    spec["x16_slots"][1]["position"] = 5
    spaced = tmp_path / "spaced.yaml"
    spaced.write_text(yaml.safe_dump({**BUILD, "motherboard": {"spec": spec}}))

    checked = dlrig_json("check", str(adjacent), "-w", "resnet50")
    (gpu5,) = [f for f in checked["findings"] if f["rule"] == "GPU.5"]
    assert gpu5["severity"] == "warning"
    loss = gpu5["evidence"]["model_loss"]
    assert f"the estimate counts them {loss:.0%} slower" in gpu5["message"]
    assert "about 30% slower" not in gpu5["message"]

    def speed(build: Path) -> float:
        doc = dlrig_json("estimate", str(build), "-w", "resnet50")
        return float(doc["throughput"]["samples_per_s"])

    # The throttle slows the GPU compute, most of a resnet50 step on a 4090 (4.7% in all when
    # measured 2026-12-03 against the rule's 5%): the rule and the estimate tell one story.
    measured = 1.0 - speed(adjacent) / speed(spaced)
    assert 0.6 * loss <= measured <= loss + 1e-9
    spaced_checked = dlrig_json("check", str(spaced), "-w", "resnet50")
    assert [f["severity"] for f in spaced_checked["findings"] if f["rule"] == "GPU.5"] == ["info"]
