"""The planner's search space: every group (chassis x GPU model x count x cooling) that the
catalog and the user's constraints allow, each with its supporting parts cut by dominance
(plan.dominance) to those that assemble (plan.assembles) and no other part beats on price and
on every number the rules and the model read. Everything else (PSU.1, COOL.3, RAM.2, PCIE.2,
...) is the rule engine's to judge."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import (
    GPU,
    PSU,
    Case,
    PartBase,
)
from dlrig.enums import CoolerType, FormFactor
from dlrig.plan.assembles import (
    cpu_fits_chassis,
    gpu_fits_chassis,
    memory_options,
    slots_needed,
    storage_holds,
)
from dlrig.plan.constraints import Constraints, PartFilter
from dlrig.plan.dominance import (
    case_merit,
    cpu_merit,
    memory_merit,
    pareto_cheapest,
    psu_merit,
    storage_merit,
)
from dlrig.plan.groups import (
    Group,
    chassis_cpu_price_usd,
    psu_floor_w,
)
from dlrig.plan.kinds import BuildForm
from dlrig.plan.parts import (
    Chassis,
    normalized,
    price_of,
    priced,
)

T = TypeVar("T")


@dataclass(frozen=True)
class SearchSpace:
    """Every group the constraints allow, and what was left out for lack of a price:
    `unpriced` parts, and `no_priced_server`, the priced GPUs (name, USD) that only a server
    platform holds where the catalog's servers for them have no price."""

    groups: tuple[Group, ...]
    unpriced: tuple[str, ...]
    no_priced_server: tuple[tuple[str, float], ...] = ()


def chassis_options(catalog: Catalog, constraints: Constraints, allow: PartFilter) -> list[Chassis]:
    """Boards and platforms the form, node count and filters allow (priced ones only)."""
    out: list[Chassis] = []
    if constraints.form in (None, BuildForm.WORKSTATION) and constraints.nodes == 1:
        # Workstations have no network part in the catalog, so they plan as single nodes.
        out.extend(
            Chassis(board=b)
            for b in catalog.motherboards
            if priced(b) and allow.allows("motherboards", b)
        )
    if constraints.form in (None, BuildForm.SERVER):
        out.extend(
            Chassis(platform=p)
            for p in catalog.platforms
            if priced(p)
            and allow.allows_platform(p, catalog)
            and (constraints.nodes == 1 or p.network_gbit_s is not None)
        )
    return out


# What a listing says about a part beyond its specs: the rules and the model read none of it
# (names and prices appear only in their messages).
LISTING_FIELDS = frozenset(PartBase.model_fields)


def chassis_specs(chassis: Chassis) -> Hashable:
    """Everything of the chassis that the rules, the model and the assembly read: its specs,
    without its name, price or provenance."""
    part = chassis.platform or chassis.board
    if part is None:
        return None
    specs = part.model_dump(exclude=set(LISTING_FIELDS))
    return (type(part).__name__, repr(sorted(specs.items())))


def distinct_chassis(options: Sequence[Chassis]) -> list[Chassis]:
    """The cheapest chassis of each spec (of equal prices, the first listed). A chassis with the
    same specs as a cheaper one offers the same builds, each scoring the same for no less money:
    never better, never on the price/throughput frontier (dominance, as for the other parts)."""
    kept: dict[Hashable, Chassis] = {}
    for chassis in sorted(options, key=lambda c: c.price_usd):
        kept.setdefault(chassis_specs(chassis), chassis)
    order = {id(c): i for i, c in enumerate(options)}
    return sorted(kept.values(), key=lambda c: order[id(c)])


def search_space(
    catalog: Catalog,
    constraints: Constraints,
    allow: PartFilter,
    dataset_gb: float,
    *,
    prune: bool = True,
) -> SearchSpace:
    """Every group the catalog and constraints allow. With prune=False the supporting-part
    lists keep every part that assembles (the brute-force reference walks those)."""
    unpriced = sorted(
        p.name
        for kind in ("gpus", "cpus", "motherboards", "platforms", "psus", "cases", "storage")
        for p in catalog.of(kind)
        if not priced(p)
    )
    gpus = [g for g in catalog.gpus if priced(g) and allow.allows("gpus", g)]
    cpus = [c for c in catalog.cpus if priced(c) and allow.allows("cpus", c)]
    kits = [m for m in catalog.memory if priced(m) and allow.allows("memory", m)]
    drives = [
        s
        for s in catalog.storage
        if priced(s) and allow.allows("storage", s) and storage_holds(s, dataset_gb)
    ]
    psus = [p for p in catalog.psus if priced(p) and allow.allows("psus", p)]
    cases = [c for c in catalog.cases if priced(c) and allow.allows("cases", c)]

    def cut(
        items: Sequence[T], price: Callable[[T], float], merit: Callable[[T], tuple[float, ...]]
    ) -> list[T]:
        return pareto_cheapest(items, price, merit) if prune else sorted(items, key=price)

    storage = tuple(cut(drives, price_of, storage_merit))
    # Filtering a dominance-pruned list by a minimum merit (watts; length, slots, radiators)
    # equals pruning the filtered list: whatever beats a kept part passes the filter too.
    psu_pool: list[PSU] = cut(psus, price_of, psu_merit)
    # Each part priced once for the whole space (groups share their PSU and case lists).
    unit_prices: dict[int, float] = {}

    def priced_once(part: PSU | Case | None) -> float:
        if id(part) not in unit_prices:
            unit_prices[id(part)] = price_of(part)
        return unit_prices[id(part)]

    storage_prices = tuple(price_of(s) for s in storage)
    case_pools: dict[str, list[Case]] = {}
    # Groups that take the same PSUs (or cases) share one tuple of them: the search fuses
    # each list once (plan.bounds), not once per group.
    psu_lists: dict[float, tuple[PSU | None, ...]] = {}
    case_lists: dict[Hashable, tuple[Case | None, ...]] = {}
    groups: list[Group] = []
    chassis_list = chassis_options(catalog, constraints, allow)
    for chassis in distinct_chassis(chassis_list) if prune else chassis_list:
        own_cpus = tuple(
            cut([c for c in cpus if cpu_fits_chassis(chassis, c)], price_of, cpu_merit)
        )
        memory = tuple(cut(memory_options(chassis, kits), lambda m: m.price_usd, memory_merit))
        if not own_cpus or not memory or not storage:
            continue
        cpu_prices = tuple(chassis_cpu_price_usd(chassis, c) for c in own_cpus)
        memory_prices = tuple(m.price_usd for m in memory)
        min_cpu_w = min(c.tdp_w for c in own_cpus) * chassis.cpu_count
        for gpu, count in _gpu_choices(chassis, catalog, gpus, constraints, allow):
            if not gpu_fits_chassis(chassis, gpu, count):
                continue
            waters = (False, True) if _water_possible(chassis, gpu, count) else (False,)
            for water in waters:
                group_psus: tuple[PSU | None, ...] = (None,)
                group_cases: tuple[Case | None, ...] = (None,)
                board = chassis.board
                if board is not None:
                    floor = psu_floor_w(gpu, count, min_cpu_w) if prune else 0.0
                    form = normalized(board.form_factor)
                    if form not in case_pools:
                        case_pools[form] = cut(
                            [c for c in cases if form in {normalized(f) for f in c.form_factors}],
                            price_of,
                            case_merit,
                        )
                    needed = slots_needed(board, gpu, count) or 0
                    if floor not in psu_lists:
                        psu_lists[floor] = tuple(p for p in psu_pool if p.watts >= floor)
                    group_psus = psu_lists[floor]
                    length = gpu.length_mm or 0.0
                    case_key = (form, length, needed, water, count if water else 0)
                    if case_key not in case_lists:
                        case_lists[case_key] = tuple(
                            c
                            for c in case_pools[form]
                            if length <= c.max_gpu_length_mm
                            and needed <= c.expansion_slots
                            and (not water or c.radiator_mounts_120mm >= count)
                        )
                    group_cases = case_lists[case_key]
                if not group_psus or not group_cases:
                    continue
                group_prices = (
                    cpu_prices,
                    memory_prices,
                    storage_prices,
                    tuple(priced_once(p) for p in group_psus),
                    tuple(priced_once(c) for c in group_cases),
                )
                groups.append(
                    Group(
                        chassis=chassis,
                        gpu=gpu,
                        count=count,
                        water=water,
                        cpus=own_cpus,
                        memory=memory,
                        storage=storage,
                        psus=group_psus,
                        cases=group_cases,
                        nodes=constraints.nodes,
                        known_prices=group_prices,
                    )
                )
    homeless: tuple[tuple[str, float], ...] = ()
    if constraints.form in (None, BuildForm.SERVER):
        in_servers = {g.gpu.name for g in groups if g.chassis.platform is not None}
        homeless = _without_priced_server(catalog, gpus, in_servers)
    return SearchSpace(groups=tuple(groups), unpriced=tuple(unpriced), no_priced_server=homeless)


def needs_server(gpu: GPU) -> bool:
    """A passive PCIe card (no fan: COOL.1 wants a server's airflow) or an SXM/OAM module."""
    return gpu.form is not FormFactor.PCIE or gpu.cooler is CoolerType.PASSIVE


def _without_priced_server(
    catalog: Catalog, gpus: Sequence[GPU], in_servers: set[str]
) -> tuple[tuple[str, float], ...]:
    """The priced GPUs that need a server and are in no server's group, where an unpriced
    server takes their form: what a quote for that server (--catalog) would bring into the
    plan. Dearest first: the cards a buyer at that budget would look for."""
    forms = {p.gpu_form for p in catalog.platforms if not priced(p)}
    left = [g for g in gpus if needs_server(g) and g.name not in in_servers and g.form in forms]
    return tuple((g.name, price_of(g)) for g in sorted(left, key=price_of, reverse=True))


def _gpu_choices(
    chassis: Chassis,
    catalog: Catalog,
    gpus: Sequence[GPU],
    constraints: Constraints,
    allow: PartFilter,
) -> Iterator[tuple[GPU, int]]:
    """GPU model and count pairs to try in a chassis: a platform's bundled GPUs (priced with
    the platform), or every allowed, priced GPU at every allowed count."""
    platform = chassis.platform
    if platform is not None and platform.included_gpu is not None:
        bundled = next((g for g in catalog.gpus if g.name == platform.included_gpu), None)
        count = platform.included_gpu_count
        usable = bundled is not None and allow.allows("gpus", bundled)
        if bundled is not None and usable and count in constraints.gpu_counts():
            yield bundled, count
        return
    yield from itertools.product(gpus, constraints.gpu_counts())


def _water_possible(chassis: Chassis, gpu: GPU, count: int) -> bool:
    """COOL.4/COOL.6: a workstation with several air-cooled cards may convert them to water
    (platforms bring their own cooling; one card is not worth it)."""
    return (
        chassis.board is not None
        and count >= 2
        and gpu.cooler
        in (
            CoolerType.OPEN_AIR,
            CoolerType.BLOWER,
        )
    )
