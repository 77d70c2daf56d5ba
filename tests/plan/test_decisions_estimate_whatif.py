"""Issue 11: estimate's what-ifs say what they changed, and the run counts whole steps.

On main `--set nodes=1` still titled the estimate "2 nodes of 8x H100", `--compare cpu=<AM5
chip>` on an sTR5 board said nothing of the socket, and the run reported 450,410.27 steps.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

BUILDS = Path(__file__).parents[2] / "examples" / "builds"


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    return result


def test_set_nodes_1_on_the_2_node_h100_build_says_it_estimates_nodes_1() -> None:
    out = dlrig(
        "estimate", str(BUILDS / "8x-h100-hgx-server.yaml"), "--workload", "llama-3-8b-lora",
        "--set", "nodes=1",
    ).stdout  # fmt: skip
    title = " ".join(out.split("\n\n")[0].split())
    assert "2 nodes of 8x H100 SXM5 (HGX) with nodes=1" in title


def test_compare_an_am5_cpu_on_the_str5_board_names_the_socket_error() -> None:
    out = dlrig(
        "estimate", str(BUILDS / "2x-4090-spaced-workstation.yaml"), "--workload", "resnet50",
        "--compare", "cpu=AMD Ryzen 7 7700X,AMD Ryzen Threadripper 7960X",
    ).stdout  # fmt: skip
    text = " ".join(out.split())
    assert (
        "cpu=AMD Ryzen 7 7700X: COMPAT.socket error: AMD Ryzen 7 7700X is AM5; "
        "ASUS Pro WS TRX50-SAGE WIFI takes sTR5" in text
    )
    assert "cpu=AMD Ryzen Threadripper 7960X:" not in text  # the board's own chip fits


def test_the_run_reports_whole_steps() -> None:
    doc = json.loads(
        dlrig(
            "estimate", str(BUILDS / "budget-1gpu-3090.yaml"), "--workload", "resnet50", "--json"
        ).stdout
    )
    run, device = doc["run"], doc["device"]
    assert isinstance(run["steps"], int)
    # A partial last step is a step: 115,305,030 samples at 256 a step are 450,411 steps.
    assert run["steps"] == math.ceil(run["samples"] / (device["batch_per_gpu"] * device["gpus"]))
