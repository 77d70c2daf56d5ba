"""PSU.1 on the circuit's voltage, PSU.5 transients, PSU.6 the circuit at the wall."""

from __future__ import annotations

import dataclasses
import math

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import CPU, GPU, PSU
from dlrig.machine.model import Build, GPUGroup
from dlrig.mains import find_mains
from dlrig.model.power_limit import POWER_LIMIT_EXPONENT
from dlrig.model.wall import wall_draw
from dlrig.rules import Finding, check_build

CAT = builtin_catalog()
RTX_5090 = CAT.find(GPU, "GeForce RTX 5090")
RTX_4090 = CAT.find(GPU, "GeForce RTX 4090")
CPU_125 = CAT.find(CPU, "Intel Core i5-14600K")


def one(build: Build, rule: str, circuit: str | None = None) -> Finding:
    if circuit is not None:
        build = dataclasses.replace(build, mains=find_mains(circuit, where="t", origin="t"))
    (finding,) = check_build(build).by_rule(rule)
    return finding


def test_psu_6_three_5090s_on_15_a_fail_with_the_fixes_that_work() -> None:
    """3 x 575 W + 125 W = 1,850 W sustained: no 15 A / 120 V circuit carries it (1,440 W). The
    fixes each pass PSU.6 when applied: the power limit named, a second circuit, 240 V."""
    psu = CAT.find(PSU, "Super Flower Leadex Titanium 2800W")
    build = Build(gpus=(GPUGroup(RTX_5090, 3),), cpu=CPU_125, psu=psu)
    finding = one(build, "PSU.6", "us-15a")
    assert finding.severity.value == "error"
    assert finding.evidence["dc_w"] == 3 * 575 + 125
    assert finding.fix is not None
    limit = int(finding.fix.split("a power limit of ")[1].split(" W")[0])
    mains = find_mains("us-15a", where="t", origin="t")
    limited = dataclasses.replace(
        build, gpus=(dataclasses.replace(build.gpus[0], power_limit_w=limit),)
    )
    assert wall_draw(limited, mains).fits
    assert not wall_draw(
        dataclasses.replace(limited, gpus=(dataclasses.replace(limited.gpus[0],
                                                                power_limit_w=limit + 10),)),
        mains,
    ).fits  # fmt: skip
    # The speed it costs is the power-limit model's curve (model/power_limit.py).
    cost = round((1 - (limit / 575) ** POWER_LIMIT_EXPONENT) * 100)
    assert f"about {cost}% slower matmuls" in finding.fix
    assert "circuit: us-240v-20a" in finding.fix
    assert one(build, "PSU.6", "us-240v-20a").severity.value == "info"


def test_psu_6_states_the_circuit_and_how_it_was_chosen() -> None:
    build = Build(gpus=(GPUGroup(RTX_4090, 1),), cpu=CPU_125, psu=CAT.find(PSU, "RM850x"))
    assumed = one(build, "PSU.6")
    assert assumed.severity.value == "info"
    assert "on us-15a (120 V, 15 A: 1,440 W continuous; assumed: no circuit given)" in (
        assumed.message
    )
    assert assumed.evidence["circuit_origin"] == "default"


def test_psu_1_judges_a_2800_w_unit_only_where_its_output_is_known() -> None:
    """The Super Flower 2800 W's 115 V rating was not found (catalog notes): on 120 V, PSU.1
    says it cannot judge; on 240 V it judges the 2,800 W."""
    psu = CAT.find(PSU, "Super Flower Leadex Titanium 2800W")
    assert psu.watts_at_115v is None
    build = Build(gpus=(GPUGroup(RTX_5090, 3),), cpu=CPU_125, psu=psu)
    low = one(build, "PSU.1", "us-20a")
    assert low.message.startswith("unknown: PSU size on us-20a")
    high = one(build, "PSU.1", "us-240v-30a")
    assert high.severity.value == "info" and high.evidence["psu_w"] == 2800


def test_psu_1_uses_a_stated_115_v_rating_on_120_v_mains() -> None:
    """A unit rated 2,000 W on 230 V and 1,600 W on 115 V carries a 1,700 W need on 240 V, not
    on 120 V."""
    psu = PSU(name="split unit", watts=2000, efficiency="platinum", watts_at_115v=1600,
              pcie_8pin=8)  # fmt: skip
    gpu = GPU(name="g", memory_gb=24, memory_bandwidth_gb_s=900, fp32_tflops=30, tdp_w=350)
    build = Build(gpus=(GPUGroup(gpu, 4),), cpu=CPU_125, psu=psu)
    # (4 x 350 + 140 + 125) x 1.1 = 1,831.5 W
    assert one(build, "PSU.1", "us-20a").severity.value == "error"
    assert one(build, "PSU.1", "us-240v-30a").severity.value == "info"


def test_psu_5_matches_nvidias_single_card_sizing_and_flags_two_5090s_on_1600_w() -> None:
    """CEM 5.0: a 12V-2x6 card may draw 3x its power for 100 us; an ATX 3.x PSU carries 200% of
    its rating that long. One RTX 4090 with a 125 W CPU on NVIDIA's 850 W: 3 x 450 + 125 + 45 =
    1,520 W within 1,700 W. One 5090 on NVIDIA's 1000 W: 1,725 + 125 + 57.5 = 1,907.5 W within
    2,000 W. Two 5090s on a 1600 W ATX 3.1 unit: 3,450 + 125 + 115 = 3,690 W, 15% over 3,200 W
    (past PSU.1's 10% allowance): a warning, with the power limit that fits."""
    atx3_850 = PSU(name="ATX 3.1 850 W", watts=850, efficiency="gold", pcie_12v_2x6=1)
    atx3_1000 = PSU(name="ATX 3.1 1000 W", watts=1000, efficiency="gold", pcie_12v_2x6=1)
    tx1600 = CAT.find(PSU, "Seasonic PRIME TX-1600 ATX 3.1")
    one_4090 = one(Build(gpus=(GPUGroup(RTX_4090, 1),), cpu=CPU_125, psu=atx3_850), "PSU.5")
    assert (one_4090.severity.value, one_4090.evidence["peak_w"]) == ("info", 1520)
    one_5090 = one(Build(gpus=(GPUGroup(RTX_5090, 1),), cpu=CPU_125, psu=atx3_1000), "PSU.5")
    assert one_5090.severity.value == "info"
    two = one(Build(gpus=(GPUGroup(RTX_5090, 2),), cpu=CPU_125, psu=tx1600), "PSU.5")
    assert (two.severity.value, two.evidence["peak_w"]) == ("warning", 3690)
    # (3,200 - 125 - 115) / (3 x 2) = 493 W, in 10 W steps: 490 W.
    assert two.fix is not None and two.fix.startswith("a power limit of 490 W per 12V-2x6 card")
    assert math.floor((3200 - 125 - 115) / 6 / 10) * 10 == 490


def test_psu_5_leaves_8_pin_cards_to_the_vendors_psu_figure() -> None:
    build = Build(
        gpus=(GPUGroup(CAT.find(GPU, "GeForce RTX 3090"), 2),), cpu=CPU_125,
        psu=CAT.find(PSU, "Seasonic PRIME TX-1600 ATX 3.1"),
    )  # fmt: skip
    assert check_build(build).by_rule("PSU.5") == ()
