"""vLLM's scheduler in the serving model (dlrig.model.serving.mixed_step): prompts computed
inside decode steps, its default caps, and its prefix cache, as vLLM's code runs them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model.calibration import default_calibration
from dlrig.model.serving import (
    Cards,
    ServingEstimate,
    cards,
    computed_prompt_tokens,
    mixed_step,
    serving_estimate,
    vllm_batch_limits,
)
from dlrig.model.serving_load import serving_load
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec
from support.cli import assert_one_line_error, run_in_process

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"


def _cards(gpu: str) -> Cards:
    build = resolve_build({"gpus": [{"model": gpu, "count": 1}]}, "t", load_catalog(None))
    c = cards(build, default_calibration())
    assert c is not None
    return c


def _spec(**changes: object) -> ServeSpec:
    spec = load_workload("llama-3.1-8b-serve").serve
    assert spec is not None
    return replace(spec, **{"engine": Engine.VLLM, **changes})  # type: ignore[arg-type]


def _estimate(gpu: str, **changes: object) -> ServingEstimate:
    build = resolve_build({"gpus": [{"model": gpu, "count": 1}]}, "t", load_catalog(None))
    est = serving_estimate(build, _spec(**changes), "llama-3.1-8b-serve")
    assert est is not None
    return est


@pytest.mark.parametrize(
    ("gpu", "limits"),
    [
        # vllm/engine/arg_utils.py get_batch_defaults (@99d7eb5), OPENAI_API_SERVER: 70 GiB or
        # more and not an A100: max_num_seqs 1024, max_num_batched_tokens 8192; else 256, 2048.
        ("H100 SXM5 80GB", (1024, 8192)),
        ("A100 SXM4 80GB", (256, 2048)),
        ("NVIDIA RTX A6000", (256, 2048)),
    ],
)
def test_vllm_defaults_follow_the_cards_memory_and_name(gpu: str, limits: tuple[int, int]) -> None:
    assert vllm_batch_limits(_cards(gpu)) == limits


def test_a_shared_prompt_is_skipped_in_whole_16_token_blocks() -> None:
    """kv_cache_manager.get_computed_blocks (@6a1acac): the hit is at most the prompt less one
    token, in whole blocks of 16. A 39-token prompt sent whole by every request computes 7
    (32 cached); a 32-token one computes its last block, 16; nothing shared computes all."""
    assert computed_prompt_tokens(_spec(prompt_tokens=39, shared_prefix_tokens=39)) == 7
    assert computed_prompt_tokens(_spec(prompt_tokens=32, shared_prefix_tokens=32)) == 16
    assert computed_prompt_tokens(_spec(prompt_tokens=39, shared_prefix_tokens=15)) == 39
    assert computed_prompt_tokens(_spec(prompt_tokens=1000)) == 1000


def test_a_step_carries_the_other_users_prompts_within_the_token_budget() -> None:
    """128 users, 100-token prompts, 50-token answers: each answer brings one prompt, so a
    step computes 127 x 100 / 50 = 254 prompt tokens beside its 128 decodes; at 1,000 users a
    2,048-token budget (A6000) runs 256 and leaves 1,792 for prompts, which want 256 x 2 = 512
    a step: not capped. 200 users' prompts of 800 tokens for 8-token answers want 20,000 and get
    the 1,848 left."""
    a6000 = _cards("NVIDIA RTX A6000")
    mix = mixed_step(_spec(prompt_tokens=100, output_tokens=50), a6000, 128, own_prompt=False)
    assert (mix.running, mix.waiting, mix.prefill_tokens, mix.output_share) == (128, 0, 254, 1)
    many = mixed_step(_spec(prompt_tokens=100, output_tokens=50), a6000, 1000, own_prompt=True)
    assert (many.running, many.waiting, many.prefill_tokens) == (256, 744, 512)
    long = mixed_step(_spec(prompt_tokens=800, output_tokens=8), a6000, 200, own_prompt=True)
    assert (long.running, long.prefill_tokens) == (200, 2048 - 200)
    assert long.output_share == pytest.approx(2048 / (200 * 101))


def test_mixed_prompts_cost_flops_not_a_second_weight_read() -> None:
    """At 8 users of short prompts the H100's step is bound by its weight read: the prompts'
    FLOPs ride in it and show only by what the read leaves of them (the power mean at
    serving.GEMM_OVERLAP_EXPONENT): the time per output token is 2.0% above one user's, where
    a TensorRT-like stall model pays each prompt's prefill on top of its step (2.9%)."""
    one = _estimate("H100 SXM5 80GB", users=1, prompt_tokens=128, output_tokens=128)
    eight = _estimate("H100 SXM5 80GB", users=8, prompt_tokens=128, output_tokens=128)
    assert eight.tpot_s == pytest.approx(one.tpot_s, rel=0.025)
    stalled = _estimate("H100 SXM5 80GB", users=8, prompt_tokens=128, output_tokens=128,
                        engine=Engine.BATCHED)  # fmt: skip
    assert stalled.tpot_s - stalled.decode_step_s > 0.025 * stalled.decode_step_s


def test_users_beyond_max_num_seqs_wait_and_do_not_slow_the_running() -> None:
    """On an A6000 (max_num_seqs 256) 512 users decode as 256 do, and the other 256 wait a
    whole answer's worth of steps for a slot (Little's law over the closed loop)."""
    at_cap = _estimate("NVIDIA RTX A6000", users=256, prompt_tokens=200, output_tokens=100)
    over = _estimate("NVIDIA RTX A6000", users=512, prompt_tokens=200, output_tokens=100)
    assert over.tpot_s == pytest.approx(at_cap.tpot_s)
    assert over.tokens_per_s_total == pytest.approx(at_cap.tokens_per_s_total)
    assert over.ttft_s > at_cap.ttft_s + 50 * at_cap.tpot_s
    assert any("max_num_seqs" in n for n in over.notes)


def test_shared_prefix_longer_than_the_prompt_is_a_one_line_error() -> None:
    code, _, err = run_in_process(
        "estimate", str(EXAMPLES / "budget-1gpu-3090.yaml"), "--workload", "llama-3.1-8b-serve",
        "--set", "serve.prompt_tokens=100", "--set", "serve.shared_prefix_tokens=101",
    )  # fmt: skip
    assert_one_line_error(
        code, err, "'shared_prefix_tokens' (101) is at most 'prompt_tokens' (100)"
    )


def test_arrivals_on_vllm_run_at_most_max_num_seqs_at_once() -> None:
    """Llama 3.1 8B on an RTX A6000: the KV cache holds 764 contexts of 300 tokens, but vLLM
    admits at most 256 running requests there (get_batch_defaults), so the simulated copy's
    batch is 256; the TensorRT-like engine keeps every context the cache holds."""
    build = resolve_build({"gpus": [{"model": "NVIDIA RTX A6000", "count": 1}]}, "t",
                          load_catalog(None))  # fmt: skip
    spec = _spec(prompt_tokens=200, output_tokens=100, arrival_rate=5.0)
    cal = default_calibration()
    est = serving_estimate(build, spec, "llama-3.1-8b-serve")
    assert est is not None
    load = serving_load(build, spec, est, cal)
    assert est.max_users_fit > 256
    assert load is not None and load.max_batch_per_copy == 256
    trt = replace(spec, engine=Engine.BATCHED)
    batched = serving_estimate(build, trt, "llama-3.1-8b-serve")
    assert batched is not None
    trt_load = serving_load(build, trt, batched, cal)
    assert trt_load is not None and trt_load.max_batch_per_copy == batched.max_users_fit


def test_past_what_the_kv_cache_holds_vllm_runs_no_more_and_the_rest_wait() -> None:
    """Llama 3.1 8B at 8,000-token prompts on an A6000: the KV cache holds 28 such contexts
    (max_users_fit), under max_num_seqs' 256, so 100 users decode 28 at a time, as 28 do,
    and the estimate says the KV cache binds."""
    many = _estimate("NVIDIA RTX A6000", users=100, prompt_tokens=8000, output_tokens=100)
    held = many.max_users_fit
    assert 1 < held < 100
    at = _estimate("NVIDIA RTX A6000", users=held, prompt_tokens=8000, output_tokens=100)
    assert many.tpot_s == pytest.approx(at.tpot_s)
    assert many.binding.value == "kv_memory"
    assert many.fits and (many.running_per_copy, many.users_waiting) == (held, 100 - held)
    note = f"at most {held} requests at once here (the whole contexts its KV cache holds)"
    assert any(note in n for n in many.notes)


def test_past_max_num_seqs_vllm_queues_with_room_left_in_the_cache() -> None:
    """2,000 users of 200-token conversations on an H100: the KV cache holds more than 2,000
    of them, but vLLM's OpenAI server runs at most 1,024 requests on a card of 70 GiB or more
    (get_batch_defaults, @99d7eb5): 976 wait, and the KV cache is not what binds."""
    est = _estimate("H100 SXM5 80GB", users=2000, prompt_tokens=100, output_tokens=100)
    assert est.max_users_fit > 2000 and est.fits
    assert (est.running_per_copy, est.users_waiting) == (1024, 976)
    assert est.binding.value != "kv_memory" and est.queue_wait_s > 0
    assert any("(vLLM's default max_num_seqs)" in n for n in est.notes)
