"""The estimate page shows the model's interval (step.time_s_low/high), the same figures that
`estimate --json` prints: the page reads the result, it computes nothing of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_mixture_of_experts_shows_its_own_interval_in_terminal_json_and_page(
    tmp_path: Path,
) -> None:
    """A MoE serving estimate carries its own interval (serving.MOE_RATIO_BAND, 0.711-1.137x
    the figure): JSON gives its ends, and the terminal and the page print the same."""
    build = tmp_path / "h200.yaml"
    build.write_text('gpus: [{model: "H200 SXM 141GB", count: 8}]\n')
    args = [sys.executable, "-m", "dlrig", "estimate", str(build), "-w", "qwen3-235b-a22b-serve"]
    printed = subprocess.run([*args, "--json"], capture_output=True, text=True, check=False)
    assert printed.returncode == 0, printed.stderr
    throughput = json.loads(printed.stdout)["throughput"]
    rate, low, high = (throughput[k] for k in ("samples_per_s", "samples_per_s_low",
                                                "samples_per_s_high"))  # fmt: skip
    assert low == pytest.approx(0.711 * rate) and high == pytest.approx(1.137 * rate)
    terminal = subprocess.run(args, capture_output=True, text=True, check=False)
    assert f"({low:,.0f}-{high:,.0f}, 80% interval)" in terminal.stdout
    page = tmp_path / "moe.html"
    subprocess.run([*args, "--html", str(page)], capture_output=True, text=True, check=False)
    assert f"interval {low:,.0f}-{high:,.0f}" in page.read_text()
