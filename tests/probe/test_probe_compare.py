"""What changed between two probes: beyond a 10% noise band, or any change of identity."""

from __future__ import annotations

import copy
from typing import Any

from dlrig.probe.compare import compare_probes, history_row
from dlrig.probe.report import ProbeReport

DOC: dict[str, Any] = {
    "host": "box",
    "time_utc": "2026-01-01T00:00:00+00:00",
    "quick": False,
    "memory": {
        "total_bytes": 128e9,
        "bandwidth": [{"threads": 8, "copy_gb_s": 40.0, "triad_gb_s": 30.0}],
    },
    "disks": [{"mountpoint": "/data", "speed": {"cold_mb_s": 3000.0, "random_4k_iops": 12000.0}}],
    "loader": {"points": [{"workers": 8, "samples_per_s": 2400.0}]},
    "gpus": [
        {
            "index": 0,
            "name": "NVIDIA GeForce RTX 3090",
            "lost": False,
            "reading": {"power_limit_w": 350.0},
            "under_load": {"pcie_gen_current": 4, "pcie_width_current": 16, "power_limit_w": 350.0},
            "torch": {"matmul": [{"precision": "fp16", "tflops": 60.0}], "h2d_pinned_gb_s": 24.0},
        }
    ],
    "verdicts": [{"severity": "warning"}, {"severity": "info"}],
}
BEFORE = ProbeReport.model_validate(DOC)


def test_same_figures_within_noise_show_no_change() -> None:
    after = copy.deepcopy(DOC)
    after["memory"]["bandwidth"][0]["copy_gb_s"] = 41.5  # +3.75%
    assert compare_probes(BEFORE, ProbeReport.model_validate(after)) == ()


def test_a_slower_disk_and_a_narrower_link_are_reported() -> None:
    after = copy.deepcopy(DOC)
    after["disks"][0]["speed"]["cold_mb_s"] = 1500.0
    after["gpus"][0]["under_load"]["pcie_width_current"] = 4
    changes = {c.key: c for c in compare_probes(BEFORE, ProbeReport.model_validate(after))}
    assert changes["disk /data cold MB/s"].change_pct == -50.0
    assert changes["GPU 0 PCIe under load"].after == "Gen4 x4"


def test_a_gpu_that_went_missing_is_reported() -> None:
    after = copy.deepcopy(DOC)
    after["gpus"] = []
    keys = {c.key for c in compare_probes(BEFORE, ProbeReport.model_validate(after))}
    assert {"gpu count", "GPU 0 name", "GPU 0 fp16 TFLOPS"} <= keys


def test_history_row_counts_faults() -> None:
    row = history_row(7, BEFORE)
    assert (row["id"], row["faults"], row["gpus"], row["disk_mb_s"]) == (7, 1, 1, 3000.0)
