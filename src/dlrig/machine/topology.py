"""Where each GPU sits and which PCIe link it gets: computed once per build, read by the rules,
the model and the planner alike (so that `check`, `estimate`, `plan` and `upgrade` never
disagree on a card's link)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlrig.catalog.schema import GPU, PCIeSlot
from dlrig.enums import CoolerType, FormFactor

if TYPE_CHECKING:
    from dlrig.machine.model import Build

# MB.1: "most GPUs are 2 slots wide"; a card whose width is not given is placed as one.
DEFAULT_CARD_SLOTS = 2
# A water-blocked card whose block is not named (machine/loop.py says why; kept here, below the
# loop module's imports, so that topology needs nothing above it).
WATER_BLOCK_SLOTS = 2
NO_SLOT = "no slot"


@dataclass(frozen=True)
class Card:
    """One physical GPU of the build (a group of `count` becomes `count` cards)."""

    gpu: GPU
    cooler: CoolerType
    group: int
    pcie_gen: int | None
    pcie_lanes: int | None
    # A water-blocked card's block width, when the build's loop names its block.
    block_slots: int | None = None

    @property
    def width_slots(self) -> int:
        return card_width_slots(self.gpu, self.cooler, self.block_slots)


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

    @property
    def bottom_slot(self) -> int:
        """The lowest slot position a cooler covers (0 with no card seated)."""
        return self.seats[-1].last if self.seats else 0


@dataclass(frozen=True)
class Link:
    """The PCIe link a card trains at, and what decided it."""

    lanes: int
    gen: int
    basis: str

    @property
    def seated(self) -> bool:
        return self.basis != NO_SLOT


def card_width_slots(
    gpu: GPU, cooler: CoolerType | None = None, block_slots: int | None = None
) -> int:
    """Expansion-slot positions the card's cooler covers: a water block's width for a
    water-cooled card (machine/loop.py), else the card's own."""
    width = gpu.slots or DEFAULT_CARD_SLOTS
    if cooler is CoolerType.WATER:
        return min(width, block_slots or WATER_BLOCK_SLOTS)
    return width


def link_width(lanes: int) -> int:
    """Link widths are x16, x8, x4, x2, x1: the widest that `lanes` lanes can make (0: none)."""
    return next((w for w in (16, 8, 4, 2, 1) if w <= lanes), 0)


def place_cards(
    slots: Sequence[PCIeSlot], widths: Sequence[int]
) -> tuple[tuple[tuple[int, PCIeSlot, int], ...], tuple[int, ...]]:
    """The one placement rule: cards in order, each in the highest x16 slot at or below the
    first position the previous card's cooler leaves free. Returns ((card, slot, last covered
    position), ...) and the cards that found no slot."""
    ordered = sorted(slots, key=lambda s: s.position)
    seated: list[tuple[int, PCIeSlot, int]] = []
    unplaced: list[int] = []
    next_free, k = 1, 0
    for i, width in enumerate(widths):
        while k < len(ordered) and ordered[k].position < next_free:
            k += 1
        if k == len(ordered):
            unplaced.append(i)
            continue
        slot = ordered[k]
        last = slot.position + width - 1
        seated.append((i, slot, last))
        next_free = last + 1
        k += 1
    return tuple(seated), tuple(unplaced)


@dataclass(frozen=True)
class Topology:
    """The cards of a build, their seats on the board and the PCIe link of each card."""

    cards: tuple[Card, ...]
    placement: Placement | None
    links: tuple[Link, ...] | None
    gpus_per_cpu_socket: float = math.inf

    def card_link(self, i: int) -> Link:
        """Card i's link; where nothing says what the slot gives (no board, platform or CPU),
        the card's own link with the user's `pcie` setting."""
        if self.links is not None:
            return self.links[i]
        card = self.cards[i]
        return Link(
            min(card.pcie_lanes or card.gpu.pcie_lanes, card.gpu.pcie_lanes),
            min(card.pcie_gen or card.gpu.pcie_gen, card.gpu.pcie_gen),
            "the card's own link (nothing says what the slot gives)",
        )

    def group_link(self, group: int) -> Link:
        """The slowest seated link among a GPU group's cards (the group is paced by it)."""
        links = [self.card_link(i) for i, c in enumerate(self.cards) if c.group == group]
        seated = [lk for lk in links if lk.seated]
        if not seated:
            # No card of the group found a slot (MB.1 reports it): judge the card's own link.
            gpu = next(c.gpu for c in self.cards if c.group == group)
            return Link(gpu.pcie_lanes, gpu.pcie_gen, NO_SLOT)
        return min(seated, key=lambda lk: (lk.lanes * 2**lk.gen, lk.lanes))

    def spans_cpu_sockets(self, n: int) -> bool:
        """n GPUs of the build hang off more than one CPU socket: n GPUs fill one socket's share
        of the positions first (CUDA numbers GPUs in PCI order)."""
        return n > self.gpus_per_cpu_socket

    def downgraded(self, group: int) -> bool:
        """The group's link is narrower or older than its cards can train at."""
        link = self.group_link(group)
        gpu = next(c.gpu for c in self.cards if c.group == group)
        return link.seated and (link.gen < gpu.pcie_gen or link.lanes < gpu.pcie_lanes)


def topology(build: Build) -> Topology:
    """The build's topology, computed once per build (builds are frozen; `Build.topology`
    keeps it)."""
    return build.topology


# Builds that share their GPUs, board, platform and CPU share a topology: the planner makes
# thousands of builds from a few dozen of those parts. Keyed by the parts' identities, with the
# parts kept alive beside the result so that no id is reused while its entry exists.
_SHARED: dict[tuple[object, ...], tuple[tuple[object, ...], Topology]] = {}
_SHARED_MAX = 4096


def compute_topology(build: Build) -> Topology:
    """The cards, their seats and links, from the build's parts (call `topology` instead)."""
    parts: tuple[object, ...] = (
        build.motherboard, build.platform, build.cpu, *(g.gpu for g in build.gpus),
    )  # fmt: skip
    key = (
        *(id(p) for p in parts),
        build.cpu_count,
        tuple((g.count, g.pcie_gen, g.pcie_lanes, g.cooler) for g in build.gpus),
        tuple((e.part.name, e.part.slots) for e in build.loop),
    )
    found = _SHARED.get(key)
    if found is not None:
        return found[1]
    topo = _compute(build)
    if len(_SHARED) >= _SHARED_MAX:
        _SHARED.clear()
    _SHARED[key] = (parts, topo)
    return topo


def _compute(build: Build) -> Topology:
    cards = tuple(
        Card(g.gpu, g.cooler, i, g.pcie_gen, g.pcie_lanes, _block_slots(build, g.gpu, g.cooler))
        for i, g in enumerate(build.gpus)
        for _ in range(g.count)
    )
    placement = _placement(build, cards)
    return Topology(cards, placement, _links(build, cards, placement), _gpus_per_cpu_socket(build))


def _block_slots(build: Build, gpu: GPU, cooler: CoolerType) -> int | None:
    """The width of the block the build's loop names for this card (None: none named)."""
    if cooler is not CoolerType.WATER:
        return None
    from dlrig.machine.loop import block_for

    block = block_for(gpu, build.loop)
    return block.slots if block is not None else None


def _gpus_per_cpu_socket(build: Build) -> float:
    """GPU positions wired to each CPU socket of a multi-socket server, which spreads its GPU
    positions evenly over its sockets; infinite elsewhere (a board's slots do not say which CPU
    they hang off, so a dual-socket board is taken at its best: the cards on one socket)."""
    platform = build.platform
    if platform is not None and platform.cpu_sockets > 1:
        return math.ceil(platform.max_gpus / platform.cpu_sockets)
    return math.inf


def _placement(build: Build, cards: tuple[Card, ...]) -> Placement | None:
    board = build.motherboard
    if board is None or build.platform is not None:
        return None
    # SXM/OAM modules have no slot to sit in (COMPAT.form says so).
    slotted = [i for i, c in enumerate(cards) if c.gpu.form is FormFactor.PCIE]
    seated, unplaced = place_cards(board.x16_slots, [cards[i].width_slots for i in slotted])
    return Placement(
        tuple(Seat(slotted[k], slot, slot.position, last) for k, slot, last in seated),
        tuple(slotted[k] for k in unplaced),
        any(c.gpu.slots is None for c in cards),
    )


def _links(
    build: Build, cards: tuple[Card, ...], placement: Placement | None
) -> tuple[Link, ...] | None:
    """Each card's link: what the slot, the platform or the CPU's shared lanes give (PCIE.2,
    PCIE.3), capped by the card's own link; a user's `pcie` setting states what the slot gives."""
    raw = _raw_links(build, len(cards), placement)
    if raw is None:
        return None
    out = []
    for card, link in zip(cards, raw, strict=True):
        if not link.seated:
            out.append(link)
            continue
        lanes = min(card.pcie_lanes or link.lanes, card.gpu.pcie_lanes)
        gen = min(card.pcie_gen or link.gen, card.gpu.pcie_gen)
        basis = "your pcie setting" if card.pcie_lanes or card.pcie_gen else link.basis
        out.append(Link(lanes, gen, basis))
    return tuple(out)


def _raw_links(build: Build, n: int, placement: Placement | None) -> list[Link] | None:
    platform, cpu = build.platform, build.cpu
    if platform is not None:
        return [Link(platform.gpu_pcie_lanes, platform.gpu_pcie_gen, platform.name)] * n
    cpu_lanes = cpu.pcie_lanes * build.cpu_count if cpu else None
    if placement is not None:
        links = [Link(0, 0, NO_SLOT)] * n
        from_cpu = [s for s in placement.seats if s.slot.from_cpu]
        wired = sum(s.slot.lanes for s in from_cpu)
        share = 16
        if cpu_lanes is not None and from_cpu and wired > cpu_lanes:
            share = link_width(cpu_lanes // len(from_cpu))
        for seat in placement.seats:
            slot = seat.slot
            if slot.from_cpu:
                lanes = min(slot.lanes, share)
                # A CPU-fed slot runs at the older of the slot's and the CPU's generation.
                gen = min(slot.gen, cpu.pcie_gen) if cpu else slot.gen
                basis = f"CPU's {cpu_lanes} lanes shared" if share < slot.lanes else "board slot"
            else:
                lanes, gen, basis = slot.lanes, slot.gen, "board slot (chipset)"
            links[seat.card] = Link(lanes, gen, basis)
        return links
    if cpu is not None and cpu_lanes is not None:
        share = link_width(cpu_lanes // n) if n else 16
        return [Link(share, cpu.pcie_gen, f"CPU's {cpu_lanes} lanes / {n} GPUs")] * n
    return None
