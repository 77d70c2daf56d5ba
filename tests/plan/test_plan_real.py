"""The planner with the shipped rule engine and model: exact against brute force on a slice of
the built-in catalog, monotone in the budget, and every result passes `check` as a saved file."""

from __future__ import annotations

import functools

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_brute import brute_force, frontier, ranked_top

from dlrig.catalog.loader import Catalog, builtin_catalog
from dlrig.catalog.schema import CPU, GPU, MemoryKit, Motherboard, PartBase, Storage
from dlrig.machine import resolve_build
from dlrig.machine.document import build_to_document
from dlrig.plan.constraints import Constraints
from dlrig.plan.evaluate import ModelEvaluator
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.objectives import make_objective
from dlrig.plan.results import WeightedWorkload
from dlrig.plan.search import plan
from dlrig.rules import check_build
from dlrig.workloads import load_workload

JOBS = ("resnet50", "bert-large-squad", "llama-3-8b-lora", "gpt2", "ssd300", "llama-3-8b-qlora")


def _priced(parts: tuple[PartBase, ...]) -> list[PartBase]:
    return sorted((p for p in parts if p.price_usd is not None), key=lambda p: p.price_usd or 0)


@functools.lru_cache(maxsize=1)
def small_catalog() -> Catalog:
    """A slice of the built-in catalog with a choice in every kind, small enough to walk:
    3 GPUs, 2 desktop boards of different sockets, the cheapest and dearest CPU of each, 3
    DDR5 kits, 3 drives (HDD, SATA SSD, NVMe), 3 PSUs, 2 cases."""
    full = builtin_catalog()
    gpus = [full.find(GPU, n) for n in ("GeForce RTX 4090", "NVIDIA RTX A6000", "GeForce RTX 3090")]
    boards = [
        full.find(Motherboard, n)
        for n in ("ASUS ProArt X670E-CREATOR WIFI", "MSI MAG Z790 TOMAHAWK WIFI")
    ]
    cpus: list[PartBase] = []
    for board in boards:
        fits = [c for c in _priced(full.cpus) if isinstance(c, CPU) and c.socket == board.socket]
        cpus += [fits[0], fits[-1]]
    kits = [
        k
        for k in _priced(full.memory)
        if isinstance(k, MemoryKit) and k.memory_type == "DDR5" and not k.registered
    ]
    drives = _priced(full.storage)
    by_kind = {d.kind: d for d in reversed(drives) if isinstance(d, Storage)}
    psus = _priced(full.psus)
    cases = _priced(full.cases)
    return Catalog(
        {
            "gpus": tuple(gpus),
            "cpus": tuple(cpus),
            "motherboards": tuple(boards),
            "psus": (psus[0], psus[len(psus) // 2], psus[-1]),
            "cases": (cases[0], cases[-1]),
            "storage": tuple(by_kind.values()),
            "memory": (kits[0], kits[len(kits) // 2], kits[-1]),
            "platforms": (),
        }
    )


EVALUATOR = ModelEvaluator()  # shared: its cache is keyed by part names, valid across examples


@pytest.mark.slow
@settings(max_examples=25)
@given(
    job=st.sampled_from(JOBS[:4]),
    budget=st.integers(1500, 16_000),
    kind=st.sampled_from(list(ObjectiveKind)),
    max_gpus=st.integers(1, 4),
)
def test_planner_matches_brute_force_with_the_real_rules_and_model(
    job: str, budget: int, kind: ObjectiveKind, max_gpus: int
) -> None:
    catalog = small_catalog()
    workloads = [WeightedWorkload(load_workload(job))]
    objective = make_objective(kind, [1.0])
    constraints = Constraints(max_gpus=max_gpus)
    result = plan(
        catalog, workloads, budget, objective, EVALUATOR, constraints=constraints, top_k=3
    )
    reference = brute_force(catalog, workloads, budget, objective, EVALUATOR, constraints)
    expected = ranked_top(reference, 3)
    got = [(s.value, s.price_usd) for s in result.builds]
    assert len(got) == len(expected)
    for (value, price), (want_value, want_price) in zip(got, expected, strict=True):
        assert abs(value - want_value) <= 1e-9 * max(1.0, abs(want_value))
        assert abs(price - want_price) <= 1e-6
    assert [(round(s.price_usd, 6), round(s.throughput, 6)) for s in result.pareto] == [
        (round(p, 6), round(t, 6)) for p, t in frontier(reference)
    ]


@pytest.mark.slow
@settings(max_examples=6)
@given(
    job=st.sampled_from(JOBS), budgets=st.lists(st.integers(1000, 60_000), min_size=3, max_size=3)
)
def test_best_throughput_never_falls_as_budget_rises_on_the_builtin_catalog(
    job: str, budgets: list[int]
) -> None:
    workloads = [WeightedWorkload(load_workload(job))]
    objective = make_objective(ObjectiveKind.THROUGHPUT, [1.0])
    best = []
    for budget in sorted(budgets):
        result = plan(builtin_catalog(), workloads, budget, objective, EVALUATOR, top_k=1)
        best.append(result.builds[0].throughput if result.builds else 0.0)
    assert best == sorted(best)


@pytest.mark.slow
@settings(max_examples=12)
@given(job=st.sampled_from(JOBS), budget=st.integers(2000, 80_000))
def test_every_planned_build_saved_as_a_file_passes_check(job: str, budget: int) -> None:
    workload = load_workload(job)
    result = plan(
        builtin_catalog(),
        [WeightedWorkload(workload)],
        budget,
        make_objective(ObjectiveKind.THROUGHPUT, [1.0]),
        EVALUATOR,
        top_k=3,
    )
    for scored in (*result.builds, *result.pareto):
        text = yaml.safe_dump(build_to_document(scored.build), sort_keys=False)
        reread = resolve_build(yaml.safe_load(text), "saved plan")
        checked = check_build(reread, workload)
        assert checked.ok, [f"{f.rule}: {f.message}" for f in checked.errors]
