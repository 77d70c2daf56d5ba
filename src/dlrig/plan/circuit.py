"""What a planned build asks of the mains (issue 35): its draw at the wall on the circuit the
plan assumed, the power limit the plan set to stay on it, and the circuits the build would
need at stock power."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dlrig.machine.model import Build
from dlrig.mains import Mains, default_mains
from dlrig.model.power_limit import POWER_LIMIT_EXPONENT
from dlrig.model.wall import circuits_that_carry, wall_draw


@dataclass(frozen=True)
class CircuitNote:
    """One build on its circuit: the wall draw and what is left, the per-GPU power limit the
    plan set (None: stock power), and at stock power the draw and the circuits that carry it
    (`stock_circuits`, smallest first; empty where no single circuit does)."""

    mains: Mains
    wall_w: float
    headroom_w: float
    power_limit_w: float | None
    matmul_share: float | None
    stock_wall_w: float
    stock_circuits: tuple[str, ...]


def circuit_note(build: Build) -> CircuitNote:
    """The build's circuit note (its own mains, else the default circuit)."""
    mains = build.mains or default_mains()
    draw = wall_draw(build, mains)
    limits = [g.power_limit_w for g in build.gpus if g.power_limit_w is not None]
    limit = min(limits) if limits else None
    stock = dataclasses.replace(
        build, gpus=tuple(dataclasses.replace(g, power_limit_w=None) for g in build.gpus)
    )
    share = None
    if limit is not None:
        stock_w = max(g.gpu.tdp_w for g in build.gpus)
        share = (limit / stock_w) ** POWER_LIMIT_EXPONENT
    return CircuitNote(
        mains=mains,
        wall_w=draw.wall_w,
        headroom_w=draw.headroom_w,
        power_limit_w=limit,
        matmul_share=share,
        stock_wall_w=wall_draw(stock, mains).wall_w,
        stock_circuits=circuits_that_carry(stock, mains) if limit is not None else (),
    )


def circuit_phrase(note: CircuitNote) -> str:
    """'power: 1,412 W at the wall on us-15a (assumed; 1,440 W continuous): 28 W to spare' and,
    for a power-limited build, what it needs at stock power."""
    m = note.mains
    origin = "assumed: no circuit given" if m.origin == "default" else f"from {m.origin}"
    text = (
        f"power: {note.wall_w:,.0f} W at the wall on {m.name} ({origin}; "
        f"{m.circuit.continuous_w:,.0f} W continuous): {note.headroom_w:,.0f} W to spare"
    )
    if note.power_limit_w is not None and note.matmul_share is not None:
        needs = (
            f"{', '.join(note.stock_circuits[:3])} (--circuit)"
            if note.stock_circuits
            else "more than one circuit (--circuit 2x-...)"
        )
        text += (
            f"; each GPU power-limited to {note.power_limit_w:.0f} W to run on it "
            f"({1 - note.matmul_share:.0%} slower matmuls, counted in the estimate); at stock "
            f"power it draws {note.stock_wall_w:,.0f} W and needs {needs}"
        )
    return text
