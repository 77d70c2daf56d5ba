"""A water loop's radiators against its heat (COOL.7), in the case (CASE.1); the case's airflow
(COOL.8); water-blocked cards at their block's width (MB.1)."""

from __future__ import annotations

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU, Case, FanMount, LoopPart, Motherboard, PCIeSlot, RadiatorMount
from dlrig.enums import CoolerType, LoopRole
from dlrig.machine.loop import LoopEntry, sections_for_heat
from dlrig.machine.model import Build, GPUGroup
from dlrig.rules import Finding, check_build

CAT = builtin_catalog()
RTX_5090 = CAT.find(GPU, "GeForce RTX 5090")
RTX_4090 = CAT.find(GPU, "GeForce RTX 4090")
XE_360 = CAT.find(LoopPart, "EK-CoolStream XE 360")
TOWER = Case(
    name="three-480 tower",
    form_factors=("eatx", "atx"),
    max_gpu_length_mm=450,
    expansion_slots=10,
    radiator_mounts=tuple(
        RadiatorMount(position=p, max_mm=480) for p in ("front", "top", "bottom")
    ),
)
BOARD = Motherboard(
    name="four x16 at 1, 3, 5, 7", socket="sTR5", memory_type="ddr5", memory_slots=8,
    max_memory_gb=512, x16_slots=tuple(PCIeSlot(position=p, lanes=16, gen=5) for p in (1, 3, 5, 7)),
)  # fmt: skip


def one(build: Build, rule: str) -> Finding:
    (finding,) = check_build(build).by_rule(rule)
    return finding


def water(gpu: GPU, n: int, radiators: int = 0, case: Case | None = TOWER) -> Build:
    return Build(
        gpus=(GPUGroup(gpu, n, cooler_override=CoolerType.WATER),),
        case=case,
        loop=(LoopEntry(XE_360, radiators),) if radiators else (),
    )


def test_cool_7_three_5090s_need_ten_sections_at_ekwb_175_w() -> None:
    """EKWB: the XE 240 moves 350 W per 10 C of coolant over the room (1800 rpm fans), 175 W
    per 120 mm section. Three 575 W cards make 1,725 W: 1,725 / 175 = 9.9, so ten sections;
    three 360 mm radiators (nine, 1,575 W) are too few, four (twelve) are enough."""
    assert sections_for_heat(3 * 575) == 10
    short = one(water(RTX_5090, 3, radiators=3), "COOL.7")
    assert (short.severity.value, short.evidence["sections"]) == ("error", 9)
    assert one(water(RTX_5090, 3, radiators=4), "COOL.7").severity.value == "info"
    # Without the loop's parts it says what it needs instead of guessing.
    assert one(water(RTX_5090, 3), "COOL.7").message.startswith("unknown:")


def test_case_1_the_radiators_must_fit_the_case_mounts() -> None:
    """Three 480 mm mounts hold three 360 mm radiators, not four; a case whose mounts no spec
    page gave (every catalog case) cannot be judged."""
    assert one(water(RTX_5090, 3, radiators=3), "CASE.1").severity.value == "info"
    assert one(water(RTX_5090, 3, radiators=4), "CASE.1").severity.value == "error"
    corsair = CAT.find(Case, "Corsair 4000D Airflow")
    assert corsair.radiator_mounts is None and corsair.radiator_mounts_120mm is None
    unknown = one(water(RTX_5090, 3, radiators=3, case=corsair), "CASE.1")
    assert unknown.message.startswith("unknown:")
    # Without the loop's radiators: the sections the heat needs against the case's room.
    assert one(water(RTX_5090, 3), "CASE.1").evidence["sections_needed"] == 10


def test_cool_8_open_air_heat_against_the_case_fans() -> None:
    """Air carries 1.757 CFM per W per 1 C of rise (1.2 kg/m3, 1,005 J/(kg K)); at a 10 C rise
    two open-air 450 W cards and a 125 W CPU (1,025 W in the case air) need 180 CFM. Three
    120 mm positions at ARCTIC P12's 56.3 CFM move 169 (a warning); four move 225."""
    cpu = CAT.find(type(CAT.cpus[0]), "Intel Core i5-14600K")
    for fans, severity in ((3, "warning"), (4, "info")):
        case = Case(name=f"{fans} fans", max_gpu_length_mm=400, expansion_slots=8,
                    fan_mounts=(FanMount(size_mm=120, count=fans),))  # fmt: skip
        build = Build(gpus=(GPUGroup(RTX_4090, 2),), cpu=cpu, case=case)
        finding = one(build, "COOL.8")
        assert finding.evidence["cfm_needed"] == round(1025 * 2118.9 / (1.2 * 1005) / 10)
        assert finding.severity.value == severity
    # Blower cards exhaust their own heat; a case without known fan positions is unknown.
    assert one(Build(gpus=(GPUGroup(RTX_4090, 2),), cpu=cpu, case=CAT.find(Case, "4000D")),
               "COOL.8").message.startswith("unknown:")  # fmt: skip


def test_water_blocked_4090s_are_two_slots_wide_so_four_fit_a_1_3_5_7_board() -> None:
    """MB.1 seats cards by their cooler's width: a 4090's own cooler takes 3 slots (two of four
    fit at positions 1, 3, 5, 7), a full-cover block sits in the card's 2-slot bracket (all
    four fit), a named single-slot block (Alphacool ES, PC Gamer) takes 1."""
    air = Build(gpus=(GPUGroup(RTX_4090, 4),), motherboard=BOARD)
    assert one(air, "MB.1").severity.value == "error"
    blocked = Build(
        gpus=(GPUGroup(RTX_4090, 4, cooler_override=CoolerType.WATER),), motherboard=BOARD
    )
    assert one(blocked, "MB.1").severity.value == "info"
    es = CAT.find(LoopPart, "Alphacool ES GeForce RTX 4090 Reference")
    assert (es.role, es.slots) == (LoopRole.GPU_BLOCK, 1)
    single = Build(
        gpus=(GPUGroup(RTX_4090, 4, cooler_override=CoolerType.WATER),),
        motherboard=BOARD,
        loop=(LoopEntry(es, 4),),
    )
    assert {c.width_slots for c in single.topology.cards} == {1}
