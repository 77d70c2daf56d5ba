"""The planner's search: exact best builds under a budget, by branch and bound over groups.

1. Every group (chassis x GPU model x count x cooling) gets an upper bound: the model's
   outcome for the group's GPUs with the best of every supporting part fused into one
   (the most cores, lanes and clock of any CPU it takes, its largest RAM, the fastest drive).
   The model does not get slower with better parts, so no candidate of the group beats it.
2. Top K: groups in order of their bound; a group is opened only while its bound can still
   enter the top K; inside it, candidates are visited cheapest first, and the walk stops
   when the group reaches its bound (nothing dearer in it can be better) or when the bound at
   the candidate's price falls below the K-th best, or when a build already scored is worth
   at least that bound for no more money (nothing there can be an undominated build).
3. Pareto frontier of price against weighted throughput: groups cheapest first, skipping any
   whose bound is already matched by a cheaper build found.
4. When nothing fits the budget, the same walk without the budget finds the cheapest build
   that is feasible, for the message.

A candidate counts only when the rule engine finds no error on it for every workload and the
model says the job fits in GPU memory. The model and the rules are called once per distinct
build (the evaluator caches), so the passes share their work.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import CPU, PSU, Case, PCIeSlot, Storage
from dlrig.machine.model import Build, Prices
from dlrig.machine.topology import card_width_slots
from dlrig.plan.constraints import Constraints, part_filter, validate_constraints
from dlrig.plan.evaluate import Evaluator, Outcome, WorkloadLike
from dlrig.plan.objectives import Objective, weighted_throughput
from dlrig.plan.space import (
    Candidate,
    Chassis,
    Group,
    MemoryOption,
    SearchSpace,
    assemble,
    efficiency_rank,
    memory_fits_cpu,
    place_gpus,
    psu_floor_w,
    search_space,
)

T = TypeVar("T")
REL_TOL = 1e-9
OPTION_LISTS = ("cpus", "memory", "storage", "psus", "cases")
# How far past k the top-k search may look for builds that are not dearer copies of better ones.
MAX_TOP_SEARCH = 16
# Option lists whose probes the model and the rules judge up front, for every option: a CPU
# fails a rule often (CPU.1's cores per GPU, PCIE.2's lanes), and every candidate pairs one
# with many other parts. The other lists' probes are judged when a candidate first uses them
# (most of their options are never reached).
SCREENED_UP_FRONT = frozenset({"cpus"})


@dataclass(frozen=True)
class WeightedWorkload:
    """A workload and its share of the user's work (weights need not sum to 1)."""

    workload: WorkloadLike
    weight: float = 1.0


@dataclass(frozen=True)
class Scored:
    """A feasible candidate with its outcomes (one per workload) and objective value."""

    candidate: Candidate
    build: Build
    outcomes: tuple[Outcome, ...]
    value: float
    throughput: float
    best_outcomes: tuple[Outcome, ...]

    @property
    def price_usd(self) -> float:
        return self.candidate.price_usd


@dataclass(frozen=True)
class SearchStats:
    """What the search did: groups in the space, candidates it scored, distinct model and rule
    calls, and the parts it could not price."""

    groups: int
    evaluated: int
    estimates: int
    checks: int
    unpriced: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanResult:
    """The top builds (best first), the price/throughput frontier (cheapest first), and, when
    nothing fits the budget, the cheapest feasible build there is (None: nothing at all).
    `rival` is the best build with another GPU model than the winner's."""

    workloads: tuple[WeightedWorkload, ...]
    budget_usd: float
    objective: Objective
    builds: tuple[Scored, ...]
    pareto: tuple[Scored, ...]
    cheapest: Scored | None
    stats: SearchStats
    rival: Scored | None = None


@dataclass(frozen=True)
class Family:
    """Groups that share one bound: the same GPUs on every workstation board (bounded by a
    board with a full x16 slot per card and the best parts any of them takes), or one
    platform's group. `min_price_usd` is the cheapest group's."""

    groups: tuple[Group, ...]
    best: tuple[Outcome, ...]
    min_price_usd: float


@dataclass
class _Counter:
    evaluated: int = 0
    estimates: int = 0
    checks: int = 0
    seen: set[Hashable] = field(default_factory=set)


def dataset_size_gb(workloads: Sequence[WeightedWorkload]) -> float:
    """The largest dataset of the workloads, GB (0 for synthetic data)."""
    sizes = [
        float(w.workload.dataset.total_gb) for w in workloads if w.workload.dataset is not None
    ]
    return max(sizes, default=0.0)


class Planner:
    """One planning question (workloads, objective, evaluator) over one search space."""

    def __init__(
        self,
        space: SearchSpace,
        workloads: Sequence[WeightedWorkload],
        objective: Objective,
        evaluator: Evaluator,
        *,
        electricity_per_kwh: float = Prices().electricity_per_kwh,
    ) -> None:
        self.space = space
        self.workloads = tuple(workloads)
        self.objective = objective
        self.evaluator = evaluator
        self.electricity_per_kwh = electricity_per_kwh
        self._bounds: dict[Hashable, tuple[Outcome, ...] | None] = {}
        self._scored: dict[Hashable, Scored | None] = {}
        self._opened: dict[Hashable, Group | None] = {}
        self._ideals: dict[Hashable, tuple[Hashable, Build]] = {}
        self._probes: dict[Hashable, dict[str, list[IdealParts | None]]] = {}
        self._verdicts: dict[Hashable, tuple[Outcome, ...] | None] = {}
        self._rules_ok: dict[Hashable, bool] = {}
        self._families: dict[float, list[Family]] = {}
        self._calls: set[tuple[str, Hashable]] = set()
        self.counter = _Counter()

    # --- bounds and scoring ------------------------------------------------------------------

    def upper_bound(self, group: Group, budget_usd: float) -> tuple[Outcome, ...] | None:
        """The best outcomes a build of the group under the budget can have (None: the job
        does not fit its GPUs at all)."""
        key, build = self._ideal(group.within(budget_usd))
        if key not in self._bounds:
            outcomes = tuple(
                self.evaluator.outcome(("ideal", key), build, w.workload) for w in self.workloads
            )
            self._count("estimate", ("ideal", key))
            self._bounds[key] = outcomes if all(o.fits for o in outcomes) else None
        return self._bounds[key]

    def score(self, candidate: Candidate, best: tuple[Outcome, ...]) -> Scored | None:
        """The candidate scored, or None when a rule finds an error or the job does not fit."""
        key = candidate.key
        if key in self._scored:
            return self._scored[key]
        self.counter.evaluated += 1
        build = candidate.build(self.electricity_per_kwh)
        result: Scored | None = None
        self._count("check", key)
        if not any(self.evaluator.errors(key, build, w.workload) for w in self.workloads):
            self._count("estimate", key)
            outcomes = tuple(self.evaluator.outcome(key, build, w.workload) for w in self.workloads)
            if all(o.fits for o in outcomes):
                result = Scored(
                    candidate=candidate,
                    build=build,
                    outcomes=outcomes,
                    value=self.objective.value(candidate.price_usd, outcomes),
                    throughput=weighted_throughput(outcomes, [w.weight for w in self.workloads]),
                    best_outcomes=best,
                )
        self._scored[key] = result
        return result

    def _count(self, what: str, key: Hashable) -> None:
        if (what, key) not in self._calls:
            self._calls.add((what, key))
            if what == "check":
                self.counter.checks += len(self.workloads)
            else:
                self.counter.estimates += len(self.workloads)

    def _ideal(self, cut: Group) -> tuple[Hashable, Build]:
        memo_key = (cut.key, _sizes(cut))
        found = self._ideals.get(memo_key)
        if found is None:
            found = ideal_build(cut, self.electricity_per_kwh)
            self._ideals[memo_key] = found
        return found

    def _any_error(self, key: Hashable, build: Build) -> bool:
        self._count("check", key)
        return any(self.evaluator.errors(key, build, w.workload) for w in self.workloads)

    def opened(self, group: Group, budget_usd: float) -> Group | None:
        """The group cut to the budget, or None when even its ideal parts (the best of every
        kind fused) fail a rule: then no build of the group can pass (COOL.3's stacked
        open-air cards, a job that needs more GPUs than fit)."""
        cut = group.within(budget_usd)
        memo_key = (cut.key, _sizes(cut))
        if memo_key not in self._opened:
            _, ideal = self._ideal(cut)
            failed = self._any_error(("ideal", memo_key), ideal)
            self._opened[memo_key] = None if failed else cut
            if not failed:
                self._probes[memo_key] = {kind: probe for kind, probe in _probe_table(cut)}
        return self._opened[memo_key]

    def _probe(
        self,
        group: Group,
        memo_key: Hashable,
        table: dict[str, list[IdealParts | None]],
        kind: str,
        i: int,
        *,
        rules: bool = True,
    ) -> tuple[Outcome, ...] | None:
        """The outcomes of the ideal parts with option i of kind in place; None when that
        build cannot exist or (with rules) the rules reject it: then every build with the
        option fails. The model is asked first: it is the cheaper of the two."""
        verdict_key = ("probe", memo_key, kind, i)
        parts = table[kind][i]
        if parts is None:
            return None
        if verdict_key not in self._verdicts:
            build = parts_build(group, parts, self.electricity_per_kwh)
            self._count("estimate", verdict_key)
            self._verdicts[verdict_key] = tuple(
                self.evaluator.outcome(verdict_key, build, w.workload) for w in self.workloads
            )
        if rules:
            rules_key = ("rules", verdict_key)
            if rules_key not in self._rules_ok:
                build = parts_build(group, parts, self.electricity_per_kwh)
                self._rules_ok[rules_key] = not self._any_error(verdict_key, build)
            if not self._rules_ok[rules_key]:
                return None
        return self._verdicts[verdict_key]

    def live_options(
        self, group: Group, useful: Callable[[tuple[Outcome, ...]], bool]
    ) -> tuple[tuple[int, ...], ...] | None:
        """Per option list, the options a candidate may still use: for the lists in
        SCREENED_UP_FRONT, those whose probe's bound is still useful and whose probe passes
        the rules; for the others, all (option_bounds judges them on first use). None: some
        list has none left, so the group has no build to find."""
        memo_key = (group.key, _sizes(group))
        table = self._probes.get(memo_key)
        if table is None:
            return None
        live = []
        for kind in OPTION_LISTS:
            if kind not in SCREENED_UP_FRONT:
                keep = [i for i, parts in enumerate(table[kind]) if parts is not None]
            else:
                keep = []
                for i in range(len(table[kind])):
                    model_only = self._probe(group, memo_key, table, kind, i, rules=False)
                    if model_only is None or not useful(model_only):
                        continue
                    if self._probe(group, memo_key, table, kind, i) is not None:
                        keep.append(i)
            if not keep:
                return None
            live.append(tuple(keep))
        return tuple(live)

    def option_bounds(
        self,
        group: Group,
        cand: Candidate,
        useful: Callable[[tuple[Outcome, ...]], bool] = lambda o: True,
    ) -> list[tuple[Outcome, ...]] | None:
        """Probe each of the candidate's parts: the ideal parts with that one part in place.
        Each probe's outcomes are an upper bound for the candidate (the model only gets faster
        with better parts); a probe that fails a rule fails every build of the group with
        that part (rules only get happier with better parts). None when a probe's bound is no
        longer useful or a probe fails a rule: the candidate cannot count. The model is asked
        first, for every probe, and the rules only when all bounds are useful (the rules cost
        more). Each part is probed once per group, when a candidate first uses it."""
        if not _psu_can_pass(cand):
            return None
        memo_key = (group.key, _sizes(group))
        table = self._probes.get(memo_key)
        if table is None:
            return []
        out = []
        for kind, i in zip(OPTION_LISTS, cand.index, strict=True):
            model_only = self._probe(group, memo_key, table, kind, i, rules=False)
            if model_only is None or not useful(model_only):
                return None
            out.append(model_only)
        # RAM and the dataset drive act together (a dataset that fits the page cache is read
        # from disk once: DISK.1, DISK.3), so they are also probed as a pair.
        pair_key = ("pair", memo_key, cand.index[1], cand.index[2])
        pair = self._verdicts.get(pair_key)
        if pair is None:
            self._count("estimate", pair_key)
            build = self._pair_build(group, cand)
            pair = tuple(
                self.evaluator.outcome(pair_key, build, w.workload) for w in self.workloads
            )
            self._verdicts[pair_key] = pair
        if not useful(pair):
            return None
        for kind, i in zip(OPTION_LISTS, cand.index, strict=True):
            if self._probe(group, memo_key, table, kind, i) is None:
                return None
        rules_key = ("rules", pair_key)
        if rules_key not in self._rules_ok:
            self._rules_ok[rules_key] = not self._any_error(pair_key, self._pair_build(group, cand))
        if not self._rules_ok[rules_key]:
            return None
        out.append(pair)
        return out

    def _pair_build(self, group: Group, cand: Candidate) -> Build:
        """The ideal parts with the candidate's RAM and dataset drive in place."""
        parts = dataclasses.replace(ideal_parts(group), memory=cand.memory, storage=cand.storage)
        return parts_build(group, parts, self.electricity_per_kwh)

    def families(self, budget_usd: float) -> list[Family]:
        """The groups that fit the budget, by family (one GPU set on every workstation board;
        each platform alone), with each family's bound; families whose GPUs cannot hold the
        job are left out."""
        if budget_usd not in self._families:
            members: dict[Hashable, list[Group]] = {}
            for group in self.space.groups:
                if group.min_price_usd <= budget_usd + 1e-6:
                    members.setdefault(_family_key(group), []).append(group)
            out = []
            for groups in members.values():
                groups.sort(key=lambda g: g.min_price_usd)
                cut = [g.within(budget_usd) for g in groups]
                best = self.upper_bound(merged_group(cut), math.inf)
                if best is not None:
                    out.append(Family(tuple(groups), best, groups[0].min_price_usd))
            self._families[budget_usd] = out
        return list(self._families[budget_usd])

    def bounded(
        self, family: Family, budget_usd: float
    ) -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
        """The family's groups, cheapest first, each with its own bound (None-bounded ones,
        whose GPUs cannot hold the job, left out)."""
        for group in family.groups:
            best = self.upper_bound(group, budget_usd)
            if best is not None:
                yield group, best

    # --- the passes ----------------------------------------------------------------------------

    def rival(self, budget_usd: float, winner: Scored) -> Scored | None:
        """The best build under the budget with another GPU model than winner's (what the
        money would buy instead, for the explanation)."""
        gpu = winner.candidate.group.gpu.name
        ranked = self._top_all(budget_usd, 1, lambda g: g.gpu.name != gpu)
        return ranked[0] if ranked else None

    def top(self, budget_usd: float, k: int) -> list[Scored]:
        """The k best feasible builds under the budget that no other build matches on the
        objective for less money (best first; ties: cheaper first).

        A build dominated so is a dearer copy of a better one (the same GPUs on a dearer
        board, water where air does as well). Whatever dominates a build ranks before it, so
        the undominated builds among the top k' are exactly the first ones of all undominated
        builds: search the top k' and double k' until k of them are undominated.
        """
        wanted = k  # the search already leaves out builds a scored one matches for less
        while True:
            ranked = self._top_all(budget_usd, wanted)
            kept = _undominated(ranked)
            if len(kept) >= k or len(ranked) < wanted or wanted >= MAX_TOP_SEARCH * k:
                return kept[:k]
            wanted *= 2

    def _top_all(
        self, budget_usd: float, k: int, admit: Callable[[Group], bool] = lambda g: True
    ) -> list[Scored]:
        """The k best feasible builds (best first; ties: cheaper first) of those that no
        build found scores at least as well for no more money, except dearer builds of a group
        that do no better than a cheaper one of it; only groups that admit() lets in.

        A build so matched is never among the undominated builds `top` keeps: the build that
        matches it ranks before it, and either is kept or is matched by a kept one, which then
        matches it too. Leaving such builds out spares the search the many equal-valued
        copies of a build (the same GPUs on other boards) that would fill the top k."""
        obj = self.objective
        families = self.families(budget_usd)
        families.sort(key=lambda f: -obj.bound(f.min_price_usd, f.best))
        found: list[Scored] = []
        scored_so_far = _Staircase()

        def out_of_reach(bound: float, price_usd: float) -> bool:
            """No build with value <= bound and price >= price_usd can enter the top k: it is
            worse than the k-th, or ties it and is no cheaper (ties rank by price), or a build
            already scored is worth at least bound for no more than price_usd."""
            if scored_so_far.best_at(price_usd) >= bound:
                return True
            if len(found) < k:
                return False
            last = found[k - 1]
            return _below(bound, last.value) or (
                not _above(bound, last.value) and price_usd >= last.price_usd - 1e-6
            )

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                family_bound = obj.bound(family.min_price_usd, family.best)
                if len(found) >= k and _below(family_bound, found[k - 1].value):
                    return  # the families come best bound first: none after can enter either
                if out_of_reach(family_bound, family.min_price_usd):
                    continue
                members = list(self.bounded(family, budget_usd))
                members.sort(key=lambda gb: -obj.bound(gb[0].min_price_usd, gb[1]))
                yield from members

        for group, loose in groups():
            if not admit(group) or out_of_reach(
                obj.bound(group.min_price_usd, loose), group.min_price_usd
            ):
                continue
            opened = self.opened(group, budget_usd)
            if opened is None:
                continue
            group, best = opened, loose
            live = self.live_options(group, _reachable(out_of_reach, obj, group.min_price_usd))
            if live is None:
                continue
            group_best = -math.inf
            feasible = _Feasible()
            for cand in group.cheapest_first(budget_usd, live):
                if out_of_reach(obj.bound(cand.price_usd, best), cand.price_usd):
                    break
                if feasible.outdo(cand):
                    continue
                probed = self.option_bounds(
                    group, cand, _reachable(out_of_reach, obj, cand.price_usd)
                )
                if probed is None:
                    continue
                scored = self.score(cand, best)
                if scored is not None:
                    feasible.remember(cand.model_merit)
                if scored is None or not _above(scored.value, group_best):
                    continue
                group_best = scored.value
                scored_so_far.add(scored.price_usd, scored.value)
                found.append(scored)
                found.sort(key=_rank_key)
                del found[k:]
                if obj.price_monotone and not _below(scored.value, obj.value(cand.price_usd, best)):
                    break  # the group reached its bound: anything dearer in it is no better
        return found

    def pareto(self, budget_usd: float) -> list[Scored]:
        """Feasible builds under the budget that no cheaper-or-equal build matches in weighted
        throughput (cheapest first)."""
        weights = [w.weight for w in self.workloads]
        families = self.families(budget_usd)
        families.sort(key=lambda f: f.min_price_usd)
        frontier: list[Scored] = []

        def dominated(price: float, throughput: float) -> bool:
            return any(
                f.price_usd <= price + 1e-6 and not _below(f.throughput, throughput)
                for f in frontier
            )

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                if not dominated(family.min_price_usd, weighted_throughput(family.best, weights)):
                    yield from self.bounded(family, budget_usd)

        for group, loose in groups():
            if dominated(group.min_price_usd, weighted_throughput(loose, weights)):
                continue
            opened = self.opened(group, budget_usd)
            if opened is None:
                continue
            group, best = opened, loose
            ceiling = weighted_throughput(best, weights)
            live = self.live_options(
                group, _undominated_at(dominated, weights, group.min_price_usd)
            )
            if live is None:
                continue
            feasible = _Feasible()
            for cand in group.cheapest_first(budget_usd, live):
                if dominated(cand.price_usd, ceiling):
                    break
                if feasible.outdo(cand):
                    continue
                probed = self.option_bounds(
                    group, cand, _undominated_at(dominated, weights, cand.price_usd)
                )
                if probed is None:
                    continue
                scored = self.score(cand, best)
                if scored is not None:
                    feasible.remember(cand.model_merit)
                if scored is None or dominated(scored.price_usd, scored.throughput):
                    continue
                frontier = [
                    f
                    for f in frontier
                    if not (
                        scored.price_usd <= f.price_usd + 1e-6
                        and not _below(scored.throughput, f.throughput)
                    )
                ]
                frontier.append(scored)
                if not _below(scored.throughput, ceiling):
                    break
        frontier.sort(key=lambda s: (s.price_usd, -s.throughput))
        return frontier

    def cheapest(self) -> Scored | None:
        """The cheapest feasible build in the space, whatever the budget."""
        families = self.families(math.inf)
        families.sort(key=lambda f: f.min_price_usd)
        found: Scored | None = None

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                if found is not None and family.min_price_usd >= found.price_usd:
                    return
                yield from self.bounded(family, math.inf)

        for group, best in groups():
            if found is not None and group.min_price_usd >= found.price_usd:
                continue
            opened = self.opened(group, math.inf)
            if opened is None:
                continue
            group = opened
            limit = found.price_usd if found is not None else math.inf
            for cand in group.cheapest_first(limit):
                if found is not None and cand.price_usd >= found.price_usd:
                    break
                if self.option_bounds(group, cand) is None:
                    continue
                scored = self.score(cand, best)
                if scored is not None:
                    found = scored
                    break
        return found

    def stats(self) -> SearchStats:
        """What the search has done so far."""
        return SearchStats(
            groups=len(self.space.groups),
            evaluated=self.counter.evaluated,
            estimates=self.counter.estimates,
            checks=self.counter.checks,
            unpriced=self.space.unpriced,
        )


def _family_key(group: Group) -> Hashable:
    if group.chassis.board is None:
        return group.key
    return ("workstation", group.gpu.name, group.count, group.water, group.nodes)


def _by_name(items: Sequence[T], name: Callable[[T], Hashable]) -> tuple[T, ...]:
    seen: dict[Hashable, T] = {}
    for item in items:
        seen.setdefault(name(item), item)
    return tuple(seen.values())


def merged_group(groups: Sequence[Group]) -> Group:
    """One group that is at least as good as each of these workstation groups (same GPUs):
    a board with a full-width x16 slot for every card at the best generation, a free slot
    between every two cards (the model throttles a pair of open-air cards less when spaced),
    as many CPU sockets as any, and every supporting part any of them takes."""
    first = groups[0]
    boards = [g.chassis.board for g in groups if g.chassis.board is not None]
    if len(groups) == 1 or len(boards) < len(groups):
        return first
    width = card_width_slots(first.gpu)
    gen = max(slot.gen for b in boards for slot in b.x16_slots)
    board = boards[0].model_copy(
        update={
            "x16_slots": tuple(
                PCIeSlot(position=1 + i * (width + 1), lanes=16, gen=gen)
                for i in range(first.count)
            ),
            "sockets": max(b.sockets for b in boards),
            "max_memory_gb": max(b.max_memory_gb for b in boards),
        }
    )
    return dataclasses.replace(
        first,
        chassis=Chassis(board=board),
        cpus=_by_name([c for g in groups for c in g.cpus], lambda c: c.name),
        memory=_by_name([m for g in groups for m in g.memory], lambda m: (m.kit.name, m.count)),
        storage=_by_name([d for g in groups for d in g.storage], lambda d: d.name),
        psus=_by_name([p for g in groups for p in g.psus], lambda p: p.name if p else None),
        cases=_by_name([c for g in groups for c in g.cases], lambda c: c.name if c else None),
    )


def _reachable(
    out_of_reach: Callable[[float, float], bool], obj: Objective, floor_usd: float
) -> Callable[[tuple[Outcome, ...]], bool]:
    """Whether a probe's bound, at floor_usd (a group's lowest price, or a candidate's),
    can still enter the top k."""

    def useful(best: tuple[Outcome, ...]) -> bool:
        return not out_of_reach(obj.bound(floor_usd, best), floor_usd)

    return useful


def _undominated_at(
    dominated: Callable[[float, float], bool], weights: Sequence[float], floor_usd: float
) -> Callable[[tuple[Outcome, ...]], bool]:
    """Whether a probe's throughput, at floor_usd (a group's lowest price, or a candidate's),
    can still join the frontier."""

    def useful(best: tuple[Outcome, ...]) -> bool:
        return not dominated(floor_usd, weighted_throughput(best, weights))

    return useful


def _psu_can_pass(cand: Candidate) -> bool:
    """PSU.1 as a necessary condition: the PSU covers this CPU's and these GPUs' draw plus
    the guide's 10% and 10% (the rule engine errors below that)."""
    if cand.psu is None:
        return True
    group = cand.group
    floor = psu_floor_w(group.gpu, group.count, cand.cpu.tdp_w * group.chassis.cpu_count)
    return cand.psu.watts >= floor


def _sizes(group: Group) -> tuple[int, ...]:
    """The lengths of a group's option lists (a cut group keeps a prefix of each)."""
    return tuple(len(getattr(group, k)) for k in OPTION_LISTS)


def _probe_table(group: Group) -> Iterator[tuple[str, list[IdealParts | None]]]:
    table: dict[str, list[IdealParts | None]] = {k: [] for k in OPTION_LISTS}
    for kind, _, parts in probes(group):
        table[kind].append(parts)
    yield from table.items()


class _Staircase:
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


class _Feasible:
    """The model merits of a group's feasible builds found so far, only those no other one
    outdoes, as rows of an array (one comparison of the whole set per candidate)."""

    def __init__(self) -> None:
        self._rows: np.ndarray[Any, np.dtype[np.float64]] | None = None

    def remember(self, merit: tuple[float, ...]) -> None:
        """Add merit, dropping the rows it outdoes."""
        row = np.asarray(merit, dtype=np.float64)
        if self._rows is None:
            self._rows = row[np.newaxis, :]
            return
        kept = self._rows[~(row >= self._rows).all(axis=1)]
        self._rows = np.vstack((kept, row))

    def outdo(self, cand: Candidate) -> bool:
        """A feasible build of the same group, no dearer (the walk is cheapest first), has
        parts at least as good as cand's everywhere the model looks: cand cannot score
        better."""
        if self._rows is None:
            return False
        row = np.asarray(cand.model_merit, dtype=np.float64)
        return bool((self._rows >= row).all(axis=1).any())


def _tolerance(b: float) -> float:
    return REL_TOL * max(1.0, abs(b)) if math.isfinite(b) else 0.0


def _below(a: float, b: float) -> bool:
    """a < b beyond rounding."""
    return a < b - _tolerance(b)


def _above(a: float, b: float) -> bool:
    """a > b beyond rounding."""
    return a > b + _tolerance(b)


def _undominated(ranked: Sequence[Scored]) -> list[Scored]:
    """Builds of a best-first list that no earlier one matches in value at no higher price."""
    kept: list[Scored] = []
    for s in ranked:
        if not any(
            not _below(k.value, s.value) and k.price_usd <= s.price_usd + 1e-6 for k in kept
        ):
            kept.append(s)
    return kept


def _rank_key(s: Scored) -> tuple[float, float, str]:
    return (-s.value, s.price_usd, repr(s.candidate.key))


@dataclass(frozen=True)
class IdealParts:
    """The best of each supporting part of a group, fused into one part per kind (the most
    cores, lanes, clock and addressable RAM of any CPU, the largest RAM, the fastest and
    largest drive, the biggest and most efficient PSU, the roomiest case)."""

    cpu: CPU
    memory: MemoryOption
    storage: Storage
    psu: PSU | None
    case: Case | None


def _max_or_none(values: Sequence[float | None]) -> float | None:
    """The largest value; None (no limit known) when any is None."""
    return None if any(v is None for v in values) else max(v for v in values if v is not None)


def ideal_parts(group: Group) -> IdealParts:
    """Fuse each of the group's option lists into its best part."""
    cpus = group.cpus
    top_cpu = max(cpus, key=lambda c: (c.cores, c.threads))
    cpu = top_cpu.model_copy(
        update={
            "cores": max(c.cores for c in cpus),
            "threads": max(c.threads for c in cpus),
            "base_ghz": max(c.base_ghz for c in cpus),
            "boost_ghz": max((c.boost_ghz or c.base_ghz) for c in cpus),
            "pcie_lanes": max(c.pcie_lanes for c in cpus),
            "pcie_gen": max(c.pcie_gen for c in cpus),
            "memory_channels": max(c.memory_channels for c in cpus),
            "max_memory_gb": _max_or_none([c.max_memory_gb for c in cpus]),
            "tdp_w": min(c.tdp_w for c in cpus),
        }
    )
    memory = max(group.memory, key=lambda m: (m.size_gb, m.kit.speed_mt_s or 0))
    top_drive = max(group.storage, key=lambda s: s.read_mb_s)
    drive = top_drive.model_copy(
        update={
            "read_mb_s": max(s.read_mb_s for s in group.storage),
            "capacity_tb": max(s.capacity_tb for s in group.storage),
        }
    )
    psus = [p for p in group.psus if p is not None]
    psu = None
    if psus:
        psu = max(psus, key=lambda p: p.watts).model_copy(
            update={
                "watts": max(p.watts for p in psus),
                "pcie_8pin": max(p.pcie_8pin for p in psus),
                "pcie_12v_2x6": max(p.pcie_12v_2x6 for p in psus),
                "efficiency": max((p.efficiency for p in psus), key=efficiency_rank),
            }
        )
    cases = [c for c in group.cases if c is not None]
    case = None
    if cases:
        case = cases[0].model_copy(
            update={
                "max_gpu_length_mm": max(c.max_gpu_length_mm for c in cases),
                "expansion_slots": max(c.expansion_slots for c in cases),
                "radiator_mounts_120mm": max(c.radiator_mounts_120mm for c in cases),
                "form_factors": tuple(dict.fromkeys(f for c in cases for f in c.form_factors)),
            }
        )
    return IdealParts(cpu=cpu, memory=memory, storage=drive, psu=psu, case=case)


def parts_build(group: Group, parts: IdealParts, electricity_per_kwh: float) -> Build:
    """The group's build with these supporting parts."""
    return assemble(
        group,
        cpu=parts.cpu,
        memory=parts.memory.config(),
        storage=parts.storage,
        psu=parts.psu,
        case=parts.case,
        electricity_per_kwh=electricity_per_kwh,
        name="upper bound",
    )


def ideal_build(group: Group, electricity_per_kwh: float) -> tuple[Hashable, Build]:
    """The group's GPUs with its ideal parts, and a key naming what the model can see of it
    (groups with the same key share the bound)."""
    parts = ideal_parts(group)
    cpu, memory, drive, psu = parts.cpu, parts.memory, parts.storage, parts.psu
    build = parts_build(group, parts, electricity_per_kwh)
    chassis = group.chassis
    if chassis.platform is not None:
        where: Hashable = ("platform", chassis.platform.name)
    else:
        board = chassis.board
        slots = place_gpus(board, group.gpu, group.count) if board is not None else None
        where = (
            "board",
            board.socket if board else "",
            board.sockets if board else 1,
            tuple((s.lanes, s.gen, s.from_cpu) for s in slots or ()),
        )
    key = (
        group.gpu.name,
        group.count,
        group.water,
        group.nodes,
        where,
        (cpu.cores, cpu.threads, cpu.base_ghz, cpu.boost_ghz, cpu.pcie_lanes, cpu.pcie_gen),
        (cpu.memory_channels, cpu.tdp_w, chassis.cpu_count),
        (memory.size_gb, memory.kit.speed_mt_s),
        (drive.kind, drive.read_mb_s, drive.capacity_tb),
        psu.efficiency if psu else None,
    )
    return key, build


def probes(group: Group) -> Iterator[tuple[str, int, IdealParts | None]]:
    """For each option of each list: the ideal parts with that one option in place (None when
    the option cannot go with any of the others). Under the assumption that the rules only get
    happier with better parts, an error on a probe is an error on every build with that option.
    A CPU is probed with the largest RAM it addresses."""
    ideal = ideal_parts(group)
    for i, cpu in enumerate(group.cpus):
        usable = [m for m in group.memory if memory_fits_cpu(m, cpu, group.chassis.cpu_count)]
        best = max(usable, key=lambda m: (m.size_gb, m.kit.speed_mt_s or 0), default=None)
        yield "cpus", i, dataclasses.replace(ideal, cpu=cpu, memory=best) if best else None
    for i, memory in enumerate(group.memory):
        fits = memory_fits_cpu(memory, ideal.cpu, group.chassis.cpu_count)
        yield "memory", i, dataclasses.replace(ideal, memory=memory) if fits else None
    for i, drive in enumerate(group.storage):
        yield "storage", i, dataclasses.replace(ideal, storage=drive)
    for i, psu in enumerate(group.psus):
        yield "psus", i, dataclasses.replace(ideal, psu=psu)
    for i, case in enumerate(group.cases):
        yield "cases", i, dataclasses.replace(ideal, case=case)


def plan(
    catalog: Catalog,
    workloads: Sequence[WeightedWorkload],
    budget_usd: float,
    objective: Objective,
    evaluator: Evaluator,
    *,
    constraints: Constraints | None = None,
    top_k: int = 3,
    electricity_per_kwh: float = Prices().electricity_per_kwh,
) -> PlanResult:
    """The best builds under budget_usd for the workloads by the objective (exact: no feasible
    build in the catalog's space scores higher), the Pareto frontier of price against weighted
    throughput, and, when nothing fits, the cheapest feasible build without the budget."""
    limits = constraints or Constraints()
    validate_constraints(limits, catalog)
    allow = part_filter(limits, catalog)
    space = search_space(catalog, limits, allow, dataset_size_gb(workloads))
    planner = Planner(
        space, workloads, objective, evaluator, electricity_per_kwh=electricity_per_kwh
    )
    builds = planner.top(budget_usd, top_k)
    rival = planner.rival(budget_usd, builds[0]) if builds else None
    pareto = planner.pareto(budget_usd) if builds else []
    cheapest = None if builds else planner.cheapest()
    return PlanResult(
        workloads=tuple(workloads),
        budget_usd=budget_usd,
        objective=objective,
        builds=tuple(builds),
        pareto=tuple(pareto),
        cheapest=cheapest,
        rival=rival,
        stats=planner.stats(),
    )
