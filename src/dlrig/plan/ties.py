"""Near-ties (issue 11): builds the model cannot tell apart are ranked by price.

The model states how far it may misjudge one GPU against another on the same job: in 80% of
such comparisons (leave-one-architecture-out, model/data/calibration.toml [uncertainty]
comparison_ratio_low, 0.82x today) the ratio of two estimates is off by no more than that;
errors both builds share (the job's own) cancel, so this is narrower than one estimate's
interval. A build ties with a better-valued one when its value reaches the better one's value
at that ratio (`value_low`). Against a build of the same GPU model (another count, cooling or
host) the GPU's own error cancels too and only the scaling error is left, a narrower band
(`value_low_same_gpu`, same_gpu_ratio_low). Within the model's uncertainty the better build
may be no better at all, and a buyer should not pay more for a difference the model cannot
resolve. A tie goes to the cheaper build; at the same price to the one with fewer warnings (a
plan prefers a warning-free build at the same speed and price), then to the better value.

Ties are not transitive (a ties b and b ties c, yet a may beat c), so the ranking is built
step by step, which makes it a total order:

    until k builds are ranked:
      candidates: builds not ranked, and not a copy of a ranked build (`copy_of`: the same
        GPUs, and either a value no better and no earlier in `order_key`, or no cheaper, no
        fewer warnings and better only inside the same-GPU band);
      the leader: the candidate with the best value;
      next in the ranking: of the candidates that tie with the leader (the leader included),
        the first by `order_key` (price, warnings, better value, name); then, while a
        candidate earlier by `order_key` would make that one a copy (`copy_of`: the same
        GPUs, no dearer, no more warnings, worse only inside the same-GPU band), that one.

The second step closes a gap the first leaves: a leader's same-GPU band is narrower than its
comparison band, so of two builds of the leader's GPUs 1% apart, the dearer may tie the leader
and the cheaper fall just outside, and the dearer was ranked first with the cheaper next to it.

Without ties (an objective the model's speed does not enter, or an interval of 1.0x) this is
the plain order by value, then price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dlrig.plan.results import Scored


def cents(price_usd: float) -> float:
    """A price as the ranking compares it (to the cent: sums of part prices carry rounding)."""
    return round(price_usd, 2)


def same_gpu_model(a: Scored, b: Scored) -> bool:
    """a and b hold the same GPU model (in any count)."""
    return bool(a.candidate.group.gpu.name == b.candidate.group.gpu.name)


def ties(leader: Scored, other: Scored) -> bool:
    """other is within the model's uncertainty of leader: its value reaches the leader's value
    at the model's comparison band for the pair (the narrower one when both hold the same GPU
    model; the leader's own value counts as reaching it)."""
    low = leader.value_low
    if leader.value_low_same_gpu is not None and same_gpu_model(leader, other):
        low = leader.value_low_same_gpu
    return other.value >= min(low, leader.value)


def order_key(s: Scored) -> tuple[float, int, float, str]:
    """How tied builds are ordered: cheaper first, then fewer warnings, then the better value,
    then the name (so that the order is total and repeatable)."""
    return (cents(s.price_usd), len(s.warnings), -s.value, repr(s.candidate.key))


def precedes(a: Scored, b: Scored) -> bool:
    """a always ranks before b when both hold the same GPU model: whenever b is tied with a
    leader, a is too (its value is no lower, against the same band), and a comes first among
    them. Ranking b is then never needed while a is left. Across GPU models a leader of a's
    model may judge a by its narrower same-GPU band and b by the wider one, so a must be worth
    more (plan.search `across_models`)."""
    return a.value >= b.value and order_key(a) <= order_key(b)


def copy_of(ranked: Scored, other: Scored) -> bool:
    """other adds nothing to a ranking that holds `ranked`: the same GPUs, and either ranked
    precedes it, or other costs no less, has no fewer warnings and is better only inside the
    model's same-GPU band (a buyer would pay for a difference the model cannot resolve: a
    faster drive that saves 0.4 s of a 20 h run filled #2 and #3 of a time-to-train plan)."""
    if other.candidate.group.gpu_set != ranked.candidate.group.gpu_set:
        return False
    if precedes(ranked, other):
        return True
    low = other.value_low if other.value_low_same_gpu is None else other.value_low_same_gpu
    return (
        cents(ranked.price_usd) <= cents(other.price_usd)
        and len(ranked.warnings) <= len(other.warnings)
        and ranked.value >= min(low, other.value)
    )


def band_floor(leader: Scored) -> float:
    """The lowest value that ties with leader (its comparison band: the wider of the two)."""
    return min(leader.value_low, leader.value)


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
        floor = band_floor(leader)
        while True:
            floor = min(floor, copy_floor(chosen))
            earlier = [s for s in left if order_key(s) < order_key(chosen) and copy_of(s, chosen)]
            if not earlier:
                break
            chosen = min(earlier, key=order_key)
        ranked.append(Ranked(chosen, None if chosen is leader else leader, floor))
        left = [s for s in left if s is not chosen and not copy_of(chosen, s)]
    return ranked
