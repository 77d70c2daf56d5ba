"""What a build costs: the sum of its parts' catalog prices, and the parts that have none."""

from __future__ import annotations

from dataclasses import dataclass

from dlrig.catalog.schema import PartBase
from dlrig.machine.model import Build


@dataclass(frozen=True)
class BuildPrice:
    """The priced parts' total for all nodes, and the names of the parts without a price (the
    total leaves them out)."""

    total_usd: float
    unpriced: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.unpriced


def build_price(build: Build) -> BuildPrice:
    """Sum the parts of one node (each times its count), times the nodes."""
    items: list[tuple[str, float | None, int]] = [
        (g.gpu.name, g.gpu.price_usd, g.count) for g in build.gpus
    ]
    singles: list[tuple[PartBase | None, int]] = [
        (build.cpu, build.cpu_count),
        (build.motherboard, 1),
        (build.platform, 1),
        (build.psu, build.psu_count),
        (build.case, 1),
    ]
    items += [(p.name, p.price_usd, n) for p, n in singles if p is not None]
    items += [(s.device.name, s.device.price_usd, s.count) for s in build.storage]
    memory = build.memory
    if memory is not None:
        if memory.price_usd is not None:
            items.append((f"{memory.size_gb:g} GB RAM", memory.price_usd, 1))
        elif memory.kit is not None:
            items.append((memory.kit.name, memory.kit.price_usd, memory.kit_count))
        else:
            items.append((f"{memory.size_gb:g} GB RAM", None, 1))
    total = sum(price * n for _, price, n in items if price is not None)
    unpriced = tuple(dict.fromkeys(name for name, price, _ in items if price is None))
    return BuildPrice(total * build.nodes, unpriced)
