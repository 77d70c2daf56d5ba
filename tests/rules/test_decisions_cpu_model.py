"""Issue 11, CPU.1 and CPU.4 read the model `dlrig estimate` prints.

On main, CPU.4 told the owner of 2x RTX 4090 with a 24-core Threadripper 7960X to buy "a CPU
with fewer cores" while the model says a 6-core CPU halves resnet50's throughput
(cpu_preprocessing-bound), and CPU.1 said "enough" on a build whose estimate names
cpu_preprocessing the bottleneck. The guide's CPU.4 ("each core beyond the need adds 0-5% at
most") sets the 5% the model's estimate may lose on a smaller CPU.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

EXAMPLE = Path(__file__).parents[2] / "examples" / "builds" / "2x-4090-spaced-workstation.yaml"
TR_7960X = {  # AMD's specifications for the 7960X; the test sets the cores
    "vendor": "amd",
    "family": "threadripper",
    "base_ghz": 4.2,
    "pcie_lanes": 88,
    "pcie_gen": 5,
    "memory_channels": 4,
    "memory_type": "DDR5",
    "tdp_w": 350,
    "socket": "sTR5",
}


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def build_with_cores(tmp_path: Path, cores: int) -> Path:
    build = yaml.safe_load(EXAMPLE.read_text())
    name = f"Threadripper 7960X cut to {cores} cores"
    build["cpu"] = {**TR_7960X, "name": name, "cores": cores, "threads": 2 * cores}
    path = tmp_path / f"2x4090-{cores}c.yaml"
    path.write_text(yaml.safe_dump(build))
    return path


def findings(path: Path) -> dict[str, dict[str, object]]:
    doc = json.loads(dlrig("check", str(path), "--workload", "resnet50", "--json").stdout)
    return {f["rule"]: f for f in doc["findings"]}


def samples_per_s(path: Path) -> tuple[float, str]:
    doc = json.loads(dlrig("estimate", str(path), "--workload", "resnet50", "--json").stdout)
    return float(doc["throughput"]["samples_per_s"]), str(doc["step"]["bottleneck"])


def test_cpu4_on_2x_4090_with_24_cores_says_what_fewer_cores_cost_by_the_model(
    tmp_path: Path,
) -> None:
    # The message once said "even preprocessing while training needs 4" beside the model's
    # "-80% at 4": it now names the fewest cores the estimate keeps its speed with (within
    # CPU.4's 5%), and what the guide's floor of 2 cores a GPU costs.
    cpu4 = findings(EXAMPLE)["CPU.4"]
    message = str(cpu4["message"])
    assert "needs 4" not in message and "fewer cores that" not in str(cpu4["fix"])
    found = re.search(
        r"loses (\d+)% at 16 cores and stays within 5% down to (\d+) "
        r"\((\d+)% slower at the guide's floor of 4\)",
        message,
    )
    assert found is not None, message
    at_16, kept, at_4 = (int(g) for g in found.groups())
    assert f"a CPU with {kept}-16 cores" in str(cpu4["fix"])
    # Each figure is the one `dlrig estimate` gives on the same build with that many cores.
    full, _ = samples_per_s(EXAMPLE)

    def loss(cores: int) -> float:
        cut, _ = samples_per_s(build_with_cores(tmp_path, cores))
        return 1 - cut / full

    assert round(100 * loss(16)) == at_16
    assert round(100 * loss(4)) == at_4
    assert at_4 > 50  # 4 cores starve two 4090s (cpu_preprocessing)
    assert 4 < kept < 16
    assert loss(kept) <= 0.05 < loss(kept - 1)


def test_six_cores_halve_2x_4090_and_cpu1_says_so_with_the_estimate(tmp_path: Path) -> None:
    six = build_with_cores(tmp_path, 6)
    full, _ = samples_per_s(EXAMPLE)
    slow, bottleneck = samples_per_s(six)
    assert bottleneck == "cpu_preprocessing" and slow < 0.6 * full
    cpu1 = findings(six)["CPU.1"]
    assert cpu1["severity"] == "warning"
    assert "cpu_preprocessing-bound" in str(cpu1["message"])


def test_cpu1_says_enough_only_when_the_estimate_is_not_cpu_bound() -> None:
    _, bottleneck = samples_per_s(EXAMPLE)
    assert bottleneck != "cpu_preprocessing"
    assert findings(EXAMPLE)["CPU.1"]["severity"] == "info"
