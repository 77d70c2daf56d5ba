"""MEASURING (touches the machine): RAM bandwidth, STREAM-style, with numpy on several threads.

Method: three float64 arrays a, b, c, each far larger than the last-level cache (4x, as STREAM's
rules ask; 2x in quick mode), split into one contiguous slice per thread. Copy is `a[i] = b[i]`,
triad `a[i] = b[i] + s * c[i]`; numpy releases the GIL inside these loops, so the threads run in
parallel. Triad runs block by block with the `s * c` term in a thread-private buffer that stays in
the L2 cache, so that memory sees the three streams STREAM counts. Bytes are counted the STREAM
way (copy 16, triad 24 bytes per element; write-allocate traffic not counted), GB = 10^9 bytes,
and the best of the repeats is reported, as STREAM does.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from dlrig.units import MIB, bytes_s_to_gb_s

_TRIAD_BLOCK_ELEMENTS = 64 * 1024  # 512 KiB of float64: sits in any L2 of the last decade
_MIB = MIB
METHOD = (
    "STREAM-style copy a=b and triad a=b+s*c on float64 arrays several times the last-level "
    "cache, one slice per thread (numpy releases the GIL); STREAM byte counting (copy 16, "
    "triad 24 bytes per element, write-allocate not counted); best of the repeats; GB = 10^9 bytes"
)


@dataclass(frozen=True)
class MemoryBandwidth:
    """Measured RAM bandwidth in GB/s (STREAM counting) and how it was measured."""

    copy_gb_s: float
    triad_gb_s: float
    threads: int
    array_bytes: int
    repeats: int
    method: str


def stream_array_bytes(llc_bytes: int | None, available_bytes: int | None, quick: bool) -> int:
    """Bytes per array: 4x the last-level cache (2x quick), at least 64 MiB, and at most an
    eighth of the available RAM (three arrays must fit with room to spare) and 2 GiB."""
    llc = llc_bytes or 32 * _MIB
    wanted = llc * (2 if quick else 4)
    ceiling = 2048 * _MIB if not quick else 1024 * _MIB
    if available_bytes:
        ceiling = min(ceiling, available_bytes // 8)
    return int(max(64 * _MIB, min(wanted, ceiling)))


def _copy_slice(a: np.ndarray, b: np.ndarray, lo: int, hi: int) -> None:
    np.copyto(a[lo:hi], b[lo:hi])


def _triad_slice(a: np.ndarray, b: np.ndarray, c: np.ndarray, lo: int, hi: int, s: float) -> None:
    tmp = np.empty(_TRIAD_BLOCK_ELEMENTS, dtype=np.float64)
    for start in range(lo, hi, _TRIAD_BLOCK_ELEMENTS):
        stop = min(start + _TRIAD_BLOCK_ELEMENTS, hi)
        t = tmp[: stop - start]
        np.multiply(c[start:stop], s, out=t)
        np.add(b[start:stop], t, out=a[start:stop])


def measure_memory_bandwidth(
    array_bytes: int, threads: int, repeats: int = 5, time_limit_s: float = 10.0
) -> MemoryBandwidth:
    """Copy and triad GB/s over `threads` threads, best of `repeats` (stops early at the limit)."""
    n = array_bytes // 8
    a = np.zeros(n)  # np.zeros + fill touch every page before timing (no first-touch faults)
    b = np.full(n, 1.0)
    c = np.full(n, 2.0)
    a.fill(0.5)
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    best_copy = best_triad = float("inf")
    deadline = time.perf_counter() + time_limit_s
    done = 0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(lambda r: _copy_slice(a, b, *r), bounds))
            best_copy = min(best_copy, time.perf_counter() - start)
            start = time.perf_counter()
            list(pool.map(lambda r: _triad_slice(a, b, c, r[0], r[1], 3.0), bounds))
            best_triad = min(best_triad, time.perf_counter() - start)
            done += 1
            if time.perf_counter() > deadline:
                break
    return MemoryBandwidth(
        copy_gb_s=bytes_s_to_gb_s(16.0 * n / best_copy),
        triad_gb_s=bytes_s_to_gb_s(24.0 * n / best_triad),
        threads=threads,
        array_bytes=n * 8,
        repeats=done,
        method=METHOD,
    )
