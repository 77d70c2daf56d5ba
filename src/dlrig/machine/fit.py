"""Whether parts physically go together: each predicate once, used by the planner to prune
and by the rules to report (CASE.1, COMPAT.length, COMPAT.slots, COMPAT.memory, DISK.4,
DISK.job); a water loop's radiators are judged in machine/loop.py.."""

from __future__ import annotations

from dlrig.catalog.loader import normalize
from dlrig.catalog.schema import Case, Motherboard
from dlrig.units import tb_to_gb

# Sizes are compared with this slack so that 2 x 64 GB is not "more than 128 GB".
_SLACK = 1e-9


def board_fits_case(board: Motherboard, case: Case) -> bool:
    """The case takes the board's form factor (ATX, E-ATX, ...)."""
    return normalize(board.form_factor) in {normalize(f) for f in case.form_factors}


def card_fits_case(length_mm: float, case: Case) -> bool:
    """CASE.1: the case takes the card's full length."""
    return length_mm <= case.max_gpu_length_mm


def cards_fit_slots(bottom_slot: int, case: Case) -> bool:
    """The case's expansion-slot openings reach below the lowest card's cooler."""
    return bottom_slot <= case.expansion_slots


def memory_type_fits(kit_type: str, host_type: str) -> bool:
    """The RAM is the type the board (or platform) takes: DDR4 and DDR5 do not mix."""
    return normalize(kit_type) == normalize(host_type)


def memory_size_fits(size_gb: float, max_gb: float) -> bool:
    """The board, platform or CPUs address this much RAM."""
    return size_gb <= max_gb + _SLACK


def dataset_fits(capacity_tb: float, dataset_gb: float) -> bool:
    """DISK.4: the drive holds the dataset."""
    return tb_to_gb(capacity_tb) >= dataset_gb


def job_fits(capacity_tb: float, dataset_gb: float, files_gb: float) -> bool:
    """DISK.4 and DISK.job: the drive holds the dataset and the job's own files (the model's
    weights and the checkpoints a training run keeps)."""
    return dataset_fits(capacity_tb, dataset_gb + files_gb)
