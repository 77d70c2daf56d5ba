"""All-reduce times against measured NCCL runs (shared/calibration/nccl_collective_busbw.csv)."""

from __future__ import annotations

import pytest

from dlrig.model.calibration import default_calibration
from dlrig.model.interconnect import allreduce_time_s, ring_allreduce_bus_factor


def test_ring_bus_factor() -> None:
    assert ring_allreduce_bus_factor(1) == 0.0
    assert ring_allreduce_bus_factor(2) == 1.0
    assert ring_allreduce_bus_factor(8) == pytest.approx(1.75)


def test_8_a100_nvswitch_all_reduce_of_1_gib_matches_nccl_tests() -> None:
    """nccl-tests all_reduce_perf on an 8x A100 SXM NVSwitch node: 1 GiB in 8203.9 us
    (ml-engineering network/README.md, in nccl_collective_busbw.csv). The A100's NVLink is
    600 GB/s both ways, 300 GB/s one way; one call, so one latency."""
    cal = default_calibration()
    busbw = 600 / 2 * cal.nvlink_busbw_efficiency
    t = allreduce_time_s(2**30, 8, busbw, cal.collective_latency_s, bucket_bytes=2**30)
    assert t == pytest.approx(8203.9e-6, rel=0.15)


def test_small_messages_cost_their_latency() -> None:
    """32 KiB among 8 A100s: 43.8 us measured; latency dominates."""
    cal = default_calibration()
    t = allreduce_time_s(32768, 8, 600 / 2 * cal.nvlink_busbw_efficiency,
                         cal.collective_latency_s, bucket_bytes=2**30)  # fmt: skip
    assert t == pytest.approx(43.83e-6, rel=0.2)
