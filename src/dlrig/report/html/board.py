"""The board as its expansion-slot positions with the cards drawn where the machine topology
seats them: widths, the free positions between coolers, and each card's PCIe link."""

from __future__ import annotations

from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from dlrig.machine.topology import topology

if TYPE_CHECKING:
    from dlrig.machine.model import Build

ROW_H = 26
LEFT = 120
SLOT_W = 300
TOP = 34


def board_drawing(build: Build) -> Markup | None:
    """An SVG of the board's slots and seated cards; None without a board to draw."""
    board = build.motherboard
    topo = topology(build)
    placement = topo.placement
    if board is None or placement is None:
        return None
    links = topo.links
    slots = {s.position: s for s in board.x16_slots}
    rows = max([*slots, placement.bottom_slot, 1])
    height = TOP + rows * ROW_H + 24 + 22 * len(placement.unplaced)
    parts = [
        f'<text class="chart-title" x="0" y="18">{escape(board.name)}: cards in their slots</text>'
    ]
    for pos in range(1, rows + 1):
        y = TOP + (pos - 1) * ROW_H
        parts.append(
            f'<text class="slot-label" x="{LEFT - 10}" y="{y + 17}" text-anchor="end">'
            f"position {pos}</text>"
        )
        slot = slots.get(pos)
        if slot is not None:
            feed = "CPU" if slot.from_cpu else "chipset"
            parts.append(
                f'<rect class="slot{"" if slot.from_cpu else " chipset"}" x="{LEFT}" '
                f'y="{y + 9}" width="{SLOT_W}" height="8"><title>x16 slot wired x{slot.lanes}, '
                f"gen {slot.gen}, from the {feed}</title></rect>"
                f'<text class="slot-label" x="{LEFT + SLOT_W + 8}" y="{y + 17}">'
                f"x{slot.lanes} gen {slot.gen} ({feed})</text>"
            )
    for seat in placement.seats:
        card = topo.cards[seat.card]
        y = TOP + (seat.first - 1) * ROW_H + 2
        h = (seat.last - seat.first + 1) * ROW_H - 4
        link = links[seat.card] if links is not None else None
        runs = f"runs x{link.lanes} gen {link.gen} ({link.basis})" if link else "link unknown"
        text = f"GPU {seat.card + 1}: {card.gpu.name}, {card.width_slots} slots wide, {runs}"
        parts.append(
            f'<rect class="card" x="{LEFT + 20}" y="{y}" width="{SLOT_W - 40}" height="{h}" '
            f'rx="4"><title>{escape(text)}</title></rect>'
            f'<text class="card-label" x="{LEFT + 30}" y="{y + 15}">{escape(card.gpu.name)}'
            f"</text>"
            f'<text class="card-label" x="{LEFT + 30}" y="{y + 29}">'
            f"{escape(runs if link else '')}</text>"
        )
    y = TOP + rows * ROW_H + 16
    for i in placement.unplaced:
        parts.append(
            f'<text class="limit-label" x="{LEFT}" y="{y}">GPU {i + 1} '
            f"({escape(topo.cards[i].gpu.name)}) finds no free slot (MB.1)</text>"
        )
        y += 22
    width = LEFT + SLOT_W + 170
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="board">{"".join(parts)}</svg>'
    )
