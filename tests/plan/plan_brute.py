"""The reference the planner is tested against: every candidate of the unpruned space."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

from dlrig.catalog.loader import Catalog
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.evaluate import Evaluator
from dlrig.plan.objectives import Objective, value_low, value_low_same_gpu, weighted_throughput
from dlrig.plan.results import WeightedWorkload, job_storage_gb
from dlrig.plan.space import search_space


class Point(NamedTuple):
    """A feasible build as the reference ranks it."""

    value: float
    price: float
    throughput: float
    gpus: object
    value_low: float
    warnings: int
    name: str
    gpu_model: str
    value_low_same_gpu: float


def brute_force(
    catalog: Catalog,
    workloads: Sequence[WeightedWorkload],
    budget_usd: float,
    objective: Objective,
    evaluator: Evaluator,
    constraints: Constraints,
) -> list[Point]:
    """Every feasible build under the budget."""
    space = search_space(
        catalog,
        constraints,
        part_filter(constraints, catalog),
        job_storage_gb(workloads),
        prune=False,
    )
    weights = [w.weight for w in workloads]
    out = []
    for group in space.groups:
        sizes = [range(len(p)) for p in group.option_prices()]
        for index in itertools.product(*sizes):
            cand = group.candidate(index)  # type: ignore[arg-type]
            if cand.price_usd > budget_usd + 1e-6 or not cand.assembles:
                continue
            build = cand.build()
            if any(evaluator.errors(cand.key, build, w.workload) for w in workloads):
                continue
            outcomes = [evaluator.outcome(cand.key, build, w.workload) for w in workloads]
            if not all(o.fits for o in outcomes):
                continue
            warned = {r for w in workloads for r in evaluator.warnings(cand.key, build, w.workload)}
            out.append(
                Point(
                    objective.value(cand.price_usd, outcomes),
                    cand.price_usd,
                    weighted_throughput(outcomes, weights),
                    group.gpu_set,
                    value_low(objective, cand.price_usd, outcomes),
                    len(warned),
                    repr(cand.key),
                    group.gpu.name,
                    value_low_same_gpu(objective, cand.price_usd, outcomes),
                )
            )
    return out


def frontier(points: Sequence[Point]) -> list[tuple[float, float]]:
    """(price, throughput) points no cheaper-or-equal point matches in throughput."""
    best: list[tuple[float, float]] = []
    for price, tput in sorted(
        ((p.price, p.throughput) for p in points), key=lambda t: (t[0], -t[1])
    ):
        if best and best[-1][1] >= tput * (1 - 1e-9):
            continue
        best.append((price, tput))
    return best


def ranked_top(points: Sequence[Point], k: int) -> list[tuple[float, float]]:
    """(value, price) of the first k builds as plan.ties defines the ranking: the best value
    left leads; of the builds with the leader's GPUs whose value reaches the leader's at the
    model's same-GPU band, the best value per dollar (value x price for an objective in hours
    or dollars; then fewer warnings, better value, name) is ranked; every other build with
    those GPUs is a copy and leaves (one build per GPU set)."""

    def order(p: Point) -> tuple[float, int, float, str]:
        price = max(p.price, 0.01)
        per_dollar = p.value / price if p.value > 0 else p.value * price
        return (-per_dollar, p.warnings, -p.value, p.name)

    left = list(points)
    out: list[Point] = []
    while left and len(out) < k:
        best = max(p.value for p in left)
        leader = min((p for p in left if p.value == best), key=order)
        floor = min(leader.value_low_same_gpu, leader.value)
        chosen = min((p for p in left if p.gpus == leader.gpus and p.value >= floor), key=order)
        out.append(chosen)
        left = [p for p in left if p.gpus != chosen.gpus]
    return [(p.value, p.price) for p in out]
