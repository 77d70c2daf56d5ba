"""What the rules read of a build, derived once per check: the cards one by one, where they sit
on the board, and the PCIe link each one gets. Pure; no rule recomputes these."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from dlrig.catalog.schema import GPU, PCIeSlot
from dlrig.enums import CoolerType, FormFactor

if TYPE_CHECKING:
    from dlrig.machine.model import Build
    from dlrig.workloads.model import Workload

NO_SLOT = "no slot"
# Most GPUs are 2 slots wide (MB.1); a card of unknown width is placed as one.
DEFAULT_CARD_SLOTS = 2


@dataclass(frozen=True)
class Card:
    """One physical GPU of the build (a group of `count` becomes `count` cards)."""

    gpu: GPU
    cooler: CoolerType
    group: int
    pcie_gen: int | None
    pcie_lanes: int | None

    @property
    def width_slots(self) -> int:
        return self.gpu.slots or DEFAULT_CARD_SLOTS


@dataclass(frozen=True)
class Seat:
    """Where a card sits: the slot it plugs into and the slot positions its cooler covers."""

    card: int
    slot: PCIeSlot
    first: int
    last: int


@dataclass(frozen=True)
class Placement:
    """The cards on the board's x16 slots, top to bottom, each taking the first free slot below
    the previous card's cooler (the order a builder fills a board)."""

    seats: tuple[Seat, ...]
    unplaced: tuple[int, ...]
    widths_assumed: bool

    def free_slots_below(self, i: int) -> int:
        """Empty slot positions between seat i and the next card (0: adjacent coolers)."""
        return self.seats[i + 1].first - self.seats[i].last - 1


@dataclass(frozen=True)
class Link:
    """The PCIe link a card trains at, and what decided it."""

    lanes: int
    gen: int
    basis: str


def _pow2_floor(n: int) -> int:
    """Link widths are x16, x8, x4, x2, x1: the widest that n lanes can make."""
    width = 1
    while width * 2 <= min(n, 16):
        width *= 2
    return width if n >= 1 else 0


class Facts:
    """A build (and optional workload) with the derived quantities the rules share."""

    def __init__(self, build: Build, workload: Workload | None = None) -> None:
        self.build = build
        self.workload = workload
        self.cards: tuple[Card, ...] = tuple(
            Card(g.gpu, g.cooler, i, g.pcie_gen, g.pcie_lanes)
            for i, g in enumerate(build.gpus)
            for _ in range(g.count)
        )
        self.n_gpus = len(self.cards)
        self.platform = build.platform
        self.desktop = build.platform is None
        cpu = build.cpu
        self.cpu_cores: int | None = cpu.cores * build.cpu_count if cpu else None
        self.cpu_threads: int | None = cpu.threads * build.cpu_count if cpu else None
        self.ram_gb: float | None = build.memory.size_gb if build.memory else None

    @cached_property
    def placement(self) -> Placement | None:
        """Cards on the motherboard's slots; None without a board (or on a server platform)."""
        board = self.build.motherboard
        if board is None or not self.desktop:
            return None
        slots = sorted(board.x16_slots, key=lambda s: s.position)
        seats: list[Seat] = []
        unplaced: list[int] = []
        next_free = 1
        k = 0
        for i, card in enumerate(self.cards):
            if card.gpu.form is not FormFactor.PCIE:
                continue  # an SXM/OAM module has no slot to sit in (COMPAT.form says so)
            while k < len(slots) and slots[k].position < next_free:
                k += 1
            if k == len(slots):
                unplaced.append(i)
                continue
            slot = slots[k]
            last = slot.position + card.width_slots - 1
            seats.append(Seat(i, slot, slot.position, last))
            next_free = last + 1
            k += 1
        return Placement(
            tuple(seats), tuple(unplaced), any(c.gpu.slots is None for c in self.cards)
        )

    @cached_property
    def links(self) -> tuple[Link, ...] | None:
        """The PCIe link of every card (a user's `pcie` setting wins); None when neither a
        platform, a board nor a CPU says what the GPUs get."""
        raw = self._raw_links()
        if raw is None:
            return None
        out = []
        for card, link in zip(self.cards, raw, strict=True):
            if link.basis == NO_SLOT:
                out.append(link)
                continue
            lanes = min(card.pcie_lanes or link.lanes, card.gpu.pcie_lanes)
            gen = min(card.pcie_gen or link.gen, card.gpu.pcie_gen)
            basis = "your pcie setting" if card.pcie_lanes or card.pcie_gen else link.basis
            out.append(Link(lanes, gen, basis))
        return tuple(out)

    def _raw_links(self) -> list[Link] | None:
        n = self.n_gpus
        platform, cpu = self.platform, self.build.cpu
        if platform is not None:
            return [Link(platform.gpu_pcie_lanes, platform.gpu_pcie_gen, platform.name)] * n
        cpu_lanes = cpu.pcie_lanes * self.build.cpu_count if cpu else None
        placement = self.placement
        if placement is not None:
            links: list[Link | None] = [None] * n
            from_cpu = [s for s in placement.seats if s.slot.from_cpu]
            wired = sum(s.slot.lanes for s in from_cpu)
            share = 16
            if cpu_lanes is not None and from_cpu and wired > cpu_lanes:
                share = _pow2_floor(cpu_lanes // len(from_cpu))
            for seat in placement.seats:
                lanes = min(seat.slot.lanes, share) if seat.slot.from_cpu else seat.slot.lanes
                basis = "board slot" + ("" if seat.slot.from_cpu else " (chipset)")
                if share < seat.slot.lanes and seat.slot.from_cpu:
                    basis = f"CPU's {cpu_lanes} lanes shared"
                links[seat.card] = Link(lanes, seat.slot.gen, basis)
            # Cards that find no slot get no link; the rules report them under MB.1.
            return [lk if lk is not None else Link(0, 0, NO_SLOT) for lk in links]
        if cpu is not None and cpu_lanes is not None:
            share = _pow2_floor(cpu_lanes // n) if n else 16
            return [Link(share, cpu.pcie_gen, f"CPU's {cpu_lanes} lanes / {n} GPUs")] * n
        return None

    @property
    def open_air(self) -> tuple[int, ...]:
        """Indices of the cards with open-air (non-blower) coolers."""
        return tuple(i for i, c in enumerate(self.cards) if c.cooler is CoolerType.OPEN_AIR)
