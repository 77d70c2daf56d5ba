"""The reference the planner is tested against: every candidate of the unpruned space."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from dlrig.catalog.loader import Catalog
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.evaluate import Evaluator
from dlrig.plan.objectives import Objective, weighted_throughput
from dlrig.plan.results import WeightedWorkload, dataset_size_gb
from dlrig.plan.space import search_space

Point = tuple[float, float, float, object]


def brute_force(
    catalog: Catalog,
    workloads: Sequence[WeightedWorkload],
    budget_usd: float,
    objective: Objective,
    evaluator: Evaluator,
    constraints: Constraints,
) -> list[Point]:
    """(value, price, weighted throughput, GPU set) of every feasible build under the
    budget."""
    space = search_space(
        catalog,
        constraints,
        part_filter(constraints, catalog),
        dataset_size_gb(workloads),
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
            out.append(
                (
                    objective.value(cand.price_usd, outcomes),
                    cand.price_usd,
                    weighted_throughput(outcomes, weights),
                    group.gpu_set,
                )
            )
    return out


def frontier(points: Sequence[Point]) -> list[tuple[float, float]]:
    """(price, throughput) points no cheaper-or-equal point matches in throughput."""
    best: list[tuple[float, float]] = []
    for _, price, tput, _ in sorted(points, key=lambda p: (p[1], -p[2])):
        if best and best[-1][1] >= tput * (1 - 1e-9):
            continue
        best.append((price, tput))
    return best


def undominated_top(points: Sequence[Point], k: int) -> list[tuple[float, float]]:
    """(value, price) of the k best builds that no build with the same GPUs matches in value
    for less (every build the objective scores is ranked, but not dearer copies of one)."""
    kept: list[tuple[float, float, object]] = []
    for value, price, _, gpus in sorted(points, key=lambda p: (-p[0], p[1])):
        tol = 1e-9 * max(1.0, abs(value))
        if any(g == gpus and v >= value - tol and q <= price + 1e-6 for v, q, g in kept):
            continue
        kept.append((value, price, gpus))
    return [(v, q) for v, q, _ in kept[:k]]
