"""`--own` keeps the planner exact: with some parts owned (priced 0 up to the count owned), the
planner's top builds and Pareto frontier still agree with a brute-force walk of the unpruned
space (fake catalog and toy model of plan_fakes; both price through plan/parts.price_of)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from plan_brute import brute_force, frontier, ranked_top
from plan_fakes import FAKE_WORKLOADS, FakeEvaluator, fake_catalog

from dlrig.plan.constraints import Constraints
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.objectives import make_objective
from dlrig.plan.owned import owned_parts, with_owned
from dlrig.plan.parts import price_of
from dlrig.plan.results import WeightedWorkload
from dlrig.plan.search import plan

CATALOG = fake_catalog()

owned_docs = st.fixed_dictionaries(
    {
        "gpus": st.lists(
            st.fixed_dictionaries(
                {
                    "model": st.sampled_from(["Small 12", "Fast 24", "Red 24", "Blower 48"]),
                    "count": st.integers(1, 3),
                }
            ),
            max_size=2,
        ),
        "psu": st.lists(st.sampled_from(["PSU 850", "PSU 1600", "PSU 2400"]), max_size=1),
        "cpu": st.lists(st.sampled_from(["Desk 16", "Work 24"]), max_size=1),
        "case": st.lists(st.sampled_from(["Mid tower", "Full tower"]), max_size=1),
    }
)


@settings(max_examples=40)
@given(
    owned=owned_docs,
    budget=st.integers(300, 40_000),
    objective_kind=st.sampled_from(list(ObjectiveKind)),
    gpus=st.none() | st.integers(1, 4),
)
def test_planner_with_owned_parts_matches_brute_force(
    owned: dict[str, list[object]], budget: int, objective_kind: ObjectiveKind, gpus: int | None
) -> None:
    catalog = with_owned(CATALOG, owned_parts(owned, "owned.yaml", CATALOG))
    workloads = [WeightedWorkload(FAKE_WORKLOADS[sorted(FAKE_WORKLOADS)[0]], 1.0)]
    objective = make_objective(objective_kind, [1.0])
    constraints = Constraints(gpus=gpus, max_gpus=4, nodes=1)
    evaluator = FakeEvaluator()
    result = plan(
        catalog, workloads, budget, objective, evaluator, constraints=constraints, top_k=3
    )
    reference = brute_force(catalog, workloads, budget, objective, evaluator, constraints)
    if not reference:
        assert result.builds == ()
        return
    expected = ranked_top(reference, 3)
    got = [(s.value, s.price_usd) for s in result.builds]
    assert len(got) == len(expected)
    for (value, price), (want_value, want_price) in zip(got, expected, strict=True):
        assert abs(value - want_value) <= 1e-9 * max(1.0, abs(want_value))
        assert abs(price - want_price) <= 1e-6
    assert [(round(s.price_usd, 6), round(s.throughput, 6)) for s in result.pareto] == [
        (round(p, 6), round(t, 6)) for p, t in frontier(reference)
    ]


def test_owned_cards_are_free_up_to_the_count_owned() -> None:
    catalog = with_owned(
        CATALOG, owned_parts({"gpus": [{"model": "Fast 24", "count": 2}]}, "o.yaml", CATALOG)
    )
    (fast,) = [g for g in catalog.gpus if g.name == "Fast 24"]
    # plan_fakes prices "Fast 24" at 1,600 USD a card.
    assert [price_of(fast, n) for n in (1, 2, 3, 4)] == [0.0, 0.0, 1600.0, 3200.0]
