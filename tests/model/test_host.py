"""The host's RAM bandwidth (dlrig.model.host): the build's probe, else its CPUs' DDR channels at
the memory's speed x STREAM's share, else MEM.1's figure, said as an assumption."""

from __future__ import annotations

import pytest
from model_fixtures import CPU_16, make_build

from dlrig.model.host import STREAM_SHARE, host_memory_bandwidth

MEM_1_GB_S = 60.0  # guide MEM.1: a CPU's path to RAM is about 60 GB/s


def test_channels_times_speed_times_eight_bytes_at_streams_share() -> None:
    """Four DDR4-3200 channels: 4 x 3200 MT/s x 8 B = 102.4 GB/s peak; STREAM reaches ~0.75
    of the wire rate (Microway's E5-2600 v3 STREAM: 73.9 of 102.4 GB/s, 72%)."""
    build = make_build(None, memory={"size_gb": 128, "speed_mt_s": 3200})
    ram = host_memory_bandwidth(build, MEM_1_GB_S)
    assert STREAM_SHARE == 0.75
    assert ram.gb_s == pytest.approx(102.4 * 0.75)
    assert ram.assumed is None and "4 DDR channels" in ram.provenance


def test_two_sockets_double_the_channels() -> None:
    cpu = {"spec": CPU_16, "count": 2}
    build = make_build(None, cpu=cpu, memory={"size_gb": 256, "speed_mt_s": 3200})
    assert host_memory_bandwidth(build, MEM_1_GB_S).gb_s == pytest.approx(204.8 * 0.75)


def test_fewer_modules_than_channels_leave_channels_idle() -> None:
    """One 2-module kit on a 4-channel CPU fills two channels: half the bandwidth."""
    kit = {"model": "Corsair Vengeance LPX 64GB (2x32GB) DDR4-3200"}
    build = make_build(None, memory=kit)
    assert host_memory_bandwidth(build, MEM_1_GB_S).gb_s == pytest.approx(51.2 * 0.75)


def test_unknown_speed_falls_back_to_mem_1_and_says_so() -> None:
    ram = host_memory_bandwidth(make_build(None), MEM_1_GB_S)
    assert ram.gb_s == MEM_1_GB_S
    assert ram.assumed is not None and "MEM.1" in ram.assumed and "60 GB/s" in ram.assumed


def test_the_probes_stream_figure_wins() -> None:
    measured = {"taken": "2026-12-04", "ram_bandwidth_gb_s": 41.5}
    build = make_build(None, memory={"size_gb": 64, "speed_mt_s": 6000}, measured=measured)
    ram = host_memory_bandwidth(build, MEM_1_GB_S)
    assert ram.gb_s == 41.5 and "probe measurement 2026-12-04" in ram.provenance
