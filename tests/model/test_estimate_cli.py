"""`dlrig estimate` and `dlrig workloads` through the command line: JSON keys, --set,
--compare, price overrides and bad input (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BUILD = """\
name: 2x RTX 3090 test box
gpus:
  - model: RTX 3090
    count: 2
memory: {size_gb: 128}
storage:
  - {kind: nvme, capacity_tb: 2, read_mb_s: 7000}
psu: {watts: 1600, efficiency: platinum}
"""


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture
def build_file(tmp_path: Path) -> Path:
    path = tmp_path / "build.yaml"
    path.write_text(BUILD)
    return path


def test_estimate_json_has_the_design_keys(build_file: Path) -> None:
    out = run_dlrig("estimate", str(build_file), "--workload", "resnet50", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in ("build", "workload", "step", "throughput", "memory", "power", "run", "assumptions"):
        assert key in doc
    assert {"time_s", "bottleneck", "stages_s"} <= set(doc["step"])
    assert set(doc["step"]["stages_s"]) == {
        "storage", "cpu_preprocessing", "pcie", "gpu_compute", "gpu_memory_bandwidth",
        "interconnect", "network",
    }  # fmt: skip
    assert {"samples_per_s", "tokens_per_s"} <= set(doc["throughput"])
    assert {"gpu_required_gb", "gpu_available_gb", "fits", "max_batch_per_gpu"} <= set(
        doc["memory"]
    )
    assert {"system_peak_w", "psu_recommended_w"} <= set(doc["power"])
    assert {"time_h", "energy_kwh", "energy_cost", "co2_kg"} <= set(doc["run"])
    # PSU.1: 2 x 350 W + 150 W assumed CPU + 70 W = 920 W; +10% = 1012 W -> 1200 W.
    assert doc["power"]["system_peak_w"] == pytest.approx(920)
    assert doc["power"]["psu_recommended_w"] == 1200


def test_set_edits_workload_and_build_paths(build_file: Path) -> None:
    out = run_dlrig(
        "estimate", str(build_file), "-w", "resnet152", "--json",
        "--set", "batch_size=64", "--set", "precision=fp16", "--set", "loader.pin_memory=false",
        "--set", "gpus.0.pcie.lanes=4", "--set", "gpus.0.memory_gb=48",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["device"]["batch_per_gpu"] == 64 and doc["device"]["precision"] == "fp16"
    assert doc["memory"]["gpu_available_gb"] == 48  # a catalog part edited into an inline spec
    assert "pcie_downgraded" in doc["step"]["modifiers"]


def test_set_with_an_unknown_key_names_the_nearest(build_file: Path) -> None:
    out = run_dlrig("estimate", str(build_file), "-w", "resnet50", "--set", "loader.pinmemory=1")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("dlrig: error: --set loader.pinmemory: unknown key")
    assert "loader.pin_memory" in out.stderr and "Traceback" not in out.stderr


def test_compare_makes_one_estimate_per_value(build_file: Path) -> None:
    out = run_dlrig(
        "estimate", str(build_file), "-w", "resnet152", "--json",
        "--set", "loader.pin_memory=false", "--set", "loader.workers=0",
        "--compare", "gpus.0.pcie.lanes=4,8,16",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["compare"]["estimates"]
    assert [r["value"] for r in rows] == [4, 8, 16]
    speeds = [r["throughput"]["samples_per_s"] for r in rows]
    assert speeds[0] < speeds[1] < speeds[2]  # synchronous pageable copies: lanes help a bit
    table = run_dlrig(
        "estimate", str(build_file), "-w", "resnet50", "--compare", "batch_size=64,128"
    )
    assert table.returncode == 0 and "batch_size" in table.stdout


def test_price_overrides(build_file: Path) -> None:
    base = json.loads(run_dlrig("estimate", str(build_file), "-w", "gpt2", "--json").stdout)
    dear = json.loads(
        run_dlrig(
            "estimate", str(build_file), "-w", "gpt2", "--json",
            "--electricity-price", "0.4", "--co2-per-kwh", "0",
        ).stdout
    )  # fmt: skip
    assert dear["run"]["energy_cost"] == pytest.approx(2 * base["run"]["energy_cost"])
    assert dear["run"]["co2_kg"] == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("model: resnet50\nbatchsize: 8\n", "unknown key 'batchsize'"),
        ("model: resnet50\nprecision: fp64\n", "field 'precision'"),
        ("model: [unclosed\n", "invalid YAML"),
        ("model: resnt50\n", "unknown workload 'resnt50'"),
        ("- just\n- a list\n", "expected a mapping"),
    ],
)
def test_bad_workload_files_exit_2_with_one_line(
    build_file: Path, tmp_path: Path, content: str, expected: str
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(content)
    out = run_dlrig("estimate", str(build_file), "--workload", str(job))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("dlrig: error: ") and expected in lines[0]
    assert len(lines) <= 2 and "Traceback" not in out.stderr


def test_unknown_zoo_name_suggests_names(build_file: Path) -> None:
    out = run_dlrig("estimate", str(build_file), "--workload", "llama-3-8b-lroa")
    assert out.returncode == 2
    assert "llama-3-8b-lora" in out.stderr


def test_workloads_lists_the_zoo() -> None:
    out = run_dlrig("workloads", "--json")
    assert out.returncode == 0
    names = {w["name"] for w in json.loads(out.stdout)}
    assert {"resnet50", "llama-3-70b-qlora", "stable-diffusion-unet"} <= names
    table = run_dlrig("workloads")
    assert table.returncode == 0 and "resnet50" in table.stdout


def test_probe_latest_without_a_saved_probe_is_one_line() -> None:
    # conftest points DLRIG_HOME at an empty temporary folder for every test.
    out = run_dlrig("estimate", "probe:latest", "--workload", "resnet50")
    assert out.returncode == 2
    assert (
        out.stderr.startswith("dlrig: error: no saved probe") and "dlrig probe --save" in out.stderr
    )
