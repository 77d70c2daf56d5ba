"""The physical fit predicates (machine.fit) are the planner's pruning and the rules' verdict at
once: the planner keeps a board-case-cards combination exactly when `check` finds no fit error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU, Case, Motherboard
from dlrig.enums import CoolerType, Severity
from dlrig.machine.fit import dataset_fits, memory_size_fits, memory_type_fits, radiators_fit
from dlrig.machine.model import Build, GPUGroup
from dlrig.plan.assembles import case_fits
from dlrig.rules import check_build

FIT_RULES = {"COMPAT.case", "COMPAT.length", "COMPAT.slots", "CASE.1", "MB.1"}
CATALOG = builtin_catalog()


@settings(max_examples=120, deadline=None)
@given(
    board=st.sampled_from([b for b in CATALOG.motherboards if b.x16_slots]),
    case=st.sampled_from(list(CATALOG.cases)),
    gpu=st.sampled_from([g for g in CATALOG.gpus if g.pcie_lanes and g.form.value == "pcie"]),
    count=st.integers(1, 4),
    water=st.booleans(),
)
def test_planner_keeps_a_chassis_exactly_when_check_finds_no_fit_error(
    board: Motherboard, case: Case, gpu: GPU, count: int, water: bool
) -> None:
    cooler = CoolerType.WATER if water else None
    build = Build(
        gpus=(GPUGroup(gpu, count, cooler_override=cooler),), motherboard=board, case=case
    )
    errors = {
        f.rule
        for f in check_build(build).findings
        if f.severity is Severity.ERROR
        and f.rule in FIT_RULES
        and not (f.rule == "MB.1" and "GPUs in a desktop build" in f.message)
    }
    assert case_fits(case, board, gpu, count, water) == (not errors), errors


def test_case_1_a_radiator_per_water_cooled_gpu() -> None:
    """CASE.1: custom water cooling needs room for a radiator per GPU."""
    case = CATALOG.find(Case, "4000D")
    mounts = case.radiator_mounts_120mm
    assert radiators_fit(mounts, case)
    assert not radiators_fit(mounts + 1, case)


def test_memory_type_and_size() -> None:
    """COMPAT.memory: DDR4 does not go into a DDR5 board; 2 x 64 GB is 128 GB, not more."""
    assert memory_type_fits("ddr5", "DDR5")
    assert not memory_type_fits("DDR4", "DDR5")
    assert memory_size_fits(2 * 64.0, 128.0)
    assert not memory_size_fits(192.0, 128.0)


def test_disk_4_a_2_tb_drive_holds_a_1500_gb_dataset_not_a_2500_gb_one() -> None:
    """DISK.4: the SSD holds the datasets you work with (1 TB = 1000 GB, units.py)."""
    assert dataset_fits(2.0, 1500.0)
    assert not dataset_fits(2.0, 2500.0)
