"""What the rules read of a build: its topology (machine.topology: the cards, where they sit
and the PCIe link each one gets) and a few sums. Pure; no rule recomputes these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlrig.catalog.currency import USD, Currency
from dlrig.enums import CoolerType
from dlrig.machine.topology import Card, Link, Placement, topology
from dlrig.mains import Mains, default_mains

if TYPE_CHECKING:
    from dlrig.machine.model import Build
    from dlrig.workloads.model import Workload


class Facts:
    """A build (and optional workload) with the derived quantities the rules share."""

    def __init__(
        self,
        build: Build,
        workload: Workload | None = None,
        *,
        errors_only: bool = False,
        currency: Currency = USD,
    ) -> None:
        self.build = build
        self.workload = workload
        self.errors_only = errors_only  # only errors are wanted: warning-only work may be skipped
        self.currency = currency  # the command's --currency: rules state money in it
        self.topology = topology(build)
        self.cards: tuple[Card, ...] = self.topology.cards
        self.n_gpus = len(self.cards)
        self.platform = build.platform
        self.desktop = build.platform is None
        cpu = build.cpu
        self.cpu_cores: int | None = cpu.cores * build.cpu_count if cpu else None
        self.cpu_threads: int | None = cpu.threads * build.cpu_count if cpu else None
        self.ram_gb: float | None = build.memory.size_gb if build.memory else None
        # The circuit the build is judged on: its own (or the command's), else the default.
        self.mains: Mains = build.mains or default_mains()

    @property
    def placement(self) -> Placement | None:
        """Cards on the motherboard's slots; None without a board (or on a server platform)."""
        return self.topology.placement

    @property
    def links(self) -> tuple[Link, ...] | None:
        """The PCIe link of every card (a user's `pcie` setting wins); None when neither a
        platform, a board nor a CPU says what the GPUs get."""
        return self.topology.links

    @property
    def open_air(self) -> tuple[int, ...]:
        """Indices of the cards with open-air (non-blower) coolers."""
        return tuple(i for i, c in enumerate(self.cards) if c.cooler is CoolerType.OPEN_AIR)


def water_heat_w(f: Facts) -> float:
    """The heat a build's water loop must move, W: its water-cooled cards' board power (their
    power limits where set)."""
    return sum(g.board_power_w * g.count for g in f.build.gpus if g.cooler is CoolerType.WATER)
