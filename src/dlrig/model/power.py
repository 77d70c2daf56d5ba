"""Power draw and PSU sizing (PSU.1) — shared by the rules, the estimate and the planner."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dlrig.machine.model import Build

# Retail ATX/server PSU ratings, W; above the largest, round up to the next 100 W.
STANDARD_PSU_SIZES_W: tuple[int, ...] = (
    450, 550, 650, 750, 850, 1000, 1200, 1300, 1400, 1500, 1600, 2000, 2200, 2400, 2800, 3000,
)  # fmt: skip

OTHER_COMPONENTS_SHARE_OF_GPU = 0.10
HEADROOM = 0.10


@dataclass(frozen=True)
class PSUSizing:
    """PSU.1 step by step: parts, plus peaks/other parts, plus headroom, then a retail size."""

    gpu_w: float
    cpu_w: float
    other_w: float
    subtotal_w: float
    with_headroom_w: float
    recommended_w: int
    # The GPU vendor's minimum system power for the node (None: no card states one); the
    # recommendation is at least that (NVIDIA: an RTX 5090 wants 1000 W, an 850 W unit fails).
    vendor_min_w: float | None = None

    @property
    def required_w(self) -> float:
        """Watts below which the PSU fails PSU.1: the guide's sizing or the vendor's minimum."""
        return max(self.with_headroom_w, self.vendor_min_w or 0.0)


def next_psu_size_w(watts: float) -> int:
    """The smallest standard PSU rating at or above watts ('buy the next size up')."""
    for size in STANDARD_PSU_SIZES_W:
        if size >= watts - 1e-9:
            return size
    return int(math.ceil(watts / 100.0) * 100)


def size_psu(gpu_w: float, cpu_w: float) -> PSUSizing:
    """PSU.1: add the GPUs' and CPU's power, ~10% for the rest and peaks, then 10% margin.

    The guide's worked example (4 x 250 W GPUs, a 150 W CPU: 1000 + 150 + 100 = 1250 W,
    +10% = 1375 W, buy 1400 W) fixes the first 10% as a share of the GPUs' watts.
    """
    other_w = OTHER_COMPONENTS_SHARE_OF_GPU * gpu_w
    subtotal_w = gpu_w + cpu_w + other_w
    with_headroom_w = subtotal_w * (1.0 + HEADROOM)
    return PSUSizing(
        gpu_w=gpu_w,
        cpu_w=cpu_w,
        other_w=other_w,
        subtotal_w=subtotal_w,
        with_headroom_w=with_headroom_w,
        recommended_w=next_psu_size_w(with_headroom_w),
    )


def build_gpu_w(build: Build) -> float:
    """Board power of all GPUs in one node, W (TDP / total graphics power, or the power limit
    the build sets on the cards)."""
    return sum(g.board_power_w * g.count for g in build.gpus)


def build_cpu_w(build: Build) -> float | None:
    """TDP of the node's CPUs, W; None when the build names no CPU."""
    if build.cpu is None:
        return None
    return build.cpu.tdp_w * build.cpu_count


def vendor_min_system_w(build: Build) -> float | None:
    """The GPU vendors' minimum system power for the node, W; None when no card states one.

    A vendor's figure is for a PC with one such card, so each further card adds its board power
    on top of the largest stated minimum.
    """
    stated = [g for g in build.gpus if g.gpu.vendor_min_psu_w is not None]
    if not stated:
        return None
    anchor = max(stated, key=lambda g: g.gpu.vendor_min_psu_w or 0.0)
    return vendor_min_with(anchor.gpu.vendor_min_psu_w or 0.0, anchor.gpu.tdp_w, build_gpu_w(build))


def vendor_min_with(stated_w: float, card_tdp_w: float, gpus_w: float) -> float:
    """A vendor's minimum system power for one card (stated_w, for a card of card_tdp_w) with
    gpus_w of cards in the PC: the stated minimum is the card's stock power plus the rest of a
    typical PC, and a power limit or more cards change the cards' share, not the rest's."""
    return stated_w - card_tdp_w + gpus_w


def size_build_psu(build: Build, *, default_cpu_w: float = 150.0) -> PSUSizing:
    """PSU.1 on a build; a missing CPU counts as default_cpu_w (the guide example's CPU)."""
    cpu_w = build_cpu_w(build)
    sizing = size_psu(build_gpu_w(build), default_cpu_w if cpu_w is None else cpu_w)
    vendor_min_w = vendor_min_system_w(build)
    if vendor_min_w is None:
        return sizing
    return replace(
        sizing,
        vendor_min_w=vendor_min_w,
        recommended_w=max(sizing.recommended_w, next_psu_size_w(vendor_min_w)),
    )


# The largest PSUs known to deliver their full rating on 100-127 V mains: Lambda (2020) "the
# highest rated workstation PSU on the market offers at most 1600W at standard home/office
# voltages" (the Corsair AX1600i gives its 1,600 W on 115 V). A unit rated above this that
# publishes no 115 V figure (`watts_at_115v`) has an unknown output on such mains.
LOW_LINE_KNOWN_MAX_W = 1600.0
# The largest single ATX units, 2,800 W, reach it on 200-240 V mains only.
ATX_MAX_W = 2800.0


def psu_capacity_w(build: Build, *, low_line: bool) -> float | None:
    """What the node's supplies deliver together on this mains, W: on 100-127 V a PSU's 115 V
    rating where it states one; None when a unit's output there is unknown (rated above
    LOW_LINE_KNOWN_MAX_W with no 115 V figure) or the build names no supply."""
    if build.psu is not None:
        psu = build.psu
        if low_line and psu.watts_at_115v is not None:
            return psu.watts_at_115v * build.psu_count
        if low_line and psu.watts > LOW_LINE_KNOWN_MAX_W:
            return None
        return psu.watts * build.psu_count
    if build.platform is not None:
        return build.platform.psu_watts
    return None


# PCI-SIG's CEM 5.0 lets a card on the 12VHPWR / 12V-2x6 connector draw up to 3x its sustained
# power for 100 us (Intel's Stephen Eastman to PCWorld, 2022-04, as TweakTown quotes him: "a 600
# watt card ... is allowed to spike to 1,800 watts for 100 micro-seconds"); an ATX 3.x PSU with
# that connector must carry 200% of its rating for 100 us (180% for 1 ms, 160% for 10 ms, 120%
# for 100 ms: Intel's ATX 3.0 design guide as HotHardware and Tom's Hardware report it).
CEM5_EXCURSION = 3.0
ATX3_EXCURSION_100US = 2.0


@dataclass(frozen=True)
class Transient:
    """The 100 us worst case of PSU.5: every 12V-2x6 card at CEM 5.0's 3x at once (data-parallel
    GPUs run the same kernels in step, so their spikes line up), the other cards at their
    board power, the CPU and PSU.1's 10% share for the rest."""

    excursion_gpu_w: float
    steady_gpu_w: float
    cpu_w: float
    other_w: float

    @property
    def peak_w(self) -> float:
        return self.excursion_gpu_w + self.steady_gpu_w + self.cpu_w + self.other_w


def transient_peak(build: Build, *, default_cpu_w: float = 150.0) -> Transient:
    """The node's 100 us worst case (PSU.5)."""
    spiking = sum(g.board_power_w * g.count for g in build.gpus if g.gpu.power_12v_2x6)
    steady = build_gpu_w(build) - spiking
    cpu_w = build_cpu_w(build)
    return Transient(
        excursion_gpu_w=CEM5_EXCURSION * spiking,
        steady_gpu_w=steady,
        cpu_w=default_cpu_w if cpu_w is None else cpu_w,
        other_w=OTHER_COMPONENTS_SHARE_OF_GPU * build_gpu_w(build),
    )
