"""The physical fit predicates (machine.fit) are the planner's pruning and the rules' verdict at
once: the planner keeps a board-case-cards combination exactly when `check` finds no fit error."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU, Case, LoopPart, Motherboard, RadiatorMount
from dlrig.enums import CoolerType, Severity
from dlrig.machine.fit import dataset_fits, memory_size_fits, memory_type_fits
from dlrig.machine.loop import LoopEntry, radiators_fit_case, sections_for_heat
from dlrig.machine.model import Build, GPUGroup
from dlrig.plan.assembles import case_fits
from dlrig.rules import check_build

FIT_RULES = {"COMPAT.case", "COMPAT.length", "COMPAT.slots", "CASE.1", "MB.1"}
CATALOG = builtin_catalog()
XE_360 = CATALOG.find(LoopPart, "EK-CoolStream XE 360")
# A fictional case with known mounts (the catalog's cases have none read from a spec page).
QUOTE_TOWER = Case(
    name="Quote tower",
    form_factors=("ssi-eeb", "eatx", "atx", "micro-atx"),
    max_gpu_length_mm=450,
    expansion_slots=10,
    radiator_mounts=tuple(
        RadiatorMount(position=p, max_mm=480) for p in ("front", "top", "bottom")
    ),
)


@settings(max_examples=120, deadline=None)
@given(
    board=st.sampled_from([b for b in CATALOG.motherboards if b.x16_slots]),
    case=st.sampled_from([*CATALOG.cases, QUOTE_TOWER]),
    gpu=st.sampled_from([g for g in CATALOG.gpus if g.pcie_lanes and g.form.value == "pcie"]),
    count=st.integers(1, 4),
    water=st.booleans(),
)
def test_planner_keeps_a_chassis_exactly_when_check_confirms_the_fit(
    board: Motherboard, case: Case, gpu: GPU, count: int, water: bool
) -> None:
    """The planner keeps a board-case-cards combination exactly when `check` finds no fit
    error; a water-cooled one only where CASE.1 could judge the radiators (a case whose mounts
    are not known is reported as unknown, and no loop is planned into it)."""
    cooler = CoolerType.WATER if water else None
    radiators = (360,) * math.ceil(sections_for_heat(gpu.tdp_w * count) / 3) if water else ()
    loop = tuple(LoopEntry(XE_360) for _ in radiators)
    build = Build(
        gpus=(GPUGroup(gpu, count, cooler_override=cooler),),
        motherboard=board,
        case=case,
        loop=loop,
    )
    findings = check_build(build).findings
    errors = {
        f.rule
        for f in findings
        if f.severity is Severity.ERROR
        and f.rule in FIT_RULES
        and not (f.rule == "MB.1" and "GPUs in a desktop build" in f.message)
    }
    unknown = any(f.rule == "CASE.1" and f.message.startswith("unknown:") for f in findings)
    kept = case_fits(case, board, gpu, count, water, radiators)
    assert kept == (not errors and not unknown), (errors, unknown)


def test_case_1_radiators_go_on_mounts_at_least_as_long() -> None:
    """CASE.1: each radiator on a mount that takes its length; three 480 mm mounts take three
    360 mm radiators and three 480s, not four radiators; unknown mounts judge nothing."""
    assert radiators_fit_case((360, 360, 360), QUOTE_TOWER) is True
    assert radiators_fit_case((480, 480, 480), QUOTE_TOWER) is True
    assert radiators_fit_case((240, 240, 240, 240), QUOTE_TOWER) is False
    assert radiators_fit_case((360,), CATALOG.find(Case, "4000D")) is None


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
