"""The planner's serving feasibility (dlrig.plan.serving): a plan sizes a build to hold every
asked user's context at once, where `estimate` lets a batched engine queue the rest."""

from __future__ import annotations

from dataclasses import replace

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model.serving import ServingEstimate, serving_estimate
from dlrig.plan.serving import meets_targets
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine


def _estimate(users: int, engine: Engine = Engine.BATCHED) -> ServingEstimate:
    build = resolve_build({"gpus": [{"model": "RTX 4090", "count": 1}]}, "t", load_catalog(None))
    spec = load_workload("llama-3.1-8b-serve").serve
    assert spec is not None
    spec = replace(spec, users=users, prompt_tokens=8000, engine=engine)
    est = serving_estimate(build, spec, "llama-3.1-8b-serve")
    assert est is not None
    return est


def test_a_build_that_queues_users_runs_but_is_not_offered() -> None:
    for engine in (Engine.BATCHED, Engine.VLLM):
        held = _estimate(1, engine).max_users_fit
        assert held >= 1
        queued = _estimate(held + 1, engine)
        assert queued.fits and queued.users_waiting == 1  # estimate: it runs, one user waits
        assert not meets_targets(queued)
        assert meets_targets(_estimate(held, engine))


def test_a_local_runner_holds_its_users_by_offloading_layers() -> None:
    """llama.cpp keeps every user's context and leaves layers in RAM instead (its `fits`):
    12 users' 8,300-token contexts (1.01 GiB each) and 15.0 GiB of bf16 weights are more
    than a 24 GiB card, so a quarter of the layers stay in RAM and all 12 are served."""
    est = _estimate(12, Engine.LOCAL)
    assert est.max_users_fit < 12 and est.fits and est.offloaded_fraction > 0.2
    assert meets_targets(est)
