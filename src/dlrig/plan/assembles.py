"""What physically goes together (socket, memory type, slots, card length, GPU form, the
dataset fits on the drive), judged by machine.fit and machine.topology's placement: the
planner prunes with the same predicates the rules report with."""

from __future__ import annotations

from collections.abc import Sequence

from dlrig.catalog.schema import (
    CPU,
    GPU,
    Case,
    MemoryKit,
    Motherboard,
    PCIeSlot,
    Storage,
)
from dlrig.enums import CoolerType, FormFactor
from dlrig.machine.fit import (
    board_fits_case,
    card_fits_case,
    cards_fit_slots,
    dataset_fits,
    memory_size_fits,
    memory_type_fits,
)
from dlrig.machine.loop import radiators_fit_case
from dlrig.machine.topology import card_width_slots, place_cards
from dlrig.plan.parts import (
    Chassis,
    MemoryOption,
    normalized,
)


def _width(gpu: GPU, water: bool, block_slots: int | None) -> int:
    cooler = CoolerType.WATER if water else None
    return card_width_slots(gpu, cooler, block_slots)


def place_gpus(
    board: Motherboard,
    gpu: GPU,
    count: int,
    *,
    water: bool = False,
    block_slots: int | None = None,
) -> tuple[PCIeSlot, ...] | None:
    """The x16 slots `count` cards of this width (a water block's, when water-cooled) occupy,
    by the machine topology's placement rule (MB.1); None when they do not all fit."""
    slots = board.x16_slots
    width = _width(gpu, water, block_slots)
    key = (id(slots), width, count)
    hit = _SEATS.get(key)
    if hit is not None and hit[0] is slots:
        return hit[1]
    seated, unplaced = place_cards(slots, [width] * count)
    seats = None if unplaced else tuple(slot for _, slot, _ in seated)
    if len(_SEATS) >= _SEATS_MAX:
        _SEATS.clear()
    _SEATS[key] = (slots, seats)
    return seats


# place_gpus's answers by the identity of the board's slots (kept beside the answer, so that
# the id is not reused while the entry lives), the width and the count: the search space asks
# it of every board, GPU model and count, 11,000 times for the built-in catalog, for 569
# distinct answers (keyed by value, hashing and comparing the slot models cost more).
_SEATS: dict[tuple[int, int, int], tuple[object, tuple[PCIeSlot, ...] | None]] = {}
_SEATS_MAX = 4096


def slots_needed(
    board: Motherboard,
    gpu: GPU,
    count: int,
    *,
    water: bool = False,
    block_slots: int | None = None,
) -> int | None:
    """Expansion-slot openings the case must have for the placed cards (the last card may hang
    below the board's last slot)."""
    placed = place_gpus(board, gpu, count, water=water, block_slots=block_slots)
    if placed is None:
        return None
    return placed[-1].position + _width(gpu, water, block_slots) - 1


def case_fits(
    case: Case,
    board: Motherboard,
    gpu: GPU,
    count: int,
    water: bool,
    radiators_mm: tuple[int, ...] = (),
    block_slots: int | None = None,
) -> bool:
    """CASE.1: the case takes the board, the cards' length and width, and, water-cooled, the
    loop's radiators (on mounts known to take them: an unknown case is not planned into)."""
    if not board_fits_case(board, case):
        return False
    if gpu.length_mm is not None and not card_fits_case(gpu.length_mm, case):
        return False
    needed = slots_needed(board, gpu, count, water=water, block_slots=block_slots)
    if needed is None or not cards_fit_slots(needed, case):
        return False
    return not water or radiators_fit_case(radiators_mm, case) is True


def gpu_fits_chassis(chassis: Chassis, gpu: GPU, count: int, *, water: bool = False) -> bool:
    """The chassis takes count of these GPUs: platform form and size, or board slots (at a
    water block's width when `water`)."""
    if chassis.platform is not None:
        p = chassis.platform
        if p.included_gpu is not None:
            return gpu.name == p.included_gpu and count == p.included_gpu_count
        if p.gpu_max_slots is not None and (gpu.slots or 0) > p.gpu_max_slots:
            return False
        return gpu.form == p.gpu_form and count <= p.max_gpus
    if chassis.board is None or gpu.form != FormFactor.PCIE:
        return False
    return place_gpus(chassis.board, gpu, count, water=water) is not None


def cpu_fits_chassis(chassis: Chassis, cpu: CPU) -> bool:
    """Same socket and, where the board names them, a CPU family its chipset takes; a
    platform that bundles its CPU takes only that one."""
    if chassis.platform is not None and chassis.platform.included_cpu is not None:
        return cpu.name == chassis.platform.included_cpu
    board = chassis.board
    if board is not None and board.cpu_families and cpu.family not in board.cpu_families:
        return False
    return normalized(cpu.socket) == normalized(chassis.socket)


def memory_options(chassis: Chassis, kits: Sequence[MemoryKit]) -> list[MemoryOption]:
    """Every kit-and-count the chassis takes: its memory type (registered or not, where the
    board says), slots and maximum size."""
    out = []
    host = chassis.platform or chassis.board
    registered = host.memory_registered if host is not None else None
    for kit in kits:
        if not memory_type_fits(kit.memory_type, chassis.memory_type):
            continue
        if registered is not None and kit.registered != registered:
            continue
        for count in range(1, chassis.memory_slots // kit.modules + 1):
            option = MemoryOption(kit, count)
            if memory_size_fits(option.size_gb, chassis.max_memory_gb):
                out.append(option)
    return out


def memory_fits_cpu(memory: MemoryOption, cpu: CPU, cpu_count: int) -> bool:
    """The CPUs address this much RAM (COMPAT.memory; no stated limit: any)."""
    if cpu.max_memory_gb is None:
        return True
    return memory_size_fits(memory.size_gb, cpu.max_memory_gb * cpu_count)


def storage_holds(storage: Storage, job_gb: float) -> bool:
    """DISK.4 and DISK.job: the job's drive holds the dataset and the job's own files (job_gb,
    plan.results.job_storage_gb)."""
    return dataset_fits(storage.capacity_tb, job_gb)
