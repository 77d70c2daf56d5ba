"""The planner's search: exact best builds under a budget, by branch and bound over groups.

1. Every group (chassis x GPU model x count x cooling) gets an upper bound (plan.bounds): the
   model's outcome for the group's GPUs with the best of every supporting part fused into one.
2. Top K: groups in order of their bound; a group is opened only while its bound can still
   enter the top K; inside it, candidates are visited cheapest first, and the walk stops
   when the group reaches its bound (nothing dearer in it can be better) or when the bound at
   the candidate's price falls below the K-th best, or when a build with the same GPUs already
   scored is worth at least that bound for no more money (a dearer copy of it).
3. Pareto frontier of price against weighted throughput: groups cheapest first, skipping any
   whose bound is already matched by a cheaper build found.
4. When nothing fits the budget, the same walk without the budget finds the cheapest build
   that is feasible, for the message.

The three passes share one walk (`Planner._walk`) and differ only in what they skip, when they
stop and what they keep (`_Pass`). A candidate counts only when the rule engine finds no error
on it for every workload and the model says the job fits in GPU memory. The model and the rules
are called once per distinct build (the evaluator caches), so the passes share their work.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from dlrig.catalog.loader import Catalog
from dlrig.machine.model import Build, Prices
from dlrig.plan.bounds import (
    OPTION_LISTS,
    Family,
    IdealParts,
    at_least_draw,
    family_key,
    fewer_cores_fused,
    fused_parts,
    ideal_build,
    ideal_parts,
    model_view,
    on_family_board,
    on_fewest_sockets,
    option_sizes,
    parts_build,
    probe_table,
    slower_drives_fused,
    with_cpu,
)
from dlrig.plan.constraints import Constraints, part_filter, validate_constraints
from dlrig.plan.dominance import MeritRows, model_merit
from dlrig.plan.evaluate import Evaluator, Outcome
from dlrig.plan.frontier import FeasibleMerits, Staircase, above, below, rank_key, undominated
from dlrig.plan.groups import Candidate, Group
from dlrig.plan.objectives import Objective, value_low, value_low_same_gpu, weighted_throughput
from dlrig.plan.results import (
    PlanResult,
    Scored,
    SearchStats,
    WeightedWorkload,
    job_storage_gb,
)
from dlrig.plan.space import SearchSpace, search_space
from dlrig.plan.ties import Ranked, band_floor, cents, rank, value_pick

T = TypeVar("T")

# How far past k the top-k search may look for builds that are not dearer copies of better ones.
MAX_TOP_SEARCH = 16
Usefulness = Callable[[tuple[Outcome, ...]], bool]


@dataclass(frozen=True)
class _Pass:
    """What one pass of the walk skips, when it stops and what it keeps.

    `skip_group(group, bound)`: the group cannot add anything; `useful_at(group, price)`:
    whether a probe's outcomes for that group at that price can still add anything (a probe
    useless at a price stays useless at any higher one while the group is walked: the walk
    drops its option from dearer candidates);
    `past_reach(candidate, bound)`: this and every dearer candidate of the group cannot;
    `taker(bound)`: a fresh per-group recorder of scored builds that returns True when the
    group needs no more candidates.
    """

    budget_usd: float
    skip_group: Callable[[Group, tuple[Outcome, ...]], bool]
    useful_at: Callable[[Group, float], Usefulness]
    past_reach: Callable[[Candidate, tuple[Outcome, ...]], bool]
    taker: Callable[[tuple[Outcome, ...]], Callable[[Scored], bool]]


@dataclass
class _Counter:
    evaluated: int = 0
    estimates: int = 0
    checks: int = 0
    seen: set[Hashable] = field(default_factory=set)


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
        self._ideal_parts: dict[Hashable, IdealParts] = {}
        self._verdicts: dict[Hashable, tuple[Outcome, ...] | None] = {}
        self._probe_builds: dict[Hashable, Build] = {}
        # Per opened group and option list, the model merit and verdict key of each probe
        # estimated (_useful_as_worse).
        self._estimated: dict[tuple[Hashable, str], MeritRows] = {}
        # The estimated probe that last showed a probe useful (_useful_as_worse).
        self._answered_by: dict[Hashable, Hashable] = {}
        self._rules_ok: dict[Hashable, bool] = {}
        # Fused parts that bound several options at once (_model_probe_parts, the
        # pairs' drives): per option list (by identity, kept alive with the entry: the
        # groups of a space share their lists) and option; and a CPU's probe parts per group.
        self._fused_options: dict[tuple[str, int, int], tuple[object, Any]] = {}
        self._cpu_ceilings: dict[Hashable, IdealParts | None] = {}
        self._families: dict[float, list[Family]] = {}
        self._calls: set[tuple[str, Hashable]] = set()
        # The errors that stopped a group's best parts, by rule (groups, first finding's words):
        # what no build of those groups could get past.
        self._blocked: dict[str, tuple[int, str]] = {}
        self.counter = _Counter()
        # The value pick of the last ranking `top` made (plan.ties.value_pick).
        self.value_pick: Scored | None = None

    # --- bounds and scoring ------------------------------------------------------------------

    def upper_bound(self, group: Group, budget_usd: float) -> tuple[Outcome, ...] | None:
        """The best outcomes a build of the group under the budget can have (None: the job
        does not fit its GPUs at all)."""
        return self._bound(*self._ideal(group.within(budget_usd)))

    def _bound(self, key: Hashable, build: Build) -> tuple[Outcome, ...] | None:
        """The outcomes of an ideal build (None: the job does not fit its GPUs), estimated once
        per key."""
        if key not in self._bounds:
            outcomes = self._estimate(key, build)
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
            parts = IdealParts(
                candidate.cpu, candidate.memory, candidate.storage, candidate.psu, candidate.case
            )
            view = model_view(candidate.group, parts, self.electricity_per_kwh)
            outcomes = self._estimate(view, build)
            if all(o.fits for o in outcomes):
                warned = (self.evaluator.warnings(key, build, w.workload) for w in self.workloads)
                result = Scored(
                    candidate=candidate,
                    build=build,
                    outcomes=outcomes,
                    value=self.objective.value(candidate.price_usd, outcomes),
                    throughput=weighted_throughput(outcomes, [w.weight for w in self.workloads]),
                    best_outcomes=best,
                    value_low=value_low(self.objective, candidate.price_usd, outcomes),
                    value_low_same_gpu=value_low_same_gpu(
                        self.objective, candidate.price_usd, outcomes
                    ),
                    warnings=tuple(dict.fromkeys(r for found in warned for r in found)),
                )
        self._scored[key] = result
        return result

    def _estimate(self, view: Hashable, build: Build) -> tuple[Outcome, ...]:
        """The model's outcomes for build, whose model view (plan.bounds.model_view) is
        `view`: estimated once per view, for every workload."""
        self._count("estimate", ("view", view))
        return tuple(
            self.evaluator.outcome(("view", view), build, w.workload) for w in self.workloads
        )

    def _count(self, what: str, key: Hashable) -> None:
        if (what, key) not in self._calls:
            self._calls.add((what, key))
            if what == "check":
                self.counter.checks += len(self.workloads)
            else:
                self.counter.estimates += len(self.workloads)

    def _ideal(self, cut: Group) -> tuple[Hashable, Build]:
        memo_key = (cut.key, option_sizes(cut))
        found = self._ideals.get(memo_key)
        if found is None:
            found = ideal_build(cut, self.electricity_per_kwh, self._fused(cut))
            self._ideals[memo_key] = found
        return found

    def _fused(self, cut: Group) -> IdealParts:
        """The cut group's ideal parts, fused once (its bound, its probes and its pairs start
        from them)."""
        memo_key = (cut.key, option_sizes(cut))
        ideal = self._ideal_parts.get(memo_key)
        if ideal is None:
            ideal = self._ideal_parts[memo_key] = ideal_parts(cut)
        return ideal

    def _record_block(self, key: Hashable, build: Build) -> bool:
        """Whether a rule finds an error on build, recording each such rule in the search's
        blocked list."""
        self._count("check", key)
        found: dict[str, str] = {}
        for w in self.workloads:
            for finding in self.evaluator.errors(key, build, w.workload):
                found.setdefault(finding.rule, finding.message)
        for rule, message in found.items():
            count, first = self._blocked.get(rule, (0, message))
            self._blocked[rule] = (count + 1, first)
        return bool(found)

    def _any_error(self, key: Hashable, build: Build) -> bool:
        self._count("check", key)
        return any(self.evaluator.fails(key, build, w.workload) for w in self.workloads)

    def opened(self, group: Group, budget_usd: float) -> Group | None:
        """The group cut to the budget, or None when even its ideal parts (the best of every
        kind fused) fail a rule: then no build of the group can pass (COOL.3's stacked
        open-air cards, a job that needs more GPUs than fit)."""
        cut = group.within(budget_usd)
        memo_key = (cut.key, option_sizes(cut))
        if memo_key not in self._opened:
            _, ideal = self._ideal(cut)
            # Its findings are wanted when it fails (the search's blocked list), and all the
            # rules run when it passes: the full check either way.
            failed = self._record_block(("ideal", memo_key), ideal)
            self._opened[memo_key] = None if failed else cut
            if not failed:
                self._probes[memo_key] = dict(probe_table(cut, self._fused(cut)))
        return self._opened[memo_key]

    def _probe(
        self,
        group: Group,
        memo_key: Hashable,
        table: dict[str, list[IdealParts | None]],
        kind: str,
        i: int,
    ) -> tuple[Outcome, ...] | None:
        """The outcomes of the ideal parts with option i of kind in place; None when that
        build cannot exist (then every build with the option fails)."""
        verdict_key = ("probe", memo_key, kind, i)
        parts = self._model_probe_parts(group, memo_key, table, kind, i)
        if parts is None:
            return None
        if verdict_key not in self._verdicts:
            build = (
                self._probe_build(group, verdict_key, parts)
                if parts is table[kind][i]
                else parts_build(group, parts, self.electricity_per_kwh)
            )
            view = model_view(group, parts, self.electricity_per_kwh)
            self._verdicts[verdict_key] = self._estimate(view, build)
        return self._verdicts[verdict_key]

    def _model_probe_parts(
        self,
        group: Group,
        memo_key: Hashable,
        table: dict[str, list[IdealParts | None]],
        kind: str,
        i: int,
    ) -> IdealParts | None:
        """What the model is asked of option i of kind: its probe's parts, but for a CPU the
        CPU fused with every one of no more cores (plan.bounds.fewer_cores_fused), with the
        largest RAM that addresses: one such probe found useless turns away every CPU it
        covers (_useless_as_better), where a 10x catalog's copies of a CPU, each a little
        slower or hungrier, were estimated one by one."""
        parts = table[kind][i]
        if kind != "cpus" or parts is None:
            return parts
        key = (memo_key, i)
        if key not in self._cpu_ceilings:
            cpu = self._fused_option("cpus", group.cpus, i, fewer_cores_fused)
            self._cpu_ceilings[key] = with_cpu(group, self._fused(group), cpu)
        return self._cpu_ceilings[key]

    def _fused_option(
        self, kind: str, items: Sequence[T], i: int, fuse: Callable[[Sequence[T], int], T]
    ) -> T:
        """fuse(items, i), once per option list and option."""
        key = (kind, id(items), i)
        hit = self._fused_options.get(key)
        if hit is None or hit[0] is not items:
            hit = self._fused_options[key] = (items, fuse(items, i))
        return cast("T", hit[1])

    def _probe_build(self, group: Group, verdict_key: Hashable, parts: IdealParts) -> Build:
        """A probe's build, assembled once for its estimate and its rule check."""
        if verdict_key not in self._probe_builds:
            self._probe_builds[verdict_key] = parts_build(group, parts, self.electricity_per_kwh)
        return self._probe_builds[verdict_key]

    def _probe_passes(
        self,
        group: Group,
        memo_key: Hashable,
        table: dict[str, list[IdealParts | None]],
        kind: str,
        i: int,
    ) -> bool:
        """Whether the rules pass the ideal parts with option i of kind in place (when they do
        not, every build with the option fails)."""
        parts = table[kind][i]
        if parts is None:
            return False
        verdict_key = ("probe", memo_key, kind, i)
        rules_key = ("rules", verdict_key)
        if rules_key not in self._rules_ok:
            build = self._probe_build(group, verdict_key, parts)
            self._rules_ok[rules_key] = not self._any_error(verdict_key, build)
        return self._rules_ok[rules_key]

    def _useful_as_worse(
        self,
        probe_key: Hashable,
        rows_key: tuple[Hashable, str],
        merit: Callable[[], tuple[float, ...]],
        useful: Callable[[tuple[Outcome, ...]], bool],
    ) -> bool:
        """An estimated probe of the same list whose parts are no better than this one's
        everywhere the model looks (plan.dominance.model_merit) is still useful: then so is
        this one, which runs at least as fast (the premise of every bound here), and needs no
        estimate. The probe that answered is asked first the next time (the walk asks again
        with every dearer candidate that has the option)."""
        answered = self._answered_by.get(probe_key)
        if answered is not None:
            verdict = self._verdicts[answered]
            if verdict is not None and useful(verdict):
                return True
        rows = self._estimated.get(rows_key)
        if rows is None:
            return False
        for key in rows.no_better_than(merit()):
            verdict = self._verdicts[key]
            if verdict is not None and useful(verdict):
                self._answered_by[probe_key] = key
                return True
        return False

    def _useless_as_better(
        self,
        rows_key: tuple[Hashable, str],
        merit: Callable[[], tuple[float, ...]],
        useful: Callable[[tuple[Outcome, ...]], bool],
    ) -> bool:
        """An estimated probe of the same list whose parts are at least as good as this one's
        everywhere the model looks is no longer useful: then neither is this one, which runs
        no faster (the premise of `_useful_as_worse`), and it needs no estimate."""
        rows = self._estimated.get(rows_key)
        if rows is None:
            return False
        for key in rows.no_worse_than(merit()):
            verdict = self._verdicts[key]
            if verdict is not None and not useful(verdict):
                return True
        return False

    def unbuildable(self, group: Group) -> tuple[set[int], ...]:
        """Per option list, the options that cannot go with any of the group's other parts
        (the memory no CPU of the group addresses, a PSU too small for every CPU): no
        candidate may use them."""
        table = self._probes.get((group.key, option_sizes(group)), {})
        out = tuple(
            {i for i, parts in enumerate(table.get(kind, ())) if parts is None}
            for kind in OPTION_LISTS
        )
        out[OPTION_LISTS.index("psus")].update(group.weak_psus)
        return out

    def options_useful(
        self,
        group: Group,
        cand: Candidate,
        useful: Callable[[tuple[Outcome, ...]], bool] = lambda o: True,
        dead: Sequence[set[int]] | None = None,
        dead_pairs: set[tuple[int, int]] | None = None,
    ) -> bool:
        """Probe each of the candidate's parts: the ideal parts with that one part in place.
        Each probe's outcomes are an upper bound for the candidate (the model only gets faster
        with better parts); a probe that fails a rule fails every build of the group with
        that part (rules only get happier with better parts). False when a probe's bound is no
        longer useful or a probe fails a rule: the candidate cannot count. The model is asked
        first, for every probe, and the rules only when all bounds are useful (the rules cost
        more). Each part is probed once per group, when a candidate first uses it (most
        options are never reached). `dead`: per option list, where an option whose probe is
        useless or fails goes (the caller leaves it out of dearer candidates); `dead_pairs`:
        where the (RAM, drive) pair goes when its probe is useless or fails."""
        memo_key = (group.key, option_sizes(group))
        table = self._probes.get(memo_key)
        if table is None:
            return True
        pair_index = (cand.index[1], cand.index[2])

        def drop(axis: int, i: int) -> None:
            if dead is not None:
                dead[axis].add(i)

        def drop_pair() -> None:
            if dead_pairs is not None:
                dead_pairs.add(pair_index)

        # RAM and the dataset drive act together (a dataset that fits the page cache is read
        # from disk once: DISK.1, DISK.3), so they are also probed as a pair.
        pair_key = ("pair", memo_key, *pair_index)
        # What earlier candidates' probes already tell first: a probe that is no longer useful
        # at this price, or that failed a rule, turns the candidate away without a new
        # estimate (the answer is the same in any order; only the work differs).
        unknown = []
        for axis, (kind, i) in enumerate(zip(OPTION_LISTS, cand.index, strict=True)):
            known = self._known(("probe", memo_key, kind, i), useful)
            if table[kind][i] is None or known is False:
                drop(axis, i)
                return False
            if known is None:
                unknown.append((axis, kind, i))
        pair_known = self._known(pair_key, useful)
        if pair_known is False:
            drop_pair()
            return False
        for axis, kind, i in unknown:
            parts = self._model_probe_parts(group, memo_key, table, kind, i)
            assert parts is not None  # the loop above turned away options that cannot exist
            probe_key = ("probe", memo_key, kind, i)

            def merit(parts: IdealParts = parts) -> tuple[float, ...]:
                return model_merit(parts.cpu, parts.memory, parts.storage, parts.psu)

            if self._useful_as_worse(probe_key, (memo_key, kind), merit, useful):
                continue
            if self._useless_as_better((memo_key, kind), merit, useful):
                drop(axis, i)
                return False
            model_only = self._probe(group, memo_key, table, kind, i)
            self._estimated.setdefault((memo_key, kind), MeritRows()).add(merit(), probe_key)
            if model_only is None or not useful(model_only):
                drop(axis, i)
                return False
        if pair_known is None:
            ideal = self._fused(group)
            # The pair is probed with the candidate's drive fused with every slower drive of
            # the group (plan.bounds.slower_drives_fused): a probe found useless then turns
            # the RAM away with each drive it covers (_useless_as_better). Drive by drive, 95%
            # of a 10x catalog's 6,683 pair estimates were useless, most for a copy a little
            # slower or smaller than one already estimated.
            ceiling = self._fused_option(
                "storage", group.storage, cand.index[2], slower_drives_fused
            )

            def pair_merit() -> tuple[float, ...]:
                return model_merit(ideal.cpu, cand.memory, ceiling, ideal.psu)

            if not self._useful_as_worse(pair_key, (memo_key, "pair"), pair_merit, useful):
                if self._useless_as_better((memo_key, "pair"), pair_merit, useful):
                    drop_pair()
                    return False
                parts = dataclasses.replace(ideal, memory=cand.memory, storage=ceiling)
                build = parts_build(group, parts, self.electricity_per_kwh)
                pair = self._estimate(model_view(group, parts, self.electricity_per_kwh), build)
                self._verdicts[pair_key] = pair
                self._estimated.setdefault((memo_key, "pair"), MeritRows()).add(
                    pair_merit(), pair_key
                )
                if not useful(pair):
                    drop_pair()
                    return False
        for axis, (kind, i) in enumerate(zip(OPTION_LISTS, cand.index, strict=True)):
            if not self._probe_passes(group, memo_key, table, kind, i):
                drop(axis, i)
                return False
        rules_key = ("rules", pair_key)
        if rules_key not in self._rules_ok:
            self._rules_ok[rules_key] = not self._any_error(pair_key, self._pair_build(group, cand))
        if not self._rules_ok[rules_key]:
            drop_pair()
            return False
        return True

    def _known(
        self, verdict_key: Hashable, useful: Callable[[tuple[Outcome, ...]], bool]
    ) -> bool | None:
        """What is known of a probe: False when its bound is no longer useful or the rules
        failed it, True when it is estimated and still useful, None when not estimated."""
        if self._rules_ok.get(("rules", verdict_key)) is False:
            return False
        verdict = self._verdicts.get(verdict_key)
        return None if verdict is None else useful(verdict)

    def _pair_parts(self, group: Group, cand: Candidate) -> IdealParts:
        """The ideal parts with the candidate's RAM and dataset drive in place."""
        return dataclasses.replace(self._fused(group), memory=cand.memory, storage=cand.storage)

    def _pair_build(self, group: Group, cand: Candidate) -> Build:
        return parts_build(group, self._pair_parts(group, cand), self.electricity_per_kwh)

    def families(self, budget_usd: float) -> list[Family]:
        """The groups that fit the budget, by family (one GPU set on every workstation board;
        each platform alone), with each family's bound; families whose GPUs cannot hold the
        job are left out."""
        if budget_usd not in self._families:
            members: dict[Hashable, list[Group]] = {}
            for group in self.space.groups:
                if group.min_price_usd <= budget_usd + 1e-6:
                    members.setdefault(family_key(group), []).append(group)
            out = []
            for groups in members.values():
                groups.sort(key=lambda g: g.min_price_usd)
                cut = [g.within(budget_usd) for g in groups]
                board = on_family_board(cut)
                if board is None:
                    best = self.upper_bound(cut[0], math.inf)
                else:
                    parts = fused_parts(cut)
                    best = self._bound(*ideal_build(board, self.electricity_per_kwh, parts))
                    lean = on_fewest_sockets(board, cut)
                    if best is not None and lean is not None and self.objective.reads_energy:
                        best = self._at_least_draw(best, lean, parts)
                if best is not None:
                    out.append(Family(tuple(groups), best, groups[0].min_price_usd))
            self._families[budget_usd] = out
        return list(self._families[budget_usd])

    def _at_least_draw(
        self, best: tuple[Outcome, ...], lean: Group, parts: IdealParts
    ) -> tuple[Outcome, ...]:
        """A family's bound with each run's electricity at the least draw of any member: the
        family board has as many CPU sockets as any member's, faster but hungrier, so its own
        run's energy is no lower bound (for cost-per-run 326 of 1,827 resnet50 groups at
        20,000 USD exceeded their family's bound that way); `lean`, the same board with the
        fewest sockets, draws the least."""
        key, build = ideal_build(lean, self.electricity_per_kwh, parts)
        return tuple(
            at_least_draw(fast, lean)
            for fast, lean in zip(best, self._estimate(key, build), strict=True)
        )

    def bounded(
        self,
        family: Family,
        budget_usd: float,
        skip: Callable[[Group, tuple[Outcome, ...]], bool] = lambda g, best: False,
    ) -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
        """The family's groups, cheapest first, each with its own bound (None-bounded ones,
        whose GPUs cannot hold the job, left out, and those that `skip` leaves out with the
        family's bound: its outcomes are at least as fast as the group's and use no more
        energy, and the passes only skip more as the bound falls, so they would skip the
        group with its own bound too)."""
        for group in family.groups:
            if skip(group, family.best):
                continue
            best = self.upper_bound(group, budget_usd)
            if best is not None:
                yield group, best

    # --- the walk and its passes --------------------------------------------------------------

    def _walk(self, groups: Iterator[tuple[Group, tuple[Outcome, ...]]], p: _Pass) -> None:
        """The one search walk: each group (with its bound) that the pass does not skip is
        opened, and its candidates visited cheapest first until the pass says the rest are
        out of reach; a candidate counts when every probe of its parts is still useful, the
        rules pass it and the job fits (then the pass takes it)."""
        for group, loose in groups:
            if p.skip_group(group, loose):
                continue
            opened = self.opened(group, p.budget_usd)
            if opened is None:
                continue
            # Options found useless for a candidate are useless for every dearer one (a
            # probe's bound only falls with the price, and the pass only gets stricter), and
            # options whose probe fails a rule fail with any parts: the walk leaves them out.
            # The same holds for a (RAM, drive) pair, probed together (options_useful).
            dead = self.unbuildable(opened)
            dead_pairs: set[tuple[int, int]] = set()
            take = p.taker(loose)
            feasible = FeasibleMerits()
            for cand in opened.cheapest_first(p.budget_usd, dead, dead_pairs):
                if p.past_reach(cand, loose):
                    break
                if feasible.outdo(cand):
                    continue
                useful = p.useful_at(opened, cand.price_usd)
                if not self.options_useful(opened, cand, useful, dead, dead_pairs):
                    continue
                scored = self.score(cand, loose)
                if scored is None:
                    continue
                feasible.remember(cand.model_merit, cand.price_usd, not scored.warnings)
                if take(scored):
                    break

    def rival(self, budget_usd: float, winner: Scored) -> Scored | None:
        """The best build under the budget with another GPU model than winner's (what the
        money would buy instead, for the explanation)."""
        gpu = winner.candidate.group.gpu.name
        ranked = self._top_all(budget_usd, 1, lambda g: g.gpu.name != gpu)
        return ranked[0] if ranked else None

    def top(self, budget_usd: float, k: int) -> list[Ranked]:
        """The first k builds of the ranking (plan.ties: the best value first; builds of one
        GPU set within the model's same-GPU uncertainty of the best one left are ties, and a
        tie goes to the best value for money), each with the leader it was ranked before; and, in
        `value_pick`, the cheapest build within the comparison band of the first.

        The leaders come from the k best builds by value (`_leading`): the k-th leader is
        worth at least the k-th of those, so no build below the low end of their intervals
        (with one interval ratio for every estimate, the low end rises with the value) can tie
        one. `_band` finds every build above that floor that can still be ranked."""
        wanted = k
        floor = math.inf
        while True:
            leading = self._leading(budget_usd, wanted)
            if not leading:
                return []
            floor = min(floor, *(band_floor(s) for s in leading))
            pool = {s.candidate.key: s for s in self._band(budget_usd, floor, k, leading)}
            ranked = rank(list(pool.values()), k)
            # The pool holds every build down to floor: enough when each step's leader tied
            # only builds above it. A ranked build's copies leave the ranking (plan.ties.
            # copy_of), so it may reach below the k leading builds' floor: then search lower.
            need = min(r.floor for r in ranked)
            if ranked:
                # ... and it must reach the first build's comparison band, where the value pick
                # lies (plan.ties.value_pick)
                need = min(need, band_floor(ranked[0].build))
            if not below(need, floor) and (len(ranked) >= k or len(leading) < wanted):
                # The floor is at or below the first build's comparison band: the pool holds
                # the value pick (nothing cheaper and better-valued is left out of it).
                self.value_pick = value_pick(list(pool.values()), ranked[0].build)
                return ranked
            if len(ranked) < k and len(leading) >= wanted:
                wanted *= 2
            floor = min(floor, need)

    def _leading(self, budget_usd: float, k: int) -> list[Scored]:
        """The k best feasible builds by value under the budget that no build with the same
        GPUs matches on the objective for less money (best first; ties: cheaper first).

        A build dominated so is a dearer copy of a better one (the same GPUs on a dearer
        board, water where air does as well). Whatever dominates a build ranks before it, so
        the undominated builds among the top k' are exactly the first ones of all undominated
        builds: search the top k' and double k' until k of them are undominated.
        """
        wanted = k  # the search already leaves out builds a scored one matches for less
        while True:
            ranked = self._top_all(budget_usd, wanted)
            kept = undominated(ranked)
            if len(kept) >= k or len(ranked) < wanted or wanted >= MAX_TOP_SEARCH * k:
                return kept[:k]
            wanted *= 2

    def _band(
        self, budget_usd: float, floor: float, k: int, seeds: Sequence[Scored]
    ) -> list[Scored]:
        """Every feasible build under the budget worth at least floor that the ranking could
        still place among its first k: left out are builds that a found build with the same
        GPUs precedes (plan.ties.precedes: a copy, never ranked), and builds that found builds
        of k different GPU sets precede (each, or the build of its GPUs that precedes it,
        ranks first). `seeds`: builds already scored, found before the walk starts (they
        prune from the first group on)."""
        obj = self.objective
        families = self.families(budget_usd)
        families.sort(key=lambda f: -obj.bound(f.min_price_usd, f.best))
        found: list[Scored] = []
        cheaper: dict[Hashable, Staircase] = {}  # per GPU set: the best value at a lower price
        clean: dict[Hashable, Staircase] = {}  # per GPU set: the best value without warnings

        def preceded_by(gpus: Hashable, bound: float, price_usd: float) -> bool:
            """A found build of these GPUs precedes every build worth at most bound costing
            price_usd: it is worth as much for less, or more for as much without a warning."""
            at = cents(price_usd)
            less = cheaper.get(gpus)
            same = clean.get(gpus)
            return (less is not None and less.best_at(at - 0.005) >= bound) or (
                same is not None and same.best_at(at) > bound
            )

        band_gap = max(
            (o.same_gpu_ratio_low / o.comparison_ratio_low for s in seeds for o in s.outcomes),
            default=1.0,
        )

        def across_models(bound: float) -> float:
            """The value a build of other GPUs needs to precede every build worth at most
            bound: a leader of its own GPU model judges it by the narrower same-GPU band
            (plan.ties.ties), so it must still tie where a build worth bound ties by the wider
            one: band_gap more (values scale with the speed, or against it for run time and
            cost, which are negative)."""
            return bound * band_gap if bound >= 0 else bound / band_gap

        # Per price (to the cent), the k-th highest `reach` of the found GPU sets, until the
        # next build is recorded: the walk asks it of every probe of a candidate.
        kth_reach: dict[float, float | None] = {}

        def reach(gpus: Hashable, at: float) -> float:
            """The highest value that a found build of these GPUs precedes at price `at`
            (preceded_by(gpus, v, at) exactly when v <= it, for a finite v)."""
            less, same = cheaper[gpus], clean.get(gpus)
            worse = math.nextafter(same.best_at(at), -math.inf) if same is not None else -math.inf
            return max(less.best_at(at - 0.005), worse)

        def ahead_of(rival: float, price_usd: float) -> bool:
            """Found builds of k different GPU sets precede every build worth at most rival
            costing price_usd."""
            if not math.isfinite(rival):
                return sum(1 for g in cheaper if preceded_by(g, rival, price_usd)) >= k
            at = cents(price_usd)
            if at not in kth_reach:
                reaches = sorted((reach(g, at) for g in cheaper), reverse=True)
                kth_reach[at] = reaches[k - 1] if len(reaches) >= k else None
            kth = kth_reach[at]
            return kth is not None and rival <= kth

        def out_of_reach(bound: float, price_usd: float, gpus: Hashable) -> bool:
            if below(bound, floor) or preceded_by(gpus, bound, price_usd):
                return True
            return ahead_of(across_models(bound), price_usd)

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                if below(obj.bound(family.min_price_usd, family.best), floor):
                    return  # the families come best bound first: none after can reach floor
                gpus = family.groups[0].gpu_set
                if not out_of_reach(
                    obj.bound(family.min_price_usd, family.best), family.min_price_usd, gpus
                ):
                    yield from self.bounded(family, budget_usd, skip_group)

        def record(scored: Scored) -> bool:
            """Keep a build worth at least floor (once); False when it is not."""
            if below(scored.value, floor):
                return False
            if scored.candidate.key in kept:
                return True
            kept.add(scored.candidate.key)
            kth_reach.clear()
            gpus = scored.candidate.group.gpu_set
            found.append(scored)
            at = cents(scored.price_usd)
            cheaper.setdefault(gpus, Staircase()).add(at, scored.value)
            if not scored.warnings:
                clean.setdefault(gpus, Staircase()).add(at, scored.value)
            return True

        def taker(best: tuple[Outcome, ...]) -> Callable[[Scored], bool]:
            def take(scored: Scored) -> bool:
                # The group reached its bound without a warning: nothing else in it can
                # rank before this build.
                return (
                    record(scored)
                    and obj.price_monotone
                    and not scored.warnings
                    and not below(scored.value, obj.value(scored.price_usd, best))
                )

            return take

        def skip_group(g: Group, best: tuple[Outcome, ...]) -> bool:
            return out_of_reach(obj.bound(g.min_price_usd, best), g.min_price_usd, g.gpu_set)

        kept: set[Hashable] = set()
        for seed in seeds:
            record(seed)
        self._walk(
            groups(),
            _Pass(
                budget_usd=budget_usd,
                skip_group=skip_group,
                useful_at=lambda g, price: _reachable(out_of_reach, obj, price, g.gpu_set),
                past_reach=lambda c, best: out_of_reach(
                    obj.bound(c.price_usd, best), c.price_usd, c.group.gpu_set
                ),
                taker=taker,
            ),
        )
        return found

    def _top_all(
        self, budget_usd: float, k: int, admit: Callable[[Group], bool] = lambda g: True
    ) -> list[Scored]:
        """The k best feasible builds (best first; ties: cheaper first) of those that no
        build found with the same GPUs scores at least as well for no more money, except
        dearer builds of a group
        that do no better than a cheaper one of it; only groups that admit() lets in.

        A build so matched is never among the undominated builds `top` keeps: the build that
        matches it ranks before it, and either is kept or is matched by a kept one, which then
        matches it too. Leaving such builds out spares the search the many equal-valued
        copies of a build (the same GPUs on other boards) that would fill the top k."""
        obj = self.objective
        families = self.families(budget_usd)
        families.sort(key=lambda f: -obj.bound(f.min_price_usd, f.best))
        found: list[Scored] = []
        scored_so_far: dict[Hashable, Staircase] = {}

        def out_of_reach(bound: float, price_usd: float, gpus: Hashable) -> bool:
            """No build with value <= bound and price >= price_usd can enter the top k: it is
            worse than the k-th, or ties it and is no cheaper (ties rank by price), or a build
            already scored is worth at least bound for no more than price_usd."""
            found_here = scored_so_far.get(gpus)
            if found_here is not None and found_here.best_at(price_usd) >= bound:
                return True
            if len(found) < k:
                return False
            last = found[k - 1]
            return below(bound, last.value) or (
                not above(bound, last.value) and price_usd >= last.price_usd - 1e-6
            )

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                family_bound = obj.bound(family.min_price_usd, family.best)
                if len(found) >= k and below(family_bound, found[k - 1].value):
                    return  # the families come best bound first: none after can enter either
                if out_of_reach(family_bound, family.min_price_usd, family.groups[0].gpu_set):
                    continue
                members = list(self.bounded(family, budget_usd, skip_group))
                members.sort(key=lambda gb: -obj.bound(gb[0].min_price_usd, gb[1]))
                yield from members

        def taker(best: tuple[Outcome, ...]) -> Callable[[Scored], bool]:
            group_best = -math.inf

            def take(scored: Scored) -> bool:
                nonlocal group_best
                if not above(scored.value, group_best):
                    return False  # a dearer build of the group that does no better
                group_best = scored.value
                gpus = scored.candidate.group.gpu_set
                scored_so_far.setdefault(gpus, Staircase()).add(scored.price_usd, scored.value)
                found.append(scored)
                found.sort(key=rank_key)
                del found[k:]
                # The group reached its bound: anything dearer in it is no better.
                return obj.price_monotone and not below(
                    scored.value, obj.value(scored.price_usd, best)
                )

            return take

        def skip_group(g: Group, best: tuple[Outcome, ...]) -> bool:
            return not admit(g) or out_of_reach(
                obj.bound(g.min_price_usd, best), g.min_price_usd, g.gpu_set
            )

        self._walk(
            groups(),
            _Pass(
                budget_usd=budget_usd,
                skip_group=skip_group,
                useful_at=lambda g, price: _reachable(out_of_reach, obj, price, g.gpu_set),
                past_reach=lambda c, best: out_of_reach(
                    obj.bound(c.price_usd, best), c.price_usd, c.group.gpu_set
                ),
                taker=taker,
            ),
        )
        return found

    def pareto(self, budget_usd: float) -> list[Scored]:
        """Feasible builds under the budget that no cheaper-or-equal build matches in weighted
        throughput (cheapest first)."""
        weights = [w.weight for w in self.workloads]
        families = self.families(budget_usd)
        families.sort(key=lambda f: f.min_price_usd)
        # No frontier build matches another for no more money, so by price the throughputs
        # rise: the best at or under a price is the last one there.
        frontier: list[Scored] = []
        prices: list[float] = []

        def dominated(price: float, throughput: float) -> bool:
            i = bisect.bisect_right(prices, price + 1e-6) - 1
            return i >= 0 and not below(frontier[i].throughput, throughput)

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                if not dominated(family.min_price_usd, weighted_throughput(family.best, weights)):
                    yield from self.bounded(family, budget_usd, skip_group)

        def taker(best: tuple[Outcome, ...]) -> Callable[[Scored], bool]:
            ceiling = weighted_throughput(best, weights)

            def take(scored: Scored) -> bool:
                if dominated(scored.price_usd, scored.throughput):
                    return False
                kept = [
                    f
                    for f in frontier
                    if not (
                        scored.price_usd <= f.price_usd + 1e-6
                        and not below(scored.throughput, f.throughput)
                    )
                ]
                kept.append(scored)
                kept.sort(key=lambda f: (f.price_usd, f.throughput))
                frontier[:] = kept
                prices[:] = [f.price_usd for f in kept]
                return not below(scored.throughput, ceiling)

            return take

        def skip_group(g: Group, best: tuple[Outcome, ...]) -> bool:
            return dominated(g.min_price_usd, weighted_throughput(best, weights))

        self._walk(
            groups(),
            _Pass(
                budget_usd=budget_usd,
                skip_group=skip_group,
                useful_at=lambda g, price: _undominated_at(dominated, weights, price),
                past_reach=lambda c, best: dominated(
                    c.price_usd, weighted_throughput(best, weights)
                ),
                taker=taker,
            ),
        )
        frontier.sort(key=lambda s: (s.price_usd, -s.throughput))
        return frontier

    def cheapest(self) -> Scored | None:
        """The cheapest feasible build in the space, whatever the budget."""
        families = self.families(math.inf)
        families.sort(key=lambda f: f.min_price_usd)
        found: Scored | None = None

        def dearer(price_usd: float) -> bool:
            return found is not None and price_usd >= found.price_usd

        def groups() -> Iterator[tuple[Group, tuple[Outcome, ...]]]:
            for family in families:
                if dearer(family.min_price_usd):
                    return
                yield from self.bounded(family, math.inf)

        def taker(best: tuple[Outcome, ...]) -> Callable[[Scored], bool]:
            def take(scored: Scored) -> bool:
                nonlocal found
                found = scored
                return True

            return take

        self._walk(
            groups(),
            _Pass(
                budget_usd=math.inf,
                skip_group=lambda g, best: dearer(g.min_price_usd),
                useful_at=lambda g, price: _always_useful,
                past_reach=lambda c, best: dearer(c.price_usd),
                taker=taker,
            ),
        )
        return found

    def stats(self) -> SearchStats:
        """What the search has done so far."""
        return SearchStats(
            groups=len(self.space.groups),
            evaluated=self.counter.evaluated,
            estimates=self.counter.estimates,
            checks=self.counter.checks,
            unpriced=self.space.unpriced,
            no_priced_server=self.space.no_priced_server,
            loop_parts_unpriced=self.space.loop_parts_unpriced,
            mains=self.space.mains,
            off_circuit=self.space.off_circuit,
            blocked=tuple(
                f"{rule} ({message})"
                for rule, (_, message) in sorted(self._blocked.items(), key=lambda kv: -kv[1][0])
            ),
        )


def _reachable(
    out_of_reach: Callable[[float, float, Hashable], bool],
    obj: Objective,
    floor_usd: float,
    gpus: Hashable,
) -> Callable[[tuple[Outcome, ...]], bool]:
    """Whether a probe's bound, at floor_usd (a group's lowest price, or a candidate's),
    can still enter the top k."""

    def useful(best: tuple[Outcome, ...]) -> bool:
        return not out_of_reach(obj.bound(floor_usd, best), floor_usd, gpus)

    return useful


def _undominated_at(
    dominated: Callable[[float, float], bool], weights: Sequence[float], floor_usd: float
) -> Callable[[tuple[Outcome, ...]], bool]:
    """Whether a probe's throughput, at floor_usd (a group's lowest price, or a candidate's),
    can still join the frontier."""

    def useful(best: tuple[Outcome, ...]) -> bool:
        return not dominated(floor_usd, weighted_throughput(best, weights))

    return useful


def _always_useful(best: tuple[Outcome, ...]) -> bool:
    return True


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
    space = search_space(catalog, limits, allow, job_storage_gb(workloads))
    planner = Planner(
        space, workloads, objective, evaluator, electricity_per_kwh=electricity_per_kwh
    )
    ranking = planner.top(budget_usd, top_k)
    builds = [r.build for r in ranking]
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
        leaders=tuple(r.leader for r in ranking),
        value_pick=planner.value_pick if builds else None,
    )
