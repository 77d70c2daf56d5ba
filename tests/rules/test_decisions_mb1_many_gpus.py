"""Issue 11, wrong warnings: MB.1 said "5 GPUs in a desktop build: boards and cases take at
most 4" on `plan -w qwen-32b-serve --objective cheapest --budget 10000`'s #2, five
single-slot RTX A4000 that the same check seated on a Supermicro H12SSL-i in a Corsair 4000D
Airflow. The guide's MB.1 says "usually at most 4 GPUs per system even with more slots": the
warning says that, not that the parts cannot take them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

BUILD = {
    "name": "5x RTX A4000 workstation",
    "gpus": [{"model": "NVIDIA RTX A4000", "count": 5}],  # single-slot blower cards
    "cpu": "AMD EPYC 7313",
    "motherboard": "Supermicro H12SSL-i",
    "memory": "8x Crucial 32GB DDR4-3200 RDIMM",
    "storage": [{"model": "Samsung 990 Pro 2TB"}],
    "psu": "Corsair HX1500i (2023)",
    "case": "Corsair 4000D Airflow",
}


def test_mb1_on_five_seated_cards_does_not_say_the_parts_cannot_take_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "five.yaml"
    path.write_text(yaml.safe_dump(BUILD))
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "check", str(path), "-w", "resnet50", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    findings = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "MB.1"]
    severities = {f["severity"]: f for f in findings}
    assert "error" not in severities  # the board seats all five
    assert "5 cards seated" in severities["info"]["message"]
    warned = severities["warning"]
    assert "take at most" not in warned["message"]
    assert "more than the 4 the guide's MB.1 advises" in warned["message"]
    assert warned["evidence"] == {"gpus": 5, "advised_max": 4}
