"""The bounds the search prunes by really are upper bounds, with the shipped model and the
built-in catalog; and a chassis that only repeats a cheaper one's specs changes no plan."""

from __future__ import annotations

import dataclasses
import math

import pytest
from plan_fakes import FAKE_WORKLOADS, FakeEvaluator, fake_catalog

from dlrig.catalog.loader import Catalog, builtin_catalog
from dlrig.plan.bounds import ideal_build, ideal_parts, parts_build
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.evaluate import ModelEvaluator
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.objectives import make_objective
from dlrig.plan.results import WeightedWorkload, job_storage_gb
from dlrig.plan.search import Planner, plan
from dlrig.plan.space import search_space
from dlrig.workloads import load_workload


@pytest.mark.parametrize("job", ["bert-large-squad", "resnet50"])
def test_family_bound_is_at_least_each_member_groups_bound(job: str) -> None:
    # Regression (measured 2026-12-02): with its cards in adjacent slots, the board that bounds
    # a family scored 2x RTX PRO 6000 (open-air) on bert-large-squad at 233.0 samples/s while
    # MSI MAG Z790 TOMAHAWK, which leaves a slot between them, reached 241.0 (less throttle),
    # so top-3 at 20,000 USD missed that build.
    catalog = builtin_catalog()
    workloads = [WeightedWorkload(load_workload(job))]
    limits = Constraints()
    space = search_space(catalog, limits, part_filter(limits, catalog), job_storage_gb(workloads))
    objective = make_objective(ObjectiveKind.THROUGHPUT, [1.0])
    planner = Planner(space, workloads, objective, ModelEvaluator())
    budget = 20_000.0
    checked = 0
    for family in planner.families(budget):
        family_bound = objective.bound(family.min_price_usd, family.best)
        for group, best in planner.bounded(family, budget):
            group_bound = objective.bound(group.min_price_usd, best)
            assert group_bound <= family_bound * (1 + 1e-9), group.key
            checked += 1
    assert checked > 100  # the built-in catalog has hundreds of groups under 20,000 USD


def test_family_bound_is_at_least_each_member_groups_bound_for_cost_per_run() -> None:
    catalog = builtin_catalog()
    workloads = [WeightedWorkload(load_workload("resnet50"))]
    limits = Constraints()
    space = search_space(catalog, limits, part_filter(limits, catalog), job_storage_gb(workloads))
    # Regression (found 2026-12-03): a family's board has as many CPU sockets as any member's,
    # so its ideal build draws more and its run's electricity was no lower bound: 326 of 1,827
    # groups' own bounds exceeded their family's at its lowest price, e.g. 1x TITAN V on
    # Gigabyte B650M AORUS ELITE AX ICE -10.93 against -11.89 USD/run.
    objective = make_objective(ObjectiveKind.COST_PER_RUN, [1.0])
    planner = Planner(space, workloads, objective, ModelEvaluator())
    budget = 20_000.0
    checked = 0
    dual = 0
    for family in planner.families(budget):
        family_bound = objective.bound(family.min_price_usd, family.best)
        sockets = {g.chassis.cpu_count for g in family.groups}
        for group, best in planner.bounded(family, budget):
            group_bound = objective.bound(group.min_price_usd, best)
            assert group_bound <= family_bound + 1e-9 * abs(family_bound), group.key
            checked += 1
            dual += len(sockets) > 1
    assert checked > 1000  # 1,827 groups when the bug was found
    assert dual > 100  # families that mix one- and two-socket boards, where the bug was


def _with_dearer_twin_boards(catalog: Catalog) -> Catalog:
    """The catalog plus, for every board, a copy with the same specs at a higher price."""
    parts = dict(catalog.parts)
    twins = tuple(
        b.model_copy(update={"name": f"{b.name} twin", "price_usd": (b.price_usd or 0) + 50})
        for b in catalog.motherboards
        if b.price_usd is not None
    )
    parts["motherboards"] = (*catalog.motherboards, *twins)
    return Catalog(parts)


@pytest.mark.parametrize("budget", [2_500, 9_000, 40_000])
def test_dearer_twin_boards_change_no_plan(budget: int) -> None:
    # A board that repeats a cheaper one's specs offers the same builds for more money: the
    # search keeps one board per spec, and the plan must equal the plan without the twins.
    base = fake_catalog()
    twinned = _with_dearer_twin_boards(base)
    workloads = [WeightedWorkload(w) for w in list(FAKE_WORKLOADS.values())[:1]]
    objective = make_objective(ObjectiveKind.THROUGHPUT, [1.0])
    plain = plan(base, workloads, budget, objective, FakeEvaluator())
    twin = plan(twinned, workloads, budget, objective, FakeEvaluator())
    assert [(s.value, s.price_usd) for s in twin.builds] == [
        (s.value, s.price_usd) for s in plain.builds
    ]
    assert [(s.price_usd, s.throughput) for s in twin.pareto] == [
        (s.price_usd, s.throughput) for s in plain.pareto
    ]
    assert twin.stats.groups == plain.stats.groups  # the twins' groups were left out


def test_ideal_builds_that_share_a_bound_key_get_the_same_estimate() -> None:
    # Regression (found 2026-12-03): the key under which a group's bound is estimated once
    # left out the gaps between the seated cards, so 2x RTX 4090 on ASRock Rack ROMED8-2T
    # (adjacent slots: the model throttles the pair) and on Supermicro H12SSL-i (a free slot
    # between them) shared one bound: llama-3-8b-lora 2.449 vs 2.577 samples/s, whichever was
    # estimated first. The Pareto list then kept 2x 4090 at 8,106.92 USD and missed the same
    # speed at 8,057.81 (the H12SSL-i group was passed by its borrowed, lower bound).
    catalog = builtin_catalog()
    job = load_workload("llama-3-8b-lora")
    workloads = [WeightedWorkload(job)]
    limits = Constraints()
    space = search_space(catalog, limits, part_filter(limits, catalog), job_storage_gb(workloads))
    evaluator = ModelEvaluator()
    seen: dict[object, tuple[tuple[float, ...], object]] = {}
    for group in space.groups:
        key, build = ideal_build(group, 0.15)
        outcome = evaluator.outcome(("group", group.key), build, job)
        figures = (outcome.samples_per_s, outcome.time_h or 0.0, outcome.energy_kwh or 0.0)
        first, owner = seen.setdefault(key, (figures, group.key))
        assert figures == pytest.approx(first, rel=1e-12), (owner, group.key)
    assert len(seen) > 1000  # 2,348 keys over 2,728 groups when the bug was fixed


def test_a_groups_bound_saves_checkpoints_at_its_fastest_drives_write_speed() -> None:
    # Regression (found 2026-12-04): the ideal drive took the fastest reader's write speed, so
    # with a drive that reads fastest but writes slowly the bound's checkpoint saves (DISK.job,
    # model/checkpoint.py) took longer than on a real build of the group with the fastest
    # writer: no bound of the run's time for time-to-train or cost-per-run.
    base = builtin_catalog()
    reader = next(s for s in base.storage if s.name == "Samsung 9100 Pro 4TB").model_copy(
        update={"name": "read-optimised 4TB", "aliases": (), "read_mb_s": 15_000.0,
                "write_mb_s": 900.0, "price_usd": 100.0}
    )  # fmt: skip
    catalog = Catalog({**base.parts, "storage": (*base.storage, reader)})
    job = load_workload("llama-3-8b")  # 112 GB checkpoints: the saves are minutes each
    workloads = [WeightedWorkload(job)]
    limits = Constraints()
    space = search_space(catalog, limits, part_filter(limits, catalog), job_storage_gb(workloads))
    evaluator = ModelEvaluator()
    objective = make_objective(ObjectiveKind.TIME_TO_TRAIN, [1.0])
    planner = Planner(space, workloads, objective, evaluator)
    checked = 0
    for group in space.groups:
        if reader.name not in {s.name for s in group.storage} or checked >= 40:
            continue
        best = planner.upper_bound(group, math.inf)
        if best is None:
            continue
        writer = max(group.storage, key=lambda s: s.write_mb_s or s.read_mb_s)
        parts = dataclasses.replace(ideal_parts(group), storage=writer)
        real = evaluator.outcome(("writer", group.key), parts_build(group, parts, 0.15), job)
        assert (best[0].time_h or 0.0) <= (real.time_h or 0.0) * (1 + 1e-9), group.key
        checked += 1
    assert checked >= 10
