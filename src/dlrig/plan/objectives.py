"""What "best" means: one objective per class, all scored so that larger is better.

An objective turns a build's price and its model outcomes (one per workload, with weights)
into a value, and gives an optimistic bound for any build of at least a given price whose
outcomes are no better than given ones; the search prunes with that bound, so it must never
be below a value the objective can actually reach.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from dlrig.plan.evaluate import Outcome
from dlrig.plan.kinds import ObjectiveKind

HOURS_PER_YEAR = 24.0 * 365.0


def weighted_throughput(outcomes: Sequence[Outcome], weights: Sequence[float]) -> float:
    """Weighted geometric mean of samples/s over the workloads.

    A geometric mean, because the workloads' rates differ by orders of magnitude (images vs
    tokens of a 70B model): doubling any one job's speed raises the score by the same factor,
    whatever its units. Zero when a workload does not run at all.
    """
    if len(outcomes) == 1:  # the search asks this of every probe: spare the logarithms
        return max(outcomes[0].samples_per_s, 0.0)
    total = sum(weights)
    if any(o.samples_per_s <= 0 for o in outcomes):
        return 0.0
    return math.exp(
        sum(w * math.log(o.samples_per_s) for o, w in zip(outcomes, weights, strict=True)) / total
    )


def run_hours(outcome: Outcome) -> float:
    """Hours of one training run; a workload without a stated length counts one sample."""
    if outcome.time_h is not None:
        return outcome.time_h
    return 1.0 / outcome.samples_per_s / 3600.0 if outcome.samples_per_s > 0 else math.inf


class Objective(Protocol):
    """A planner objective (larger `value` is better)."""

    @property
    def kind(self) -> ObjectiveKind: ...

    @property
    def unit(self) -> str: ...

    @property
    def price_monotone(self) -> bool:
        """True when, at equal outcomes, a dearer build never scores better: once a group
        reaches its best outcome, its dearer candidates can be skipped."""
        ...

    @property
    def reads_energy(self) -> bool:
        """True when `value` reads the run's electricity: then a bound's outcomes must also
        use no more energy than any build it bounds (a board with more CPU sockets is faster
        and draws more: the search bounds a family's energy with its fewest sockets)."""
        ...

    def value(self, price_usd: float, outcomes: Sequence[Outcome]) -> float:
        """The score of a build (larger is better)."""
        ...

    def bound(self, price_usd: float, best: Sequence[Outcome]) -> float:
        """An upper bound of `value` over builds costing >= price_usd whose outcomes are no
        better than `best` (not faster, not shorter, not using less energy)."""
        ...

    def display(self, value: float) -> float:
        """The value in the objective's unit, as people read it."""
        ...


@dataclass(frozen=True)
class Throughput:
    """The default: the fastest build under the budget, weighted over the workloads."""

    weights: tuple[float, ...]
    kind: ObjectiveKind = ObjectiveKind.THROUGHPUT
    unit: str = "samples/s"
    price_monotone: bool = True
    reads_energy: bool = False

    def value(self, price_usd: float, outcomes: Sequence[Outcome]) -> float:
        return weighted_throughput(outcomes, self.weights)

    def bound(self, price_usd: float, best: Sequence[Outcome]) -> float:
        return weighted_throughput(best, self.weights)

    def display(self, value: float) -> float:
        return value


@dataclass(frozen=True)
class TimeToTrain:
    """The shortest total time for one run of each workload, weighted (runs per workload)."""

    weights: tuple[float, ...]
    kind: ObjectiveKind = ObjectiveKind.TIME_TO_TRAIN
    unit: str = "h"
    price_monotone: bool = True
    reads_energy: bool = False

    def value(self, price_usd: float, outcomes: Sequence[Outcome]) -> float:
        return -sum(w * run_hours(o) for o, w in zip(outcomes, self.weights, strict=True))

    def bound(self, price_usd: float, best: Sequence[Outcome]) -> float:
        return self.value(price_usd, best)

    def display(self, value: float) -> float:
        return -value


@dataclass(frozen=True)
class CostPerRun:
    """The cheapest run: the purchase spread over the machine's life (it runs back to back for
    `lifetime_years`), plus the run's electricity (PSU.3)."""

    weights: tuple[float, ...]
    lifetime_years: float
    kind: ObjectiveKind = ObjectiveKind.COST_PER_RUN
    unit: str = "USD/run"
    price_monotone: bool = False
    reads_energy: bool = True

    def _amortized(self, price_usd: float, hours: float) -> float:
        return price_usd * hours / (self.lifetime_years * HOURS_PER_YEAR)

    def value(self, price_usd: float, outcomes: Sequence[Outcome]) -> float:
        return -sum(
            w * (self._amortized(price_usd, run_hours(o)) + (o.energy_cost or 0.0))
            for o, w in zip(outcomes, self.weights, strict=True)
        )

    def bound(self, price_usd: float, best: Sequence[Outcome]) -> float:
        # The purchase share is at least this price's for the shortest run; the electricity at
        # least the best outcome's (the shortest run at the lowest draw of the group).
        return self.value(price_usd, best)

    def display(self, value: float) -> float:
        return -value


@dataclass(frozen=True)
class PerfPerDollar:
    """The most weighted samples/s per purchase dollar."""

    weights: tuple[float, ...]
    kind: ObjectiveKind = ObjectiveKind.PERF_PER_DOLLAR
    unit: str = "samples/s per 1000 USD"
    price_monotone: bool = True
    reads_energy: bool = False

    def value(self, price_usd: float, outcomes: Sequence[Outcome]) -> float:
        return weighted_throughput(outcomes, self.weights) / max(price_usd, 1e-9) * 1000.0

    def bound(self, price_usd: float, best: Sequence[Outcome]) -> float:
        return self.value(price_usd, best)

    def display(self, value: float) -> float:
        return value


@dataclass(frozen=True)
class Cheapest:
    """The cheapest build that runs every workload (a serving workload runs when its users
    fit and get the asked speed, issue 14): the lowest price wins."""

    weights: tuple[float, ...]
    kind: ObjectiveKind = ObjectiveKind.CHEAPEST
    unit: str = "USD"
    price_monotone: bool = True
    reads_energy: bool = False

    def value(self, price_usd: float, outcomes: Sequence[Outcome]) -> float:
        return -price_usd

    def bound(self, price_usd: float, best: Sequence[Outcome]) -> float:
        return -price_usd

    def display(self, value: float) -> float:
        return -value


def value_low(objective: Objective, price_usd: float, outcomes: Sequence[Outcome]) -> float:
    """The objective's value were the model as wrong against this build as it is in 80% of its
    comparisons of one GPU with another on the same job (`Outcome.comparison_ratio_low`):
    every workload that much slower (its run longer, its energy with it). Equal to the value
    for objectives the model's speed does not enter (cheapest)."""
    return objective.value(price_usd, [o.at_ratio(o.comparison_ratio_low) for o in outcomes])


def value_low_same_gpu(
    objective: Objective, price_usd: float, outcomes: Sequence[Outcome]
) -> float:
    """`value_low` against a build of the same GPU model, at `Outcome.same_gpu_ratio_low`
    (never below `value_low`: the band against the same GPU is the narrower one)."""
    return max(
        objective.value(price_usd, [o.at_ratio(o.same_gpu_ratio_low) for o in outcomes]),
        value_low(objective, price_usd, outcomes),
    )


def make_objective(
    kind: ObjectiveKind, weights: Sequence[float], *, lifetime_years: float = 3.0
) -> Objective:
    """The objective of this kind over workloads with these weights."""
    w = tuple(weights)
    if kind is ObjectiveKind.THROUGHPUT:
        return Throughput(w)
    if kind is ObjectiveKind.TIME_TO_TRAIN:
        return TimeToTrain(w)
    if kind is ObjectiveKind.COST_PER_RUN:
        return CostPerRun(w, lifetime_years)
    if kind is ObjectiveKind.CHEAPEST:
        return Cheapest(w)
    return PerfPerDollar(w)
