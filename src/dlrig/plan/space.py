"""The planner's search space: every group (chassis x GPU model x count x cooling) that the
catalog and the user's constraints allow, each with its supporting parts cut by dominance
(plan.dominance) to those that assemble (plan.assembles) and no other part beats on price and
on every number the rules and the model read. Everything else (PSU.1, COOL.3, RAM.2, PCIE.2,
...) is the rule engine's to judge."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import (
    GPU,
    PSU,
    Case,
    LoopPart,
    PartBase,
)
from dlrig.enums import CoolerType, FormFactor, LoopRole
from dlrig.machine.loop import radiators_fit_case
from dlrig.machine.model import power_limit_range_w
from dlrig.mains import Mains, default_mains
from dlrig.model.wall import max_dc_w_on
from dlrig.plan.assembles import (
    cpu_fits_chassis,
    gpu_fits_chassis,
    memory_options,
    place_gpus,
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
from dlrig.plan.loop import LoopOptions, LoopPlan, plan_loop
from dlrig.plan.parts import (
    Chassis,
    efficiency_rank,
    normalized,
    price_of,
    priced,
    psu_output_w,
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
    # Loop parts a water-cooled group wanted that have no price (plan/loop.py): the loops that
    # a quote for them (--catalog) would bring into the plan.
    loop_parts_unpriced: tuple[str, ...] = ()
    # The circuit every build of the space is judged on, and the GPU sets ('3x H100 PCIe
    # 80GB') it cannot carry at any power limit their cards take (left out of the space).
    mains: Mains | None = None
    off_circuit: tuple[str, ...] = ()


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
    mains = constraints.mains or default_mains()
    low_line = mains.circuit.low_line
    # Only supplies known to deliver on the circuit's voltage are offered (a 2,800 W unit's
    # 115 V output is unknown: plan/parts.py psu_output_w).
    psus = [
        p
        for p in catalog.psus
        if priced(p) and allow.allows("psus", p) and psu_output_w(p, low_line) is not None
    ]
    cases = [c for c in catalog.cases if priced(c) and allow.allows("cases", c)]
    loop_parts = [p for p in catalog.cooling if allow.allows("cooling", p)]

    def cut(
        items: Sequence[T], price: Callable[[T], float], merit: Callable[[T], tuple[float, ...]]
    ) -> list[T]:
        return pareto_cheapest(items, price, merit) if prune else sorted(items, key=price)

    storage = tuple(cut(drives, price_of, storage_merit))
    # Filtering a dominance-pruned list by a minimum merit (watts; length, slots, radiators)
    # equals pruning the filtered list: whatever beats a kept part passes the filter too.
    psu_pool: list[PSU] = cut(psus, price_of, lambda p: psu_merit(p, low_line))
    # Each part priced once for the whole space (groups share their PSU and case lists).
    unit_prices: dict[int, float] = {}

    def priced_once(part: PSU | Case | None) -> float:
        if id(part) not in unit_prices:
            unit_prices[id(part)] = price_of(part)
        return unit_prices[id(part)]

    # The prices of a shared PSU or case tuple, once per tuple (held with it, so that its id
    # stays its own).
    list_prices: dict[int, tuple[Sequence[PSU | Case | None], tuple[float, ...]]] = {}

    def prices_of(parts: Sequence[PSU | Case | None]) -> tuple[float, ...]:
        if id(parts) not in list_prices:
            list_prices[id(parts)] = (parts, tuple(priced_once(p) for p in parts))
        return list_prices[id(parts)][1]

    storage_prices = tuple(price_of(s) for s in storage)
    case_pools: dict[str, list[Case]] = {}
    # Groups that take the same PSUs (or cases) share one tuple of them: the search fuses
    # each list once (plan.bounds), not once per group.
    psu_lists: dict[float, tuple[PSU | None, ...]] = {}
    case_lists: dict[Hashable, tuple[Case, ...]] = {}
    loops: dict[tuple[str, int, float], LoopOptions] = {}
    # the cheapest loop a case mounts, by GPU, count, heat and the case's mounts
    case_loops: dict[Hashable, LoopPlan | None] = {}
    wanting_price: dict[str, None] = {}
    off_circuit: dict[str, None] = {}
    limits: dict[Hashable, int | Literal[False] | None] = {}
    # The PSU pool's best tier and output, and what a circuit carries per supply (PSU.6), once.
    pool_supply = _supply(psu_pool, low_line) if psu_pool else None
    dc_limits: dict[tuple[str, float | None, bool], float] = {}

    def most_dc_w(tier: str, capacity_w: float | None, server: bool) -> float:
        """max_dc_w_on the circuit: one workstation PSU, or a server's supplies split over
        every circuit given."""
        key = (tier, capacity_w, server)
        if key not in dc_limits:
            supplies = mains.count if server else 1
            dc_limits[key] = max_dc_w_on(mains, tier, capacity_w, supplies=supplies)
        return dc_limits[key]

    # GPUs a priced server holds, whether or not the circuit carries it (what the search line's
    # "for want of a priced server" must not name).
    in_servers: set[str] = set()
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
            waterable = _water_possible(chassis, gpu, count)
            if not gpu_fits_chassis(chassis, gpu, count) and not (
                waterable and gpu_fits_chassis(chassis, gpu, count, water=True)
            ):
                continue
            if chassis.platform is not None:
                in_servers.add(gpu.name)
            for water in (False, True) if waterable else (False,):
                board = chassis.board
                pool = psu_pool if board is not None else []
                # The limit reads the chassis only through its platform (a board's groups all
                # draw on the one PSU pool): worked out once per platform, GPU, count and CPU
                # draw, not per board.
                limit_key = (id(chassis.platform), board is None, id(gpu), count, min_cpu_w)
                if limit_key not in limits:
                    limits[limit_key] = _circuit_limit(
                        chassis, gpu, count, min_cpu_w, pool_supply if pool else None, most_dc_w
                    )
                limit = limits[limit_key]
                if limit is False:
                    # no power limit the cards take runs them on this circuit
                    off_circuit[f"{count}x {gpu.name}"] = None
                    continue
                board_w = gpu.tdp_w if limit is None else float(limit)
                loop: LoopPlan | None = None
                if water:
                    key = (gpu.name, count, board_w)
                    if key not in loops:
                        loops[key] = plan_loop(gpu, count, board_w * count, loop_parts)
                    options = loops[key]
                    wanting_price.update(dict.fromkeys(options.missing))
                    if options.plan is None:
                        continue
                    loop = options.plan
                group_psus: tuple[PSU | None, ...] = (None,)
                # (loop, the cases it goes in): a water group's cases that cannot mount its
                # cheapest loop's radiators get the cheapest loop they do mount (CASE.1)
                variants: list[tuple[LoopPlan | None, tuple[Case | None, ...]]] = [(loop, (None,))]
                if board is not None:
                    block_slots = _block_slots(loop)
                    if place_gpus(board, gpu, count, water=water, block_slots=block_slots) is None:
                        continue
                    floor = psu_floor_w(gpu, board_w, count, min_cpu_w) if prune else 0.0
                    form = normalized(board.form_factor)
                    if form not in case_pools:
                        case_pools[form] = cut(
                            [c for c in cases if form in {normalized(f) for f in c.form_factors}],
                            price_of,
                            case_merit,
                        )
                    needed = (
                        slots_needed(board, gpu, count, water=water, block_slots=block_slots) or 0
                    )
                    if floor not in psu_lists:
                        psu_lists[floor] = tuple(
                            p for p in psu_pool if (psu_output_w(p, low_line) or 0.0) >= floor
                        )
                    group_psus = psu_lists[floor]
                    length = gpu.length_mm or 0.0
                    case_key = (form, length, needed)
                    if case_key not in case_lists:
                        case_lists[case_key] = tuple(
                            c
                            for c in case_pools[form]
                            if length <= c.max_gpu_length_mm and needed <= c.expansion_slots
                        )
                    if loop is None:
                        variants = [(None, case_lists[case_key])]
                    else:
                        variants = _loops_by_case(
                            case_lists[case_key],
                            loop,
                            functools.partial(
                                _case_loop, case_loops, gpu, count, board_w * count, loop_parts
                            ),
                        )
                if not group_psus:
                    continue
                for variant_loop, group_cases in variants:
                    if not group_cases:
                        continue
                    group_prices = (
                        cpu_prices,
                        memory_prices,
                        storage_prices,
                        prices_of(group_psus),
                        prices_of(group_cases),
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
                            power_limit_w=None if limit is None else float(limit),
                            loop=variant_loop,
                            mains=mains,
                        )
                    )
    homeless: tuple[tuple[str, float], ...] = ()
    if constraints.form in (None, BuildForm.SERVER):
        homeless = _without_priced_server(catalog, gpus, in_servers)
    return SearchSpace(
        groups=tuple(groups),
        unpriced=tuple(unpriced),
        no_priced_server=homeless,
        loop_parts_unpriced=tuple(wanting_price),
        mains=mains,
        off_circuit=tuple(off_circuit),
    )


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


def _case_loop(
    memo: dict[Hashable, LoopPlan | None],
    gpu: GPU,
    count: int,
    heat_w: float,
    parts: Sequence[LoopPart],
    case: Case,
) -> LoopPlan | None:
    """The cheapest loop for these cards whose radiators the case mounts, once per mount set."""
    key = (gpu.name, count, heat_w, _mounts_key(case))
    if key not in memo:
        memo[key] = plan_loop(gpu, count, heat_w, parts, case).plan
    return memo[key]


def _mounts_key(case: Case) -> Hashable:
    """What radiators_fit_case reads of a case: its mounts' lengths, else its section count."""
    if case.radiator_mounts is not None:
        return tuple(sorted(m.max_mm for m in case.radiator_mounts))
    return case.radiator_mounts_120mm


def _loops_by_case(
    cases: Sequence[Case], cheapest: LoopPlan, loop_for: Callable[[Case], LoopPlan | None]
) -> list[tuple[LoopPlan | None, tuple[Case | None, ...]]]:
    """The cases (cheapest first) grouped by the loop each takes: the cheapest loop where the
    case mounts its radiators, else the cheapest loop it does mount (loop_for), else none
    (the case is left out)."""
    by_radiators: dict[tuple[int, ...], tuple[LoopPlan, list[Case | None]]] = {}
    for c in cases:
        taken = cheapest if radiators_fit_case(cheapest.radiators_mm, c) is True else loop_for(c)
        if taken is not None:
            by_radiators.setdefault(taken.radiators_mm, (taken, []))[1].append(c)
    return [(taken, tuple(held)) for taken, held in by_radiators.values()]


def _block_slots(loop: LoopPlan | None) -> int | None:
    """The width of the loop's GPU block (None: no loop, or a block that does not say)."""
    if loop is None:
        return None
    return next((e.part.slots for e in loop.entries if e.part.role is LoopRole.GPU_BLOCK), None)


def _supply(psus: Sequence[PSU], low_line: bool) -> tuple[str, float]:
    """The best efficiency tier and the most output on the circuit's voltage of these PSUs."""
    tier = max((str(p.efficiency) for p in psus), key=efficiency_rank)
    capacity = max(psu_output_w(p, low_line) or 0.0 for p in psus)
    return tier.lower(), capacity


def _circuit_limit(
    chassis: Chassis,
    gpu: GPU,
    count: int,
    min_cpu_w: float,
    supply: tuple[str, float] | None,
    most_dc_w: Callable[[str, float | None, bool], float],
) -> int | Literal[False] | None:
    """The per-GPU power limit a group needs to run on the circuit (PSU.6) with its leanest
    CPU and its best supply (`supply`: the PSUs' best tier and output, None without PSUs;
    `most_dc_w`: model.wall.max_dc_w_on on the circuit, for a server or not): None when stock
    power already does, False when no limit the cards take is low enough (10 W steps, as
    nvidia-smi users set them). A server is planned at stock power or not at all: its
    supplies and firmware are its vendor's (a DGX's PSUs take 200-240 V only), so a limit is
    no fix for the wrong circuit."""
    if chassis.platform is not None:
        tier = str(chassis.platform.psu_efficiency).lower()
        most = most_dc_w(tier, chassis.platform.psu_watts, True)
        return None if gpu.tdp_w * count + min_cpu_w <= most else False
    if supply is None:
        return None
    tier, capacity = supply
    most_dc = most_dc_w(tier, capacity or None, False)
    if gpu.tdp_w * count + min_cpu_w <= most_dc:
        return None
    limit = math.floor((most_dc - min_cpu_w) / count / 10) * 10
    lowest, _ = power_limit_range_w(gpu)
    return limit if limit >= lowest else False


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
