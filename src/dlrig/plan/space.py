"""The planner's search space: which parts assemble into a build, and the price of a build.

A *group* is one way to hold GPUs: a chassis (a workstation board, or a server platform), a GPU
model, a count per node and a cooling choice. Inside a group only the supporting parts vary
(CPU, RAM, dataset drive, PSU, case); they matter to the rules and the model through a few
numbers (cores, lanes, RAM size, read rate, watts), so each list is cut to the parts that no
other part beats on price and on every one of those numbers (dominance), and the group's
candidates are visited cheapest first.

"Assembles" here means physically goes together (socket, memory type, slots, card length, GPU
form, the dataset fits on the drive). Everything else (PSU.1, COOL.3, RAM.2, PCIE.2, ...) is the
rule engine's to judge.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from dlrig.catalog.loader import Catalog, normalize
from dlrig.catalog.schema import (
    CPU,
    GPU,
    PSU,
    Case,
    MemoryKit,
    Motherboard,
    PartBase,
    PCIeSlot,
    Platform,
    Storage,
)
from dlrig.enums import CoolerType, FormFactor, NetworkKind
from dlrig.machine.fit import (
    board_fits_case,
    card_fits_case,
    cards_fit_slots,
    dataset_fits,
    memory_size_fits,
    memory_type_fits,
    radiators_fit,
)
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, Network, Prices, StorageDevice
from dlrig.machine.topology import card_width_slots, place_cards
from dlrig.model.power import size_psu
from dlrig.plan.constraints import Constraints, PartFilter
from dlrig.plan.kinds import BuildForm

# COOL.4: "about 100 USD per GPU plus about 50 USD up front" for all-in-one water kits.
WATER_USD_PER_GPU = 100.0
WATER_USD_BASE = 50.0
# A platform link at or above this rate is an InfiniBand-class fabric; below it, Ethernet.
INFINIBAND_MIN_GBIT_S = 200.0

EFFICIENCY_TIERS: tuple[str, ...] = ("white", "bronze", "silver", "gold", "platinum", "titanium")

T = TypeVar("T")


@functools.lru_cache(maxsize=4096)
def _norm(name: str) -> str:
    """catalog.loader.normalize, remembered (the search compares the same few names often)."""
    return normalize(name)


@functools.lru_cache(maxsize=64)
def efficiency_rank(tier: str) -> int:
    """80 PLUS tier as a number (higher is more efficient; unknown tiers rank lowest)."""
    key = _norm(tier)
    return EFFICIENCY_TIERS.index(key) if key in EFFICIENCY_TIERS else -1


def water_cooling_usd(gpu_count: int) -> float:
    """COOL.4's price of water-cooling gpu_count GPUs (all-in-one kits)."""
    return WATER_USD_BASE + WATER_USD_PER_GPU * gpu_count


@dataclass(frozen=True)
class Chassis:
    """Where the GPUs sit: a workstation motherboard, or a server platform (board, power,
    cooling and enclosure sold as one)."""

    board: Motherboard | None = None
    platform: Platform | None = None

    @property
    def name(self) -> str:
        part = self.platform or self.board
        return part.name if part is not None else "no chassis"

    @property
    def form(self) -> BuildForm:
        return BuildForm.SERVER if self.platform is not None else BuildForm.WORKSTATION

    @property
    def socket(self) -> str:
        if self.platform is not None:
            return self.platform.cpu_socket
        return self.board.socket if self.board is not None else ""

    @property
    def cpu_count(self) -> int:
        if self.platform is not None:
            return self.platform.cpu_sockets
        return self.board.sockets if self.board is not None else 1

    @property
    def memory_type(self) -> str:
        part = self.platform or self.board
        return part.memory_type if part is not None else ""

    @property
    def memory_slots(self) -> int:
        part = self.platform or self.board
        return part.memory_slots if part is not None else 0

    @property
    def max_memory_gb(self) -> float:
        part = self.platform or self.board
        return part.max_memory_gb if part is not None else 0.0

    @property
    def price_usd(self) -> float:
        part = self.platform or self.board
        return float(part.price_usd) if part is not None and part.price_usd else 0.0


@dataclass(frozen=True)
class MemoryOption:
    """System RAM as `count` identical kits."""

    kit: MemoryKit
    count: int

    @property
    def size_gb(self) -> float:
        return self.kit.size_gb * self.count

    @property
    def price_usd(self) -> float:
        return float(self.kit.price_usd or 0.0) * self.count

    def config(self) -> MemoryConfig:
        """The build's RAM entry for these kits."""
        return MemoryConfig(
            size_gb=self.size_gb,
            memory_type=self.kit.memory_type,
            speed_mt_s=self.kit.speed_mt_s,
            kit=self.kit,
            kit_count=self.count,
            price_usd=self.price_usd,
        )


def priced(part: PartBase) -> bool:
    """Whether the catalog gives a price (an unpriced part cannot be planned with)."""
    return part.price_usd is not None


def price_of(part: PartBase | None) -> float:
    """The part's catalog price in USD (0 for no part)."""
    return float(part.price_usd or 0.0) if part is not None else 0.0


# --- what assembles ---------------------------------------------------------------------------


def place_gpus(board: Motherboard, gpu: GPU, count: int) -> tuple[PCIeSlot, ...] | None:
    """The x16 slots `count` cards of this width occupy, by the machine topology's placement
    rule (MB.1); None when they do not all fit."""
    seated, unplaced = place_cards(board.x16_slots, [card_width_slots(gpu)] * count)
    return None if unplaced else tuple(slot for _, slot, _ in seated)


def slots_needed(board: Motherboard, gpu: GPU, count: int) -> int | None:
    """Expansion-slot openings the case must have for the placed cards (the last card may hang
    below the board's last slot)."""
    placed = place_gpus(board, gpu, count)
    if placed is None:
        return None
    return placed[-1].position + card_width_slots(gpu) - 1


def case_fits(case: Case, board: Motherboard, gpu: GPU, count: int, water: bool) -> bool:
    """CASE.1: the case takes the board, the cards' length and width, and a radiator per GPU
    when water-cooled."""
    if not board_fits_case(board, case):
        return False
    if gpu.length_mm is not None and not card_fits_case(gpu.length_mm, case):
        return False
    needed = slots_needed(board, gpu, count)
    if needed is None or not cards_fit_slots(needed, case):
        return False
    return not water or radiators_fit(count, case)


def gpu_fits_chassis(chassis: Chassis, gpu: GPU, count: int) -> bool:
    """The chassis takes count of these GPUs: platform form and size, or board slots."""
    if chassis.platform is not None:
        p = chassis.platform
        if p.included_gpu is not None:
            return gpu.name == p.included_gpu and count == p.included_gpu_count
        if p.gpu_max_slots is not None and (gpu.slots or 0) > p.gpu_max_slots:
            return False
        return gpu.form == p.gpu_form and count <= p.max_gpus
    if chassis.board is None or gpu.form != FormFactor.PCIE:
        return False
    return place_gpus(chassis.board, gpu, count) is not None


def cpu_fits_chassis(chassis: Chassis, cpu: CPU) -> bool:
    """Same socket and, where the board names them, a CPU family its chipset takes; a
    platform that bundles its CPU takes only that one."""
    if chassis.platform is not None and chassis.platform.included_cpu is not None:
        return cpu.name == chassis.platform.included_cpu
    board = chassis.board
    if board is not None and board.cpu_families and cpu.family not in board.cpu_families:
        return False
    return _norm(cpu.socket) == _norm(chassis.socket)


def memory_options(chassis: Chassis, kits: Sequence[MemoryKit]) -> list[MemoryOption]:
    """Every kit-and-count the chassis takes: its memory type (registered or not, where the
    board says), slots and maximum size."""
    out = []
    host = chassis.platform or chassis.board
    registered = host.memory_registered if host is not None else None
    for kit in kits:
        if not memory_type_fits(kit.memory_type, chassis.memory_type):
            continue
        if registered is not None and kit.registered != registered:
            continue
        for count in range(1, chassis.memory_slots // kit.modules + 1):
            option = MemoryOption(kit, count)
            if memory_size_fits(option.size_gb, chassis.max_memory_gb):
                out.append(option)
    return out


def memory_fits_cpu(memory: MemoryOption, cpu: CPU, cpu_count: int) -> bool:
    """The CPUs address this much RAM (COMPAT.memory; no stated limit: any)."""
    if cpu.max_memory_gb is None:
        return True
    return memory_size_fits(memory.size_gb, cpu.max_memory_gb * cpu_count)


def storage_holds(storage: Storage, dataset_gb: float) -> bool:
    """DISK.4: the dataset drive holds the dataset."""
    return dataset_fits(storage.capacity_tb, dataset_gb)


# --- dominance ----------------------------------------------------------------------------------


def pareto_cheapest(
    items: Sequence[T], price: Callable[[T], float], merit: Callable[[T], tuple[float, ...]]
) -> list[T]:
    """Items that no other item beats on price and every merit (larger is better), cheapest
    first. Of exact ties the first listed stays."""
    ordered = sorted(items, key=price)
    kept: list[tuple[T, float, tuple[float, ...]]] = []
    for item in ordered:
        m = merit(item)
        p = price(item)
        if any(kp <= p and all(a >= b for a, b in zip(km, m, strict=True)) for _, kp, km in kept):
            continue
        kept.append((item, p, m))
    return [item for item, _, _ in kept]


def cpu_merit(cpu: CPU) -> tuple[float, ...]:
    """What the rules and the model read of a CPU: cores and threads (CPU.1), clocks (CPU.2),
    lanes (PCIE.2), memory channels; less TDP is better (PSU.1)."""
    return (
        cpu.cores,
        cpu.threads,
        cpu.base_ghz,
        cpu.boost_ghz or cpu.base_ghz,
        cpu.pcie_lanes,
        cpu.pcie_gen,
        cpu.memory_channels,
        cpu.max_memory_gb or 0.0,
        -cpu.tdp_w,
    )


def storage_merit(s: Storage) -> tuple[float, ...]:
    """Read rate (DISK.1/DISK.3) and capacity (DISK.4)."""
    return (s.read_mb_s, s.capacity_tb, s.write_mb_s or 0.0)


def psu_merit(p: PSU) -> tuple[float, ...]:
    """Watts (PSU.1), connectors (PSU.2), efficiency (PSU.3)."""
    return (p.watts, p.pcie_8pin, p.pcie_12v_2x6, efficiency_rank(p.efficiency))


def case_merit(c: Case) -> tuple[float, ...]:
    """Card length, expansion slots and radiator room (CASE.1); the board form is a filter."""
    return (c.max_gpu_length_mm, c.expansion_slots, c.radiator_mounts_120mm)


def memory_merit(m: MemoryOption) -> tuple[float, ...]:
    """Size (RAM.2); speed barely matters (RAM.1) but is kept so a rule on it can be met."""
    return (m.size_gb, m.kit.speed_mt_s or 0, int(m.kit.registered))


# --- groups and candidates ----------------------------------------------------------------------


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

    @property
    def key(self) -> Hashable:
        return (self.chassis.name, self.gpu.name, self.count, self.water, self.nodes)

    @property
    def fixed_price_usd(self) -> float:
        """One node's price of the chassis, GPUs (unless bundled) and water cooling."""
        bundled = self.chassis.platform is not None and self.chassis.platform.included_gpu
        gpus = 0.0 if bundled else price_of(self.gpu) * self.count
        cooling = water_cooling_usd(self.count) if self.water else 0.0
        return self.chassis.price_usd + gpus + cooling

    def cpu_price_usd(self, cpu: CPU) -> float:
        """What the CPUs cost in this chassis (all sockets; nothing when bundled)."""
        bundled = self.chassis.platform is not None and self.chassis.platform.included_cpu
        return 0.0 if bundled else price_of(cpu) * self.chassis.cpu_count

    @functools.cached_property
    def _prices(self) -> tuple[tuple[float, ...], ...]:
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
        firsts = (
            self.cpu_price_usd(self.cpus[0]),
            self.memory[0].price_usd,
            price_of(self.storage[0]),
            price_of(self.psus[0]),
            price_of(self.cases[0]),
        )
        return self.nodes * (self.fixed_price_usd + sum(firsts))

    def within(self, budget_usd: float) -> Group:
        """The group with only the options a build under budget_usd can afford (each list
        keeps the parts costing at most the cheapest plus the budget's slack)."""
        if not math.isfinite(budget_usd):
            return self
        prices = self.option_prices()
        slack = budget_usd / self.nodes - self.fixed_price_usd - sum(p[0] for p in prices)
        if slack < 0:
            return self

        def keep(options: Sequence[T], costs: Sequence[float]) -> tuple[T, ...]:
            return tuple(o for o, c in zip(options, costs, strict=True) if c <= costs[0] + slack)

        return dataclasses.replace(
            self,
            cpus=keep(self.cpus, prices[0]),
            memory=keep(self.memory, prices[1]),
            storage=keep(self.storage, prices[2]),
            psus=keep(self.psus, prices[3]),
            cases=keep(self.cases, prices[4]),
        )

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

    def cheapest_first(
        self, max_price_usd: float, live: Sequence[Sequence[int]] | None = None
    ) -> Iterator[Candidate]:
        """The group's candidates in non-decreasing price, up to max_price_usd; with `live`,
        only those made of the listed options (indices into each list)."""
        prices = self.option_prices()
        picks = live if live is not None else [range(len(p)) for p in prices]
        sub = [tuple(p[i] for i in pick) for p, pick in zip(prices, picks, strict=True)]
        for total, index in cheapest_combinations(sub):
            price = (self.fixed_price_usd + total) * self.nodes
            if price > max_price_usd + 1e-6:
                return
            real = tuple(pick[i] for pick, i in zip(picks, index, strict=True))
            cand = self.candidate(real)  # type: ignore[arg-type]
            if cand.assembles:
                yield cand


def cheapest_combinations(
    price_lists: Sequence[Sequence[float]],
) -> Iterator[tuple[float, tuple[int, ...]]]:
    """Index tuples into sorted price lists, in non-decreasing total price (a best-first walk
    of the product: each step raises one index by one)."""
    if any(len(p) == 0 for p in price_lists):
        return
    start = tuple(0 for _ in price_lists)
    heap = [(sum(p[0] for p in price_lists), start)]
    seen = {start}
    while heap:
        total, index = heapq.heappop(heap)
        yield total, index
        for axis, prices in enumerate(price_lists):
            i = index[axis] + 1
            if i < len(prices):
                nxt = (*index[:axis], i, *index[axis + 1 :])
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (total - prices[i - 1] + prices[i], nxt))


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
        """What the model reads of the supporting parts (larger is better in each place):
        the CPU, the RAM, the dataset drive and the PSU's efficiency (energy). Two candidates
        of a group where one is at least as good in every place run at least as fast."""
        efficiency = efficiency_rank(self.psu.efficiency) if self.psu is not None else 0
        return (
            *cpu_merit(self.cpu),
            *memory_merit(self.memory),
            *storage_merit(self.storage),
            efficiency,
        )

    def price_lines(self) -> tuple[tuple[str, float], ...]:
        """(part, USD) for one node's bill of materials, in build-file order."""
        g = self.group
        chassis = g.chassis
        lines: list[tuple[str, float]] = []
        bundled_gpu = chassis.platform is not None and chassis.platform.included_gpu
        lines.append(
            (f"{g.count}x {g.gpu.name}", 0.0 if bundled_gpu else price_of(g.gpu) * g.count)
        )
        if g.water:
            lines.append((f"water cooling for {g.count} GPUs (COOL.4)", water_cooling_usd(g.count)))
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
        gpus=(GPUGroup(gpu=group.gpu, count=group.count, cooler_override=cooling),),
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
    )


def psu_floor_w(gpu: GPU, count: int, cpu_w: float) -> float:
    """Watts below which no PSU passes PSU.1: the parts plus 10% for peaks, plus 10% margin
    (the rule engine errors under that; above it, up to the next retail size, it warns)."""
    return size_psu(gpu.tdp_w * count, cpu_w).with_headroom_w


@dataclass(frozen=True)
class SearchSpace:
    """Every group the constraints allow, and what was left out for lack of a price."""

    groups: tuple[Group, ...]
    unpriced: tuple[str, ...]


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
    case_pools: dict[str, list[Case]] = {}
    groups: list[Group] = []
    chassis_list = chassis_options(catalog, constraints, allow)
    for chassis in distinct_chassis(chassis_list) if prune else chassis_list:
        own_cpus = tuple(
            cut([c for c in cpus if cpu_fits_chassis(chassis, c)], price_of, cpu_merit)
        )
        memory = tuple(cut(memory_options(chassis, kits), lambda m: m.price_usd, memory_merit))
        if not own_cpus or not memory or not storage:
            continue
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
                    form = _norm(board.form_factor)
                    if form not in case_pools:
                        case_pools[form] = cut(
                            [c for c in cases if form in {_norm(f) for f in c.form_factors}],
                            price_of,
                            case_merit,
                        )
                    needed = slots_needed(board, gpu, count) or 0
                    group_psus = tuple(p for p in psu_pool if p.watts >= floor)
                    group_cases = tuple(
                        c
                        for c in case_pools[form]
                        if (gpu.length_mm or 0.0) <= c.max_gpu_length_mm
                        and needed <= c.expansion_slots
                        and (not water or c.radiator_mounts_120mm >= count)
                    )
                if not group_psus or not group_cases:
                    continue
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
                    )
                )
    return SearchSpace(groups=tuple(groups), unpriced=tuple(unpriced))


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
