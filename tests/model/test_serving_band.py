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


def test_the_shipped_serving_band_is_what_the_calibration_points_give() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    sys.path.insert(0, str(REPO / "bench"))
    import held_out

    assert held_out.serving_band() == SERVING_RATIO_BAND


def test_the_shipped_moe_band_is_what_the_moe_calibration_models_give() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    sys.path.insert(0, str(REPO / "bench"))
    import held_out

    assert held_out.moe_serving_band() == MOE_RATIO_BAND


def test_a_serving_estimate_carries_the_band() -> None:
    """Tokens/s in total between 0.868x and 1.146x of the figure; the time per output token
    the inverse."""
    build = resolve_build(
        {"name": "1x H100", "gpus": [{"model": "H100 SXM5 80GB", "count": 1}]}, "t",
        load_catalog(None),
    )  # fmt: skip
    est = estimate(build, load_workload("llama-3.1-8b-serve"))
    assert est.has_interval
    assert est.samples_per_s_low == pytest.approx(est.samples_per_s * 0.868)
    assert est.samples_per_s_high == pytest.approx(est.samples_per_s * 1.146)
    assert est.step_time_s_low < est.step_time_s < est.step_time_s_high


def test_a_mixture_of_experts_carries_its_own_band_below_the_figure() -> None:
    """Qwen3-30B-A3B on one H100: total tokens/s between 0.652x and 1.137x of the figure,
    the MoE band TensorRT-LLM's MoE rows give (the model runs fast on most of them)."""
    build = resolve_build(
        {"name": "1x H100", "gpus": [{"model": "H100 SXM5 80GB", "count": 1}]}, "t",
        load_catalog(None),
    )  # fmt: skip
    est = estimate(build, load_workload("qwen3-30b-a3b-serve"))
    assert est.has_interval
    assert est.samples_per_s_low == pytest.approx(est.samples_per_s * 0.652)
    assert est.samples_per_s_high == pytest.approx(est.samples_per_s * 1.137)
