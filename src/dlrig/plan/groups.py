"""Groups and candidates: a group is one way to hold GPUs (a chassis, a GPU model, a count
per node and a cooling choice) with its lists of supporting parts; a candidate is one pick
from each list, visited cheapest first, and assembled into a Build."""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
from collections.abc import Callable, Container, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from dlrig.catalog.schema import (
    CPU,
    GPU,
    PSU,
    Case,
    Platform,
    Storage,
)
from dlrig.enums import CoolerType, NetworkKind
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, Network, Prices, StorageDevice
from dlrig.mains import Mains
from dlrig.model.power import size_psu, vendor_min_with
from dlrig.plan.assembles import (
    memory_fits_cpu,
    place_gpus,
)
from dlrig.plan.dominance import model_merit
from dlrig.plan.loop import LoopPlan
from dlrig.plan.parts import (
    INFINIBAND_MIN_GBIT_S,
    Chassis,
    MemoryOption,
    price_of,
    psu_output_w,
)

T = TypeVar("T")


def chassis_cpu_price_usd(chassis: Chassis, cpu: CPU) -> float:
    """What the CPUs cost in a chassis (all sockets; nothing when the platform bundles them)."""
    bundled = chassis.platform is not None and chassis.platform.included_cpu
    return 0.0 if bundled else price_of(cpu, chassis.cpu_count)


@dataclass(frozen=True)
class Group:
    """A chassis, a GPU model times a count, a cooling choice, and the supporting parts that
    may go with them (each list cheapest first)."""

    chassis: Chassis
    gpu: GPU
    count: int
    water: bool
    cpus: tuple[CPU, ...]
    memory: tuple[MemoryOption, ...]
    storage: tuple[Storage, ...]
    psus: tuple[PSU | None, ...]
    cases: tuple[Case | None, ...]
    nodes: int
    # Each list's prices when the maker knows them (the space prices each part once; a cut
    # keeps a prefix of every list): pricing a part is not free (street price, owned parts).
    known_prices: tuple[tuple[float, ...], ...] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    # Each card's power limit when the circuit needs one (PSU.6, plan/space.py), W.
    power_limit_w: float | None = None
    # The water loop's parts and price, when water-cooled (plan/loop.py).
    loop: LoopPlan | None = None
    # The circuit the group's builds are judged on.
    mains: Mains | None = None

    @property
    def key(self) -> Hashable:
        return (
            self.chassis.name, self.gpu.name, self.count, self.water, self.nodes,
            self.power_limit_w,
        )  # fmt: skip

    @property
    def board_power_w(self) -> float:
        """What each card draws: its power limit, else its stock board power."""
        return self.gpu.tdp_w if self.power_limit_w is None else self.power_limit_w

    @property
    def gpu_set(self) -> Hashable:
        """The GPUs the group's builds hold: builds of one GPU set differ only in supporting
        parts, cooling and the power limit a circuit asks of them (a dearer board, water where
        air does as well, the same cards held to 550 W): the ranking shows one of them, the
        Pareto frontier the others worth their price."""
        return (self.gpu.name, self.count, self.nodes)

    @functools.cached_property
    def option_sizes(self) -> tuple[int, int, int, int, int]:
        """The lengths of the option lists (cpus, memory, storage, psus, cases): a budget-cut
        group keeps a prefix of each, so with the key they name the cut (the search's memo
        key, asked per candidate: computed once)."""
        return (
            len(self.cpus),
            len(self.memory),
            len(self.storage),
            len(self.psus),
            len(self.cases),
        )

    @functools.cached_property
    def seats_view(self) -> Hashable:
        """What the model reads of a workstation board with the group's cards on it
        (plan.bounds.model_view): the socket, the sockets, each card's slot (lanes,
        generation, from the CPU or the chipset) and the gaps between the cards (the model
        throttles two open-air cards less with a free slot between them)."""
        board = self.chassis.board
        block = (
            next((e.part.slots for e in self.loop.entries if e.part.slots), None)
            if self.loop is not None
            else None
        )
        seats = (
            place_gpus(board, self.gpu, self.count, water=self.water, block_slots=block)
            if board is not None
            else None
        ) or ()
        return (
            "board",
            board.socket if board else "",
            board.sockets if board else 1,
            tuple((s.lanes, s.gen, s.from_cpu) for s in seats),
            tuple(b.position - a.position for a, b in itertools.pairwise(seats)),
        )

    @functools.cached_property
    def powered(self) -> tuple[tuple[bool, ...], ...]:
        """PSU.1 as a necessary condition, per CPU option and PSU option: the PSU covers the
        CPU's and the GPUs' draw plus the guide's 10% and 10% (the rule engine errors below
        that); a platform's own supply (None) always does. Most combinations a walk meets
        fail here, so they are left out before they become candidates."""
        low_line = self.mains.circuit.low_line if self.mains is not None else True
        floors = [
            psu_floor_w(self.gpu, self.board_power_w, self.count, c.tdp_w * self.chassis.cpu_count)
            for c in self.cpus
        ]
        return tuple(
            tuple(p is None or (psu_output_w(p, low_line) or 0.0) >= f for p in self.psus)
            for f in floors
        )

    @functools.cached_property
    def weak_psus(self) -> frozenset[int]:
        """The PSU options that power none of the group's CPUs (no candidate may use them)."""
        return frozenset(
            j for j in range(len(self.psus)) if not any(row[j] for row in self.powered)
        )

    @functools.cached_property
    def fixed_price_usd(self) -> float:
        """One node's price of the chassis, GPUs (unless bundled) and water cooling."""
        bundled = self.chassis.platform is not None and self.chassis.platform.included_gpu
        gpus = 0.0 if bundled else price_of(self.gpu, self.count)
        cooling = self.loop.price_usd if self.loop is not None else 0.0
        return self.chassis.price_usd + gpus + cooling

    def cpu_price_usd(self, cpu: CPU) -> float:
        """What the CPUs cost in this chassis (all sockets; nothing when bundled)."""
        return chassis_cpu_price_usd(self.chassis, cpu)

    @functools.cached_property
    def _prices(self) -> tuple[tuple[float, ...], ...]:
        if self.known_prices is not None:
            return self.known_prices
        return (
            tuple(self.cpu_price_usd(c) for c in self.cpus),
            tuple(m.price_usd for m in self.memory),
            tuple(price_of(s) for s in self.storage),
            tuple(price_of(p) for p in self.psus),
            tuple(price_of(c) for c in self.cases),
        )

    def option_prices(self) -> tuple[tuple[float, ...], ...]:
        """Per-node price of each option, list by list (cpus, memory, storage, psus, cases)."""
        return self._prices

    @functools.cached_property
    def min_price_usd(self) -> float:
        """The cheapest this group can be (all nodes)."""
        # Each list is cheapest first, so the cheapest options are the first ones (no need to
        # price every option: the search asks this of every group).
        if self.known_prices is not None:
            firsts = tuple(p[0] for p in self.known_prices)
        else:
            firsts = (
                self.cpu_price_usd(self.cpus[0]),
                self.memory[0].price_usd,
                price_of(self.storage[0]),
                price_of(self.psus[0]),
                price_of(self.cases[0]),
            )
        return self.nodes * (self.fixed_price_usd + sum(firsts))

    @functools.cached_property
    def _cuts(self) -> dict[float, Group]:
        return {}

    def within(self, budget_usd: float) -> Group:
        """The group with only the options a build under budget_usd can afford (each list
        keeps the parts costing at most the cheapest plus the budget's slack). Cut once per
        budget: the passes ask it of every group they open."""
        if not math.isfinite(budget_usd):
            return self
        if budget_usd not in self._cuts:
            self._cuts[budget_usd] = self._cut(budget_usd)
        return self._cuts[budget_usd]

    def _cut(self, budget_usd: float) -> Group:
        prices = self.option_prices()
        slack = budget_usd / self.nodes - self.fixed_price_usd - sum(p[0] for p in prices)
        if slack < 0:
            return self

        def keep(options: Sequence[T], costs: Sequence[float]) -> tuple[tuple[T, ...], list[float]]:
            limit = costs[0] + slack
            if max(costs) <= limit:  # the usual case under a large budget: all of them
                return tuple(options), list(costs)
            picked = [i for i, c in enumerate(costs) if c <= limit]
            return tuple(options[i] for i in picked), [costs[i] for i in picked]

        cpus, cpu_usd = keep(self.cpus, prices[0])
        memory, memory_usd = keep(self.memory, prices[1])
        storage, storage_usd = keep(self.storage, prices[2])
        psus, psu_usd = keep(self.psus, prices[3])
        cases, case_usd = keep(self.cases, prices[4])
        if (len(cpus), len(memory), len(storage), len(psus), len(cases)) == self.option_sizes:
            # Nothing to cut: the group itself, with what it has worked out (its walk's axes).
            return self
        cut = dataclasses.replace(
            self,
            cpus=cpus,
            memory=memory,
            storage=storage,
            psus=psus,
            cases=cases,
            known_prices=tuple(
                tuple(p) for p in (cpu_usd, memory_usd, storage_usd, psu_usd, case_usd)
            ),
        )
        cut.__dict__["fixed_price_usd"] = self.fixed_price_usd  # the same chassis and GPUs
        return cut

    def candidate(self, index: tuple[int, int, int, int, int]) -> Candidate:
        """The candidate made of these options (one index per list)."""
        i_cpu, i_mem, i_sto, i_psu, i_case = index
        prices = self.option_prices()
        node_usd = self.fixed_price_usd + sum(p[i] for p, i in zip(prices, index, strict=True))
        return Candidate(
            group=self,
            cpu=self.cpus[i_cpu],
            memory=self.memory[i_mem],
            storage=self.storage[i_sto],
            psu=self.psus[i_psu],
            case=self.cases[i_case],
            price_usd=node_usd * self.nodes,
            index=index,
        )

    @functools.cached_property
    def powered_pairs(self) -> tuple[tuple[int, int], ...]:
        """(CPU, PSU) option pairs that `powered` lets go together, cheapest first (ties: by
        CPU, then PSU): the walk's one axis for both lists, so that it never steps through the
        combinations of a PSU too small for the CPU (93% of those a 10x catalog's walk met)."""
        return _pairs_by_price(self.option_prices(), 0, 3, self.powered)

    @functools.cached_property
    def ram_drive_pairs(self) -> tuple[tuple[int, int], ...]:
        """Every (RAM, drive) option pair, cheapest first (ties: by RAM, then drive): the walk's
        one axis for both lists, so that a pair the search found useless (its probe, plan.
        search) is stepped over like a dead option, not met with every CPU, PSU and case."""
        prices = self.option_prices()
        return _pairs_by_price(prices, 1, 2, np.ones((len(prices[1]), len(prices[2])), bool))

    def cheapest_first(
        self,
        max_price_usd: float,
        dead: Sequence[Container[int]] | None = None,
        dead_pairs: Container[tuple[int, int]] = (),
    ) -> Iterator[Candidate]:
        """The group's candidates in non-decreasing price, up to max_price_usd; with `dead`, one
        collection of option indices per list (cpus, memory, storage, psus, cases) that the
        caller may grow while it iterates, only those made of options not in it, and of no
        (RAM, drive) pair in `dead_pairs` (which it may grow too). Only candidates whose PSU
        can power them (`powered`) and whose CPU addresses their RAM."""
        prices = self.option_prices()
        joints = (
            Joint(0, 3, self.powered_pairs),
            Joint(1, 2, self.ram_drive_pairs, dead_pairs),
        )
        for total, index in cheapest_combinations(prices, dead, joints):
            price = (self.fixed_price_usd + total) * self.nodes
            if price > max_price_usd + 1e-6:
                return
            cand = self.candidate(index)  # type: ignore[arg-type]
            if cand.assembles:
                yield cand


def _pairs_by_price(
    prices: Sequence[Sequence[float]],
    a: int,
    b: int,
    allowed: Sequence[Sequence[bool]] | npt.NDArray[np.bool_],
) -> tuple[tuple[int, int], ...]:
    """The allowed (option of list a, option of list b) pairs, in non-decreasing price of the
    two, ties by index. As arrays: a 10x catalog's groups pair a hundred drives with dozens of
    RAM options each (the same sums as Python's, so the same order)."""
    if len(allowed) == 0:
        return ()
    first, second = np.nonzero(np.array(allowed, dtype=bool).reshape(len(allowed), -1))
    totals = np.array(prices[a], dtype=float)[first] + np.array(prices[b], dtype=float)[second]
    order = np.lexsort((second, first, totals))
    return tuple(zip(first[order].tolist(), second[order].tolist(), strict=True))


class Joint(NamedTuple):
    """Two option lists the walk steps along together: `pairs`, the (option of a, option of b)
    pairs that may go together, in non-decreasing price of the pair, ties by index; `dead`,
    pairs to leave out, which the caller may add to between steps."""

    a: int
    b: int
    pairs: Sequence[tuple[int, int]]
    dead: Container[tuple[int, int]] = ()


class _Axis(NamedTuple):
    """One axis of a walk: the lists it sets, per entry its option in each of them, and the
    entries left out whole (a dead pair)."""

    lists: tuple[int, ...]
    options: Sequence[tuple[int, ...]]
    dead: Container[tuple[int, ...]] = ()


def cheapest_combinations(
    price_lists: Sequence[Sequence[float]],
    dead: Sequence[Container[int]] | None = None,
    joints: Sequence[Joint] = (),
) -> Iterator[tuple[float, tuple[int, ...]]]:
    """Index tuples into sorted price lists, in non-decreasing total price, ties by index (a
    best-first walk of the product: each step raises one index to the next option not dead).

    `dead`: per list, indices to leave out, which the caller may add to between steps (an
    option found useless for this and every dearer combination). A combination that holds a
    newly dead index is not yielded; it moves to the next live index of each such list
    instead of spreading along every list, so the walk skips the whole region of the product
    behind a dead option. Every combination of live indices is still reached: it lies above
    some combination waiting in the heap, which moves up to it one live index at a time.

    `joints`: pairs of lists walked as one list of their allowed pairs (`Joint`): only
    combinations of allowed pairs come, the walk never steps through the others, and a dead
    pair is left out like a dead option."""
    if any(len(p) == 0 for p in price_lists):
        return
    joined = {lst for j in joints for lst in (j.a, j.b)}
    axes = [_Axis((j.a, j.b), j.pairs, j.dead) for j in joints]
    axes += [
        _Axis((lst,), [(i,) for i in range(len(p))])
        for lst, p in enumerate(price_lists)
        if lst not in joined
    ]
    yield from _walk_axes(price_lists, axes, dead)


def _walk_axes(
    price_lists: Sequence[Sequence[float]],
    axes: Sequence[_Axis],
    dead: Sequence[Container[int]] | None,
) -> Iterator[tuple[float, tuple[int, ...]]]:
    """The best-first walk of `cheapest_combinations` over positions on `axes`, each entry of
    an axis standing for options of one or more lists. Totals are summed afresh, list by list,
    so that equal prices compare equal and ties come by index."""
    # Whether the caller may declare anything dead while the walk goes (else no step checks).
    watching = dead is not None or any(axis.dead != () for axis in axes)
    gone: Sequence[Container[int]] = dead if dead is not None else [()] * len(price_lists)
    sizes = [len(axis.options) for axis in axes]
    if any(n == 0 for n in sizes):
        return
    owners = [axis.lists for axis in axes]
    options = [axis.options for axis in axes]
    dead_at = [_dead_check(axis, gone) for axis in axes]

    def live_from(axis: int, at: int) -> int:
        """The first position from at on whose options are none dead (the axis's length:
        none)."""
        n, is_dead = sizes[axis], dead_at[axis]
        while at < n and is_dead(at):
            at += 1
        return at

    def entry(
        position: tuple[int, ...], index: list[int]
    ) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
        return sum(p[i] for p, i in zip(price_lists, index, strict=True)), tuple(index), position

    def index_of(position: tuple[int, ...]) -> list[int]:
        index = [0] * len(price_lists)
        for axis, at in enumerate(position):
            for lst, option in zip(owners[axis], options[axis][at], strict=True):
                index[lst] = option
        return index

    start = tuple(live_from(axis, 0) for axis in range(len(axes)))
    if any(at >= n for at, n in zip(start, sizes, strict=True)):
        return
    heap = [entry(start, index_of(start))]
    seen = {start}
    while heap:
        total, index, position = heapq.heappop(heap)
        if watching and any(d(at) for d, at in zip(dead_at, position, strict=True)):
            moved = tuple(live_from(axis, at) for axis, at in enumerate(position))
            if moved not in seen and all(at < n for at, n in zip(moved, sizes, strict=True)):
                seen.add(moved)
                heapq.heappush(heap, entry(moved, index_of(moved)))
            continue
        yield total, index
        for axis in range(len(axes)):
            at = live_from(axis, position[axis] + 1)
            if at < sizes[axis]:
                nxt = (*position[:axis], at, *position[axis + 1 :])
                if nxt not in seen:
                    seen.add(nxt)
                    step = list(index)
                    for lst, option in zip(owners[axis], options[axis][at], strict=True):
                        step[lst] = option
                    heapq.heappush(heap, entry(nxt, step))


def _dead_check(axis: _Axis, gone: Sequence[Container[int]]) -> Callable[[int], bool]:
    """Whether an axis's entry holds a dead option, or is itself dead (a pair of options left
    out together); the walk asks this of every step: a few lookups, not a loop."""
    options, whole = axis.options, axis.dead
    if len(axis.lists) == 1:
        out = gone[axis.lists[0]]
        return lambda at: at in out
    if len(axis.lists) == 2:
        out_a, out_b = gone[axis.lists[0]], gone[axis.lists[1]]
        return lambda at: options[at][0] in out_a or options[at][1] in out_b or options[at] in whole
    return lambda at: any(o in gone[lst] for lst, o in zip(axis.lists, options[at], strict=True))


@dataclass(frozen=True)
class Candidate:
    """One complete build of a group, with its purchase price (all nodes)."""

    group: Group
    cpu: CPU
    memory: MemoryOption
    storage: Storage
    psu: PSU | None
    case: Case | None
    price_usd: float
    index: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)

    @property
    def key(self) -> Hashable:
        """Names the build: the same key is the same build."""
        return (
            self.group.key,
            self.cpu.name,
            self.memory.kit.name,
            self.memory.count,
            self.storage.name,
            self.psu.name if self.psu else None,
            self.case.name if self.case else None,
        )

    def build(self, electricity_per_kwh: float = Prices().electricity_per_kwh) -> Build:
        """The candidate as a Build."""
        return assemble(
            self.group,
            cpu=self.cpu,
            memory=self.memory.config(),
            storage=self.storage,
            psu=self.psu,
            case=self.case,
            electricity_per_kwh=electricity_per_kwh,
        )

    @property
    def assembles(self) -> bool:
        """The parts go together beyond what the group's lists already ensure: the CPU
        addresses the RAM."""
        return memory_fits_cpu(self.memory, self.cpu, self.group.chassis.cpu_count)

    @functools.cached_property
    def model_merit(self) -> tuple[float, ...]:
        """What the model reads of the supporting parts (plan.dominance.model_merit)."""
        return model_merit(self.cpu, self.memory, self.storage, self.psu)

    def price_lines(self) -> tuple[tuple[str, float], ...]:
        """(part, USD) for one node's bill of materials, in build-file order."""
        g = self.group
        chassis = g.chassis
        lines: list[tuple[str, float]] = []
        bundled_gpu = chassis.platform is not None and chassis.platform.included_gpu
        lines.append((f"{g.count}x {g.gpu.name}", 0.0 if bundled_gpu else price_of(g.gpu, g.count)))
        if g.loop is not None:
            lines.extend(
                (
                    f"{e.count}x {e.part.name}" if e.count > 1 else e.part.name,
                    price_of(e.part, e.count),
                )
                for e in g.loop.entries
            )
        cpu_label = (
            f"{chassis.cpu_count}x {self.cpu.name}" if chassis.cpu_count > 1 else self.cpu.name
        )
        lines.append((cpu_label, g.cpu_price_usd(self.cpu)))
        lines.append((chassis.name, chassis.price_usd))
        lines.append((f"{self.memory.count}x {self.memory.kit.name}", self.memory.price_usd))
        lines.append((self.storage.name, price_of(self.storage)))
        if self.psu is not None:
            lines.append((self.psu.name, price_of(self.psu)))
        if self.case is not None:
            lines.append((self.case.name, price_of(self.case)))
        return tuple(lines)

    def describe(self) -> str:
        """A short name: '2x GeForce RTX 4090, water, on ASUS Pro WS ...'."""
        g = self.group
        cooling = ", water-cooled" if g.water else ""
        if g.power_limit_w is not None:
            cooling += f", limited to {g.power_limit_w:.0f} W each"
        nodes = f"{g.nodes} nodes of " if g.nodes > 1 else ""
        return f"{nodes}{g.count}x {g.gpu.name}{cooling} on {g.chassis.name}"


def platform_network(platform: Platform | None) -> Network | None:
    """The fabric a platform's nodes join with (its own network ports)."""
    if platform is None or platform.network_gbit_s is None:
        return None
    kind = (
        NetworkKind.INFINIBAND
        if platform.network_gbit_s >= INFINIBAND_MIN_GBIT_S
        else NetworkKind.ETHERNET
    )
    return Network(kind=kind, gbit_s=platform.network_gbit_s)


def assemble(
    group: Group,
    *,
    cpu: CPU,
    memory: MemoryConfig,
    storage: Storage,
    psu: PSU | None,
    case: Case | None,
    electricity_per_kwh: float,
    name: str | None = None,
) -> Build:
    """The Build of a group with these supporting parts."""
    chassis = group.chassis
    cooling = CoolerType.WATER if group.water else None
    return Build(
        name=name or f"{group.count}x {group.gpu.name} {chassis.form.value}",
        gpus=(
            GPUGroup(
                gpu=group.gpu,
                count=group.count,
                cooler_override=cooling,
                power_limit_w=group.power_limit_w,
            ),
        ),
        cpu=cpu,
        cpu_count=chassis.cpu_count,
        motherboard=chassis.board,
        platform=chassis.platform,
        memory=memory,
        storage=(StorageDevice(device=storage, count=1, holds_dataset=True),),
        psu=psu,
        case=case,
        nodes=group.nodes,
        network=platform_network(chassis.platform) if group.nodes > 1 else None,
        prices=Prices(electricity_per_kwh=electricity_per_kwh),
        source="dlrig plan",
        loop=group.loop.entries if group.loop is not None else (),
        mains=group.mains,
    )


def psu_floor_w(gpu: GPU, board_w: float, count: int, cpu_w: float) -> float:
    """Watts below which no PSU passes PSU.1 for `count` of `gpu` drawing board_w each: the
    parts plus 10% for peaks, plus 10% margin, and never under the GPU vendor's minimum system
    power (the rule engine errors under that; above it, up to the next retail size, it
    warns)."""
    return _psu_floor_w(board_w * count, cpu_w, gpu.vendor_min_psu_w, gpu.tdp_w)


@functools.lru_cache(maxsize=4096)
def _psu_floor_w(gpu_w: float, cpu_w: float, vendor_min_w: float | None, tdp_w: float) -> float:
    # The search asks this per candidate, for few distinct (GPU, CPU) draws: sized once each.
    guide = size_psu(gpu_w, cpu_w).with_headroom_w
    if vendor_min_w is None:
        return guide
    return max(guide, vendor_min_with(vendor_min_w, tdp_w, gpu_w))
