"""Physical fit: slots and spacing on the board (MB.1), the case's slots, length and radiators
(COMPAT.slots, COMPAT.length, CASE.1), module form (COMPAT.form) and server platforms
(COMPAT.platform)."""

from __future__ import annotations

from collections.abc import Iterator

from dlrig.enums import FormFactor, Interconnect
from dlrig.machine.fit import board_fits_case, card_fits_case, cards_fit_slots
from dlrig.machine.loop import (
    case_sections,
    loop_radiators,
    radiators_fit_case,
    sections_for_heat,
)
from dlrig.machine.topology import DEFAULT_CARD_SLOTS
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts, water_heat_w

MAX_DESKTOP_GPUS = 4  # MB.1: "usually at most 4 GPUs per system even with more slots"


@rule("MB.1", reads=("motherboard.x16_slots",))
def board_slots(f: Facts) -> Iterator[Judgement]:
    """Enough PCIe slots for the GPUs, with spacing that leaves room for 2-slot-wide cards;
    usually at most 4 GPUs per system."""
    if not f.cards or not f.desktop:
        return
    if f.n_gpus > MAX_DESKTOP_GPUS:
        # The guide's "usually at most 4 GPUs per system even with more slots": the slots
        # are judged below; past 4 the power, heat and lanes of one desktop are the concern
        # (the message said "boards and cases take at most 4" beside 5 single-slot RTX A4000
        # seated on a Supermicro H12SSL-i in a Corsair 4000D).
        yield warning(
            f"{f.n_gpus} GPUs in one desktop: more than the {MAX_DESKTOP_GPUS} the guide's MB.1 "
            "advises per system even where the slots take them (power, heat and lanes)",
            {"gpus": f.n_gpus, "advised_max": MAX_DESKTOP_GPUS},
            "a server platform for more than 4 GPUs",
        )
    board = f.build.motherboard
    placement = f.placement
    if board is None or placement is None:
        yield unknown(f"slots for {f.n_gpus} GPUs", "no motherboard given")
        return
    positions = [s.position for s in sorted(board.x16_slots, key=lambda s: s.position)]
    cards = [c for c in f.cards if c.gpu.form is FormFactor.PCIE]  # modules: COMPAT.form
    widths = [c.width_slots for c in cards]
    if not cards:
        return
    assumed = (
        f" (width {DEFAULT_CARD_SLOTS} assumed where unknown)" if placement.widths_assumed else ""
    )
    evidence = {
        "x16_slot_positions": positions,
        "card_widths_slots": widths,
        "seated_at": [s.slot.position for s in placement.seats],
        "unplaced": len(placement.unplaced),
    }
    if len(positions) < len(cards):
        yield error(
            f"{board.name} has {len(positions)} x16 slots for {len(cards)} GPUs",
            evidence,
            "a board with more x16 slots, or fewer GPUs",
        )
    elif placement.unplaced:
        yield error(
            f"only {len(placement.seats)} of {len(cards)} cards fit: {max(widths)}-slot-wide cards"
            f" on x16 slots at positions {', '.join(map(str, positions))}{assumed}",
            evidence,
            "2-slot cards (blower workstation cards), or a board with wider slot spacing",
        )
    else:
        seated = ", ".join(str(s.slot.position) for s in placement.seats)
        plural = "s" if len(cards) > 1 else ""
        yield info(
            f"{len(cards)} card{plural} seated at slot position{plural} {seated}{assumed}",
            evidence,
        )


@rule(
    "COMPAT.slots",
    reads=(
        "case.expansion_slots",
        "motherboard.x16_slots",
    ),
)
def case_slots(f: Facts) -> Iterator[Judgement]:
    """The case's expansion-slot openings must reach below the lowest card's cooler."""
    if not f.cards or not f.desktop:
        return
    case = f.build.case
    if case is None:
        yield unknown("whether the case has enough expansion slots", "no case given")
        return
    placement = f.placement
    if placement is not None and placement.seats:
        bottom = placement.bottom_slot
        basis = "the lowest card's cooler ends at slot"
    else:
        bottom = sum(c.width_slots for c in f.cards)
        basis = "the cards are, together, slots wide:"
    evidence = {"needed_slots": bottom, "case_expansion_slots": case.expansion_slots}
    if not cards_fit_slots(bottom, case):
        yield error(
            f"{basis} {bottom}; {case.name} has {case.expansion_slots} expansion slots",
            evidence,
            "a case with more expansion slots (8+ for 4 dual-slot cards)",
        )


@rule("COMPAT.length", reads=("case.max_gpu_length_mm",))
def case_length(f: Facts) -> Iterator[Judgement]:
    """The case must take the GPUs' full length (check the dimensions)."""
    if not f.cards or not f.desktop:
        return
    case = f.build.case
    lengths = [c.gpu.length_mm for c in f.cards if c.gpu.length_mm is not None]
    if case is None:
        yield unknown("whether the GPUs fit the case", "no case given")
        return
    if len(lengths) < f.n_gpus:
        yield unknown("whether the GPUs fit the case", "a GPU's length is not listed")
        return
    longest = max(lengths)
    evidence = {"longest_gpu_mm": longest, "case_max_gpu_mm": case.max_gpu_length_mm}
    if not card_fits_case(longest, case):
        yield error(
            f"a {longest:.0f} mm GPU; {case.name} takes up to {case.max_gpu_length_mm:.0f} mm",
            evidence,
            "a larger case, or a shorter card",
        )


@rule("COMPAT.case", reads=("case.form_factors", "motherboard.form_factor"))
def case_takes_board(f: Facts) -> Iterator[Judgement]:
    """The case must take the board's form factor (an E-ATX board does not fit an ATX case)."""
    board, case = f.build.motherboard, f.build.case
    if board is None or case is None or not f.desktop:
        return
    if not board_fits_case(board, case):
        yield error(
            f"{board.name} is {board.form_factor}; {case.name} takes "
            f"{', '.join(case.form_factors)}",
            {"board_form_factor": board.form_factor, "case_form_factors": list(case.form_factors)},
            f"a case that takes {board.form_factor} boards",
        )


@rule("CASE.1", reads=("gpu.tdp_w",))
def case_radiators(f: Facts) -> Iterator[Judgement]:
    """Custom water cooling needs room for its radiators in the case: the loop's own, or as
    many 120 mm sections as the cards' heat needs (COOL.7's 175 W each)."""
    if not f.desktop:
        return
    heat_w = water_heat_w(f)
    if heat_w <= 0:
        return
    case = f.build.case
    need = sections_for_heat(heat_w)
    if case is None:
        yield unknown(f"room for {need} x 120 mm of radiator", "no case given")
        return
    radiators = loop_radiators(f.build.loop)
    evidence: dict[str, object] = {
        "heat_w": round(heat_w),
        "sections_needed": need,
        "case_sections": case_sections(case),
    }
    if radiators:
        evidence["radiators_mm"] = list(radiators)
        fits = radiators_fit_case(radiators, case)
        what = f"the loop's radiators ({' + '.join(f'{mm} mm' for mm in radiators)})"
    else:
        space = case_sections(case)
        fits = None if space is None else space >= need
        what = f"{need} x 120 mm of radiator for {heat_w:,.0f} W"
    if fits is None:
        yield unknown(
            f"room for {what} in {case.name}",
            "its radiator mounts are not known (no vendor spec page read)",
            "give the case's radiator_mounts ({position, max_mm} each) with --catalog",
        )
    elif not fits:
        yield error(
            f"{what} do{'' if radiators else 'es'} not fit {case.name} "
            f"({case_sections(case)} x 120 mm of mounts)",
            evidence,
            "a case with more radiator mounts (a full tower that takes 480 mm radiators at "
            "front, top and bottom), or an external radiator",
        )
    else:
        yield info(f"{what} fit{'' if radiators else 's'} {case.name}", evidence)


@rule("COMPAT.form", reads=("platform.gpu_form",))
def module_form(f: Facts) -> Iterator[Judgement]:
    """SXM and OAM GPUs are modules on a server baseboard, not cards: they need a platform of
    that form; PCIe cards need PCIe slots."""
    modules = sorted({c.gpu.name for c in f.cards if c.gpu.form is not FormFactor.PCIE})
    platform = f.platform
    if platform is None:
        if not modules:
            return
        these = f"{', '.join(modules)} {'is a module' if len(modules) == 1 else 'are modules'}"
        if f.build.measured is not None:
            # A probed machine: the module ran there, so its baseboard exists; the probe cannot
            # name it (PSU, case and board are not probed).
            yield info(
                f"{these} (SXM/OAM) that the probe saw running: its server baseboard is there, "
                "though the build does not name it",
                {"modules": modules, "probed": f.build.measured.date},
                "name the platform (`platform:`) for the rules that read it",
            )
        else:
            yield error(
                f"{these} (SXM/OAM), not a PCIe card: it needs a server baseboard",
                {"modules": modules},
                "a server platform of that form (HGX/OAM), or the PCIe version of the GPU",
            )
        return
    wrong = sorted({c.gpu.name for c in f.cards if c.gpu.form is not platform.gpu_form})
    if wrong:
        yield error(
            f"{platform.name} takes {platform.gpu_form.value.upper()} GPUs; "
            f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not",
            {"platform_form": platform.gpu_form.value, "gpus": wrong},
            f"{platform.gpu_form.value.upper()} GPUs on this platform, or another platform",
        )


@rule("COMPAT.platform", reads=("platform.max_gpus",))
def platform_fit(f: Facts) -> Iterator[Judgement]:
    """A server platform sets the GPU count, card width, board, power and cooling."""
    platform = f.platform
    if platform is None:
        return
    if f.n_gpus > platform.max_gpus:
        yield error(
            f"{f.n_gpus} GPUs; {platform.name} takes {platform.max_gpus}",
            {"gpus": f.n_gpus, "max_gpus": platform.max_gpus},
            f"at most {platform.max_gpus} GPUs per node (add nodes for more)",
        )
    if platform.gpu_max_slots is not None:
        wide = sorted({c.gpu.name for c in f.cards if (c.gpu.slots or 0) > platform.gpu_max_slots})
        if wide:
            yield error(
                f"{', '.join(wide)} wider than the {platform.gpu_max_slots} slots each GPU bay of "
                f"{platform.name} takes",
                {"gpu_max_slots": platform.gpu_max_slots, "gpus": wide},
                f"cards of <= {platform.gpu_max_slots} slots",
            )
    if platform.included_gpu and f.cards:
        # A build that lists no GPUs gets the bundled ones from the resolver.
        names = {c.gpu.name for c in f.cards}
        if names != {platform.included_gpu}:
            yield warning(
                f"{platform.name} comes with {platform.included_gpu}; the build lists "
                f"{', '.join(sorted(names))}",
                {"included_gpu": platform.included_gpu, "gpus": sorted(names)},
                "the platform's own GPUs, or a platform sold without GPUs",
            )
    ignored = [k for k, v in (("motherboard", f.build.motherboard), ("case", f.build.case)) if v]
    if ignored:
        yield info(
            f"{platform.name} includes its own {' and '.join(ignored)}: the build's "
            f"{' and '.join(ignored)} {'is' if len(ignored) == 1 else 'are'} not judged",
            {"ignored": ignored},
        )


@rule("DP.2", reads=("platform.interconnect",))
def interconnect(f: Facts) -> Iterator[Judgement]:
    """NVLink moves data between GPUs 5-12x faster than PCIe and can make applications up to 2x
    faster; the catalog carries each GPU's own NVLink bandwidth."""
    if f.n_gpus < 2:
        return
    platform = f.platform
    nvlink_kinds = (Interconnect.NVLINK, Interconnect.NVSWITCH, Interconnect.INFINITY_FABRIC)
    via_platform = platform is not None and platform.interconnect in nvlink_kinds
    rates = [c.gpu.nvlink_gb_s for c in f.cards]
    if via_platform or all(
        c.gpu.interconnect in nvlink_kinds and c.gpu.nvlink_gb_s for c in f.cards
    ):
        slowest = min((r for r in rates if r), default=None)
        kind = platform.interconnect.value if via_platform and platform else "nvlink"
        yield info(
            f"GPUs exchange gradients over {kind}"
            + (f" at {slowest:g} GB/s per GPU" if slowest else ""),
            {"interconnect": kind, "nvlink_gb_s": slowest},
        )
        return
    bridged = [c for c in f.cards if c.gpu.interconnect is Interconnect.NVLINK_BRIDGE]
    links = f.links
    lanes = min((lk.lanes for lk in links if lk.lanes), default=None) if links else None
    message = f"{f.n_gpus} GPUs exchange gradients over PCIe" + (f" (x{lanes})" if lanes else "")
    if bridged:
        message += "; the cards take an NVLink bridge (pairs only), 5-12x faster than PCIe"
    yield info(message, {"interconnect": "pcie", "lanes": lanes, "bridge_capable": len(bridged)})
