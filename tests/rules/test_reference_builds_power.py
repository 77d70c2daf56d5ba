"""Issue 35: `check` on the power side of the reference builds agrees with what their sources
reported (docs/sources/expert_builds.md section 5; the build files in
tests/fixtures/reference_builds/ say what each stands in for where the source is silent)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dlrig.machine import load_build
from dlrig.machine.model import Build
from dlrig.mains import find_mains
from dlrig.model.wall import circuits_that_carry, wall_draw
from dlrig.rules import CheckResult, check_build

BUILDS = Path(__file__).parents[1] / "fixtures" / "reference_builds"


def on(build: Build, circuit: str) -> Build:
    return dataclasses.replace(build, mains=find_mains(circuit, where="test", origin="test"))


def verdict(result: CheckResult, rule: str) -> str:
    (finding,) = result.by_rule(rule)
    return finding.severity.value


def test_rb12_puget_quad_3090_at_300_w_is_over_a_15_a_circuit() -> None:
    """Puget's four RTX 3090s at 300 W on a Xeon W-2255 and one EVGA 1600 W Platinum unit:
    1,717 W peak at the wall (The FPS Review, 2020-10-22), over the 1,440 W a 15 A / 120 V
    circuit carries for hours (NEC 210.19/210.20). dlrig: 4 x 300 + 165 = 1,365 W of sustained
    draw at 85% of the PSU's rating, 89.9% efficient (80 PLUS Platinum at 115 V: 92% at half
    load, 89% at full), 1,519 W at the wall: between the sustained readings reported for the
    same tests (1,362 W typical, 1,467 W in OctaneBench) and the 1,717 W peak. Puget: one
    1600 W unit is "definitely not something we would recommend": PSU.1 errors too."""
    result = check_build(load_build(BUILDS / "RB12-puget-quad-3090-300w.yaml"))
    (psu6,) = result.by_rule("PSU.6")
    assert psu6.severity.value == "error"
    assert psu6.evidence["dc_w"] == 1365.0
    assert psu6.evidence["wall_w"] == pytest.approx(1519, abs=1)
    assert 1467 < psu6.evidence["wall_w"] < 1717
    assert psu6.evidence["continuous_w"] == 1440
    assert verdict(result, "PSU.1") == "error"
    # Its first fix is the power limit Kinghorn settled on a month later: 280 W (RB12 b).
    assert psu6.fix is not None and psu6.fix.startswith("a power limit of 280 W per GPU")


def test_rb12_kinghorn_quad_3090_at_280_w_is_reasonable_for_a_15_a_line() -> None:
    """Kinghorn at 280 W: "reasonable for a single power supply and a modest US residential
    110V, 15A power line". dlrig: 4 x 280 + 150 (no CPU stated: PSU.1's 150 W) = 1,270 W at
    79% load, 90.2% efficient: 1,407 W at the wall, under 1,440 W; PSU.1 passes on one
    1600 W unit ((1,120 + 112 + 150) x 1.1 = 1,520 W)."""
    result = check_build(load_build(BUILDS / "RB12-puget-quad-3090-280w.yaml"))
    (psu6,) = result.by_rule("PSU.6")
    assert psu6.severity.value == "info"
    assert psu6.evidence["wall_w"] == pytest.approx(1407, abs=1)
    assert psu6.evidence["headroom_w"] > 0
    (psu1,) = result.by_rule("PSU.1")
    assert psu1.severity.value == "info"
    assert psu1.evidence["with_headroom_w"] == pytest.approx(1520.2, abs=0.1)


def test_rb01_tinybox_green_runs_on_two_outlets_power_limited_or_on_two_20_a_circuits() -> None:
    """tinybox green: "2x 1600W (two 120V outlets, can power limit for less)". Six RTX 4090s
    and a 32-core EPYC (225 W) draw 2,925 W; through Platinum supplies at 91% load (89.5%)
    3,268 W at the wall, 1,634 W on each of two outlets: over a 15 A outlet's 1,440 W and under
    a 20 A outlet's 1,920 W. On 15 A outlets dlrig's fix is the power limit tiny corp mentions
    (390 W a card, about 6% off the matmuls)."""
    build = load_build(BUILDS / "RB01-tinybox-green.yaml")
    result = check_build(build)
    (psu6,) = result.by_rule("PSU.6")
    assert psu6.severity.value == "error"
    assert psu6.evidence["per_circuit_w"] == pytest.approx(1634, abs=1)
    assert psu6.fix is not None and psu6.fix.startswith("a power limit of 390 W per GPU")
    assert verdict(check_build(on(build, "2x-us-20a")), "PSU.6") == "info"
    # One outlet of either kind does not carry it: the two outlets are needed.
    assert not wall_draw(build, find_mains("us-20a", where="t", origin="t")).fits


def test_rb02_tinybox_red_moved_from_one_outlet_to_two() -> None:
    """tinybox red: "1600W (one 120V outlet)" on 2023-06-08, "2x 1600W (two 120V outlets)" on
    2023-10-17. dlrig agrees with the move: six RX 7900 XTX (355 W) and the EPYC draw 2,355 W,
    2,600 W at the wall: 1,300 W on each of two 15 A outlets (fits); on one outlet PSU.6
    fails (PSU.1 takes the vendor's rating of a machine sold with its GPUs)."""
    build = load_build(BUILDS / "RB02-tinybox-red.yaml")
    result = check_build(build)
    assert verdict(result, "PSU.6") == "info"
    assert result.by_rule("PSU.6")[0].evidence["per_circuit_w"] == pytest.approx(1300, abs=1)
    assert verdict(result, "PSU.1") == "info"
    assert build.platform is not None
    one_outlet = dataclasses.replace(
        on(build, "us-15a"), platform=build.platform.model_copy(update={"psu_watts": 1600})
    )
    assert verdict(check_build(one_outlet), "PSU.6") == "error"


def test_rb03_tinybox_pro_needs_200_v() -> None:
    """tinybox pro: "4x 2000W, 200V+". Eight RTX 4090s and two Genoa CPUs (200 W each, the
    lowest-TDP Genoa: the source names none) draw 4,000 W: no single 120 V circuit carries it,
    nor two 20 A outlets; two 208 V / 30 A rack feeds do (2,128 W each of 4,992 W)."""
    build = load_build(BUILDS / "RB03-tinybox-pro.yaml")
    assert verdict(check_build(build), "PSU.6") == "info"
    for low in ("us-15a", "us-20a", "2x-us-15a", "2x-us-20a"):
        assert verdict(check_build(on(build, low)), "PSU.6") == "error", low
    us = circuits_that_carry(on(build, "us-15a"))
    assert us and all(find_mains(c, where="t", origin="t").circuit.volts >= 200 for c in us)


def test_rb09_wopr_draws_its_authors_3_5_kw_and_takes_four_circuits_on_120_v() -> None:
    """WOPR: seven RTX 4090s and an EPYC 7763 on four Corsair RM1000x, "about 3.5 kW" (the
    author's TDP sum). dlrig's sustained draw: 7 x 450 + 280 = 3,430 W (2% under it). On one
    15 A circuit it is far over; a PSU on each of four 15 A circuits carries it, which is what
    the fix says. PSU.1 finds the four 1000 W units short of the guide's margin (4,120 W): the
    author's own warning that multi-PSU builds are risky."""
    build = load_build(BUILDS / "RB09-wopr-7x4090.yaml")
    result = check_build(build)
    (psu6,) = result.by_rule("PSU.6")
    assert psu6.evidence["dc_w"] == 3430.0
    assert abs(psu6.evidence["dc_w"] - 3500) / 3500 < 0.03
    assert psu6.severity.value == "error"
    assert psu6.fix is not None and "circuit: 4x-us-15a with psu count 4" in psu6.fix
    assert verdict(check_build(on(build, "4x-us-15a")), "PSU.6") == "info"
    assert verdict(result, "PSU.1") == "error"


def test_rb10_autonomous_ai_4x_5090_stated_draw_needs_240_v() -> None:
    """autonomous-ai's 4x RTX 5090 Threadripper PRO box states a 2,750 W draw on a 4,000 W
    supply (README @c966c3b, 2026). With a 350 W Threadripper PRO 7975WX the sustained draw is
    4 x 575 + 350 = 2,650 W (4% under the stated figure); no 120 V circuit carries it, and the
    smallest US circuit that does is a 240 V / 20 A one (3,840 W continuous). The build file is
    engineer B's (RB10); this checks only its power, inline."""
    from dlrig.catalog.loader import builtin_catalog
    from dlrig.catalog.schema import CPU, GPU, PSU
    from dlrig.machine.model import GPUGroup

    cat = builtin_catalog()
    psu = PSU(name="4000 W supply", watts=4000, efficiency="platinum")
    build = Build(
        gpus=(GPUGroup(cat.find(GPU, "GeForce RTX 5090"), 4),),
        cpu=cat.find(CPU, "AMD Ryzen Threadripper PRO 7975WX"),
        psu=psu,
    )
    draw = wall_draw(build)
    assert draw.dc_w == 2650.0
    assert abs(draw.dc_w - 2750) / 2750 < 0.05
    assert not draw.fits
    assert circuits_that_carry(build)[0] == "us-240v-20a"
