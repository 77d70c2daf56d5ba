"""The planner is exact: it agrees with a brute-force walk of the unpruned space (fake catalog,
toy model and rules from conftest), and the best throughput never falls as the budget rises."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from plan_brute import brute_force, frontier, ranked_top
from plan_fakes import FAKE_WORKLOADS, TOY_MAINS, FakeEvaluator, fake_catalog

from dlrig.enums import Vendor
from dlrig.mains import find_mains
from dlrig.plan.constraints import Constraints
from dlrig.plan.kinds import BuildForm, ObjectiveKind
from dlrig.plan.objectives import make_objective
from dlrig.plan.results import WeightedWorkload
from dlrig.plan.search import plan

CATALOG = fake_catalog()
CIRCUITS = [
    find_mains(name, where="test", origin="test") for name in ("us-15a", "2x-us-15a", "eu-16a")
]

workload_mixes = st.lists(
    st.tuples(st.sampled_from(sorted(FAKE_WORKLOADS)), st.sampled_from([0.3, 1.0, 2.0])),
    min_size=1,
    max_size=2,
    unique_by=lambda t: t[0],
)
constraint_sets = st.builds(
    Constraints,
    gpus=st.none() | st.integers(1, 4),
    max_gpus=st.integers(1, 8),
    form=st.none() | st.sampled_from(list(BuildForm)),
    nodes=st.sampled_from([1, 1, 2]),
    exclude_vendors=st.sampled_from([(), (Vendor.AMD,), (Vendor.INTEL,)]),
    min_gpu_memory_gb=st.sampled_from([0.0, 20.0]),
    # The circuit decides which groups run at stock power and which at a power limit (PSU.6,
    # plan/space.py): the planner and the brute force see the same groups on each.
    mains=st.sampled_from([None, TOY_MAINS, *CIRCUITS]),
)


@settings(max_examples=80)
@given(
    mix=workload_mixes,
    budget=st.integers(300, 160_000),
    objective_kind=st.sampled_from(list(ObjectiveKind)),
    constraints=constraint_sets,
)
def test_planner_matches_brute_force(
    mix: list[tuple[str, float]],
    budget: int,
    objective_kind: ObjectiveKind,
    constraints: Constraints,
) -> None:
    workloads = [WeightedWorkload(FAKE_WORKLOADS[n], w) for n, w in mix]
    objective = make_objective(objective_kind, [w.weight for w in workloads])
    evaluator = FakeEvaluator()
    result = plan(
        CATALOG, workloads, budget, objective, evaluator, constraints=constraints, top_k=3
    )
    reference = brute_force(CATALOG, workloads, budget, objective, evaluator, constraints)
    if not reference:
        assert result.builds == ()
        return
    assert result.builds, "the planner found nothing though a feasible build exists"
    expected = ranked_top(reference, 3)
    got = [(s.value, s.price_usd) for s in result.builds]
    assert len(got) == len(expected)
    for (value, price), (want_value, want_price) in zip(got, expected, strict=True):
        assert abs(value - want_value) <= 1e-9 * max(1.0, abs(want_value))
        assert abs(price - want_price) <= 1e-6
    assert [(round(s.price_usd, 6), round(s.throughput, 6)) for s in result.pareto] == [
        (round(p, 6), round(t, 6)) for p, t in frontier(reference)
    ]
    assert all(s.price_usd <= budget + 1e-6 for s in result.builds)


@settings(max_examples=25)
@given(
    mix=workload_mixes,
    budgets=st.lists(st.integers(300, 22_000), min_size=2, max_size=5),
)
def test_best_throughput_never_falls_as_budget_rises(
    mix: list[tuple[str, float]], budgets: list[int]
) -> None:
    workloads = [WeightedWorkload(FAKE_WORKLOADS[n], w) for n, w in mix]
    objective = make_objective(ObjectiveKind.THROUGHPUT, [w.weight for w in workloads])
    best = []
    for budget in sorted(budgets):
        result = plan(CATALOG, workloads, budget, objective, FakeEvaluator(), top_k=1)
        best.append(result.builds[0].throughput if result.builds else 0.0)
    assert best == sorted(best)
