"""The estimate page shows the model's interval (step.time_s_low/high), the same figures that
`estimate --json` prints: the page reads the result, it computes nothing of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dlrig.report.html.charts import fmt

SPACED = Path(__file__).parents[2] / "examples" / "builds" / "2x-4090-spaced-workstation.yaml"


def test_estimate_page_shows_the_step_interval_that_json_prints(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "dlrig", "estimate", str(SPACED), "--workload", "resnet50"]
    printed = subprocess.run([*args, "--json"], capture_output=True, text=True, check=False)
    step = json.loads(printed.stdout)["step"]
    assert step["time_s_low"] < step["time_s"] < step["time_s_high"]
    page = tmp_path / "estimate.html"
    subprocess.run([*args, "--html", str(page)], capture_output=True, text=True, check=False)
    low, high = fmt(step["time_s_low"] * 1e3), fmt(step["time_s_high"] * 1e3)
    assert f"interval {low}-{high} ms" in page.read_text()
