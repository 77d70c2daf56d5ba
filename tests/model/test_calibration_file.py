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
    # Issue 10: an efficiency above 1 is a bug. Winograd is a FLOP reduction in
    # dlrig.model.compute, not an efficiency: shader-core convolutions obey the cap too.
    for table in (cal.matmul_efficiency, cal.conv_efficiency):
        for path, efficiency in table.items():
            assert 0.2 <= efficiency <= 0.81, path
    assert 0.5 < cal.memory_efficiency <= 1.0
    # Host dispatch of one eager PyTorch op: microseconds, not seconds per workload.
    assert 2e-6 <= cal.kernel_launch_s <= 50e-6
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
    assert fresh.conv_efficiency == pytest.approx(shipped.conv_efficiency, rel=0.25)
    assert fresh.kernel_launch_s == pytest.approx(shipped.kernel_launch_s, rel=0.25)
    assert fresh.memory_efficiency == pytest.approx(shipped.memory_efficiency, rel=0.25)
