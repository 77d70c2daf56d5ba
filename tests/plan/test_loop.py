"""plan/loop.py: a loop's radiators are the cheapest set that carries the cards' heat at
COOL.7's 175 W per 120 mm section and, given a case, the cheapest set its mounts take (CASE.1),
not the cheapest set overall that the case then cannot hold."""

from __future__ import annotations

from dlrig.catalog.schema import GPU, Case, LoopPart, RadiatorMount
from dlrig.enums import LoopRole
from dlrig.machine.loop import radiators_fit_case, sections_for_heat
from dlrig.plan.loop import plan_loop

CARD = GPU(name="Hot 24", price_usd=1600, memory_gb=24, memory_bandwidth_gb_s=1000,
           fp32_tflops=40, tdp_w=450, slots=3, length_mm=304)  # fmt: skip
PARTS = (
    LoopPart(name="Block", price_usd=150, role=LoopRole.GPU_BLOCK, slots=2, fits_gpus=("Hot 24",)),
    LoopPart(name="Radiator 480", price_usd=100, role=LoopRole.RADIATOR, radiator_mm=480),
    LoopPart(name="Radiator 360", price_usd=120, role=LoopRole.RADIATOR, radiator_mm=360),
    LoopPart(name="Radiator 240", price_usd=90, role=LoopRole.RADIATOR, radiator_mm=240),
    LoopPart(name="Pump", price_usd=150, role=LoopRole.PUMP),
    LoopPart(name="Fittings", price_usd=100, role=LoopRole.FITTINGS),
)  # fmt: skip
# Three 360 mm mounts (9 sections): room for the heat, but not for a 480 mm radiator.
TOWER_360 = Case(
    name="Three 360 mounts", price_usd=150, max_gpu_length_mm=420, expansion_slots=8,
    radiator_mounts=tuple(RadiatorMount(position=p, max_mm=360) for p in ("front", "top", "side")),
)  # fmt: skip
UNKNOWN_MOUNTS = Case(name="No spec page", price_usd=90, max_gpu_length_mm=420, expansion_slots=8)
HEAT_W = 3 * 450.0  # three 450 W cards


def test_three_450_w_cards_need_eight_sections() -> None:
    """COOL.7: 1,350 W at 175 W per 120 mm section (EKWB's XE 240 at 350 W per 10 C) is 7.7,
    so 8 sections."""
    assert sections_for_heat(HEAT_W) == 8


def test_the_cheapest_loop_overall_is_two_480s() -> None:
    """With no case to fit: two 480 mm radiators (8 sections, 200 USD) are the cheapest set of
    at least 8 sections; the loop is 3 blocks (450) + 200 + pump (150) + fittings (100)."""
    plan = plan_loop(CARD, 3, HEAT_W, PARTS).plan
    assert plan is not None
    assert plan.radiators_mm == (480, 480)
    assert plan.price_usd == 900


def test_a_case_of_360_mounts_gets_the_cheapest_set_it_mounts() -> None:
    """The case cannot take a 480 mm radiator (CASE.1), so its loop is 360 + 360 + 240 (8
    sections, 330 USD), cheaper than three 360s (360 USD): 1,030 USD in all, where a plan that
    kept the 480s would have left the case out."""
    assert radiators_fit_case((480, 480), TOWER_360) is False
    plan = plan_loop(CARD, 3, HEAT_W, PARTS, TOWER_360).plan
    assert plan is not None
    assert plan.radiators_mm == (360, 360, 240)
    assert radiators_fit_case(plan.radiators_mm, TOWER_360) is True
    assert plan.price_usd == 1030


def test_no_loop_for_a_case_whose_mounts_are_unknown() -> None:
    """A case without a spec page for its mounts is judged nothing (None), so no loop is
    planned in it rather than one it may not hold."""
    assert plan_loop(CARD, 3, HEAT_W, PARTS, UNKNOWN_MOUNTS).plan is None
