"""Comparisons the passes share: values equal within rounding, builds that a cheaper-or-equal
one matches, the best value found at each price, and the merits of a group's feasible builds."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from dlrig.plan.groups import Candidate
from dlrig.plan.results import Scored

REL_TOL = 1e-9


class Staircase:
    """The best value among builds found at or under each price (prices ascending, values
    rising with them)."""

    def __init__(self) -> None:
        self._prices: list[float] = []
        self._values: list[float] = []

    def best_at(self, price_usd: float) -> float:
        """The best value of a build costing at most price_usd (-inf: none)."""
        i = bisect.bisect_right(self._prices, price_usd) - 1
        return self._values[i] if i >= 0 else -math.inf

    def add(self, price_usd: float, value: float) -> None:
        """Record a build; dearer steps it matches or beats go."""
        if self.best_at(price_usd) >= value:
            return
        i = bisect.bisect_right(self._prices, price_usd)
        j = i
        while j < len(self._values) and self._values[j] <= value:
            j += 1
        self._prices[i:j] = [price_usd]
        self._values[i:j] = [value]


class FeasibleMerits:
    """The model merits of a group's feasible builds found so far, only those no other one
    outdoes, each with its price and whether check gave it a warning. Plain lists: a group
    holds a handful of scored builds, and the walk asks every candidate, so per-call numpy
    overhead cost more than the comparisons (7% of a 60,000 USD plan)."""

    def __init__(self) -> None:
        self._rows: list[tuple[tuple[float, ...], float, bool]] = []

    def remember(self, merit: tuple[float, ...], price_usd: float, clean: bool) -> None:
        """Add merit, dropping the rows it covers for every candidate they cover (no better
        merit, no lower price, no fewer warnings)."""
        price = round(price_usd, 2)
        self._rows = [
            r
            for r in self._rows
            if not (
                r[1] >= price
                and (clean or not r[2])
                and all(m >= old for m, old in zip(merit, r[0], strict=True))
            )
        ]
        self._rows.append((tuple(merit), price, clean))

    def outdo(self, cand: Candidate) -> bool:
        """A feasible build of the same group has parts at least as good as cand's everywhere
        the model looks, and is cheaper, or as cheap and without warnings (the walk is
        cheapest first): cand cannot rank before it."""
        if not self._rows:
            return False
        merit = cand.model_merit
        price = round(cand.price_usd, 2)
        return any(
            (clean or row_price < price)
            and all(old >= m for old, m in zip(row, merit, strict=True))
            for row, row_price, clean in self._rows
        )


def tolerance(b: float) -> float:
    return REL_TOL * max(1.0, abs(b)) if math.isfinite(b) else 0.0


def below(a: float, b: float) -> bool:
    """a < b beyond rounding."""
    return a < b - tolerance(b)


def above(a: float, b: float) -> bool:
    """a > b beyond rounding."""
    return a > b + tolerance(b)


def undominated(ranked: Sequence[Scored]) -> list[Scored]:
    """Builds of a best-first list that no earlier build with the same GPUs matches in value at
    no higher price (a dearer copy of a better build); a build with other GPUs always counts,
    so every objective ranks every build it scores."""
    kept: list[Scored] = []
    for s in ranked:
        gpus = s.candidate.group.gpu_set
        if not any(
            k.candidate.group.gpu_set == gpus
            and not below(k.value, s.value)
            and k.price_usd <= s.price_usd + 1e-6
            for k in kept
        ):
            kept.append(s)
    return kept


def rank_key(s: Scored) -> tuple[float, float, str]:
    return (-s.value, s.price_usd, repr(s.candidate.key))
