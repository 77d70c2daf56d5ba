"""Dominance among supporting parts: a part no other part beats on price and on every number
the rules and the model read of it (cores, lanes, RAM size, read rate, watts)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np

from dlrig.catalog.schema import (
    CPU,
    PSU,
    Case,
    Storage,
)
from dlrig.enums import StorageKind
from dlrig.plan.parts import (
    MemoryOption,
    efficiency_rank,
)

T = TypeVar("T")


def pareto_cheapest(
    items: Sequence[T], price: Callable[[T], float], merit: Callable[[T], tuple[float, ...]]
) -> list[T]:
    """Items that no other item beats on price and every merit (larger is better), cheapest
    first. Of exact ties the first listed stays."""
    ordered = sorted(items, key=price)
    kept: list[tuple[T, float, tuple[float, ...]]] = []
    for item in ordered:
        m = merit(item)
        p = price(item)
        if any(kp <= p and all(a >= b for a, b in zip(km, m, strict=True)) for _, kp, km in kept):
            continue
        kept.append((item, p, m))
    return [item for item, _, _ in kept]


def cpu_merit(cpu: CPU) -> tuple[float, ...]:
    """What the rules and the model read of a CPU: cores and threads (CPU.1), clocks (CPU.2),
    lanes (PCIE.2), memory channels; less TDP is better (PSU.1)."""
    return (
        cpu.cores,
        cpu.threads,
        cpu.base_ghz,
        cpu.boost_ghz or cpu.base_ghz,
        cpu.pcie_lanes,
        cpu.pcie_gen,
        cpu.memory_channels,
        cpu.max_memory_gb or 0.0,
        -cpu.tdp_w,
    )


# DISK.nvme: the job's drive should be NVMe; a drive of a lesser kind never beats one.
STORAGE_KIND_RANK = {StorageKind.HDD: 0, StorageKind.SATA_SSD: 1, StorageKind.NVME: 2}


def storage_merit(s: Storage) -> tuple[float, ...]:
    """Read rate (DISK.1/DISK.3), capacity (DISK.4), write rate (DISK.job) and kind
    (DISK.nvme)."""
    return (s.read_mb_s, s.capacity_tb, s.write_mb_s or 0.0, STORAGE_KIND_RANK[s.kind])


def psu_merit(p: PSU, low_line: bool = False) -> tuple[float, ...]:
    """Watts on the circuit's voltage (PSU.1, PSU.6), connectors (PSU.2, PSU.5), efficiency
    (PSU.3, PSU.6)."""
    watts = (p.watts_at_115v or p.watts) if low_line else p.watts
    return (watts, p.watts, p.pcie_8pin, p.pcie_12v_2x6, efficiency_rank(p.efficiency))


def case_merit(c: Case) -> tuple[float, ...]:
    """Card length, expansion slots, radiator room (CASE.1) and fan positions (COOL.8); the
    board form is a filter. A case whose mounts are known beats one whose are not; two cases
    with radiator mounts of different shapes are both kept (which radiators fit depends on
    the mounts, not on their sum)."""
    mounts = tuple(sorted((m.max_mm for m in c.radiator_mounts or ()), reverse=True))
    fans = sum(m.count * m.size_mm for m in c.fan_mounts or ())
    return (
        c.max_gpu_length_mm,
        c.expansion_slots,
        -1 if c.radiator_mounts_120mm is None else c.radiator_mounts_120mm,
        *(mounts[i] if i < len(mounts) else 0 for i in range(_MOUNTS_COMPARED)),
        fans,
        int(c.fan_mounts is not None),
    )


# Radiator mounts compared one by one, longest first (a desktop case has at most this many).
_MOUNTS_COMPARED = 6


def memory_merit(m: MemoryOption) -> tuple[float, ...]:
    """Size (RAM.2); speed barely matters (RAM.1) but is kept so a rule on it can be met; the
    modules, because each fills a DDR channel the host's bandwidth counts (model/host.py: an
    offloaded layer or optimizer state moves at channels x speed x 8 B), so the same size in
    fewer modules is not as good."""
    return (m.size_gb, m.kit.speed_mt_s or 0, m.kit.modules * m.count, int(m.kit.registered))


def model_merit(
    cpu: CPU, memory: MemoryOption, storage: Storage, psu: PSU | None
) -> tuple[float, ...]:
    """What the model reads of a build's supporting parts (larger is better in each place):
    the CPU, the RAM, the dataset drive and the PSU's efficiency (energy); the case only by
    being there. Two builds of one group's GPUs where one is at least as good in every place:
    it runs at least as fast, the premise of the planner's bounds."""
    efficiency = efficiency_rank(psu.efficiency) if psu is not None else 0
    return (*cpu_merit(cpu), *memory_merit(memory), *storage_merit(storage), efficiency)


# Up to this many rows a loop compares faster than a numpy call costs (measured: ~2 us a row
# against ~16 us a call).
_ROWS_BY_LOOP = 8


class MeritRows:
    """Merits (larger is better in each place), each with a key, asked which of them are no
    better than a given merit in every place. Past a few rows they are compared as one matrix,
    rebuilt after an addition: a 10x catalog's search asks dozens of rows at a time, 15,000
    times (a Python loop over them cost more than the estimates it saved)."""

    def __init__(self) -> None:
        self._merits: list[tuple[float, ...]] = []
        self._keys: list[Hashable] = []
        self._matrix: np.ndarray | None = None

    def add(self, merit: tuple[float, ...], key: Hashable) -> None:
        self._merits.append(merit)
        self._keys.append(key)
        self._matrix = None

    def no_better_than(self, merit: tuple[float, ...]) -> list[Hashable]:
        """The keys of the rows at most `merit` in every place, in the order they came."""
        if len(self._keys) <= _ROWS_BY_LOOP:
            return [
                key
                for row, key in zip(self._merits, self._keys, strict=True)
                if all(have <= m for have, m in zip(row, merit, strict=True))
            ]
        below = (self._rows() <= np.array(merit, dtype=float)).all(axis=1)
        return [self._keys[i] for i in np.flatnonzero(below)]

    def no_worse_than(self, merit: tuple[float, ...]) -> list[Hashable]:
        """The keys of the rows at least `merit` in every place, in the order they came."""
        if len(self._keys) <= _ROWS_BY_LOOP:
            return [
                key
                for row, key in zip(self._merits, self._keys, strict=True)
                if all(have >= m for have, m in zip(row, merit, strict=True))
            ]
        above = (self._rows() >= np.array(merit, dtype=float)).all(axis=1)
        return [self._keys[i] for i in np.flatnonzero(above)]

    def _rows(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.array(self._merits, dtype=float)
        return self._matrix
