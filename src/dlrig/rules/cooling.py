"""Cooling rules for desktop builds: passive cards (COOL.1), open-air cards side by side
(GPU.5, COOL.3), blower and water summaries (COOL.6, COOL.4). A server platform's chassis
cools its GPUs by design, so these rules judge desktops only."""

from __future__ import annotations

from collections.abc import Iterator

from dlrig.enums import CoolerType, FormFactor
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts

OPEN_AIR_ERROR_FROM = 3  # COOL.3: "in 3-4 GPU builds ... avoid them at all costs"
GUIDE_SIDE_BY_SIDE_LOSS_PCT = 30  # GPU.5: "they run hot, about 30% slower"


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
            "water cooling removes the loss (COOL.4: about USD 100 a GPU)",
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
            "an air-cooled card saves the ~USD 150 of the loop",
        )
