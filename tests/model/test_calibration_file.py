"""The shipped calibration: physical ranges, and that scripts/calibrate.py regenerates it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dlrig.model.calibration import default_calibration, parse_calibration
from dlrig.model.rates import ComputePath

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "calibration"


def test_factors_are_physical() -> None:
    cal = default_calibration()
    for path in (ComputePath.TENSOR_16BIT, ComputePath.TENSOR_TF32, ComputePath.TENSOR_FP8):
        # Never above the best single-GEMM share of peak (MAMF, ~80% on NVIDIA parts).
        assert 0.2 < cal.matmul_efficiency[path.value] <= 0.81
    for name, factors in cal.workloads.items():
        assert factors.memory_passes >= 0 and factors.step_overhead_s >= 0, name
        if factors.simt_efficiency is not None:  # up to the Winograd gain of 2.25 x 0.8
            assert 0.2 < factors.simt_efficiency <= 1.81, name
    assert 0.5 < cal.pcie_pageable_efficiency < cal.pcie_pinned_efficiency < 0.95
    assert 0.5 < cal.nvlink_busbw_efficiency < 1.0
    assert 0 < cal.collective_latency_s < 1e-3
    assert cal.psu_efficiency["platinum"] > cal.psu_efficiency["bronze"]


@pytest.mark.skipif(not DATA.is_dir(), reason="shared/calibration data not present")
def test_calibrate_script_regenerates_the_shipped_factors() -> None:
    """The PCIe and collective factors depend on the CSVs alone and must match; the compute
    factors also read the GPU catalog's datasheets, which other changes may correct, so they
    must stay within 25% (rerun scripts/calibrate.py after a catalog change)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import calibrate

    fresh = parse_calibration(calibrate(DATA), "fresh")
    shipped = default_calibration()
    assert fresh.pcie_pinned_efficiency == pytest.approx(shipped.pcie_pinned_efficiency)
    assert fresh.pcie_pageable_efficiency == pytest.approx(shipped.pcie_pageable_efficiency)
    assert fresh.nvlink_busbw_efficiency == pytest.approx(shipped.nvlink_busbw_efficiency)
    assert fresh.network_efficiency == pytest.approx(shipped.network_efficiency)
    assert fresh.matmul_efficiency == pytest.approx(shipped.matmul_efficiency, rel=0.25)
    for name, factors in shipped.workloads.items():
        assert fresh.workloads[name].memory_passes == pytest.approx(
            factors.memory_passes, rel=0.25, abs=0.5
        )
