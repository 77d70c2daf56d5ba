"""A custom water loop's physical facts, each computed here once: how much radiator the heat
needs, whether a case mounts the radiators, and how wide a water-blocked card is. The rules
report with them (COOL.7, CASE.1, MB.1) and the planner prices and places loops by them.

Radiator capacity: EKWB rates its XE 240 at 350 W per 10 C of coolant over room air with two
fans at 1800 rpm ("Radiators part 2 - performance", ek.rs, 2017-02-09): 175 W per 120 mm
section. At that rise the coolant sits 10 C over the room, the usual design point; slower,
quieter fans give less.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dlrig.catalog.schema import GPU, Case, LoopPart
from dlrig.enums import LoopRole
from dlrig.machine.topology import WATER_BLOCK_SLOTS

RADIATOR_W_PER_SECTION = 175.0
# A water-blocked card whose block is not named: a full-cover block sits within the two-slot I/O
# bracket cards keep (MB.1: "most GPUs are 2 slots wide"); single-slot blocks exist (Alphacool's
# ES for the reference RTX 4090, PC Gamer) and a named block says so. The one figure lives in
# machine/topology.py, which seats the cards.


@dataclass(frozen=True)
class LoopEntry:
    """`count` of one loop part in a build."""

    part: LoopPart
    count: int = 1


def sections_for_heat(heat_w: float) -> int:
    """120 mm radiator sections that move heat_w at a 10 C coolant-over-air rise."""
    return math.ceil(heat_w / RADIATOR_W_PER_SECTION - 1e-9) if heat_w > 0 else 0


def loop_radiators(loop: Sequence[LoopEntry]) -> tuple[int, ...]:
    """The loop's radiators' lengths, mm, one entry per radiator."""
    return tuple(
        e.part.radiator_mm or 0
        for e in loop
        for _ in range(e.count)
        if e.part.role is LoopRole.RADIATOR
    )


def radiator_sections(radiators_mm: Sequence[int]) -> int:
    """120 mm sections of these radiators."""
    return sum(mm // 120 for mm in radiators_mm)


def case_sections(case: Case) -> int | None:
    """The radiator space a case offers in 120 mm sections; None when not known."""
    return case.radiator_mounts_120mm


def radiators_fit_case(radiators_mm: Sequence[int], case: Case) -> bool | None:
    """Whether the case mounts these radiators at once: each on a mount at least as long
    (longest radiators on the longest mounts first); with only a section count known, whether
    the sections fit; None when the case's radiator space is not known."""
    if case.radiator_mounts is not None:
        free = sorted((m.max_mm for m in case.radiator_mounts), reverse=True)
        for length in sorted(radiators_mm, reverse=True):
            spot = next((i for i, room in enumerate(free) if room >= length), None)
            if spot is None:
                return False
            free.pop(spot)
        return True
    total = case.radiator_mounts_120mm
    if total is None:
        return None
    return radiator_sections(radiators_mm) <= total


def block_for(gpu: GPU, loop: Sequence[LoopEntry]) -> LoopPart | None:
    """The loop's GPU block cut for this card, if the loop names one."""
    return next(
        (
            e.part
            for e in loop
            if e.part.role is LoopRole.GPU_BLOCK and gpu.name in e.part.fits_gpus
        ),
        None,
    )


def water_card_slots(gpu: GPU, block: LoopPart | None = None) -> int:
    """Expansion slots a water-blocked card covers: its block's width, else at most
    WATER_BLOCK_SLOTS (never wider than the card itself)."""
    width = block.slots if block is not None and block.slots else WATER_BLOCK_SLOTS
    return min(width, gpu.slots or width)
