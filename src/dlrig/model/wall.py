"""Power at the wall against the circuit (PSU.6): the build's sustained draw, over its PSU's
efficiency at that load, split over the circuits it is plugged into.

The sustained draw is the GPUs' board power (their power limits where set) plus the CPUs' TDP:
PSU.1's sum before its 10% "for power peaks", which are milliseconds long and which a breaker,
tripping on heat over minutes, does not see. A training job holds its GPUs at their power limit
for hours, so this is the load that NEC's continuous-load rule judges (80% of the breaker).
Checked against Puget Systems' measurement of four RTX 3090s at 300 W on a Xeon W-2255 and a
single EVGA 1600 W Platinum unit: 1,717 W peak at the wall (The FPS Review, 2020-10-22) and, in
the same tests as reported, about 1,362 W typical and 1,467 W in OctaneBench (lorlink.com's
translation of Tom's Hardware); this model gives 1,514 W, between the sustained readings and
the peak (tests/rules/test_wall.py).

PSU efficiency by load follows the 80 PLUS levels (CLEAResult's program table, as Wikipedia's
"80 Plus" article reproduces it): the 115 V internal curve on 100-127 V mains, the 230 V EU
internal curve on 200-240 V, linear between the certified load points and flat beyond them.
Against a circuit, loads under half the PSU's rating count at its 50% figure
(`circuit_efficiency`): the circuit binds only at heavy loads, and so a larger or better PSU
never draws more at the wall (the planner's bounds rely on that).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from dlrig.machine.model import Build
from dlrig.mains import Mains, default_mains, load_circuits
from dlrig.model.power import build_cpu_w, build_gpu_w, psu_capacity_w

# 80 PLUS minimum efficiency at (load fraction, efficiency) points, by tier.
EFFICIENCY_115V: dict[str, tuple[tuple[float, float], ...]] = {
    "white": ((0.2, 0.80), (0.5, 0.80), (1.0, 0.80)),
    "bronze": ((0.2, 0.82), (0.5, 0.85), (1.0, 0.82)),
    "silver": ((0.2, 0.85), (0.5, 0.88), (1.0, 0.85)),
    "gold": ((0.2, 0.87), (0.5, 0.90), (1.0, 0.87)),
    "platinum": ((0.2, 0.90), (0.5, 0.92), (1.0, 0.89)),
    "titanium": ((0.1, 0.90), (0.2, 0.92), (0.5, 0.94), (1.0, 0.90)),
}
EFFICIENCY_230V_EU: dict[str, tuple[tuple[float, float], ...]] = {
    "white": ((0.2, 0.82), (0.5, 0.85), (1.0, 0.82)),
    "bronze": ((0.2, 0.85), (0.5, 0.88), (1.0, 0.85)),
    "silver": ((0.2, 0.87), (0.5, 0.90), (1.0, 0.87)),
    "gold": ((0.2, 0.90), (0.5, 0.92), (1.0, 0.89)),
    "platinum": ((0.2, 0.92), (0.5, 0.94), (1.0, 0.90)),
    "titanium": ((0.1, 0.90), (0.2, 0.94), (0.5, 0.96), (1.0, 0.94)),
}
# A build that names no PSU tier is counted at Gold, the tier the estimate assumes too.
DEFAULT_TIER = "gold"
# No CPU named: the guide's worked example's 150 W CPU (PSU.1).
DEFAULT_CPU_W = 150.0


def psu_efficiency_at(tier: str, load_fraction: float, *, low_line: bool) -> float | None:
    """The 80 PLUS minimum efficiency of a `tier` PSU at `load_fraction` of its rating on
    100-127 V (`low_line`) or 200-240 V mains; None for a tier the program does not define."""
    table = EFFICIENCY_115V if low_line else EFFICIENCY_230V_EU
    points = table.get(tier.strip().lower())
    if points is None:
        return None
    load = max(load_fraction, 0.0)
    if load <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if load <= x1:
            return y0 + (y1 - y0) * (load - x0) / (x1 - x0)
    return points[-1][1]


def circuit_efficiency(tier: str, load_fraction: float | None, *, low_line: bool) -> float | None:
    """The efficiency the circuit is judged at: the 80 PLUS figure at the load, loads under
    half the rating taken at half (None load: half)."""
    load = 0.5 if load_fraction is None else max(load_fraction, 0.5)
    return psu_efficiency_at(tier, load, low_line=low_line)


def sustained_dc_w(build: Build) -> float:
    """What one node's parts draw for hours while training, W: the GPUs' board power (limits
    counted) and the CPUs' TDP (150 W when no CPU is named)."""
    cpu_w = build_cpu_w(build)
    return build_gpu_w(build) + (DEFAULT_CPU_W if cpu_w is None else cpu_w)


@dataclass(frozen=True)
class WallDraw:
    """One node at the wall: the sustained DC load, the PSU efficiency at its load, the AC draw,
    and what the busiest circuit carries against its continuous limit."""

    mains: Mains
    dc_w: float
    psu_tier: str
    tier_assumed: bool
    psu_capacity_w: float | None
    load_fraction: float | None
    efficiency: float
    wall_w: float
    supplies: int
    per_circuit_w: float
    circuits_used: int

    @property
    def continuous_w(self) -> float:
        """The continuous limit of one circuit of the mains, W."""
        return self.mains.circuit.continuous_w

    @property
    def headroom_w(self) -> float:
        """What the busiest circuit has left for hours (negative: over its limit), W."""
        return self.continuous_w - self.per_circuit_w

    @property
    def fits(self) -> bool:
        """The busiest circuit carries its share for hours."""
        return self.per_circuit_w <= self.continuous_w + 1e-6


def _tier(build: Build) -> tuple[str, bool]:
    if build.psu is not None:
        return str(build.psu.efficiency).lower(), False
    if build.platform is not None:
        return str(build.platform.psu_efficiency).lower(), False
    return DEFAULT_TIER, True


def _supplies(build: Build) -> int:
    """How many PSUs share the node's load (a server platform: one feed per circuit given)."""
    return build.psu_count if build.psu is not None else 1


def wall_draw(build: Build, mains: Mains | None = None) -> WallDraw:
    """The node's draw at the wall on `mains` (the build's own, else the default circuit). The
    load splits evenly over the PSUs, and the PSUs over the circuits (one circuit carries
    ceil(PSUs / circuits) of them); a server's supplies split over as many circuits as given."""
    mains = mains or build.mains or default_mains()
    low_line = mains.circuit.low_line
    dc_w = sustained_dc_w(build)
    tier, assumed = _tier(build)
    capacity = psu_capacity_w(build, low_line=low_line)
    load = dc_w / capacity if capacity else None
    efficiency = circuit_efficiency(tier, load, low_line=low_line)
    if efficiency is None:
        tier, assumed = DEFAULT_TIER, True
        efficiency = circuit_efficiency(tier, load, low_line=low_line)
    assert efficiency is not None  # DEFAULT_TIER is in both tables
    wall_w = dc_w / efficiency
    if build.psu is not None:
        supplies = _supplies(build)
        used = min(mains.count, supplies)
        per_circuit = wall_w * math.ceil(supplies / used) / supplies
    else:
        supplies, used = 1, mains.count
        per_circuit = wall_w / used
    return WallDraw(
        mains=mains,
        dc_w=dc_w,
        psu_tier=tier,
        tier_assumed=assumed,
        psu_capacity_w=capacity,
        load_fraction=load,
        efficiency=efficiency,
        wall_w=wall_w,
        supplies=supplies,
        per_circuit_w=per_circuit,
        circuits_used=used,
    )


def max_dc_w_on(mains: Mains, tier: str, capacity_w: float | None, *, supplies: int = 1) -> float:
    """The most sustained DC load a node can draw on `mains` through `supplies` PSUs of `tier`
    and `capacity_w` together (one circuit per PSU at most), W: what each used circuit carries
    for hours times the efficiency at that load."""
    used = min(mains.count, supplies)
    per_circuit = mains.circuit.continuous_w
    low_line = mains.circuit.low_line
    # Efficiency depends on the load: a few fixed-point steps settle it to well under 1 W.
    dc = per_circuit * 0.9 * used
    for _ in range(8):
        load = dc / capacity_w if capacity_w else None
        eff = circuit_efficiency(tier, load, low_line=low_line) or 0.9
        dc = per_circuit * eff * used
    return dc


def circuits_that_carry(build: Build, mains: Mains | None = None) -> tuple[str, ...]:
    """Single circuits, smallest first, that carry the node at its present power for hours:
    those of the mains' region (the name's prefix: us, eu, uk, cn) first."""
    mains = mains or build.mains or default_mains()
    region = mains.circuit.name.split("-", 1)[0]
    fitting = [
        c
        for c in sorted(load_circuits(), key=lambda c: c.continuous_w)
        if wall_draw(build, Mains(circuit=c)).fits
    ]
    own = [c.name for c in fitting if c.name.split("-", 1)[0] == region]
    return tuple(own or [c.name for c in fitting])
