"""Issue 39: at 80 columns (any pipe) no table cuts a figure or a label to "…", and every
figure `--json` gives is there whole: the catalog listings, `compare`, `estimate --compare`
and `workloads`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
SPACED = EXAMPLES / "2x-4090-spaced-workstation.yaml"
BUDGET = EXAMPLES / "budget-1gpu-3090.yaml"
OPEN_AIR = EXAMPLES / "4x-open-air-workstation.yaml"
KINDS = ("gpus", "cpus", "motherboards", "psus", "cases", "storage", "memory", "platforms")

pytestmark = pytest.mark.slow


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False, env=env
    )
    assert out.returncode == 0, out.stderr
    return out


def assert_fits_80(text: str) -> None:
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80


def words(text: str) -> set[str]:
    return {w for line in text.splitlines() for w in line.split()}


@pytest.mark.parametrize("kind", KINDS)
def test_catalog_keeps_every_figure_whole(kind: str) -> None:
    shown = dlrig("catalog", kind).stdout
    assert_fits_80(shown)
    parts = json.loads(dlrig("catalog", kind, "--json").stdout)
    present = words(shown)
    for part in parts:
        for field in ("memory_gb", "cores", "watts", "price_usd", "tdp_w", "read_mb_s"):
            value = part.get(field)
            if isinstance(value, int | float):
                text = f"{value:,.0f}" if value >= 100 else f"{value:g}"
                assert text in present, (part["name"], field, text)


def test_compare_three_builds_keeps_its_labels_and_names_each_finding() -> None:
    shown = dlrig("compare", str(SPACED), str(BUDGET), str(OPEN_AIR), "--workload", "resnet50")
    assert_fits_80(shown.stdout)
    for label in ("samples/s", "bottleneck", "GPU memory", "run energy"):
        assert label in shown.stdout
    rows = json.loads(
        dlrig("compare", str(SPACED), str(OPEN_AIR), "--workload", "resnet50", "--json").stdout
    )["builds"]
    flat = " ".join(shown.stdout.split())
    for r in rows:
        assert r["bottleneck"] in flat  # the stage's name whole, not "gpu_com..."
        for f in (*r["errors"], *r["warnings"]):
            assert f"{f['rule']}: {' '.join(f['message'].split())}" in flat


def test_estimate_compare_keeps_its_labels() -> None:
    shown = dlrig(
        "estimate", str(SPACED), "--workload", "resnet152", "--compare", "gpus.0.pcie.lanes=4,8,16"
    ).stdout
    assert_fits_80(shown)
    for label in ("samples/s", "bottleneck", "interconnect", "gpu_compute", "(as built)"):
        assert label in shown


def test_workloads_keeps_its_notes_whole() -> None:
    shown = dlrig("workloads").stdout
    assert_fits_80(shown)
    present = words(shown)
    for w in json.loads(dlrig("workloads", "--json").stdout):
        assert w["name"] in present
        if w["seq_len"]:
            assert str(w["seq_len"]) in present
