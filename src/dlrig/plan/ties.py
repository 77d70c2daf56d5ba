"""Ranking and near-ties (issue 11, issue 35): the fastest expected build first; near-ties are
said, with the chance that one build beats the next, not reordered.

The model states how far it may misjudge one GPU against another on the same job: in 80% of
such comparisons (leave-one-architecture-out, model/data/calibration.toml [uncertainty]
comparison_ratio_low, 0.82x today) the ratio of two estimates is off by no more than that;
errors both builds share (the job's own) cancel, so this is narrower than one estimate's
interval. Against a build of the same GPU model (another host, cooling or drive) the GPU's own
error cancels too and only the scaling error is left, a narrower band (`value_low_same_gpu`,
same_gpu_ratio_low).

Across GPU sets the ranking follows the objective: the build the model expects to be best is #1
even when a slower one is cheaper (`chance_ahead` says how sure the model is of each step of
the order, and plan.search names the value pick: the cheapest build within the comparison band
of #1). Builds of one GPU set that differ only inside the same-GPU band are one choice, and it
goes to the best value for money (`value_for_money`: samples/s per dollar), then to the one
with fewer warnings, then to the better value:

    until k builds are ranked:
      candidates: builds not ranked, and not a copy of a ranked build (`copy_of`: the same
        GPUs: one build per GPU set);
      the leader: the candidate with the best value;
      next in the ranking: of the candidates of the leader's GPU set that tie with it (the
        leader included), the first by `order_key` (value for money, warnings, better value,
        name).

Only builds within the leader's own band tie: a chain of builds each within the band of the
next (3,500, 3,259, 3,040, 2,718 samples/s of 2x RTX 5090 on ever cheaper hosts) would walk a
choice 22% below the leader. A build just below the band stays in the ranking, after the faster
one, saying it is slower and cheaper.

Without ties (an objective the model's speed does not enter, or an interval of 1.0x) this is
the plain order by value, then price.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from dlrig.plan.objectives import Objective
from dlrig.plan.results import Scored

# The comparison bands are the 10th percentile of the ratio of two estimates to the truth: with
# the log-ratio error taken as normal and centred, the band is 1.2816 standard deviations wide.
BAND_QUANTILE = 0.9
_BAND_Z = NormalDist().inv_cdf(BAND_QUANTILE)


def cents(price_usd: float) -> float:
    """A price as the ranking compares it (to the cent: sums of part prices carry rounding)."""
    return round(price_usd, 2)


def same_gpu_model(a: Scored, b: Scored) -> bool:
    """a and b hold the same GPU model (in any count)."""
    return bool(a.candidate.group.gpu.name == b.candidate.group.gpu.name)


def same_gpu_set(a: Scored, b: Scored) -> bool:
    """a and b hold the same GPUs (model, count and nodes)."""
    return bool(a.candidate.group.gpu_set == b.candidate.group.gpu_set)


def ties(leader: Scored, other: Scored) -> bool:
    """other holds the leader's GPUs and is within the model's uncertainty of it: its value
    reaches the leader's value at the same-GPU band (the leader's own value counts as reaching
    it). Builds of other GPUs never tie: the faster expected one ranks first."""
    if not same_gpu_set(leader, other):
        return False
    return other.value >= copy_floor(leader)


def comparison_band(a: Scored, b: Scored) -> float:
    """How far the model may misjudge a against b (ratio, 80% of comparisons): the same-GPU
    band for two builds of one GPU model, else the comparison band (1.0: none stated)."""
    o = a.outcomes[0]
    return o.same_gpu_ratio_low if same_gpu_model(a, b) else o.comparison_ratio_low


def chance_ahead(a: Scored, b: Scored, objective: Objective) -> float:
    """The chance that a is in fact better than b by the objective, from the model's comparison
    error: the speed ratio of the two estimates is off by a factor whose logarithm is taken as
    normal, 80% of it within the band (`comparison_band`). Found as the factor on a's speed at
    which the two values cross; 1.0 or 0.0 where no factor within 1000x changes the order (an
    objective the speed does not enter)."""
    band = comparison_band(a, b)

    def value_at(ratio: float) -> float:
        return objective.value(a.price_usd, [o.at_ratio(ratio) for o in a.outcomes])

    low, high = 1e-3, 1e3
    if value_at(low) > b.value:
        return 1.0
    if value_at(high) <= b.value or band >= 1.0:
        return 0.0 if value_at(1.0) < b.value else 1.0 if value_at(1.0) > b.value else 0.5
    for _ in range(60):  # bisection on the log of the factor: value_at rises with it
        mid = math.sqrt(low * high)
        if value_at(mid) > b.value:
            high = mid
        else:
            low = mid
    sigma = -math.log(band) / _BAND_Z
    return 1.0 - NormalDist().cdf(math.log(math.sqrt(low * high)) / sigma)


def value_for_money(s: Scored) -> float:
    """The objective's value per dollar (larger is better): samples/s per dollar, or for an
    objective counted in hours or dollars (negative values) those times the price. It rises
    with the value and falls with the price, so a build better and cheaper than another always
    has more of it, and the search's pruning by price and value stays exact."""
    price = max(s.price_usd, 0.01)  # parts the user owns cost nothing
    return s.value / price if s.value > 0 else s.value * price


def order_key(s: Scored) -> tuple[float, int, float, str]:
    """How tied builds are ordered: the best value for money first (an expert pays 75 USD of
    6,500 for 8% more speed rather than save it), then fewer warnings, then the better value,
    then the name (so that the order is total and repeatable)."""
    return (-value_for_money(s), len(s.warnings), -s.value, repr(s.candidate.key))


def cheapest_key(s: Scored) -> tuple[float, int, float, str]:
    """Cheapest first, then fewer warnings, then the better value, then the name."""
    return (cents(s.price_usd), len(s.warnings), -s.value, repr(s.candidate.key))


def precedes(a: Scored, b: Scored) -> bool:
    """a always ranks before b when both hold the same GPU model: whenever b is tied with a
    leader, a is too (its value is no lower, against the same band), and a comes first among
    them. Ranking b is then never needed while a is left. Across GPU models a leader of a's
    model may judge a by its narrower same-GPU band and b by the wider one, so a must be worth
    more (plan.search `across_models`)."""
    return a.value >= b.value and order_key(a) <= order_key(b)


def copy_of(ranked: Scored, other: Scored) -> bool:
    """other adds nothing to a ranking that holds `ranked`: it holds the same GPUs. The ranked
    build is its GPU set's choice (the best value for money within the same-GPU band of the
    set's best);
    the set's other builds differ in host, cooling or drive, and the Pareto frontier shows
    those worth their price (three hosts of 2x RTX 5090 filled a resnet50 plan's top three)."""
    return same_gpu_set(ranked, other)


def band_floor(leader: Scored) -> float:
    """The lowest value within the model's comparison band of leader (the wider of the two
    bands): where the value pick (plan.search) may lie."""
    return min(leader.value_low, leader.value)


def value_pick(pool: Sequence[Scored], first: Scored) -> Scored | None:
    """The value pick: the cheapest build of the pool (then fewer warnings, better value) with
    other GPUs whose value is within the model's band of the first-ranked build (the narrower
    same-GPU band for the same GPU model), when it is cheaper than that one (None: nothing
    cheaper is close). What the ranking of issue 11 put first, named instead."""

    def near(s: Scored) -> bool:
        if same_gpu_set(s, first):
            return False
        if same_gpu_model(s, first):
            return s.value >= copy_floor(first)
        return s.value >= band_floor(first)

    pick = min((s for s in pool if near(s)), key=cheapest_key, default=None)
    if pick is None or cents(pick.price_usd) >= cents(first.price_usd):
        return None
    return pick


def copy_floor(s: Scored) -> float:
    """The lowest value of a build that would make s its copy (copy_of: s's same-GPU band)."""
    low = s.value_low if s.value_low_same_gpu is None else s.value_low_same_gpu
    return min(low, s.value)


@dataclass(frozen=True)
class Ranked:
    """A ranked build and the better-valued leader it tied with and was ranked before (None
    when it was the leader itself); `floor`: the lowest value a build needed to take part in
    the choice (a search must hold every build above it for the ranking to be exact)."""

    build: Scored
    leader: Scored | None
    floor: float


def rank(pool: Sequence[Scored], k: int) -> list[Ranked]:
    """The first k builds of the ranking (module docstring) over the pool."""
    left = sorted(pool, key=lambda s: (-s.value, order_key(s)))
    ranked: list[Ranked] = []
    while left and len(ranked) < k:
        leader = left[0]
        chosen = min((s for s in left if ties(leader, s)), key=order_key)
        floor = min(copy_floor(leader), copy_floor(chosen))
        ranked.append(Ranked(chosen, None if chosen is leader else leader, floor))
        left = [s for s in left if s is not chosen and not copy_of(chosen, s)]
    return ranked
