"""A batch of requests sent at once (dlrig.model.serving_batch): it runs in waves of the
requests the build runs at once, so a batch a little over that count runs below the steady
rate and one under it never reaches it. TensorRT-LLM's perf-overview times each row on a fixed
dataset (perf-overview @00f37686, 'Preparing a Dataset': 1,500 requests at 128/4096)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.model.serving import serving_estimate
from dlrig.model.serving_batch import batch_layout, batch_run, running_capacity
from dlrig.workloads import load_workload
from dlrig.workloads.serving import KVPrecision, ServeSpec, WeightFormat

PERF_OVERVIEW_128_4096_REQUESTS = 1500


def _build(gpu: str, count: int) -> Build:
    doc = {"name": f"{count}x {gpu}", "gpus": [{"model": gpu, "count": count}]}
    return resolve_build(doc, "test", load_catalog(None))


def _spec(workload: str, **changes: object) -> ServeSpec:
    serve = load_workload(workload).serve
    assert serve is not None
    return replace(serve, **changes)  # type: ignore[arg-type]


def _steady(build: Build, spec: ServeSpec, users: int) -> float:
    est = serving_estimate(build, replace(spec, users=users), "test")
    assert est is not None
    return est.tokens_per_s_total


H100 = _build("H100 SXM5 80GB", 1)
LLAMA_8B_FP8 = _spec(
    "llama-3.1-8b-serve",
    quantization=WeightFormat.FP8,
    kv_precision=KVPrecision.FP8,
    prompt_tokens=2048,
    output_tokens=2048,
)


def test_capacity_is_the_running_slots_the_kv_cache_and_engine_give() -> None:
    """Llama 3.1 8B FP8 at 2048/2048 on one H100: more requests than it runs leave the rest
    waiting, exactly the capacity's worth running."""
    capacity = running_capacity(H100, LLAMA_8B_FP8, "test")
    est = serving_estimate(H100, replace(LLAMA_8B_FP8, users=capacity + 7), "test")
    assert est is not None
    assert capacity > 50
    assert est.users_waiting == 7


def test_whole_waves_run_at_the_steady_rate() -> None:
    capacity = running_capacity(H100, LLAMA_8B_FP8, "test")
    batch = batch_run(H100, LLAMA_8B_FP8, 3 * capacity, "test").tokens_per_s_total
    assert batch == pytest.approx(_steady(H100, LLAMA_8B_FP8, capacity))


def test_one_request_over_a_wave_decodes_alone_after_it() -> None:
    """capacity + 1 requests: after the full wave the last answer decodes alone for all 2,048
    steps, each reading every weight for one token, so the run's rate falls below the steady
    one."""
    capacity = running_capacity(H100, LLAMA_8B_FP8, "test")
    steady = _steady(H100, LLAMA_8B_FP8, capacity)
    batch = batch_run(H100, LLAMA_8B_FP8, capacity + 1, "test").tokens_per_s_total
    alone = _steady(H100, LLAMA_8B_FP8, 1)
    expected_s = 2048 * (capacity / steady + 1 / alone)
    assert batch == pytest.approx((capacity + 1) * 2048 / expected_s)
    assert batch < steady


def test_maverick_128_4096_dataset_is_one_wave_under_eight_b200s_capacity() -> None:
    """perf-overview: Llama 4 Maverick NVFP4 on 8x B200 at 128/4096 ran its 1,500-request
    dataset; the eight cards hold more at once, so the run is one wave of 1,500, slower than the
    steady rate at full capacity."""
    build = _build("B200 SXM 180GB", 8)
    spec = _spec(
        "llama-4-maverick-serve",
        quantization=WeightFormat.NVFP4,
        kv_precision=KVPrecision.FP8,
        attention_data_parallel=True,
        tensor_parallel=8,
        prompt_tokens=128,
        output_tokens=4096,
    )
    requests = PERF_OVERVIEW_128_4096_REQUESTS
    capacity = running_capacity(build, spec, "test")
    batch = batch_run(build, spec, requests, "test").tokens_per_s_total
    assert capacity > requests
    assert batch == pytest.approx(_steady(build, spec, requests))
    assert batch < 0.8 * _steady(build, spec, capacity)


def test_a_batch_counts_its_waves_and_the_rest() -> None:
    """3 x capacity + 5 requests: three full waves at the steady rate, then a wave of 5."""
    capacity = running_capacity(H100, LLAMA_8B_FP8, "test")
    run = batch_run(H100, LLAMA_8B_FP8, 3 * capacity + 5, "test")
    assert (run.running_at_once, run.full_waves, run.last_wave_requests) == (capacity, 3, 5)
    full_s = capacity * 2048 / _steady(H100, LLAMA_8B_FP8, capacity)
    last_s = 5 * 2048 / _steady(H100, LLAMA_8B_FP8, 5)
    assert run.run_s == pytest.approx(3 * full_s + last_s)


def test_a_batch_median_request_waits_behind_the_waves_before_its_own() -> None:
    """serve.requests: the median request (the 1,500th of 3,000) starts after
    1,500 // capacity whole waves, each an answer's time; a closed loop of the same users
    waits (users - running) / running answers instead."""
    capacity = running_capacity(H100, LLAMA_8B_FP8, "test")
    batch = serving_estimate(H100, replace(LLAMA_8B_FP8, users=3000, requests=3000), "test")
    loop = serving_estimate(H100, replace(LLAMA_8B_FP8, users=3000), "test")
    assert batch is not None and loop is not None
    answer_s = loop.queue_wait_s * capacity / (3000 - capacity)
    assert batch.queue_wait_s == pytest.approx(1500 // capacity * answer_s)


def test_a_batch_on_eight_h100s_runs_on_the_layout_that_finishes_it_first() -> None:
    """Llama 3.1 8B FP8 at 2048/2048, 100,000 requests on eight H100s: no layout holds them
    all at once, so a closed loop of that many users would take the widest copy (TP8); the batch
    queues anyway and finishes first on eight one-GPU copies (about as many running slots as
    TP8's 2,048, TensorRT-LLM's batch limit, and steps without all-reduces), and every wave
    runs on that layout."""
    build = _build("H100 SXM5 80GB", 8)
    spec = replace(LLAMA_8B_FP8, users=100_000, requests=100_000)
    assert batch_layout(build, spec, 100_000, "test") == 1
    chosen = batch_run(build, spec, 100_000, "test")
    one_gpu_copies = batch_run(build, replace(spec, tensor_parallel=1), 100_000, "test")
    widest = batch_run(build, replace(spec, tensor_parallel=8), 100_000, "test")
    assert chosen.run_s == pytest.approx(one_gpu_copies.run_s)
    assert chosen.run_s < widest.run_s
