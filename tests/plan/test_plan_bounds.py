"""The bounds the search prunes by really are upper bounds, with the shipped model and the
built-in catalog; and a chassis that only repeats a cheaper one's specs changes no plan."""

from __future__ import annotations

import pytest
from plan_fakes import FAKE_WORKLOADS, FakeEvaluator, fake_catalog

from dlrig.catalog.loader import Catalog, builtin_catalog
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


@pytest.mark.xfail(
    strict=True,
    reason="known bug (found 2026-12-03): a family's board has as many CPU sockets as any "
    "member's, so its ideal build draws more and its run's electricity is no lower bound; "
    "for cost-per-run (resnet50, 20,000 USD) 326 of 1,827 groups' own bounds exceeded their "
    "family's at its lowest price, e.g. 1x TITAN V on Gigabyte B650M AORUS ELITE AX ICE "
    "-10.93 against -11.89 USD/run; the search skips and stops families by that bound",
)
def test_family_bound_is_at_least_each_member_groups_bound_for_cost_per_run() -> None:
    catalog = builtin_catalog()
    workloads = [WeightedWorkload(load_workload("resnet50"))]
    limits = Constraints()
    space = search_space(catalog, limits, part_filter(limits, catalog), job_storage_gb(workloads))
    objective = make_objective(ObjectiveKind.COST_PER_RUN, [1.0])
    planner = Planner(space, workloads, objective, ModelEvaluator())
    budget = 20_000.0
    for family in planner.families(budget):
        family_bound = objective.bound(family.min_price_usd, family.best)
        for group, best in planner.bounded(family, budget):
            group_bound = objective.bound(group.min_price_usd, best)
            assert group_bound <= family_bound + 1e-9 * abs(family_bound), group.key


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
