"""What a build costs: the sum of its parts' prices in use (catalog/prices.py: street, else
launch), the parts that have none, and the prices the total rests on (for their age)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from dlrig.catalog.prices import PartPrice, paid_count, price_in_use
from dlrig.catalog.schema import PartBase
from dlrig.machine.model import Build


@dataclass(frozen=True)
class BuildPrice:
    """The priced parts' total for all nodes, the names of the parts without a price (the
    total leaves them out), and each priced part's price in use."""

    total_usd: float
    unpriced: tuple[str, ...]
    prices: tuple[tuple[str, PartPrice], ...] = ()
    # How many of each part in `prices` are paid for, per node (those owned cost nothing).
    paid_counts: tuple[int, ...] = ()

    @property
    def complete(self) -> bool:
        """Every part of the build has a price."""
        return not self.unpriced

    def stale(self, today: dt.date) -> tuple[tuple[str, PartPrice], ...]:
        """The parts whose price is older than a year, oldest first."""
        old = [(name, p) for name, p in self.prices if p.stale(today)]
        return tuple(sorted(old, key=lambda item: item[1].date or today))

    @property
    def oldest(self) -> PartPrice | None:
        """The oldest dated price the total rests on (None: no dated price)."""
        dated = [p for _, p in self.prices if p.date is not None]
        return min(dated, key=lambda p: p.date or dt.date.max, default=None)


def build_price(build: Build) -> BuildPrice:
    """Sum the parts of one node, its water loop's parts included (each times the count the
    user does not own), times the nodes."""
    parts: list[tuple[PartBase, int]] = [(g.gpu, g.count) for g in build.gpus]
    singles: list[tuple[PartBase | None, int]] = [
        (build.cpu, build.cpu_count),
        (build.motherboard, 1),
        (build.platform, 1),
        (build.psu, build.psu_count),
        (build.case, 1),
    ]
    parts += [(p, n) for p, n in singles if p is not None]
    parts += [(s.device, s.count) for s in build.storage]
    # a custom loop's blocks, radiators, pump and fittings are bought like any part
    parts += [(e.part, e.count) for e in build.loop]
    items: list[tuple[str, PartPrice | None, int]] = [
        (p.name, price_in_use(p), paid_count(p, n)) for p, n in parts
    ]
    memory = build.memory
    if memory is not None:
        kit = memory.kit
        if kit is not None and price_in_use(kit) is not None:
            items.append((kit.name, price_in_use(kit), paid_count(kit, memory.kit_count)))
        elif memory.price_usd is not None:
            # The build file's own figure for its RAM: the user's, undated.
            own = PartPrice(usd=float(memory.price_usd), date=None, kind="launch")
            items.append((f"{memory.size_gb:g} GiB RAM", own, 1))
        else:
            items.append((f"{memory.size_gb:g} GiB RAM", None, 1))
    total = sum(price.usd * n for _, price, n in items if price is not None)
    unpriced = tuple(dict.fromkeys(name for name, price, n in items if price is None and n))
    paid = [(name, price, n) for name, price, n in items if price is not None and n]
    return BuildPrice(
        total * build.nodes,
        unpriced,
        tuple((name, price) for name, price, _ in paid),
        tuple(n for _, _, n in paid),
    )
