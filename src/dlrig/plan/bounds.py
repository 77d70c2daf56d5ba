"""Upper bounds: the best any build of a group could do. A group's supporting parts are fused
into one ideal part per kind (the most cores, lanes and clock of any CPU it takes, its largest
RAM, the fastest drive); the model does not get slower with better parts and the rules do not
get stricter, so no candidate of the group beats the ideal build, and an option that fails with
the ideal parts fails with any. Workstation groups with the same GPUs form a family, bounded
by one merged group."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from dlrig.catalog.schema import CPU, PSU, Case, FanMount, PCIeSlot, RadiatorMount, Storage
from dlrig.enums import CoolerType, StorageKind
from dlrig.machine.model import Build
from dlrig.machine.topology import card_width_slots
from dlrig.model.interconnect import amd_socket
from dlrig.model.pipeline import random_reads_per_s
from dlrig.plan.assembles import memory_fits_cpu
from dlrig.plan.dominance import STORAGE_KIND_RANK
from dlrig.plan.evaluate import Outcome
from dlrig.plan.groups import Group, assemble
from dlrig.plan.parts import Chassis, MemoryOption, efficiency_rank

T = TypeVar("T")
OPTION_LISTS = ("cpus", "memory", "storage", "psus", "cases")


@dataclass(frozen=True)
class Family:
    """Groups that share one bound: the same GPUs on every workstation board (bounded by a
    board with a full x16 slot per card and the best parts any of them takes), or one
    platform's group. `min_price_usd` is the cheapest group's."""

    groups: tuple[Group, ...]
    best: tuple[Outcome, ...]
    min_price_usd: float


@dataclass(frozen=True)
class IdealParts:
    """The best of each supporting part of a group, fused into one part per kind (the most
    cores, lanes, clock and addressable RAM of any CPU, the largest RAM, the fastest and
    largest drive, the biggest and most efficient PSU, the roomiest case)."""

    cpu: CPU
    memory: MemoryOption
    storage: Storage
    psu: PSU | None
    case: Case | None


def _max_or_none(values: Sequence[float | None]) -> float | None:
    """The largest value; None (no limit known) when any is None."""
    return None if any(v is None for v in values) else max(v for v in values if v is not None)


class _CpuFacts(NamedTuple):
    """What fusing a CPU list needs: its first most-cored CPU and the best of each number."""

    top: CPU
    cores: int
    threads: int
    base_ghz: float
    boost_ghz: float
    pcie_lanes: int
    pcie_gen: int
    memory_channels: int
    max_memory_gb: float | None
    tdp_w: float


def _cpu_facts(cpus: Sequence[CPU]) -> _CpuFacts:
    return _CpuFacts(
        top=max(cpus, key=lambda c: (c.cores, c.threads)),
        cores=max(c.cores for c in cpus),
        threads=max(c.threads for c in cpus),
        base_ghz=max(c.base_ghz for c in cpus),
        boost_ghz=max((c.boost_ghz or c.base_ghz) for c in cpus),
        pcie_lanes=max(c.pcie_lanes for c in cpus),
        pcie_gen=max(c.pcie_gen for c in cpus),
        memory_channels=max(c.memory_channels for c in cpus),
        max_memory_gb=_max_or_none([c.max_memory_gb for c in cpus]),
        tdp_w=min(c.tdp_w for c in cpus),
    )


class _DriveFacts(NamedTuple):
    top: Storage
    read_mb_s: float
    write_mb_s: float
    capacity_tb: float
    kind: StorageKind


def _drive_facts(drives: Sequence[Storage]) -> _DriveFacts:
    return _DriveFacts(
        kind=max((s.kind for s in drives), key=lambda k: STORAGE_KIND_RANK[k]),
        top=max(drives, key=lambda s: s.read_mb_s),
        read_mb_s=max(s.read_mb_s for s in drives),
        # checkpoint saves (model/checkpoint.py) run at the write speed, else the read speed
        write_mb_s=max(s.write_mb_s or s.read_mb_s for s in drives),
        capacity_tb=max(s.capacity_tb for s in drives),
    )


class _PsuFacts(NamedTuple):
    top: PSU
    watts: float
    watts_at_115v: float | None
    pcie_8pin: int
    pcie_12v_2x6: int
    efficiency: str


def _psu_facts(options: Sequence[PSU | None]) -> _PsuFacts | None:
    psus = [p for p in options if p is not None]
    if not psus:
        return None
    return _PsuFacts(
        top=max(psus, key=lambda p: p.watts),
        watts=max(p.watts for p in psus),
        watts_at_115v=_low_line_w(psus),
        pcie_8pin=max(p.pcie_8pin for p in psus),
        pcie_12v_2x6=max(p.pcie_12v_2x6 for p in psus),
        efficiency=max((p.efficiency for p in psus), key=efficiency_rank),
    )


def _low_line_w(psus: Sequence[PSU]) -> float | None:
    """The most any of these supplies gives on 100-127 V, where one states a 115 V rating
    (None: none does, and the fused unit's rating stands for it)."""
    if all(p.watts_at_115v is None for p in psus):
        return None
    return max(p.watts_at_115v or p.watts for p in psus)


class _CaseFacts(NamedTuple):
    first: Case
    max_gpu_length_mm: float
    expansion_slots: int
    radiator_mounts_120mm: int | None
    radiator_mounts: tuple[RadiatorMount, ...] | None
    fan_mounts: tuple[FanMount, ...] | None
    form_factors: tuple[str, ...]


def _most(values: Sequence[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _fused_mounts(
    mounts: Sequence[tuple[RadiatorMount, ...] | None],
) -> tuple[RadiatorMount, ...] | None:
    """Radiator mounts at least as roomy as each case's: the k-th longest of them is the
    longest k-th longest mount of any (whatever set of radiators one case takes, these take)."""
    known = [sorted((m.max_mm for m in ms), reverse=True) for ms in mounts if ms is not None]
    if not known:
        return None
    width = max(len(k) for k in known)
    return tuple(
        RadiatorMount(position=f"mount {i + 1}", max_mm=max(k[i] for k in known if i < len(k)))
        for i in range(width)
    )


def _fused_fans(fans: Sequence[tuple[FanMount, ...] | None]) -> tuple[FanMount, ...] | None:
    """Fan positions at least as many, of each size, as any of these cases has."""
    known = [f for f in fans if f is not None]
    if not known:
        return None
    sizes = sorted({m.size_mm for f in known for m in f})
    return tuple(
        FanMount(
            size_mm=size, count=max(sum(m.count for m in f if m.size_mm == size) for f in known)
        )
        for size in sizes
        if any(m.size_mm == size for f in known for m in f)
    )


def _case_facts(options: Sequence[Case | None]) -> _CaseFacts | None:
    cases = [c for c in options if c is not None]
    if not cases:
        return None
    return _CaseFacts(
        first=cases[0],
        max_gpu_length_mm=max(c.max_gpu_length_mm for c in cases),
        expansion_slots=max(c.expansion_slots for c in cases),
        radiator_mounts_120mm=_most([c.radiator_mounts_120mm for c in cases]),
        radiator_mounts=_fused_mounts([c.radiator_mounts for c in cases]),
        fan_mounts=_fused_fans([c.fan_mounts for c in cases]),
        form_factors=tuple(dict.fromkeys(f for c in cases for f in c.form_factors)),
    )


def _most_w(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _memory_top(memory: Sequence[MemoryOption]) -> MemoryOption:
    return max(memory, key=lambda m: (m.size_gb, m.kit.speed_mt_s or 0))


# Facts of option lists, by the list's identity (with the list, so that its id cannot be
# reused while the entry lives): the groups of one chassis share their lists, and the search
# fuses them for every group and family it bounds.
_FACTS: dict[tuple[str, int], tuple[object, Any]] = {}
_FACTS_MAX = 8192


def _facts_of(kind: str, items: Sequence[T], make: Callable[[Sequence[T]], Any]) -> Any:
    key = (kind, id(items))
    hit = _FACTS.get(key)
    if hit is not None and hit[0] is items:
        return hit[1]
    if len(_FACTS) >= _FACTS_MAX:
        _FACTS.clear()
    facts = make(items)
    _FACTS[key] = (items, facts)
    return facts


def slower_drives_fused(drives: Sequence[Storage], i: int) -> Storage:
    """drives[i] fused with every drive that reads no faster: its read rate, and the most
    capacity, write rate, kind and random reads of any of them (what the model reads of a
    drive), so that the model finds it no slower than each of them."""
    drive = drives[i]
    slower = [d for d in drives if d.read_mb_s <= drive.read_mb_s]
    facts = _drive_facts(slower)
    reads = [random_reads_per_s(d) for d in slower]
    return drive.model_copy(
        update={
            "write_mb_s": facts.write_mb_s,
            "capacity_tb": facts.capacity_tb,
            "kind": facts.kind,
            # None: an SSD's file opens cost nothing (model/pipeline.py)
            "random_read_iops": None if None in reads else max(r for r in reads if r),
        }
    )


def fewer_cores_fused(cpus: Sequence[CPU], i: int) -> CPU:
    """cpus[i] fused with every CPU that has no more cores and threads: its cores and
    threads, and the most clock, lanes, generation, memory channels and addressable RAM and
    the least TDP of any of them, so that the model finds it no slower than each of them."""
    cpu = cpus[i]
    facts = _cpu_facts([c for c in cpus if c.cores <= cpu.cores and c.threads <= cpu.threads])
    return cpu.model_copy(
        update={
            "base_ghz": facts.base_ghz,
            "boost_ghz": facts.boost_ghz,
            "pcie_lanes": facts.pcie_lanes,
            "pcie_gen": facts.pcie_gen,
            "memory_channels": facts.memory_channels,
            "max_memory_gb": facts.max_memory_gb,
            "tdp_w": facts.tdp_w,
        }
    )


def with_cpu(group: Group, ideal: IdealParts, cpu: CPU) -> IdealParts | None:
    """The ideal parts with this CPU and the largest RAM it addresses (None: it addresses
    none of the group's)."""
    usable = [m for m in group.memory if memory_fits_cpu(m, cpu, group.chassis.cpu_count)]
    best = max(usable, key=lambda m: (m.size_gb, m.kit.speed_mt_s or 0), default=None)
    return dataclasses.replace(ideal, cpu=cpu, memory=best) if best else None


def fused_parts(groups: Sequence[Group]) -> IdealParts:
    """The best of every supporting part any of these groups takes, fused into one part per
    kind (the most cores, lanes, clock and addressable RAM of any CPU, the largest RAM, the
    fastest-reading, fastest-writing and largest drive, the biggest and most efficient PSU,
    the roomiest case). Each fused part copies the first best one of the groups' lists, in
    order, and takes the best of every number from all of them: the same as fusing the lists
    joined."""
    cpu_facts: list[_CpuFacts] = [_facts_of("cpus", g.cpus, _cpu_facts) for g in groups]
    top_cpu = max((f.top for f in cpu_facts), key=lambda c: (c.cores, c.threads))
    cpu = top_cpu.model_copy(
        update={
            "cores": max(f.cores for f in cpu_facts),
            "threads": max(f.threads for f in cpu_facts),
            "base_ghz": max(f.base_ghz for f in cpu_facts),
            "boost_ghz": max(f.boost_ghz for f in cpu_facts),
            "pcie_lanes": max(f.pcie_lanes for f in cpu_facts),
            "pcie_gen": max(f.pcie_gen for f in cpu_facts),
            "memory_channels": max(f.memory_channels for f in cpu_facts),
            "max_memory_gb": _max_or_none([f.max_memory_gb for f in cpu_facts]),
            "tdp_w": min(f.tdp_w for f in cpu_facts),
        }
    )
    memory = _memory_top([_facts_of("memory", g.memory, _memory_top) for g in groups])
    drive_facts: list[_DriveFacts] = [_facts_of("storage", g.storage, _drive_facts) for g in groups]
    drive = max((f.top for f in drive_facts), key=lambda s: s.read_mb_s).model_copy(
        update={
            "read_mb_s": max(f.read_mb_s for f in drive_facts),
            "write_mb_s": max(f.write_mb_s for f in drive_facts),
            "capacity_tb": max(f.capacity_tb for f in drive_facts),
            # DISK.nvme judges the kind: the best kind any drive of the groups has
            "kind": max((f.kind for f in drive_facts), key=lambda k: STORAGE_KIND_RANK[k]),
        }
    )
    psu_facts: list[_PsuFacts] = [
        f for g in groups if (f := _facts_of("psus", g.psus, _psu_facts)) is not None
    ]
    psu = None
    if psu_facts:
        psu = max((f.top for f in psu_facts), key=lambda p: p.watts).model_copy(
            update={
                "watts": max(f.watts for f in psu_facts),
                "watts_at_115v": _most_w([f.watts_at_115v for f in psu_facts]),
                "pcie_8pin": max(f.pcie_8pin for f in psu_facts),
                "pcie_12v_2x6": max(f.pcie_12v_2x6 for f in psu_facts),
                "efficiency": max((f.efficiency for f in psu_facts), key=efficiency_rank),
            }
        )
    case_facts: list[_CaseFacts] = [
        f for g in groups if (f := _facts_of("cases", g.cases, _case_facts)) is not None
    ]
    case = None
    if case_facts:
        case = case_facts[0].first.model_copy(
            update={
                "max_gpu_length_mm": max(f.max_gpu_length_mm for f in case_facts),
                "expansion_slots": max(f.expansion_slots for f in case_facts),
                "radiator_mounts_120mm": _most([f.radiator_mounts_120mm for f in case_facts]),
                "radiator_mounts": _fused_mounts([f.radiator_mounts for f in case_facts]),
                "fan_mounts": _fused_fans([f.fan_mounts for f in case_facts]),
                "form_factors": tuple(dict.fromkeys(x for f in case_facts for x in f.form_factors)),
            }
        )
    return IdealParts(cpu=cpu, memory=memory, storage=drive, psu=psu, case=case)


def ideal_parts(group: Group) -> IdealParts:
    """Fuse each of the group's option lists into its best part."""
    return fused_parts([group])


def parts_build(group: Group, parts: IdealParts, electricity_per_kwh: float) -> Build:
    """The group's build with these supporting parts."""
    return assemble(
        group,
        cpu=parts.cpu,
        memory=parts.memory.config(),
        storage=parts.storage,
        psu=parts.psu,
        case=parts.case,
        electricity_per_kwh=electricity_per_kwh,
        name="upper bound",
    )


def ideal_build(
    group: Group, electricity_per_kwh: float, parts: IdealParts | None = None
) -> tuple[Hashable, Build]:
    """The group's GPUs with its ideal parts (or these), and the key naming what the model can
    see of it (`model_view`: groups with the same key share the bound)."""
    parts = parts or ideal_parts(group)
    build = parts_build(group, parts, electricity_per_kwh)
    return model_view(group, parts, electricity_per_kwh), build


def model_view(group: Group, parts: IdealParts, electricity_per_kwh: float) -> Hashable:
    """What the model reads of the group's build with these parts (dlrig.model.estimate): two
    builds with the same view get the same estimate, so the search estimates it once. The
    GPUs, their cooling, power limit and nodes; where the cards sit (a platform, or the board's
    socket, sockets and each card's slot: lanes, generation, CPU or chipset, and the gaps
    between cards); the CPU's numbers; the RAM's size, speed and modules (the host's memory
    bandwidth counts its channels); the drive's; the PSU's efficiency (the energy); whether a
    case is named (a build naming no chassis is not assumed to throttle); the electricity
    price. Not the case's size, the PSU's watts or any name or price: the model reads none."""
    chassis = group.chassis
    cpu, memory, drive, psu = parts.cpu, parts.memory, parts.storage, parts.psu
    where: Hashable = (
        ("platform", chassis.platform.name) if chassis.platform is not None else group.seats_view
    )
    return (
        group.gpu.name,
        group.count,
        group.water,
        group.power_limit_w,
        group.nodes,
        where,
        (cpu.cores, cpu.threads, cpu.base_ghz, cpu.boost_ghz, cpu.pcie_lanes, cpu.pcie_gen),
        (cpu.memory_channels, cpu.tdp_w, chassis.cpu_count),
        (memory.size_gb, memory.kit.speed_mt_s, memory.kit.modules * memory.count),
        (drive.kind, drive.read_mb_s, drive.write_mb_s, drive.capacity_tb, drive.random_read_iops),
        psu.efficiency if psu else None,
        parts.case is None,
        electricity_per_kwh,
    )


def probes(
    group: Group, ideal: IdealParts | None = None
) -> Iterator[tuple[str, int, IdealParts | None]]:
    """For each option of each list: the ideal parts with that one option in place (None when
    the option cannot go with any of the others). Under the assumption that the rules only get
    happier with better parts, an error on a probe is an error on every build with that option.
    A CPU is probed with the largest RAM it addresses. `ideal`: the group's ideal parts, when
    the caller has fused them already."""
    ideal = ideal or ideal_parts(group)
    for i, cpu in enumerate(group.cpus):
        yield "cpus", i, with_cpu(group, ideal, cpu)
    for i, memory in enumerate(group.memory):
        fits = memory_fits_cpu(memory, ideal.cpu, group.chassis.cpu_count)
        yield "memory", i, dataclasses.replace(ideal, memory=memory) if fits else None
    for i, drive in enumerate(group.storage):
        yield "storage", i, dataclasses.replace(ideal, storage=drive)
    for i, psu in enumerate(group.psus):
        yield "psus", i, dataclasses.replace(ideal, psu=psu)
    for i, case in enumerate(group.cases):
        yield "cases", i, dataclasses.replace(ideal, case=case)


def family_key(group: Group) -> Hashable:
    if group.chassis.board is None:
        return group.key
    return (
        "workstation", group.gpu.name, group.count, group.water, group.power_limit_w, group.nodes,
    )  # fmt: skip


def on_family_board(groups: Sequence[Group]) -> Group | None:
    """The first of these workstation groups (same GPUs) on a board at least as good as each
    of theirs: a full-width x16 slot for every card at the best generation, a free slot
    between every two cards (the model throttles a pair of open-air cards less when spaced),
    and as many CPU sockets as any. With `fused_parts(groups)` (every supporting part any of
    them takes) it bounds each of them. None when there is one group (or a platform's): its
    own ideal build bounds it."""
    first = groups[0]
    boards = [g.chassis.board for g in groups if g.chassis.board is not None]
    if len(groups) == 1 or len(boards) < len(groups):
        return None
    width = card_width_slots(first.gpu, CoolerType.WATER if first.water else None)
    gen = max(slot.gen for b in boards for slot in b.x16_slots)
    # An AMD host keeps NCCL's peer-to-peer for a pair of GPUs where an Intel one does not
    # (interconnect.board_host_bridge_reason): the family board takes an AMD socket if any does.
    base = next((b for b in boards if amd_socket(b.socket)), boards[0])
    board = base.model_copy(
        update={
            "x16_slots": tuple(
                PCIeSlot(position=1 + i * (width + 1), lanes=16, gen=gen)
                for i in range(first.count)
            ),
            "sockets": max(b.sockets for b in boards),
            "max_memory_gb": max(b.max_memory_gb for b in boards),
        }
    )
    return dataclasses.replace(first, chassis=Chassis(board=board))


def on_fewest_sockets(board_group: Group, groups: Sequence[Group]) -> Group | None:
    """The family board of `on_family_board` with as few CPU sockets as any of these groups'
    boards: with the fused parts (the least CPU TDP of any), it draws the least power any of
    them can. None when every board has the family board's sockets (it already does)."""
    board = board_group.chassis.board
    fewest = min(g.chassis.cpu_count for g in groups)
    if board is None or fewest == board.sockets:
        return None
    lean = board.model_copy(update={"sockets": fewest})
    return dataclasses.replace(board_group, chassis=Chassis(board=lean))


def at_least_draw(fast: Outcome, lean: Outcome) -> Outcome:
    """`fast` with its run's electricity at `lean`'s wall power: a lower bound of the energy
    of any build at most as fast as `fast` that draws at least as much as `lean` (the draw is
    set by the parts, not by the speed: model/estimate.py's average power is a fixed share of
    PSU.1's subtotal). Unchanged when either states no run or no energy."""
    if (
        fast.time_h is None
        or lean.time_h is None
        or lean.time_h <= 0
        or lean.energy_kwh is None
        or lean.energy_cost is None
    ):
        return fast
    share = fast.time_h / lean.time_h
    return dataclasses.replace(
        fast,
        energy_kwh=_least(fast.energy_kwh, lean.energy_kwh * share),
        energy_cost=_least(fast.energy_cost, lean.energy_cost * share),
    )


def _least(value: float | None, other: float) -> float:
    return other if value is None else min(value, other)


def option_sizes(group: Group) -> tuple[int, ...]:
    """The lengths of a group's option lists (a cut group keeps a prefix of each)."""
    return group.option_sizes


def probe_table(
    group: Group, ideal: IdealParts | None = None
) -> Iterator[tuple[str, list[IdealParts | None]]]:
    """Per option list, each option's probe parts (`probes`)."""
    table: dict[str, list[IdealParts | None]] = {k: [] for k in OPTION_LISTS}
    for kind, _, parts in probes(group, ideal):
        table[kind].append(parts)
    yield from table.items()
