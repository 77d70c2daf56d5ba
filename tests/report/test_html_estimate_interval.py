"""The estimate page shows the model's interval (step.time_s_low/high), the same figures that
`estimate --json` prints: the page reads the result, it computes nothing of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dlrig.report.estimate import ms

SPACED = Path(__file__).parents[2] / "examples" / "builds" / "2x-4090-spaced-workstation.yaml"


def test_estimate_page_shows_the_step_interval_that_json_prints(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "dlrig", "estimate", str(SPACED), "--workload", "resnet50"]
    printed = subprocess.run([*args, "--json"], capture_output=True, text=True, check=False)
    step = json.loads(printed.stdout)["step"]
    assert step["time_s_low"] < step["time_s"] < step["time_s_high"]
    page = tmp_path / "estimate.html"
    subprocess.run([*args, "--html", str(page)], capture_output=True, text=True, check=False)
    # In the terminal's rounding (report.estimate.ms), as the terminal prints it.
    low, high = ms(step["time_s_low"]), ms(step["time_s_high"])
    assert f"interval {low}-{high}" in page.read_text()
