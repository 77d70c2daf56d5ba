"""The host's RAM bandwidth: what every CPU-side step of a job streams through (a CPU-only
build's training, DP.1's parameter server, CPU offload's optimizer step, serving's weights
held in RAM). Computed here once for a build.

A node's RAM moves at most channels x sockets x transfers per second x 8 bytes (a DDR channel
is 64 bits wide); STREAM, which streams arrays much larger than the caches, reaches about
three quarters of that: 73.9 GB/s copy on two Xeon E5-2637 v3 with four DDR4-1600 channels
each, 102.4 GB/s peak (72%; Microway, "DDR4 Memory on Xeon E5-2600v3 with 3 DIMMs per
channel", microway.com/hpc-tech-tips), 74-78% of the DDR4-1600 wire rate on TI's AM62x/AM64x
(TI SPRAD45A and SPRACV1B, STREAM tables). Fewer modules than channels leave channels idle.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlrig.machine.model import Build

STREAM_SHARE = 0.75
DDR_CHANNEL_BYTES = 8  # one 64-bit DDR channel moves 8 bytes per transfer


@dataclass(frozen=True)
class HostMemoryBandwidth:
    """Achievable RAM bandwidth of one node, GB/s, where it comes from, and the assumption
    the estimate states when the build did not say (None otherwise)."""

    gb_s: float
    provenance: str
    assumed: str | None = None


def host_memory_bandwidth(build: Build, default_gb_s: float) -> HostMemoryBandwidth:
    """The build's own probe (STREAM triad over every thread), else its CPUs' channels at the
    memory's speed x STREAM_SHARE, else `default_gb_s` (MEM.1: a CPU's path to RAM is about
    60 GB/s), said as an assumption."""
    measured = build.measured
    if measured is not None and measured.ram_bandwidth_gb_s is not None:
        return HostMemoryBandwidth(
            measured.ram_bandwidth_gb_s, f"probe measurement {measured.date} (STREAM triad)"
        )
    cpu, memory = build.cpu, build.memory
    speed = memory.speed_mt_s if memory is not None else None
    if cpu is not None and memory is not None and speed:
        channels = cpu.memory_channels * build.cpu_count
        if memory.kit is not None:
            channels = min(channels, memory.kit.modules * memory.kit_count)
        peak = channels * speed * DDR_CHANNEL_BYTES / 1000.0
        return HostMemoryBandwidth(
            peak * STREAM_SHARE,
            f"{channels} DDR channels x {speed} MT/s x 8 B = {peak:.0f} GB/s x "
            f"{STREAM_SHARE:.2f} (STREAM's share)",
        )
    return HostMemoryBandwidth(
        default_gb_s,
        "MEM.1",
        f"host RAM bandwidth not computable (give the CPU and the memory's speed): "
        f"{default_gb_s:.0f} GB/s assumed (MEM.1)",
    )
