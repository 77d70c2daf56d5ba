"""The shipped calibration: physical ranges, and that scripts/calibrate.py regenerates it."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.model.calibration import default_calibration
from dlrig.model.rates import ComputePath

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"


def test_factors_are_physical() -> None:
    cal = default_calibration()
    for path in (ComputePath.TENSOR_16BIT, ComputePath.TENSOR_TF32, ComputePath.TENSOR_FP8):
        # Never above the best single-GEMM share of peak (MAMF, ~80% on NVIDIA parts).
        assert 0.2 < cal.matmul_efficiency[path.value] <= 0.81
    # Issue 10: an efficiency above 1 is a bug. Winograd is a FLOP reduction in
    # dlrig.model.compute, not an efficiency: shader-core convolutions obey the cap too.
    for table in (cal.matmul_efficiency, cal.conv_efficiency):
        for path, efficiency in table.items():
            assert 0.2 <= efficiency <= 0.81, path
    assert 0.5 < cal.memory_efficiency <= 1.0
    # A kernel's GPU-side cost and the host's dispatch of one eager op: microseconds, not
    # seconds per workload; the host's never below today's measured decode dispatch (15 us).
    assert 0.0 <= cal.gpu_kernel_s <= 100e-6
    assert 15e-6 <= cal.host_kernel_s <= 100e-6 or cal.host_kernel_s == 0.0
    assert 0.5 < cal.pcie_pageable_efficiency < cal.pcie_pinned_efficiency < 0.95
    assert 0.5 < cal.nvlink_busbw_efficiency < 1.0
    assert 0 < cal.collective_latency_s < 1e-3
    assert cal.psu_efficiency["platinum"] > cal.psu_efficiency["bronze"]


@pytest.mark.slow
def test_calibrate_script_regenerates_the_shipped_file_from_the_data_in_the_repository() -> None:
    """scripts/calibrate.py fitted on data/calibration gives every value calibration.toml holds
    but the write date and the [uncertainty] bands (those take the leave-one-architecture-out
    fits, ten more: `scripts/calibrate.py --check` compares them, and bench/bench_accuracy.py
    recomputes them from its own fits). A change to the model, the catalog or the data that
    moves a fitted factor fails here until the file is regenerated."""
    import tomllib

    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import OUT, calibrate, differences

    shipped = tomllib.loads(OUT.read_text())
    assert OUT == REPO / "src" / "dlrig" / "model" / "data" / "calibration.toml"
    assert shipped["meta"]["data"].startswith("data/calibration: ")
    del shipped["uncertainty"]
    assert differences(calibrate(DATA), shipped) == []


def test_the_older_software_factor_is_below_what_the_same_jobs_measure() -> None:
    """Lambda's 2024 software runs the 67 jobs both of its runs timed on the same GPU, batch and
    precision a median 1.08x faster than its 2022 software (A100, RTX A6000, Quadro RTX 8000,
    RTX 3090);
    the fitted factor for the 2022 rows lies between no change and that, and a 2022 row is
    predicted through it."""
    import statistics

    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import predicted_units_per_s
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog())
    by_job: dict[tuple[str, str, int, str], dict[str, list[float]]] = {}
    for r in rows:
        key = (r.lambda_model, r.workload.precision.value, r.workload.batch_size, r.gpu.name)
        by_job.setdefault(key, {}).setdefault(r.version, []).append(r.measured_units_per_s)
    ratios = [
        statistics.median(v["v1"]) / statistics.median(v["v0"])
        for v in by_job.values()
        if "v0" in v and "v1" in v
    ]
    assert len(ratios) == 67
    assert statistics.median(ratios) == pytest.approx(1.08, abs=0.005)
    cal = default_calibration()
    factor = float(cal.meta["older_stack_time_factor"])
    assert 1.0 <= factor <= statistics.median(ratios)
    old = next(r for r in rows if r.older_stack)
    newer = dataclasses.replace(old, version="v1")
    assert predicted_units_per_s(old, cal) == pytest.approx(
        predicted_units_per_s(newer, cal) / factor
    )


def test_all_rows_put_back_exactly_what_the_cleaning_left_out() -> None:
    """bench_accuracy's all-rows figures: `cleaned=False` returns every row the cleaned read
    leaves out on evidence (flags, mislabels, superseded stacks, crashes, the superlinear rule),
    and still none that cannot be predicted (no batch, a repeat, an NCF run whose GPUs trained
    no batch: calibration_data.NCF_NO_STEP): 649 rows of 1-16 GPUs more.
    Lambda's 2023 H100 SXM5
    server, left out as a superseded stack (CUDA 11.8), comes back."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import NCF_NO_STEP, LambdaRow, read_lambda_rows

    cleaned, left_out = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    every, unpredictable = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    assert set(unpredictable) == {
        "batch size missing or 0",
        "batch size per GPU not a whole number",
        "duplicate of an earlier row",
        NCF_NO_STEP,
    }
    # The same rows read either way; a row put back may repeat another (6 do), so count both.
    assert len(every) + sum(unpredictable.values()) == len(cleaned) + sum(left_out.values())
    assert len(every) - len(cleaned) == 649
    # Each row put back names the reason the cleaned read counted it under (bench_accuracy's
    # table of left-out rows by reason); a row the cleaning keeps names none.
    reasons = Counter(r.left_out for r in every if r.left_out is not None)
    assert sum(reasons.values()) == 649
    assert all(left_out[why] >= n for why, n in reasons.items())

    def run(r: LambdaRow) -> tuple[object, ...]:
        return (r.version, r.lambda_model, r.lambda_gpu, r.num_gpus, r.measured_units_per_s)

    kept = {run(r) for r in cleaned}
    back = [r for r in every if run(r) in kept]
    assert len(back) >= len(cleaned)
    assert all(r.left_out is None for r in back)
    assert any(r.lambda_gpu.strip() == "H100 80GB SXM5" and r.version == "v1" for r in every)
    assert not any(r.lambda_gpu.strip() == "H100 80GB SXM5" for r in cleaned)


def test_cudnn7_ssd_rows_put_back_run_at_nvidias_measured_speed_of_that_software() -> None:
    """NVIDIA's DGX-1 V100 ran SSD300 fp32 at batch 32 at 133.67 img/s on NGC 19.08 (cuDNN 7)
    and 108.27 on NGC 21.05 (cuDNN 8.2), both NCHW (DeepLearningExamples SSD README @4cce4d88,
    @0b3f770b): 1.2346x. The 27 cuDNN 7 rows `cleaned=False` puts back carry that speed, and
    not the generic older-software factor besides; no other row carries one."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import predicted_units_per_s
    from calibration_data import CUDNN7_FP32_SSD, read_lambda_rows

    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    ssd = [r for r in every if r.left_out == CUDNN7_FP32_SSD]
    assert len(ssd) == 27
    assert all(r.measured_stack_speed == pytest.approx(1.2346, abs=1e-4) for r in ssd)
    assert not any(r.older_stack for r in ssd)
    assert all(r.measured_stack_speed == 1.0 for r in every if r.left_out != CUDNN7_FP32_SSD)
    cleaned, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert all(r.measured_stack_speed == 1.0 for r in cleaned)
    cal = default_calibration()
    row = ssd[0]
    modelled = dataclasses.replace(row, measured_stack_speed=1.0, version="v1")
    assert predicted_units_per_s(row, cal) == pytest.approx(
        1.2346 * predicted_units_per_s(modelled, cal), rel=1e-4
    )


def test_a_fit_on_one_lambda_run_does_not_claim_the_older_software_factor() -> None:
    """Leave-one-source-out fits on one Lambda run: the 2022 software's time factor is relative
    to the 2024 run, so a fit that sees one run only keeps 1.0 (the shipped fit, on both runs,
    finds 1.04)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import calibrate

    for held in ("v0", "v1"):
        doc = calibrate(DATA, exclude_version=held)
        assert doc["meta"]["older_stack_time_factor"] == 1.0
        assert doc["meta"]["excluded_run"] == held
    assert default_calibration().meta["older_stack_time_factor"] > 1.0
