"""Cooling rules for desktop builds: passive cards (COOL.1), open-air cards side by side
(GPU.5, COOL.3), blower and water summaries (COOL.6, COOL.4), a loop's radiators against its
heat (COOL.7) and the case's airflow against the heat it must move (COOL.8). A server
platform's chassis cools its GPUs by design, so these rules judge desktops only."""

from __future__ import annotations

from collections.abc import Iterator

from dlrig.enums import CoolerType, FormFactor
from dlrig.machine.loop import (
    RADIATOR_W_PER_SECTION,
    loop_radiators,
    radiator_sections,
    sections_for_heat,
)
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts, water_heat_w

OPEN_AIR_ERROR_FROM = 3  # COOL.3: "in 3-4 GPU builds ... avoid them at all costs"
GUIDE_SIDE_BY_SIDE_LOSS_PCT = 30  # GPU.5: "they run hot, about 30% slower"
# The flagship class: cards of this board power and up (RTX 3090 350 W, 4090 450 W, 5090 575 W,
# RX 7900 XTX 355 W). Puget: 4080/4090-class GeForce cards "may be difficult to configure in a
# system with more than two GPUs because of their cooling design and physical size"; Lambda
# (2020): "Your workstation should not exceed: 2x RTX 3090", 3x "likely possible with liquid
# cooling"; Wallner: "2 3080/3090" stacked (docs/sources/expert_builds.md 1.1, 1.3, 1.7).
FLAGSHIP_W = 350.0

# Air that carries heat_w out of a case warming by delta_t_c moves heat_w / (rho * c_p *
# delta_t_c): with air at 1.2 kg/m3 and 1,005 J/(kg K) and 1 m3/s = 2,118.9 CFM, that is
# 1.757 CFM per W at a 1 C rise (the electronics-cooling rule CFM = 3.16 x W / dT in F).
CFM_PER_W_PER_C = 2118.9 / (1.2 * 1005.0)
# The case air's rise over the room the airflow rule allows: 10 C, the same rise EKWB rates
# radiators at (COOL.7), so that a loop and a fan wall are judged alike.
CASE_AIR_RISE_C = 10.0
# Free-air rating of a common case fan per size (PCPartPicker's listings, 2025-07-23, via the
# docyx/pc-part-dataset scrape, data/csv/case-fan.csv @06ffc8e): ARCTIC P12 PWM PST 56.3 CFM
# (120 mm), ARCTIC P14 PST 72.8 CFM (140 mm). Free-air figures overstate what moves through
# filters and radiators, so airflow counted from them is an upper bound: a shortfall is real.
FAN_CFM_BY_MM = {120: 56.3, 140: 72.8}


def model_heat_loss(cooler: CoolerType, n_gpus: int) -> float:
    """The share of speed the model's estimate takes off cards of this cooler, n_gpus in one
    desktop case with no free slot between them (model/thermal.py at the shipped calibration):
    what the rules quote, so that a rule and `estimate` name one figure."""
    from dlrig.model.calibration import default_calibration
    from dlrig.model.thermal import thermal_factor

    return 1.0 - thermal_factor(cooler, n_gpus, default_calibration().thermal_factor)


@rule("COOL.1")
def passive_in_desktop(f: Facts) -> Iterator[Judgement]:
    """GPUs raise clocks until a temperature limit (usually 80 C), then slow down; a passive
    datacenter card has no fan and relies on a server's forced airflow to stay under it."""
    if not f.desktop:
        return
    # SXM/OAM modules are passive too, but cannot sit in a desktop at all (COMPAT.form).
    passive = [
        c for c in f.cards if c.cooler is CoolerType.PASSIVE and c.gpu.form is FormFactor.PCIE
    ]
    if passive:
        names = sorted({c.gpu.name for c in passive})
        yield error(
            f"{len(passive)} passive (fanless) card{'s' if len(passive) > 1 else ''} "
            f"({', '.join(names)}) in a desktop build: no airflow through the fins, so "
            "they throttle within seconds of training",
            {"passive_gpus": len(passive), "models": names},
            "a server platform with front-to-back airflow, or blower/workstation cards "
            "(set cooler: blower only if you fitted a fan shroud)",
        )


@rule("COOL.3")
def open_air_many(f: Facts) -> Iterator[Judgement]:
    """Blower coolers push hot air out of the case; open-air coolers recirculate it, so in 3-4
    GPU builds they run ever hotter and throttle (10-25% slower, COOL.1): avoid them there."""
    if not f.desktop:
        return
    n_open = len(f.open_air)
    if n_open >= OPEN_AIR_ERROR_FROM:
        yield error(
            f"{n_open} open-air GPUs in one case recirculate each other's heat: expect them to "
            "throttle, 10-25% slower",
            {"open_air_gpus": n_open, "expected_loss_pct": [10, 25]},
            "blower-style cards (e.g. workstation RTX A/Ada), water cooling, or at most 2 "
            "open-air cards with a free slot between them",
        )


@rule("GPU.5", reads=("motherboard.x16_slots",))
def open_air_side_by_side(f: Facts) -> Iterator[Judgement]:
    """Several cards side by side need blower-style coolers, or they run hot, about 30% slower,
    and wear out faster; with space between 2 GPUs, air is safe (COOL.3)."""
    if not f.desktop or f.n_gpus < 2 or not f.open_air:
        return
    if len(f.open_air) >= OPEN_AIR_ERROR_FROM:
        return  # COOL.3 already fails the build
    placement = f.placement
    if placement is None:
        yield unknown(
            f"spacing of {len(f.open_air)} open-air GPU(s) among {f.n_gpus}",
            "no motherboard given, so the slot spacing is unknown",
            "leave a free slot below each open-air card",
        )
        return
    open_air = set(f.open_air)
    tight = [
        (s.card, nxt.card)
        for k, (s, nxt) in enumerate(zip(placement.seats, placement.seats[1:], strict=False))
        if placement.free_slots_below(k) < 1 and (s.card in open_air or nxt.card in open_air)
    ]
    evidence: dict[str, object] = {"open_air_gpus": sorted(open_air), "adjacent_pairs": tight}
    if tight:
        # The guide's 30% is for cards left to run hot; the estimate counts what its
        # calibration takes off a throttled group, and the rule says the same figure.
        loss = model_heat_loss(CoolerType.OPEN_AIR, f.n_gpus)
        evidence["model_loss"] = round(loss, 4)
        evidence["guide_loss_pct"] = GUIDE_SIDE_BY_SIDE_LOSS_PCT
        yield warning(
            f"{len(tight)} pair{'s' if len(tight) > 1 else ''} of cards sit with no free slot "
            "between them and an open-air cooler among them: they heat each other, and the "
            f"estimate counts them {loss:.0%} slower for it (the guide's GPU.5: up to "
            f"{GUIDE_SIDE_BY_SIDE_LOSS_PCT}% when they run hot)",
            evidence,
            "move the cards a slot apart, or use blower cards",
        )
    else:
        yield info("the open-air cards have a free slot between them: air is safe", evidence)


@rule("COOL.6")
def blower_summary(f: Facts) -> Iterator[Judgement]:
    """One GPU: air. Several: blower air accepting a 10-15% loss, or water with none."""
    if not f.desktop or f.n_gpus < 2:
        return
    if all(c.cooler is CoolerType.BLOWER for c in f.cards):
        loss = model_heat_loss(CoolerType.BLOWER, f.n_gpus)
        yield info(
            f"{f.n_gpus} blower cards heat each other: the estimate counts {loss:.0%} lower "
            "clocks for it (the guide's COOL.6: 10-15%)",
            {"blower_gpus": f.n_gpus, "expected_loss_pct": [10, 15], "model_loss": round(loss, 4)},
            "water cooling removes the loss (COOL.4; a loop priced from its parts, COOL.7)",
        )


@rule("COOL.4")
def water_for_one(f: Facts) -> Iterator[Judgement]:
    """Water cooling is not worth it for 1 GPU or 2 spaced GPUs; for 4 GPUs it keeps even the
    hottest card cool (about USD 100 per GPU plus 50 up front)."""
    water = [c for c in f.cards if c.cooler is CoolerType.WATER]
    if water and f.n_gpus == 1 and f.desktop:
        yield info(
            "water cooling one GPU: air loses only 0-10% there (COOL.1)",
            {"water_gpus": 1},
            "an air-cooled card saves the loop's block, radiator, pump and fittings",
        )


@rule("COOL.7", reads=("gpu.tdp_w",))
def loop_radiator_area(f: Facts) -> Iterator[Judgement]:
    """A water loop moves its cards' heat through its radiators: EKWB rates its XE 240 at 350 W
    per 10 C of coolant over room air (1800 rpm fans), 175 W per 120 mm section. Several
    flagship (>= 350 W) cards in one desktop are cooled so only with that much radiator."""
    if not f.desktop:
        return
    heat_w = water_heat_w(f)
    if heat_w <= 0:
        return
    need = sections_for_heat(heat_w)
    flagships = sum(
        1 for c in f.cards if c.cooler is CoolerType.WATER and c.gpu.tdp_w >= FLAGSHIP_W
    )
    evidence: dict[str, object] = {
        "heat_w": round(heat_w),
        "w_per_section": RADIATOR_W_PER_SECTION,
        "sections_needed": need,
        "flagship_gpus": flagships,
    }
    what = (
        f"the water-cooled cards make {heat_w:,.0f} W: {need} x 120 mm of radiator at "
        f"{RADIATOR_W_PER_SECTION:.0f} W each (10 C coolant over room air)"
    )
    radiators = loop_radiators(f.build.loop)
    if not radiators:
        yield unknown(
            what,
            "the build names no radiators (loop:)",
            f"list the loop's parts under loop: (>= {need * 120} mm of radiator in all)",
        )
        return
    have = radiator_sections(radiators)
    evidence["sections"] = have
    if have < need:
        yield error(
            f"{what}; the loop has {have} ({have * RADIATOR_W_PER_SECTION:,.0f} W): the coolant "
            f"runs {heat_w / (have * RADIATOR_W_PER_SECTION) * 10:.0f} C over the room and the "
            "cards throttle",
            evidence,
            f"{need - have} x 120 mm more radiator (CASE.1 says whether the case takes it), or "
            "power limits",
        )
    else:
        yield info(f"{what}; the loop has {have}: enough", evidence)


@rule("COOL.8", reads=("gpu.tdp_w", "cpu.tdp_w"), errors=False)
def case_airflow(f: Facts) -> Iterator[Judgement]:
    """The case fans must carry out the heat the parts leave in the case air: 1.76 CFM per W
    at a 1 C rise (air's heat capacity), at most the fans' free-air rating. Blower cards
    exhaust their own heat; a loop's radiator fans move the water-cooled cards'."""
    if not f.desktop or not f.cards:
        return
    case = f.build.case
    in_case_w = sum(
        g.board_power_w * g.count for g in f.build.gpus if g.cooler is CoolerType.OPEN_AIR
    )
    cpu_w = f.build.cpu.tdp_w * f.build.cpu_count if f.build.cpu else 150.0
    heat_w = in_case_w + cpu_w
    need_cfm = heat_w * CFM_PER_W_PER_C / CASE_AIR_RISE_C
    evidence: dict[str, object] = {
        "heat_in_case_w": round(heat_w),
        "cfm_needed": round(need_cfm),
        "air_rise_c": CASE_AIR_RISE_C,
    }
    what = (
        f"{heat_w:,.0f} W stays in the case air (open-air cards and CPU): {need_cfm:,.0f} CFM "
        f"to hold it {CASE_AIR_RISE_C:.0f} C over the room"
    )
    if case is None or case.fan_mounts is None:
        yield unknown(what, "the case's fan positions are not known" if case else "no case given")
        return
    have_cfm = sum(FAN_CFM_BY_MM.get(m.size_mm, 0.0) * m.count for m in case.fan_mounts)
    evidence["cfm_at_most"] = round(have_cfm)
    if have_cfm + 1e-6 < need_cfm:
        yield warning(
            f"{what}; {case.name}'s fan positions move at most {have_cfm:,.0f} CFM (free-air "
            "ratings): the case air heats up and the cards throttle",
            evidence,
            "blower or water-cooled cards, fewer open-air cards, or a case with more fan positions",
        )
    else:
        yield info(f"{what}; {case.name}'s fans move up to {have_cfm:,.0f} CFM", evidence)
