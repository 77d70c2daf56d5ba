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


def test_a_mixture_of_experts_says_upper_bound_where_a_dense_model_gives_its_interval(
    tmp_path: Path,
) -> None:
    """A MoE serving estimate carries no interval (serving.MOE_NOTE): the terminal and the page
    say the speed is an upper bound, and JSON gives no low or high."""
    build = tmp_path / "h200.yaml"
    build.write_text('gpus: [{model: "H200 SXM 141GB", count: 8}]\n')
    args = [sys.executable, "-m", "dlrig", "estimate", str(build), "-w", "qwen3-235b-a22b-serve"]
    terminal = subprocess.run(args, capture_output=True, text=True, check=False)
    assert terminal.returncode == 0, terminal.stderr
    assert "(an upper bound, no interval)" in terminal.stdout
    printed = subprocess.run([*args, "--json"], capture_output=True, text=True, check=False)
    throughput = json.loads(printed.stdout)["throughput"]
    assert throughput["samples_per_s"] > 0
    assert throughput["samples_per_s_low"] is None and throughput["samples_per_s_high"] is None
    page = tmp_path / "moe.html"
    subprocess.run([*args, "--html", str(page)], capture_output=True, text=True, check=False)
    assert "an upper bound, no interval" in page.read_text()
