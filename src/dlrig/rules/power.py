"""Power rules: PSU.1 sizing, PSU.2 connectors, PSU.3 efficiency, PSU.5 transients, PSU.6 the
circuit at the wall, CO2.1 carbon."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

from dlrig.enums import FormFactor
from dlrig.machine.model import Build, GPUGroup, power_limit_range_w
from dlrig.mains import Mains, load_circuits
from dlrig.model.calibration import default_calibration
from dlrig.model.power import (
    ATX3_EXCURSION_100US,
    ATX_MAX_W,
    CEM5_EXCURSION,
    HEADROOM,
    LOW_LINE_KNOWN_MAX_W,
    OTHER_COMPONENTS_SHARE_OF_GPU,
    PSUSizing,
    next_psu_size_w,
    psu_capacity_w,
    size_build_psu,
    transient_peak,
)
from dlrig.model.wall import WallDraw, circuits_that_carry, wall_draw
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts

# One PCIe 8-pin plug is specified for 150 W; adapters to 12V-2x6 take one 8-pin per 150 W of
# the card's power (the RTX 4090's 450 W adapter has three, the 5090's 575 W one four).
PCIE_8PIN_W = 150.0
# An EPS (CPU 8-pin) input on a workstation/datacenter card is fed from two PCIe 8-pins by the
# vendor's adapter (NVIDIA ships a dual 8-pin PCIe to CPU 8-pin adapter with its PCIe cards).
PCIE_8PIN_PER_EPS = 2
# A PCIe card draws up to 75 W from the slot; above that it needs cables.
SLOT_POWER_W = 75.0

# PSU.5 warns only when the 100 us peak passes the PSU's rating by more than the 10% share
# PSU.1 allows for the rest of the PC (the peak counts that share, which is no measurement).
TRANSIENT_SLACK = OTHER_COMPONENTS_SHARE_OF_GPU

# PSU.3's worked example: a multi-GPU job running for two weeks.
TWO_WEEKS_H = 14 * 24


def _efficiency_at_half_load() -> dict[str, float]:
    """80 PLUS efficiency at 50% load by tier: the same table the energy model uses."""
    return default_calibration().psu_efficiency


def _vendor_sized(f: Facts) -> bool:
    """The build is a platform with exactly the GPUs its vendor sells it with."""
    platform = f.build.platform
    if platform is None or not platform.included_gpu:
        return False
    return f.n_gpus == platform.included_gpu_count and all(
        c.gpu.name == platform.included_gpu for c in f.cards
    )


@rule(
    "PSU.1",
    reads=(
        "gpu.tdp_w",
        "cpu.tdp_w",
        "psu.watts",
        "platform.psu_watts",
    ),
)
def psu_size(f: Facts) -> Iterator[Judgement]:
    """GPU + CPU watts, +10% for peaks and other parts, +10% margin, then the next size up; never
    below the GPU vendor's stated minimum system power (NVIDIA: 1000 W for an RTX 5090)."""
    if not f.cards:
        return
    sizing = size_build_psu(f.build)
    evidence = {
        "gpu_w": sizing.gpu_w,
        "cpu_w": sizing.cpu_w,
        "other_w": round(sizing.other_w, 1),
        "subtotal_w": round(sizing.subtotal_w, 1),
        "with_headroom_w": round(sizing.with_headroom_w, 1),
        "recommended_w": sizing.recommended_w,
    }
    cpu_note = "" if f.build.cpu else " (no CPU given: 150 W assumed)"
    vendor_note = ""
    if sizing.vendor_min_w is not None:
        evidence["vendor_min_w"] = round(sizing.vendor_min_w, 1)
        if sizing.vendor_min_w > sizing.with_headroom_w:
            vendor_note = f"; the GPU vendor asks for {sizing.vendor_min_w:.0f} W"
    need = (
        f"{sizing.gpu_w:.0f} W GPUs + {sizing.cpu_w:.0f} W CPU{cpu_note} + "
        f"{sizing.other_w:.0f} W peaks = {sizing.subtotal_w:.0f} W, +10% = "
        f"{sizing.with_headroom_w:.0f} W{vendor_note}; buy >= {sizing.recommended_w} W"
    )
    watts = f.build.psu_watts
    if watts is None:
        yield unknown(
            f"PSU size: {need}", "no PSU given", f"add a PSU of >= {sizing.recommended_w} W"
        )
        return
    evidence["psu_w"] = watts
    low_line = f.mains.circuit.low_line
    capacity = psu_capacity_w(f.build, low_line=low_line)
    if capacity is None:
        psu_name = f.build.psu.name if f.build.psu else "the PSU"
        yield unknown(
            f"PSU size on {f.mains.name}: {need}",
            f"{psu_name} is rated {watts:.0f} W on 200-240 V and publishes no rating for "
            f"{f.mains.circuit.volts:g} V mains (units above {LOW_LINE_KNOWN_MAX_W:.0f} W "
            "reach their rating only on 200-240 V)",
            "run it on a 200-240 V circuit (--circuit us-240v-20a, eu-16a, ...), or pick a PSU "
            f"rated for >= {sizing.recommended_w} W at 115 V",
        )
        return
    if capacity < watts:
        evidence["psu_w_on_circuit"] = capacity
    if capacity < sizing.required_w and _vendor_sized(f):
        # The guide's margin is for parts a user combines; a system sold with its GPUs is
        # power-validated by its vendor at the rating it quotes.
        yield info(
            f"{need}; {f.build.platform.name if f.build.platform else 'the system'} is rated "
            f"{watts:.0f} W by its vendor with these GPUs",
            evidence,
        )
        return
    on = (
        f" on {f.mains.circuit.volts:g} V mains ({watts:.0f} W on 200-240 V)"
        if capacity < watts
        else ""
    )
    if capacity < sizing.required_w:
        yield error(
            f"{need}; the PSU gives {capacity:.0f} W{on}",
            evidence,
            _psu_fix(f, sizing, capacity),
        )
        return
    yield info(f"{need}; the PSU gives {capacity:.0f} W{on}: enough", evidence)


def _psu_fix(f: Facts, sizing: PSUSizing, watts: float) -> str:
    """What to buy or change when the PSU is too small, in sizes that exist: one unit up to
    ATX_MAX_W, else two PSUs; and, whenever the present PSU carries the GPUs at a limit the
    cards take, that power limit as the build file writes it (`power_limit_w`)."""
    options = []
    largest = LOW_LINE_KNOWN_MAX_W if f.mains.circuit.low_line else ATX_MAX_W
    if sizing.recommended_w <= largest:
        options.append(f"use a PSU of >= {sizing.recommended_w} W (or fewer/lower-power GPUs)")
    else:
        if sizing.recommended_w <= ATX_MAX_W:
            options.append(f"a PSU of >= {sizing.recommended_w} W on 200-240 V mains")
        half = next_psu_size_w(sizing.required_w / 2)
        options.append(
            f"two PSUs of >= {half} W each (psu: {{model: ..., count: 2}}, a dual-PSU case)"
        )
    limit = power_limit_that_fits(f, sizing, watts)
    if limit is not None:
        stock_w = min(c.gpu.tdp_w for c in f.cards)
        options.append(
            f"a power limit of {limit} W per GPU: power_limit_w: {limit} on each gpus entry "
            f"(nvidia-smi -pl {limit}; {limit / stock_w:.0%} of stock power, so slower)"
        )
    return "; or ".join(options)


def power_limit_that_fits(f: Facts, sizing: PSUSizing, watts: float) -> int | None:
    """PSU.1 inverted: the highest per-GPU power limit (a multiple of 10 W) at which the present
    PSU passes, when every card takes it (None: none does, or no limit is needed)."""
    if not f.cards:
        return None
    # The GPUs' total board power the PSU carries with both of PSU.1's 10% steps, and within
    # the GPU vendor's minimum system power (the rest of the PC plus the cards' power).
    gpu_budget_w = (watts / (1 + HEADROOM) - sizing.cpu_w) / (1 + OTHER_COMPONENTS_SHARE_OF_GPU)
    if sizing.vendor_min_w is not None:
        gpu_budget_w = min(gpu_budget_w, watts - (sizing.vendor_min_w - sizing.gpu_w))
    limit = math.floor(gpu_budget_w / f.n_gpus / 10) * 10
    lowest = max(power_limit_range_w(c.gpu)[0] for c in f.cards)
    stock = min(c.gpu.tdp_w for c in f.cards)
    return limit if lowest <= limit < stock else None


def _adapter_8pins(tdp_w: float, connectors: int) -> int:
    """8-pin plugs a 12V-2x6 adapter needs for a card of tdp_w with that many connectors."""
    return connectors * math.ceil(tdp_w / connectors / PCIE_8PIN_W)


@rule("PSU.2", reads=("gpu.tdp_w",))
def psu_connectors(f: Facts) -> Iterator[Judgement]:
    """The PSU needs enough PCIe power connectors (8-pin, 6-pin, 12VHPWR/12V-2x6) for every GPU,
    even when its wattage suffices."""
    cards = [c for c in f.cards if c.gpu.form is FormFactor.PCIE]
    if not cards or not f.desktop:
        return  # SXM/OAM modules and server platforms take power from the baseboard/chassis
    unknown_cards = sorted(
        {
            c.gpu.name
            for c in cards
            if c.gpu.tdp_w > SLOT_POWER_W
            and not (
                c.gpu.power_8pin + c.gpu.power_6pin + c.gpu.power_12v_2x6 + c.gpu.power_eps_8pin
            )
        }
    )
    if unknown_cards:
        yield unknown("GPU power connectors", f"not listed for {', '.join(unknown_cards)}")
        return
    need_2x6 = sum(c.gpu.power_12v_2x6 for c in cards)
    need_8 = sum(c.gpu.power_8pin + c.gpu.power_6pin for c in cards)
    need_eps = sum(c.gpu.power_eps_8pin for c in cards)
    adapter_per_2x6 = [
        _adapter_8pins(c.gpu.tdp_w, c.gpu.power_12v_2x6) // c.gpu.power_12v_2x6
        for c in cards
        for _ in range(c.gpu.power_12v_2x6)
    ]
    psu = f.build.psu
    if psu is None:
        yield unknown("PSU connectors", "no PSU given")
        return
    have_2x6 = psu.pcie_12v_2x6 * f.build.psu_count
    have_8 = psu.pcie_8pin * f.build.psu_count
    if have_2x6 == 0 and have_8 == 0:
        yield unknown("PSU connectors", f"{psu.name} lists no PCIe connector counts")
        return
    # Native 12V-2x6 plugs go to the hungriest cards; the rest are fed by 8-pin adapters.
    adapter_per_2x6.sort(reverse=True)
    via_adapter = adapter_per_2x6[have_2x6:]
    need_total_8 = need_8 + sum(via_adapter) + PCIE_8PIN_PER_EPS * need_eps
    evidence = {
        "gpu_12v_2x6": need_2x6,
        "gpu_8pin_or_6pin": need_8,
        "gpu_eps_8pin": need_eps,
        "psu_12v_2x6": have_2x6,
        "psu_8pin": have_8,
        "8pin_needed": need_total_8,
    }
    wants = []
    if need_2x6:
        wants.append(f"{need_2x6}x 12V-2x6")
    if need_8:
        wants.append(f"{need_8}x 8/6-pin")
    if need_eps:
        wants.append(f"{need_eps}x EPS 8-pin (2x PCIe 8-pin each by adapter)")
    adapted = f" ({len(via_adapter)} of the 12V-2x6 by adapter)" if via_adapter else ""
    summary = (
        f"the GPUs need {', '.join(wants)}; the PSU has {have_2x6}x 12V-2x6 and {have_8}x "
        f"8-pin, and {need_total_8}x 8-pin are needed{adapted}"
    )
    if need_total_8 > have_8:
        yield error(
            summary,
            evidence,
            "pick a PSU with more PCIe connectors (a 12V-2x6 per RTX 40/50 card), or a second PSU",
        )
    else:
        yield info(summary + ": enough", evidence)


@rule(
    "PSU.3",
    reads=(
        "psu.efficiency",
        "gpu.tdp_w",
        "cpu.tdp_w",
    ),
)
def psu_efficiency(f: Facts) -> Iterator[Judgement]:
    """Efficiency pays for many GPUs running long: two weeks of a 4-GPU system at 1000-1500 W
    is 300-500 kWh, and an 80% efficient PSU adds 18-26 EUR to it."""
    if f.n_gpus < 2:
        return  # one GPU costs far less (the guide's own caveat)
    sizing = size_build_psu(f.build)
    tier = None
    if f.build.psu is not None:
        tier = f.build.psu.efficiency.lower()
    elif f.platform is not None:
        tier = f.platform.psu_efficiency.lower()
    draw_w = sizing.subtotal_w
    kwh = draw_w * TWO_WEEKS_H / 1000.0
    price = f.build.prices.electricity_per_kwh
    currency = f.build.prices.currency
    efficiency = _efficiency_at_half_load()
    if tier is None or tier not in efficiency:
        yield unknown("PSU efficiency", "no PSU or no 80 PLUS tier given")
        return
    eff = efficiency[tier]
    wall_kwh = kwh / eff
    loss_cost = (wall_kwh - kwh) * price
    evidence = {
        "draw_w": round(draw_w),
        "hours": TWO_WEEKS_H,
        "dc_kwh": round(kwh, 1),
        "efficiency": eff,
        "wall_kwh": round(wall_kwh, 1),
        "loss_cost": round(loss_cost, 2),
        "currency": currency,
    }
    message = (
        f"two weeks at {draw_w:.0f} W use {kwh:.0f} kWh ({kwh * price:.0f} {currency}); "
        f"an 80 PLUS {tier} PSU (~{eff:.0%}) adds {wall_kwh - kwh:.0f} kWh "
        f"({loss_cost:.0f} {currency})"
    )
    if eff < efficiency["gold"] and f.n_gpus >= 3:
        yield warning(message, evidence, "a Platinum or Titanium PSU pays for itself here")
    else:
        yield info(message, evidence)


@rule("PSU.5", reads=("gpu.tdp_w", "cpu.tdp_w", "psu.watts"))
def psu_transients(f: Facts) -> Iterator[Judgement]:
    """GPU power excursions: PCIe CEM 5.0 lets a 12V-2x6 card draw 3x its power for 100 us,
    and an ATX 3.x PSU must carry 200% of its rating that long; data-parallel GPUs spike
    together."""
    cards = [g for g in f.build.gpus if g.gpu.power_12v_2x6]
    if not cards or not f.desktop:
        return  # 8-pin cards: the vendor's recommended PSU (PSU.1) covers them
    psu = f.build.psu
    if psu is None:
        yield unknown("PSU transients", "no PSU given")
        return
    capacity = psu_capacity_w(f.build, low_line=f.mains.circuit.low_line)
    if capacity is None:
        yield unknown("PSU transients", f"{psu.name}'s rating on {f.mains.name} is not known")
        return
    peak = transient_peak(f.build)
    spiking = sum(g.count for g in cards)
    evidence = {
        "peak_w": round(peak.peak_w),
        "cards_spiking": spiking,
        "excursion": CEM5_EXCURSION,
        "psu_w": capacity,
    }
    what = (
        f"{spiking} 12V-2x6 card{'s' if spiking > 1 else ''} at CEM 5.0's "
        f"{CEM5_EXCURSION:g}x for 100 us, with the CPU and the rest: {peak.peak_w:,.0f} W"
    )
    if not psu.pcie_12v_2x6:
        yield info(
            f"{what}; {psu.name} has no 12V-2x6 connector, and ATX 3.0 specifies excursions "
            "only for units with one: its tolerance is not stated (the GPU vendor's "
            "recommended PSU, PSU.1, is what applies)",
            evidence,
        )
        return
    rated = ATX3_EXCURSION_100US * capacity
    evidence["psu_excursion_w"] = rated
    if peak.peak_w <= rated + 1e-6:
        yield info(
            f"{what}, within the {rated:,.0f} W an ATX 3.x {capacity:.0f} W PSU carries for 100 us",
            evidence,
        )
        return
    if peak.peak_w <= rated * (1 + TRANSIENT_SLACK):
        # The peak's "rest" is PSU.1's 10% share, a guess: within it, no confident finding.
        yield info(
            f"{what}: at the edge of the {rated:,.0f} W an ATX 3.x {capacity:.0f} W PSU "
            "carries for 100 us (within PSU.1's 10% allowance for the rest of the PC)",
            evidence,
        )
        return
    fixes = []
    if not f.errors_only:
        limit = _transient_limit(cards, peak.peak_w, rated)
        if limit is not None:
            fixes.append(f"a power limit of {limit} W per 12V-2x6 card (power_limit_w: {limit})")
        fixes.append(
            f"a PSU of >= {next_psu_size_w(peak.peak_w / ATX3_EXCURSION_100US)} W, or a second "
            "PSU for half the cards"
        )
    yield warning(
        f"{what}: over the {rated:,.0f} W an ATX 3.x {capacity:.0f} W PSU is specified to carry "
        "for 100 us; coinciding spikes can trip its over-current protection (a shutdown "
        "mid-run)",
        evidence,
        "; or ".join(fixes) or None,
    )


def _transient_limit(cards: list[GPUGroup], peak_w: float, rated_w: float) -> int | None:
    """The highest per-card limit (10 W steps) at which the spiking cards' peak fits."""
    spiking_w = sum(g.board_power_w * g.count for g in cards)
    n = sum(g.count for g in cards)
    rest_w = peak_w - CEM5_EXCURSION * spiking_w
    per_card = (rated_w - rest_w) / (CEM5_EXCURSION * n)
    limit = math.floor(per_card / 10) * 10
    lowest = max(power_limit_range_w(g.gpu)[0] for g in cards)
    stock = min(g.board_power_w for g in cards)
    return limit if lowest <= limit < stock else None


@rule(
    "PSU.6",
    reads=("gpu.tdp_w", "cpu.tdp_w", "psu.watts", "psu.efficiency"),
)
def circuit(f: Facts) -> Iterator[Judgement]:
    """A continuous load (3 h or more) may use 80% of its circuit's breaker (NEC 210.19 and
    210.20: 1,440 W on 15 A at 120 V); a training run is one, drawn through the PSU's losses."""
    if not f.cards and f.build.cpu is None:
        return
    draw = wall_draw(f.build, f.mains)
    evidence = _wall_evidence(draw)
    where = _mains_phrase(f.mains)
    node = " per node" if f.build.nodes > 1 else ""
    share = (
        f", {draw.per_circuit_w:,.0f} W on the busiest of {draw.circuits_used} circuits"
        if draw.circuits_used > 1 or f.mains.count > 1
        else ""
    )
    message = (
        f"{draw.wall_w:,.0f} W at the wall{node} ({draw.dc_w:,.0f} W of GPUs and CPU through "
        f"{'an assumed ' if draw.tier_assumed else 'a '}{draw.psu_tier} PSU at "
        f"{draw.efficiency:.1%}){share}, on {where}"
    )
    if draw.fits:
        yield info(f"{message}: {draw.headroom_w:,.0f} W to spare", evidence)
        return
    fix = None if f.errors_only else "; or ".join(_circuit_fixes(f, draw))
    yield error(
        f"{message}: {-draw.headroom_w:,.0f} W over what it carries for hours (the breaker's "
        f"{f.mains.circuit.nameplate_w:,.0f} W is for minutes, not a training run)",
        evidence,
        fix,
    )


def _mains_phrase(mains: Mains) -> str:
    """'us-15a (120 V, 15 A: 1,440 W continuous; assumed: no circuit given)'."""
    origin = {
        "default": "assumed: no circuit given",
        "build file": "from the build file",
    }.get(mains.origin, f"from {mains.origin}")
    return f"{mains.describe()[:-1]}; {origin})"


def _wall_evidence(draw: WallDraw) -> dict[str, object]:
    return {
        "circuit": draw.mains.name,
        "circuit_origin": draw.mains.origin,
        "volts": draw.mains.circuit.volts,
        "continuous_w": draw.continuous_w,
        "dc_w": round(draw.dc_w, 1),
        "psu_tier": draw.psu_tier,
        "psu_efficiency": round(draw.efficiency, 4),
        "wall_w": round(draw.wall_w, 1),
        "per_circuit_w": round(draw.per_circuit_w, 1),
        "headroom_w": round(draw.headroom_w, 1),
    }


def _with_limit(build: Build, limit_w: float) -> Build:
    gpus = tuple(
        dataclasses.replace(g, power_limit_w=min(limit_w, g.board_power_w)) for g in build.gpus
    )
    return dataclasses.replace(build, gpus=gpus)


def circuit_power_limit(build: Build, mains: Mains) -> int | None:
    """The highest per-GPU power limit (10 W steps) at which the node runs on `mains` for hours,
    every card taking it (None: no limit needed, or none the cards take is low enough)."""
    if not build.gpus or wall_draw(build, mains).fits:
        return None
    stock = max(g.board_power_w for g in build.gpus)
    lowest = max(power_limit_range_w(g.gpu)[0] for g in build.gpus)
    limit = math.floor(stock / 10) * 10
    while limit >= lowest:
        if wall_draw(_with_limit(build, limit), mains).fits:
            return limit
        limit -= 10
    return None


def _circuit_fixes(f: Facts, draw: WallDraw) -> list[str]:
    """What brings the node under: a power limit (and its cost), a second circuit, a 200-240 V
    line, fewer GPUs."""
    out: list[str] = []
    build, mains = f.build, f.mains
    limit = circuit_power_limit(build, mains)
    if limit is not None:
        # Here, not at the top: power_limit brings the model's rates, which a check of a build
        # that fits its circuit never reads.
        from dlrig.model.power_limit import POWER_LIMIT_EXPONENT

        stock = max(g.gpu.tdp_w for g in build.gpus)
        speed = (limit / stock) ** POWER_LIMIT_EXPONENT
        out.append(
            f"a power limit of {limit} W per GPU (power_limit_w: {limit}; nvidia-smi -pl "
            f"{limit}): about {1 - speed:.0%} slower matmuls (model/power_limit.py)"
        )
    more = _more_circuits(build, mains)
    if more is not None:
        supplies = (
            f" with psu count {more.count} (a PSU on each circuit, as tinybox runs two 120 V "
            "outlets)"
            if build.psu is not None
            else " (the server's supplies spread over them)"
        )
        out.append(f"more circuits: circuit: {more.name}{supplies}")
    high = [
        c
        for c in circuits_that_carry(build, mains)
        if not next(x for x in load_circuits() if x.name == c).low_line
    ]
    if mains.circuit.low_line and high:
        out.append(f"a 200-240 V line: circuit: {high[0]}")
    fewer = _fewest_removed(build, mains)
    if fewer is not None:
        out.append(f"{fewer} GPU{'s' if fewer > 1 else ''}: what {mains.name} carries")
    return out


# More independent circuits than this for one machine is an electrician's job, not a fix.
MAX_FIX_CIRCUITS = 8


def _more_circuits(build: Build, mains: Mains) -> Mains | None:
    """The fewest circuits of the mains' kind (more than it has) that carry the node at
    stock power, a PSU on each (a server's supplies spread over them); None: none up to
    MAX_FIX_CIRCUITS do."""
    for count in range(mains.count + 1, MAX_FIX_CIRCUITS + 1):
        trial = Mains(circuit=mains.circuit, count=count)
        spread = (
            dataclasses.replace(build, psu_count=max(build.psu_count, count))
            if build.psu is not None
            else build
        )
        if wall_draw(spread, trial).fits:
            return trial
    return None


def _fewest_removed(build: Build, mains: Mains) -> int | None:
    """The most GPUs the mains carries at stock power, taking cards off the first group."""
    if not build.gpus:
        return None
    first, rest = build.gpus[0], build.gpus[1:]
    for keep in range(first.count - 1, 0, -1):
        trial = dataclasses.replace(build, gpus=(dataclasses.replace(first, count=keep), *rest))
        if wall_draw(trial, mains).fits:
            return trial.gpu_count
    return None


@rule(
    "CO2.1",
    reads=(
        "gpu.tdp_w",
        "cpu.tdp_w",
    ),
)
def carbon(f: Facts) -> Iterator[Judgement]:
    """GPUs running around the clock can outweigh a person's travel in carbon: report it."""
    if f.n_gpus < 2:
        return
    sizing = size_build_psu(f.build)
    kwh_year = sizing.subtotal_w * f.build.nodes * 24 * 365 / 1000.0
    co2_t = kwh_year * f.build.prices.co2_kg_per_kwh / 1000.0
    yield info(
        f"running around the clock: {kwh_year:,.0f} kWh and {co2_t:.1f} t CO2 a year at "
        f"{f.build.prices.co2_kg_per_kwh} kg/kWh",
        {"kwh_per_year": round(kwh_year), "co2_t_per_year": round(co2_t, 2)},
        "a low-carbon electricity tariff or certified offsets cover it",
    )
