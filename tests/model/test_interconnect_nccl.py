"""Collective times against measured NCCL runs (data/calibration/nccl_collective_busbw.csv,
rows from github.com/stas00/ml-engineering@744d01e network/README.md)."""

from __future__ import annotations

import math

import pytest

from dlrig.model.calibration import default_calibration
from dlrig.model.interconnect import (
    NVLINK_ALLREDUCE_CURVE,
    Fabric,
    LinkClass,
    bucket_payloads,
    curve_fraction,
    hierarchical_time,
    intra_collective_time_s,
    network_latency_s,
    ring_allreduce_bus_factor,
    ring_gather_bus_factor,
)

MIB = 2**20


def _nvlink(nvlink_gb_s: float) -> Fabric:
    """An NVSwitch node's fabric: one direction's NVLink share at the fitted efficiency."""
    cal = default_calibration()
    return Fabric(LinkClass.NVLINK, nvlink_gb_s / 2 * cal.nvlink_busbw_efficiency, 0.0)


def _log_interp(x: float, x0: float, y0: float, x1: float, y1: float) -> float:
    t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return y0 + t * (y1 - y0)


def test_ring_bus_factors() -> None:
    """Ring all-reduce sends 2(n-1)/n of the buffer per GPU; a gather or scatter (n-1)/n."""
    assert ring_allreduce_bus_factor(1) == 0.0
    assert ring_allreduce_bus_factor(2) == 1.0
    assert ring_allreduce_bus_factor(8) == pytest.approx(1.75)
    assert ring_gather_bus_factor(8) == pytest.approx(0.875)


def test_curve_interpolates_in_log_size_and_holds_its_ends() -> None:
    assert curve_fraction(NVLINK_ALLREDUCE_CURVE, 1) == NVLINK_ALLREDUCE_CURVE[0][1]
    assert curve_fraction(NVLINK_ALLREDUCE_CURVE, 2**40) == 1.0
    # 24 MiB lies at log2(1.5) = 0.585 of the way from 16 MiB (0.452) to 32 MiB (0.572).
    assert curve_fraction(NVLINK_ALLREDUCE_CURVE, 24 * MIB) == pytest.approx(
        0.452 + math.log2(1.5) * 0.120, rel=1e-3
    )


def test_8_a100_nvswitch_all_reduce_of_a_ddp_bucket_matches_nccl_tests() -> None:
    """nccl-tests all_reduce_perf on 8x A100 SXM (NVSwitch): busbw 106.16 GB/s at 16 MiB and
    138.49 at 32 MiB (csv rows L1231-1232): at DDP's 25 MiB bucket, log-interpolated, about
    127 GB/s, i.e. 2(n-1)/n x 25 MiB in ~361 us. The model (A100: 600 GB/s NVLink) within 15%."""
    busbw = _log_interp(25 * MIB, 16 * MIB, 106.16, 32 * MIB, 138.49)
    measured_s = 1.75 * 25 * MIB / (busbw * 1e9)
    t = intra_collective_time_s(25 * MIB, 1.75, _nvlink(600))
    assert t == pytest.approx(measured_s, rel=0.15)


def test_8_a100_nvswitch_all_reduce_of_1_gib_matches_nccl_tests() -> None:
    """1 GiB among 8 A100 SXM in 8203.9 us (csv row L1237)."""
    t = intra_collective_time_s(2**30, 1.75, _nvlink(600))
    assert t == pytest.approx(8203.9e-6, rel=0.15)


def test_a_small_bucket_reaches_a_fraction_of_the_plateau() -> None:
    """Small messages are latency-bound: measured 8x H200 busbw is 39.9 GB/s at 1 MiB against
    482 at 16 GiB (csv rows L1262, L1276); per byte, a 1 MiB all-reduce costs ~10x a 1 GiB one."""
    fabric = _nvlink(900)
    per_byte_small = intra_collective_time_s(MIB, 1.75, fabric) / MIB
    per_byte_large = intra_collective_time_s(2**30, 1.75, fabric) / 2**30
    assert per_byte_small / per_byte_large > 8


def test_pcie_collective_pays_its_latency_once_per_call() -> None:
    fabric = Fabric(LinkClass.PCIE, 20.0, 42e-6)
    t = intra_collective_time_s(25 * MIB, 1.75, fabric)
    assert t == pytest.approx(1.75 * 25 * MIB / 20e9 + 42e-6)


def test_four_b200_nodes_all_reduce_of_16_mib_matches_the_measured_curve() -> None:
    """32x B200 in 4 p6-b200 nodes (NVLink5 inside, 8x 50 GB/s EFA v4 per node): 16 MiB
    all-reduced at 64.43 GB/s busbw (csv row L1413), 2(31)/32 x 16 MiB in 504.5 us. The
    hierarchical model (NVLink 1800 GB/s, the network at the fitted efficiency, tree latency)
    within 20%."""
    cal = default_calibration()
    nic_per_gpu = 400.0 * cal.network_efficiency / 8
    fabric = Fabric(LinkClass.NVLINK, 900 * cal.nvlink_busbw_efficiency, 0.0, nic_per_gpu)
    t = hierarchical_time(16 * MIB, True, 8, 4, fabric)
    measured_s = 2 * 31 / 32 * 16 * MIB / 64.43e9
    assert t.total_s == pytest.approx(measured_s, rel=0.20)
    assert t.inter_s > t.intra_s  # the network, not NVLink, sets the time


def test_inter_node_time_grows_with_the_node_count() -> None:
    """The network phase's bytes grow as 2(N-1)/N and its latency as log2 N: more nodes,
    more time for the same payload (the issue: one latency whatever the node count)."""
    fabric = Fabric(LinkClass.NVLINK, 389.0, 0.0, 30.0)
    times = [hierarchical_time(25 * MIB, True, 8, n, fabric).inter_s for n in (2, 8, 64)]
    assert times[0] < times[1] < times[2]
    assert network_latency_s(1) == 0.0
    assert network_latency_s(64) == pytest.approx(3 * network_latency_s(4))


def test_ddp_buckets_are_25_mib_with_a_partial_last_one() -> None:
    """PyTorch DDP's bucket_cap_mb defaults to 25 (torch.nn.parallel.DistributedDataParallel
    documentation); the calibration ships that size."""
    assert default_calibration().bucket_bytes == 25 * MIB
    assert bucket_payloads(60 * MIB, 25 * MIB) == [25 * MIB, 25 * MIB, 10 * MIB]
    assert bucket_payloads(0, 25 * MIB) == []
