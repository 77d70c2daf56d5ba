"""Units, said once.

GB means 10**9 bytes and GiB 2**30 bytes; MB/s and GB/s are decimal, as vendors quote bandwidth.
TFLOPS are 10**12 floating-point operations per second, with one multiply-add counted as 2.
Every quantity carries its unit in its name (`memory_gb`, `tdp_w`, `time_s`); these helpers are
the only place a conversion factor is written.

Memory is binary. GPU memory and RAM are sold in binary units written "GB": an "80 GB" H100
reports 81,559 MiB to nvidia-smi and an A100 80GB 81,920 MiB, a "24 GB" RTX 4090 24,564 MiB, a
"48 GB" RTX A6000 49,140 MiB (80 GiB is 81,920 MiB, 80e9 bytes only 76,294), and a "32GB" DIMM
holds 32 x 2**30 bytes. So every memory capacity and every amount of memory dlrig computes is in
GiB: a card's and a platform's `memory_gb`, RAM's `size_gb`, the estimate's `gpu_required_gb`,
serving's `weights_gb`; the field names keep `_gb` (the contract's keys) and the text output
writes "GiB". What lives on disks stays decimal, as drives and files are quoted: `capacity_tb`,
a dataset's `total_gb`, checkpoint files; so do all rates (GB/s).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KIB = 2**10
MIB = 2**20
GIB = 2**30

TFLOPS = 1e12
GHZ = 1e9
BITS_PER_BYTE = 8


# PCIe payload rate per lane and direction: the PCI-SIG transfer rates (2.5/5/8/16/32/64 GT/s)
# times the line encoding (8b/10b for gen 1-2, 128b/130b for gen 3-5, FLIT ~242/256 for gen 6).
_PCIE_GT_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_PCIE_ENCODING = {1: 0.8, 2: 0.8, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}
PCIE_GENS = tuple(_PCIE_GT_S)


def pcie_lane_gb_s(gen: int) -> float:
    """One lane's payload rate in one direction, GB/s (gen 4: 1.969); gens outside 1-6 are
    clamped to the nearest."""
    g = min(max(gen, PCIE_GENS[0]), PCIE_GENS[-1])
    return _PCIE_GT_S[g] * _PCIE_ENCODING[g] / BITS_PER_BYTE


def tb_to_gb(tb: float) -> float:
    """Decimal terabytes to decimal gigabytes."""
    return tb * TB / GB


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes to decimal gigabytes."""
    return n_bytes / GB


def gib_to_bytes(gib: float) -> float:
    """Memory in GiB (a card's or a RAM kit's "GB", module docstring) to bytes."""
    return gib * GIB


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes to GiB, the unit every memory figure is reported in."""
    return n_bytes / GIB


def gbit_s_to_gb_s(gbit_s: float) -> float:
    """Link rate in Gbit/s to GB/s (8 bits a byte, no encoding overhead)."""
    return gbit_s / BITS_PER_BYTE


def wh_to_kwh(wh: float) -> float:
    """Watt-hours to kilowatt-hours."""
    return wh / 1e3


def mb_s_to_bytes_s(mb_s: float) -> float:
    """Decimal megabytes per second to bytes per second."""
    return mb_s * MB


def gb_s_to_bytes_s(gb_s: float) -> float:
    """Decimal gigabytes per second to bytes per second."""
    return gb_s * GB


def bytes_to_tb(n_bytes: float) -> float:
    """Bytes to decimal terabytes."""
    return n_bytes / TB


def bytes_s_to_mb_s(bytes_s: float) -> float:
    """Bytes per second to decimal megabytes per second."""
    return bytes_s / MB


def bytes_s_to_gb_s(bytes_s: float) -> float:
    """Bytes per second to decimal gigabytes per second."""
    return bytes_s / GB


def flops_to_tflops(flops_s: float) -> float:
    """Floating-point operations per second to TFLOPS."""
    return flops_s / TFLOPS


def ns_to_s(ns: float) -> float:
    """Nanoseconds to seconds."""
    return ns / 1e9


def us_to_s(us: float) -> float:
    """Microseconds to seconds."""
    return us / 1e6


def s_to_us(s: float) -> float:
    """Seconds to microseconds."""
    return s * 1e6


def ms_to_s(ms: float) -> float:
    """Milliseconds to seconds."""
    return ms / 1e3


def s_to_ms(s: float) -> float:
    """Seconds to milliseconds."""
    return s * 1e3


def tflops_to_flops(tflops: float) -> float:
    """TFLOPS to floating-point operations per second."""
    return tflops * TFLOPS


# The range a user file may give each kind of quantity. Every bound is far beyond any real part
# (a DGX B200 draws 14.3 kW, an H200 has 141 GB at 4.8 TB/s) yet finite, so that a typo such as
# `1e308` watts or `.inf` is an error naming the field instead of an overflow deep in the model.
Watts = Annotated[float, Field(gt=0, le=1e5, description="watts")]
# Memory capacities (GPU memory, RAM): the binary "GB" they are sold in (module docstring).
MemoryGiB = Annotated[
    float, Field(gt=0, le=1e5, description="GiB (2**30 bytes), the binary GB memory is sold in")
]
TeraBytes = Annotated[float, Field(gt=0, le=1e4, description="TB (10**12 bytes)")]
GBPerSecond = Annotated[float, Field(gt=0, le=1e5, description="GB/s")]
MBPerSecond = Annotated[float, Field(gt=0, le=1e6, description="MB/s")]
GbitPerSecond = Annotated[float, Field(gt=0, le=1e5, description="Gbit/s")]
Teraflops = Annotated[float, Field(gt=0, le=1e5, description="TFLOPS (10**12 FLOP/s)")]
Gigahertz = Annotated[float, Field(gt=0, le=10, description="GHz")]
Millimetres = Annotated[float, Field(gt=0, le=1e4, description="mm")]
PriceUSD = Annotated[float, Field(gt=0, le=1e8, description="US dollars")]
PCIeGen = Annotated[int, Field(ge=1, le=7, description="PCIe generation (1.0 to 7.0)")]
LinkLanes = Annotated[int, Field(ge=1, le=16, description="lanes of one PCIe link (x1 to x16)")]
# Counts of things in one machine (cores, lanes, slots, connectors, modules).
SmallCount = Annotated[int, Field(ge=0, le=64)]
PositiveSmallCount = Annotated[int, Field(gt=0, le=64)]
LargeCount = Annotated[int, Field(gt=0, le=4096)]
