"""Units, said once.

GB means 10**9 bytes and GiB 2**30 bytes; MB/s and GB/s are decimal, as vendors quote bandwidth.
TFLOPS are 10**12 floating-point operations per second, with one multiply-add counted as 2.
Every quantity carries its unit in its name (`memory_gb`, `tdp_w`, `time_s`); these helpers are
the only place a conversion factor is written.
"""

from __future__ import annotations

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KIB = 2**10
MIB = 2**20
GIB = 2**30

TFLOPS = 1e12
GBIT = 1e9


def gb_to_bytes(gb: float) -> float:
    """Decimal gigabytes to bytes."""
    return gb * GB


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes to decimal gigabytes."""
    return n_bytes / GB


def gib_to_bytes(gib: float) -> float:
    """Binary gibibytes to bytes."""
    return gib * GIB


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes to binary gibibytes."""
    return n_bytes / GIB


def gbit_s_to_gb_s(gbit_s: float) -> float:
    """Link rate in Gbit/s to GB/s (8 bits a byte, no encoding overhead)."""
    return gbit_s / 8.0


def wh_to_kwh(wh: float) -> float:
    """Watt-hours to kilowatt-hours."""
    return wh / 1e3
