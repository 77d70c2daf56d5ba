"""The interval a serving speed carries (serving.SERVING_RATIO_BAND) is the one the serving
calibration points give (bench/held_out.serving_band): 10th/90th percentile of measured /
predicted over the published points of every serving source a constant was chosen on (seven
sources, NVIDIA's and AMD's: held_out.serving_calibration_sources), each source weighing 1,
widened until the sources, each left out in turn, have 80% of their rows inside the others'
band (scripts/interval_band.py). A mixture of experts carries its own (serving.MOE_RATIO_BAND),
set the same way over the MoE calibration rows with each model a unit left out in turn
(held_out.moe_serving_band)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.serving import MOE_RATIO_BAND, SERVING_RATIO_BAND
from dlrig.workloads import load_workload

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("band", "shipped"),
    [("serving_band", SERVING_RATIO_BAND), ("moe_serving_band", MOE_RATIO_BAND)],
)
def test_the_shipped_band_is_what_its_calibration_rows_give(
    band: str, shipped: tuple[float, float]
) -> None:
    """The dense band from the serving calibration sources, the MoE band from the MoE
    calibration rows with each model a unit (held_out.serving_band, moe_serving_band)."""
    sys.path.insert(0, str(REPO / "scripts"))
    sys.path.insert(0, str(REPO / "bench"))
    import held_out

    assert getattr(held_out, band)() == shipped


@pytest.mark.parametrize(
    ("workload", "low", "high"),
    [
        # a dense model: the serving band
        ("llama-3.1-8b-serve", 0.867, 1.147),
        # Qwen3-30B-A3B: the MoE band, mostly below the figure (the MoE calibration rows run
        # slower than dlrig times them on most rows)
        ("qwen3-30b-a3b-serve", 0.711, 1.137),
    ],
)
def test_a_serving_estimate_carries_its_band(workload: str, low: float, high: float) -> None:
    """Tokens/s in total between `low` and `high` times the figure on one H100; the time per
    output token the inverse."""
    build = resolve_build(
        {"name": "1x H100", "gpus": [{"model": "H100 SXM5 80GB", "count": 1}]}, "t",
        load_catalog(None),
    )  # fmt: skip
    est = estimate(build, load_workload(workload))
    assert est.has_interval
    assert est.samples_per_s_low == pytest.approx(est.samples_per_s * low)
    assert est.samples_per_s_high == pytest.approx(est.samples_per_s * high)
    assert est.step_time_s_low < est.step_time_s < est.step_time_s_high
