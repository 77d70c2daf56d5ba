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
    # The stated minimum is the card's stock power plus the rest of a typical PC; a power limit
    # (power_limit_w) lowers the card's share, not the rest's.
    rest_w = (anchor.gpu.vendor_min_psu_w or 0.0) - anchor.gpu.tdp_w
    return rest_w + build_gpu_w(build)


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
