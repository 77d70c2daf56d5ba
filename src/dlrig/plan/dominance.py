"""Dominance among supporting parts: a part no other part beats on price and on every number
the rules and the model read of it (cores, lanes, RAM size, read rate, watts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

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


def psu_merit(p: PSU) -> tuple[float, ...]:
    """Watts (PSU.1), connectors (PSU.2), efficiency (PSU.3)."""
    return (p.watts, p.pcie_8pin, p.pcie_12v_2x6, efficiency_rank(p.efficiency))


def case_merit(c: Case) -> tuple[float, ...]:
    """Card length, expansion slots and radiator room (CASE.1); the board form is a filter."""
    return (c.max_gpu_length_mm, c.expansion_slots, c.radiator_mounts_120mm)


def memory_merit(m: MemoryOption) -> tuple[float, ...]:
    """Size (RAM.2); speed barely matters (RAM.1) but is kept so a rule on it can be met."""
    return (m.size_gb, m.kit.speed_mt_s or 0, int(m.kit.registered))
