"""A plan for an offline batch (serve.requests): the batch is meant to queue, so a build
whose KV cache holds fewer contexts than the batch's requests is still offered (plan/serving.py),
where the same count of concurrent users is not."""

from __future__ import annotations

from dataclasses import replace

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.serving import ServingEstimate
from dlrig.plan.serving import meets_targets
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine
from support.cli import run_in_process

H100 = {"name": "1x H100", "gpus": [{"model": "H100 SXM5 80GB", "count": 1}]}


def _serving(**changes: object) -> ServingEstimate:
    build = resolve_build(H100, "test", load_catalog(None))
    w = load_workload("llama-3.1-8b-serve")
    assert w.serve is not None
    w = replace(w, serve=replace(w.serve, engine=Engine.VLLM, **changes))  # type: ignore[arg-type]
    serving = estimate(build, w).serving
    assert serving is not None
    return serving


def test_a_batch_past_the_kv_cache_is_offered_where_as_many_users_are_not() -> None:
    """Llama 3.1 8B on vLLM on one H100 holds 353 whole 1,300-token contexts
    (tests/report/test_estimate_serving_queue.py): 1,000 concurrent users do not fit it,
    a batch of 1,000 requests runs on it in three waves."""
    users = _serving(users=1000)
    batch = _serving(users=1000, requests=1000)
    assert users.max_users_fit == batch.max_users_fit == 353
    assert not meets_targets(users)
    assert batch.batch is not None
    assert (batch.batch.full_waves, batch.batch.last_wave_requests) == (2, 294)
    assert meets_targets(batch)


def test_a_served_plan_by_time_says_the_hours_to_serve() -> None:
    """By time-to-train, a plan whose workloads are all served says how long the batch takes
    to serve, not to train."""
    code, out, err = run_in_process(
        "plan", "--workload", "llama-3.1-8b-serve", "--set", "serve.engine=vllm",
        "--set", "serve.requests=50000", "--budget", "20000", "--objective", "time-to-train",
        "--top", "1",
    )  # fmt: skip
    assert code == 0, err
    text = " ".join(out.split())
    assert "h to serve" in text and "h to train" not in text
