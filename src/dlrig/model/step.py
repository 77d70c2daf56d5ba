"""Composing a step from its stages: what runs in series, what overlaps, what binds."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from dlrig.enums import Bottleneck


@dataclass(frozen=True)
class Step:
    """A composed step: its time, what each stage adds after overlap, and what binds."""

    time_s: float
    exposed_s: dict[Bottleneck, float]
    hidden: tuple[Bottleneck, ...]
    bottleneck: Bottleneck
    next_bottleneck: Bottleneck | None
    speedup_if_removed: float


def compose_step(
    stages_s: Mapping[Bottleneck, float],
    serial_s: Mapping[Bottleneck, float],
    parallel: Collection[Bottleneck],
) -> Step:
    """The step lasts as long as the serial chain (the GPU's own work plus whatever cannot
    overlap with it: `serial_s`, each stage's non-overlapped time) or the slowest stage that
    runs beside it (`parallel`: asynchronous loading, pinned copies), whichever is longer.

    The bottleneck is the stage with the largest non-hidden time: a parallel stage that
    outlasts the serial chain, else the largest serial part. `speedup_if_removed` is how much
    faster the step would be if that stage took no time, before the next one binds.
    """
    serial_total = sum(v for b, v in serial_s.items() if b not in parallel)
    step_s = max([serial_total, *(stages_s[b] for b in parallel)])
    exposed = {b: (0.0 if b in parallel else serial_s.get(b, 0.0)) for b in Bottleneck}
    hidden = []
    for b in parallel:
        exposed[b] = max(stages_s[b] - serial_total, 0.0)
        if exposed[b] == 0.0 and stages_s[b] > 0:
            hidden.append(b)
    slowest = max(parallel, key=lambda b: stages_s[b], default=None)
    if slowest is not None and stages_s[slowest] > serial_total:
        bottleneck = slowest
    else:
        bottleneck = max((b for b in Bottleneck if b not in parallel), key=lambda b: exposed[b])
    without = max(
        [
            sum(exposed[b] for b in Bottleneck if b not in parallel and b is not bottleneck),
            *(stages_s[b] for b in parallel if b is not bottleneck),
        ]
    )
    rest = {
        b: (stages_s[b] if b in parallel else exposed[b]) for b in Bottleneck if b is not bottleneck
    }
    next_b = max(rest, key=lambda b: rest[b]) if any(v > 0 for v in rest.values()) else None
    speedup = step_s / without if without > 0 else float("inf")
    return Step(step_s, exposed, tuple(hidden), bottleneck, next_b, speedup)
