"""The planner's view of parts: a chassis (board or server platform), a RAM option (a kit times
a count), prices, and what a PSU delivers on the circuit's voltage."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dlrig.catalog.loader import normalize
from dlrig.catalog.prices import paid_count, unit_price_usd
from dlrig.catalog.schema import (
    PSU,
    MemoryKit,
    Motherboard,
    PartBase,
    Platform,
)
from dlrig.machine.model import MemoryConfig
from dlrig.model.power import LOW_LINE_KNOWN_MAX_W
from dlrig.plan.kinds import BuildForm

# A platform link at or above this rate is an InfiniBand-class fabric; below it, Ethernet.
INFINIBAND_MIN_GBIT_S = 200.0

EFFICIENCY_TIERS: tuple[str, ...] = ("white", "bronze", "silver", "gold", "platinum", "titanium")


@functools.lru_cache(maxsize=4096)
def normalized(name: str) -> str:
    """catalog.loader.normalize, remembered (the search compares the same few names often)."""
    return normalize(name)


@functools.lru_cache(maxsize=64)
def efficiency_rank(tier: str) -> int:
    """80 PLUS tier as a number (higher is more efficient; unknown tiers rank lowest)."""
    key = normalized(tier)
    return EFFICIENCY_TIERS.index(key) if key in EFFICIENCY_TIERS else -1


def psu_output_w(psu: PSU, low_line: bool) -> float | None:
    """What one PSU delivers on 100-127 V (`low_line`) or 200-240 V mains, W; None where that
    is not known (model/power.py's psu_capacity_w for a whole build)."""
    if low_line and psu.watts_at_115v is not None:
        return psu.watts_at_115v
    if low_line and psu.watts > LOW_LINE_KNOWN_MAX_W:
        return None
    return psu.watts


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
        return price_of(self.platform or self.board)


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
        return price_of(self.kit, self.count)

    def config(self) -> MemoryConfig:
        """The build's RAM entry for these kits (one, frozen, shared by every build the search
        assembles with the option)."""
        return self._config

    @functools.cached_property
    def _config(self) -> MemoryConfig:
        return MemoryConfig(
            size_gb=self.size_gb,
            memory_type=self.kit.memory_type,
            speed_mt_s=self.kit.speed_mt_s,
            kit=self.kit,
            kit_count=self.count,
            price_usd=self.price_usd,
        )


def priced(part: PartBase) -> bool:
    """Whether the part has a price, or the user owns it (an unpriced part cannot be planned
    with)."""
    return part.owned_count > 0 or unit_price_usd(part) is not None


def price_of(part: PartBase | None, count: int = 1) -> float:
    """What count of the part cost in USD: the price in use (catalog/prices.py: street, else
    launch) for each one the user does not already own (0 for no part)."""
    if part is None:
        return 0.0
    return (unit_price_usd(part) or 0.0) * paid_count(part, count)
