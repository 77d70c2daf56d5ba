"""An engine iteration's token budget (`serve.max_num_tokens`): TensorRT-LLM's max_num_tokens,
vLLM's max_num_batched_tokens. It bounds the prompts one pass computes and, on TensorRT-LLM,
the profiling pass whose peak the KV cache is sized after."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import default_calibration
from dlrig.model.serving import (
    Cards,
    cards,
    mixed_step,
    prompts_per_pass,
    serving_estimate,
    vllm_batch_limits,
)
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec

# An 80 GiB card (H100 SXM5 80GB): the prompts_per_pass budgets here do not depend on it.
H100_BYTES = 80 * 2**30


def _spec(workload: str = "llama-3.1-8b-serve", **changes: object) -> ServeSpec:
    spec = load_workload(workload).serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _cards(gpu: str, count: int = 1) -> Cards:
    build = resolve_build({"gpus": [{"model": gpu, "count": count}]}, "t", load_catalog(None))
    c = cards(build, default_calibration())
    assert c is not None
    return c


def test_a_larger_budget_computes_more_prompts_in_one_pass() -> None:
    """TensorRT-LLM fills an iteration with waiting prompts up to max_num_tokens, 8,192 unless
    set (LlmArgs.max_num_tokens): 64 prompts of 128 tokens by default, 128 at 16,384, 16 at
    2,048, and never more than the requests that start together."""
    spec = _spec(prompt_tokens=128, output_tokens=128)
    assert prompts_per_pass(spec, 10_000, H100_BYTES) == 64
    assert prompts_per_pass(replace(spec, max_num_tokens=16_384), 10_000, H100_BYTES) == 128
    assert prompts_per_pass(replace(spec, max_num_tokens=2048), 10_000, H100_BYTES) == 16
    assert prompts_per_pass(replace(spec, max_num_tokens=16_384), 40, H100_BYTES) == 40


def test_tensorrt_llm_profiles_its_budget_and_leaves_the_kv_cache_less() -> None:
    """TensorRT-LLM sizes its KV cache from what a profiling pass of max_num_tokens tokens
    leaves (KvCacheCreator); NVIDIA's planner models that pass as 2 x max_num_tokens x heads x
    head_dim x 11 bytes on one GPU for a dense model (aiconfigurator trtllm_backend.py). Llama
    3.1 8B has 32 heads of 128: doubling the budget to 16,384 keeps 2 x 8,192 x 4,096 x 11 =
    738,197,504 bytes more beside the weights, and the KV cache is that much smaller."""
    spec = _spec()
    wider = replace(spec, max_num_tokens=16_384)
    assert mem.activation_bytes(wider, 1) - mem.activation_bytes(spec, 1) == 738_197_504
    memory = _cards("H100 SXM5 80GB").memory_bytes
    less = mem.kv_capacity_bytes(spec, memory, 1) - mem.kv_capacity_bytes(wider, memory, 1)
    assert less == pytest.approx(738_197_504 * mem.TRTLLM_KV_FREE_FRACTION)


def test_vllm_computes_other_prompts_within_its_budget() -> None:
    """vLLM's step gives each running request its next token, then fills what is left of
    max_num_batched_tokens with waiting prompts (vllm/v1/core/sched/scheduler.py): at a
    budget of 512 and 64 running requests, at most 448 prompt tokens ride in a step, where
    the H100's default of 8,192 (vllm/engine/arg_utils.py) takes every prompt that waits."""
    c = _cards("H100 SXM5 80GB")
    assert vllm_batch_limits(c) == (1024, 8192)
    spec = _spec(engine=Engine.VLLM, prompt_tokens=2000, output_tokens=100)
    default = mixed_step(spec, c, 64, own_prompt=True)
    tight = mixed_step(replace(spec, max_num_tokens=512), c, 64, own_prompt=True)
    assert default.prefill_tokens == pytest.approx(64 * 2000 / 100)
    assert tight.prefill_tokens == 448
    assert tight.output_share == pytest.approx(512 / (64 * (1 + 2000 / 100)))


def test_the_budget_changes_the_estimate_a_user_sees() -> None:
    """The field reaches the estimate: TensorRT-LLM's 405B on eight H200 at 128/128 with 1,000
    users computes its prompts in passes of 128 at 16,384 tokens instead of 64, each
    all-reduce's start-up shared by more (a shorter prefill a prompt), and its KV cache holds
    fewer users."""
    build = resolve_build(
        {"gpus": [{"model": "H200 SXM 141GB", "count": 8}]}, "t", load_catalog(None)
    )
    spec = _spec(
        "llama-3.1-405b-serve", prompt_tokens=128, output_tokens=128, tensor_parallel=8, users=1000
    )
    base = serving_estimate(build, spec, "t")
    wide = serving_estimate(build, replace(spec, max_num_tokens=16_384), "t")
    assert base is not None and wide is not None
    assert wide.max_users_fit < base.max_users_fit
    assert wide.users == base.users == 1000
    assert wide.prefill_s < base.prefill_s


def test_vllm_keeps_one_budget_of_prefill_activations_when_the_budget_is_set() -> None:
    """vLLM's profiling run is a forward of max_num_batched_tokens tokens: with the budget set
    to 8,192 its reserve is 8,192 tokens x 4,096 wide x 2 bytes x 16 live copies = 1 GiB for
    Llama 3.1 8B, four times the default 2,048-token chunk's 256 MiB."""
    spec = _spec(engine=Engine.VLLM)
    assert mem.activation_bytes(spec, 1) == 2048 * 4096 * 2 * 16
    assert mem.activation_bytes(replace(spec, max_num_tokens=8192), 1) == 2**30
