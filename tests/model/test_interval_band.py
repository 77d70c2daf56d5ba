"""The training interval (scripts/interval_band.py, written by scripts/calibrate.py): sources
weigh 1 each, the widening is the least that covers 80% of the rows of the sources left out, and
only calibration sources set it."""

from __future__ import annotations

import math
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.calibration import default_calibration
from dlrig.workloads import load_workload

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import interval_band as ib  # noqa: E402


def _residuals(source: str, logs: list[float], gpus: int = 1) -> list[ib.Residual]:
    return [ib.Residual(source, gpus, math.exp(x)) for x in logs]


def test_each_source_weighs_one_whatever_its_row_count() -> None:
    """Source a: log ratios -0.1, 0, 0.1 (1/3 weight each); source b: one row at 0.3 (weight 1).
    On the cumulative scale the rows sit at 1/12, 3/12, 5/12 and 9/12, so the median is
    0.1 + 0.2 x (1/12) / (4/12) = 0.15; weighing rows alike it would be 0.05."""
    rows = _residuals("a", [-0.1, 0.0, 0.1]) + _residuals("b", [0.3])
    _, median, _ = ib.source_quantiles(rows)
    assert median == pytest.approx(0.15)
    assert float(np.median([-0.1, 0.0, 0.1, 0.3])) == pytest.approx(0.05)


def test_the_widening_is_the_least_that_covers_80_percent_of_the_rows_left_out() -> None:
    """Three sources with the same spread and shifted centres (-0.1, 0, +0.15 in log), the third
    with 5 rows where the others have 21: each left out is judged by the others' band, and the
    factor returned puts 80% of all 47 rows inside (counted together, "the interval covers 80%
    of held-out rows", issue 36) where one step less does not. Averaging the sources' shares
    instead would let the 5-row source weigh as much as a 21-row one: a different factor."""
    spread = list(np.linspace(-0.2, 0.2, 21))
    rows = [
        r
        for source, shift, n in (("a", -0.1, 21), ("b", 0.0, 21), ("c", 0.15, 5))
        for r in _residuals(source, [x + shift for x in spread[:: 21 // n][:n]])
    ]
    assert len(rows) == 47
    factor = ib.widening(rows)
    assert factor > 1.0

    def pooled(f: float) -> float:
        covered = ib.left_out_coverage(rows, f)
        sizes = {"a": 21, "b": 21, "c": 5}
        return sum(covered[s] * sizes[s] for s in covered) / 47

    def average(f: float) -> float:
        covered = ib.left_out_coverage(rows, f)
        return sum(covered.values()) / len(covered)

    assert ib.pooled_left_out_coverage(rows, factor) == pytest.approx(pooled(factor))
    assert pooled(factor) >= ib.COVERAGE
    assert pooled(round(factor - ib.WIDENING_STEP, 4)) < ib.COVERAGE
    by_average = next(
        f
        for f in (round(1.0 + i * ib.WIDENING_STEP, 4) for i in range(400))
        if average(f) >= ib.COVERAGE
    )
    assert by_average != factor
    band = ib.band(rows)
    assert band.widening == factor
    assert band.low < 1.0 < band.high


def test_one_source_alone_is_not_widened_and_the_band_holds_the_estimate() -> None:
    """With nothing to leave out the band is the plain 10th/90th percentile; a band that would
    lie wholly above 1 (every row faster than predicted) still reaches down to the estimate.
    41 rows 0.01 apart from 0.1: the 90th percentile sits at row 0.9 x 41 - 0.5 = 36.4, log
    0.464."""
    rows = _residuals("a", list(np.linspace(0.1, 0.5, 41)))
    band = ib.band(rows)
    assert band.widening == 1.0
    assert band.low == 1.0
    assert band.high == pytest.approx(math.exp(0.464))


def test_only_calibration_sources_set_the_interval() -> None:
    """bench/provenance.toml's [uncertainty] entry names exactly the sources calibrate.py sets
    the interval on: every training source some other constant was chosen on (Lambda's 2025
    runs, llm.q and Answer.AI's fsdp_qlora among them since their own constants were), and
    no held-out one (torchtune)."""
    from calibrate import PROVENANCE, band_sources

    doc = tomllib.loads(PROVENANCE.read_text(encoding="utf-8"))
    entry = next(c for c in doc["constants"] if "[uncertainty]" in c["where"])
    assert set(entry["rows"]) == set(band_sources())
    assert "torchtune" not in band_sources()
    held_out = {k for k, v in doc["sources"].items() if v["kind"] == "training"} - set(
        band_sources()
    )
    for constant in doc["constants"]:
        if "[uncertainty]" not in constant["where"]:
            assert held_out.isdisjoint(constant["rows"]), constant["name"]
    assert {"lambda_2022", "lambda_2024", "llm_foundry"} <= set(band_sources())


def test_the_shipped_interval_names_its_sources_and_an_estimate_carries_it() -> None:
    """calibration.toml's [uncertainty] lists the sources that set each band; a one-GPU
    estimate spans its throughput_ratio_low/high, a several-GPU one the multi-GPU pair."""
    shipped = tomllib.loads((REPO / "src/dlrig/model/data/calibration.toml").read_text())
    band = shipped["uncertainty"]
    assert "lambda_2022" in band["sources"] and "llm_foundry" in band["multi_gpu_sources"]
    assert band["widening"] >= 1.0 and band["multi_gpu_widening"] >= 1.0
    cal = default_calibration()
    catalog = load_catalog(None)
    workload = load_workload("resnet50")
    for count, (low, high) in ((1, cal.throughput_band(1)), (2, cal.throughput_band(2))):
        build = resolve_build(
            {"name": "b", "gpus": [{"model": "H100 SXM5 80GB", "count": count}]}, "t", catalog
        )
        est = estimate(build, workload)
        assert est.samples_per_s_low == pytest.approx(est.samples_per_s * low)
        assert est.samples_per_s_high == pytest.approx(est.samples_per_s * high)
    assert cal.throughput_band(1) == (band["throughput_ratio_low"], band["throughput_ratio_high"])
    assert cal.throughput_band(2) == (band["multi_gpu_ratio_low"], band["multi_gpu_ratio_high"])


def test_a_gpu_the_fit_lacked_is_widened_only_where_its_rows_err_more() -> None:
    """Source a has 20 rows on fitted GPUs (log ratios spread over +-0.1) and 20 on GPUs its fit
    lacked (spread over +-0.3): those err more, and the widening is their spread over all of
    a's rows, computed with the interval's own percentiles. Where the unfitted rows are as
    tight as the rest, nothing widens."""
    tight = list(np.linspace(-0.1, 0.1, 20))
    loose = list(np.linspace(-0.3, 0.3, 20))
    rows = [ib.Residual("a", 1, math.exp(x)) for x in tight]
    rows += [ib.Residual("a", 1, math.exp(x), fitted_gpu=False) for x in loose]
    expected = ib.spread(rows[20:]) / ib.spread(rows)
    assert expected > 1.2
    assert ib.unfitted_gpu_widening(rows) == round(expected, 2)
    same = [ib.Residual("a", 1, math.exp(x), fitted_gpu=i % 2 == 0) for i, x in enumerate(tight)]
    same += [ib.Residual("a", 1, math.exp(x), fitted_gpu=i % 2 == 1) for i, x in enumerate(tight)]
    assert ib.unfitted_gpu_widening(same) == 1.0
    # Too few rows of either kind in a source: it says nothing about the GPUs the fit lacked.
    assert ib.unfitted_gpu_widening(rows[:25]) == 1.0


def test_an_estimate_on_a_gpu_the_fit_lacked_carries_the_unfitted_band() -> None:
    """The B200 has no Lambda row (calibration.toml meta.gpus) and the H100 SXM5 has: one GPU of
    each carries its own band."""
    cal = default_calibration()
    assert not cal.fitted_gpu("B200 SXM 180GB") and cal.fitted_gpu("H100 SXM5 80GB")
    catalog = load_catalog(None)
    workload = load_workload("resnet50")
    for model, fitted in (("B200 SXM 180GB", False), ("H100 SXM5 80GB", True)):
        build = resolve_build({"name": "b", "gpus": [{"model": model, "count": 1}]}, "t", catalog)
        est = estimate(build, workload)
        low, high = cal.throughput_band(1, fitted)
        said = any("no measured training row" in a for a in est.assumptions)
        assert said is not fitted  # the estimate says which band it carries, and why
        assert est.samples_per_s_low == pytest.approx(est.samples_per_s * low)
        assert est.samples_per_s_high == pytest.approx(est.samples_per_s * high)
    assert cal.throughput_band(1, False) != cal.throughput_band(1, True)
