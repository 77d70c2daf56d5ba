"""A job whose parallel layout offloads its state to the host (llama-3-70b, torchtune's 70B full
recipe: FSDP + CPU offload) needs that state in host RAM: mixed-precision AdamW keeps 16 bytes
per parameter (fp32 master 4 + two fp32 moments 8 + 16-bit weights 2 + gradients 2; ZeRO paper,
Rajbhandari et al. 2020, section 3.1), 70.6e9 x 16 B = 1,130e9 B = 1,051 GiB per node. A build
with 128 GB of RAM cannot run it, whatever its GPUs hold: GPU.4 says so, and plans leave such
builds out."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

BUILD = "examples/builds/2x-4090-spaced-workstation.yaml"  # 2x RTX 4090, 128 GB RAM


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, timeout=300
    )


def test_offloaded_state_larger_than_the_hosts_ram_is_a_gpu4_error() -> None:
    result = run_dlrig("check", BUILD, "--workload", "llama-3-70b", "--json")
    assert result.returncode == 1, result.stderr
    (gpu4,) = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "GPU.4"]
    assert gpu4["severity"] == "error"
    assert gpu4["evidence"]["host_offload_gb"] == pytest.approx(1051, rel=0.02)
    assert gpu4["evidence"]["ram_gb"] == 128.0
    assert "host RAM" in gpu4["message"]


def test_no_plan_offers_a_build_whose_ram_cannot_hold_the_offloaded_state() -> None:
    result = run_dlrig("plan", "--workload", "llama-3-70b", "--budget", "7000", "--json")
    assert result.returncode == 1, result.stderr  # nothing under 7,000 USD holds 1 TB of RAM
    assert json.loads(result.stdout)["builds"] == []
