"""The serving engine's CPU time an iteration (dlrig.model.serving.host_step_s): it overlaps
the GPU's work and sets the pace where it is the longer, on a superchip's Grace sooner."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.enums import Bottleneck
from dlrig.machine import resolve_build
from dlrig.model.calibration import default_calibration
from dlrig.model.served import served_step
from dlrig.model.serving import (
    ServingEstimate,
    ServingLimit,
    cards,
    host_step_s,
    serving_estimate,
)
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, KVPrecision, ServeSpec, WeightFormat

# TensorRT-LLM PR #10273: 45.11 ms of host time an iteration at 1,536 requests a GPU on a
# GB200's Grace; NVIDIA/TransformerEngine#2053: a Linear's forward takes 37.08 us of CPU time
# on a GB200, 13.48 us on a Xeon 8480C.
GRACE_PER_REQUEST_S = 45.11e-3 / 1536
X86_PER_REQUEST_S = GRACE_PER_REQUEST_S * 13.48 / 37.08


def _spec(workload: str = "qwen3-30b-a3b-serve", **changes: object) -> ServeSpec:
    spec = load_workload(workload).serve
    assert spec is not None
    small = {
        "quantization": WeightFormat.NVFP4,
        "kv_precision": KVPrecision.FP8,
        "prompt_tokens": 128,
        "output_tokens": 128,
        "users": 4096,
        "max_batch": 4096,
    }
    return replace(spec, **{**small, **changes})  # type: ignore[arg-type]


def _estimate(gpu: str, spec: ServeSpec, count: int = 1) -> ServingEstimate:
    build = resolve_build({"gpus": [{"model": gpu, "count": count}]}, "t", load_catalog(None))
    est = serving_estimate(build, spec, "t")
    assert est is not None
    return est


def test_a_grace_host_sets_the_pace_of_a_small_model_at_thousands_of_requests() -> None:
    """Qwen3-30B-A3B in NVFP4 at 4,096 requests of 128/128 on one GB200: the GPU's share of a
    token is ~70 ms (its routed pairs' CUDA-core work 14 ms of it), the Grace host's 4,096 x
    29.4 us = 120 ms an iteration, so the host binds and a faster host would run it ~2.2x
    faster. TensorRT-LLM's perf-overview measured 24,107 tokens/s there, against 39,827 on a
    B200 with an x86 host (the same GPU)."""
    est = _estimate("GB200 186GB", _spec())
    assert est.running_per_copy == 4096
    assert est.host_step_s == pytest.approx(4096 * GRACE_PER_REQUEST_S, rel=1e-3)
    assert est.binding is ServingLimit.HOST
    # the iteration is the power mean of the GPU's step and the host's time at p = 1.5
    # (serving.HOST_OVERLAP_EXPONENT): longer than the host's alone, shorter than the two in turn
    gpu_s = est.tpot_s - est.host_wait_s
    assert 0.0 < gpu_s < est.host_step_s < est.tpot_s < est.host_step_s + gpu_s
    assert est.tpot_s == pytest.approx((gpu_s**1.5 + est.host_step_s**1.5) ** (1 / 1.5))
    # every request emits a token an iteration (the prompts' passes add under 0.1% here)
    assert est.tokens_per_s_total == pytest.approx(4096 / est.tpot_s, rel=1e-3)
    # a new request joins at an iteration's start: half the host-paced iteration on average
    assert est.ttft_s > 0.5 * est.host_step_s
    step = served_step(est)
    assert step.bottleneck is Bottleneck.CPU_PREPROCESSING
    assert step.exposed_s[Bottleneck.CPU_PREPROCESSING] == pytest.approx(est.host_wait_s)
    assert sum(step.exposed_s.values()) == pytest.approx(est.tpot_s)
    assert gpu_s == pytest.approx(0.070, abs=0.001)
    assert step.speedup_if_removed == pytest.approx(2.2, abs=0.05)


def test_an_x86_host_takes_2_75x_less_a_request() -> None:
    """The same run on a B200, whose DGX host is x86: 4,096 x 10.7 us = 43.8 ms an iteration."""
    est = _estimate("B200 SXM 180GB", _spec())
    assert est.host_step_s == pytest.approx(4096 * X86_PER_REQUEST_S)


def test_a_large_model_hides_the_host_behind_its_step() -> None:
    """Llama 3.1 70B at 64 requests on an H100: 64 x 10.7 us = 0.7 ms of host time against a
    step of tens of ms; the host is hidden (under 0.1% of the step) and the GPU binds."""
    spec = _spec("llama-3.1-70b-serve", quantization=WeightFormat.FP8, users=64)
    est = _estimate("H100 SXM5 80GB", spec, count=2)
    assert est.host_wait_s < 1e-3 * est.tpot_s and est.binding is not ServingLimit.HOST
    assert Bottleneck.CPU_PREPROCESSING in served_step(est).hidden


def test_each_gpu_schedules_its_own_requests_under_attention_data_parallelism() -> None:
    """Under attention data parallelism each GPU is a process of its own with its own
    scheduler: 8 GPUs running 800 requests spend 100 requests' host time an iteration."""
    spec = _spec("qwen3-235b-a22b-serve", tensor_parallel=8, attention_data_parallel=True)
    build = resolve_build(
        {"gpus": [{"model": "H200 SXM 141GB", "count": 8}]}, "t", load_catalog(None)
    )
    c = cards(build, default_calibration())
    assert c is not None
    assert host_step_s(spec, c, 800) == pytest.approx(100 * X86_PER_REQUEST_S)


def test_vllm_host_time_is_not_counted() -> None:
    """No published figure gives vLLM's CPU time a request and step: none is counted."""
    est = _estimate("GB200 186GB", _spec(engine=Engine.VLLM))
    assert est.host_step_s == 0.0 and est.host_wait_s == 0.0
