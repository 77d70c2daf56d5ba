"""A water loop priced from its parts (issue 35): a block per card, radiators for the cards'
heat at COOL.7's 175 W per 120 mm section, one pump with its reservoir and one set of fittings,
tubing and coolant; every part from the catalog's `cooling` list at its price. A loop needing a
part with no price is not planned (the search says which parts want a quote, as it does for
servers). Given the case, the radiators are the cheapest set its mounts take (CASE.1): the
cheapest set overall may need a 480 mm mount that a case of 360 mm mounts lacks, where a set of
smaller radiators would fit it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlrig.catalog.schema import GPU, Case, LoopPart
from dlrig.enums import LoopRole
from dlrig.machine.loop import LoopEntry, radiators_fit_case, sections_for_heat
from dlrig.plan.parts import price_of, priced

# More radiators than this in one desktop loop is not a build anyone plans; the fewest that do
# are tried first (a desktop case mounts three or four), the cheapest of those kept.
MAX_RADIATORS = 6
FEW_RADIATORS = 3


@dataclass(frozen=True)
class LoopPlan:
    """The loop's parts (blocks first), its radiators' lengths and what it costs."""

    entries: tuple[LoopEntry, ...]
    radiators_mm: tuple[int, ...]
    price_usd: float


@dataclass(frozen=True)
class LoopOptions:
    """A loop for these cards, or the loop parts that want a price before one can be planned
    (`missing`, names; empty when the catalog has no such part at all)."""

    plan: LoopPlan | None
    missing: tuple[str, ...] = ()


def _cheapest(parts: Sequence[LoopPart]) -> LoopPart | None:
    ready = [p for p in parts if priced(p)]
    return min(ready, key=price_of) if ready else None


# Whether a case mounts a set of radiators (their lengths, mm).
Mounts = Callable[[tuple[int, ...]], bool]


def _radiators(
    radiators: Sequence[LoopPart], need: int, fits: Mounts
) -> tuple[LoopPart, ...] | None:
    """The cheapest set of at most FEW_RADIATORS radiators with >= need sections that `fits`,
    else of at most MAX_RADIATORS (fewer radiators among equal prices)."""
    for most in (FEW_RADIATORS, MAX_RADIATORS):
        found = _cheapest_set(radiators, need, most, fits)
        if found is not None:
            return found
    return None


def _cheapest_set(
    radiators: Sequence[LoopPart], need: int, most: int, fits: Mounts
) -> tuple[LoopPart, ...] | None:
    best: tuple[float, int, tuple[LoopPart, ...]] | None = None

    def walk(start: int, chosen: tuple[LoopPart, ...], sections: int, usd: float) -> None:
        nonlocal best
        if sections >= need:
            key = (usd, len(chosen), chosen)
            # a set the case cannot mount is no answer, and neither is any set holding it
            if (best is None or key[:2] < best[:2]) and fits(
                tuple(r.radiator_mm or 0 for r in chosen)
            ):
                best = key
            return
        if len(chosen) == most or (best is not None and usd >= best[0]):
            return
        for i in range(start, len(radiators)):
            r = radiators[i]
            walk(i, (*chosen, r), sections + r.sections, usd + price_of(r))

    walk(0, (), 0, 0.0)
    return None if best is None else best[2]


def plan_loop(
    gpu: GPU, count: int, heat_w: float, parts: Sequence[LoopPart], case: Case | None = None
) -> LoopOptions:
    """The cheapest loop of priced catalog parts that cools `count` of `gpu` making heat_w;
    with `case`, the cheapest whose radiators that case mounts (none where its mounts are
    unknown)."""
    by_role = {role: [p for p in parts if p.role is role] for role in LoopRole}
    blocks = [b for b in by_role[LoopRole.GPU_BLOCK] if gpu.name in b.fits_gpus]
    radiators = sorted(
        (r for r in by_role[LoopRole.RADIATOR] if priced(r)), key=lambda r: -(r.radiator_mm or 0)
    )
    lists = (blocks, by_role[LoopRole.PUMP], by_role[LoopRole.FITTINGS])
    if not all(lists) or not by_role[LoopRole.RADIATOR]:
        return LoopOptions(None)  # the catalog has no such part: nothing to quote
    picks = [_cheapest(options) for options in lists]
    fits: Mounts = (
        (lambda _: True)
        if case is None
        else (lambda lengths: radiators_fit_case(lengths, case) is True)
    )
    chosen = _radiators(radiators, sections_for_heat(heat_w), fits) if radiators else None
    missing = [opts[0].name for opts, pick in zip(lists, picks, strict=True) if pick is None]
    if chosen is None:
        missing.extend(r.name for r in by_role[LoopRole.RADIATOR] if not priced(r))
    block, pump, fittings = picks
    if missing or block is None or pump is None or fittings is None or chosen is None:
        return LoopOptions(None, tuple(dict.fromkeys(missing)))
    # each radiator model once, largest first, with its count
    kinds = list({r.name: r for r in chosen}.values())
    entries = (
        LoopEntry(block, count),
        *(LoopEntry(r, sum(1 for c in chosen if c.name == r.name)) for r in kinds),
        LoopEntry(pump, 1),
        LoopEntry(fittings, 1),
    )
    return LoopOptions(
        LoopPlan(
            entries=entries,
            radiators_mm=tuple(r.radiator_mm or 0 for r in chosen),
            price_usd=sum(price_of(e.part, e.count) for e in entries),
        )
    )
