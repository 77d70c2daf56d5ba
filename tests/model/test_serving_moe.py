"""A mixture of experts served with attention data parallelism and expert parallelism
(serve.attention_data_parallel): what each GPU holds and reads, and what the copy exchanges;
and a batched server's prompts computed together within its token budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import default_calibration
from dlrig.model.serving import (
    cards,
    collectives_per_step,
    prefill_s,
    prompts_per_pass,
    serving_estimate,
    weight_bytes_per_step,
)
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec, WeightFormat

# Qwen3-235B-A22B's config.json: 94 layers of 128 experts, each 3 x 4,096 x 1,536 weights.
QWEN3_235B_ROUTED = 94 * 128 * 3 * 4096 * 1536
QWEN3_235B_EMBEDDINGS = 2 * 151936 * 4096  # untied embedding and head

# An 80 GiB card (H100 SXM5 80GB): the prompts_per_pass budgets here do not depend on it.
H100_BYTES = 80 * 2**30


def _spec(name: str = "qwen3-235b-a22b-serve", **changes: object) -> ServeSpec:
    spec = load_workload(name).serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _h200(count: int):  # type: ignore[no-untyped-def]
    return resolve_build(
        {"gpus": [{"model": "H200 SXM 141GB", "count": count}]}, "t", load_catalog(None)
    )


def test_the_weights_outside_the_experts_are_held_on_every_gpu() -> None:
    """Qwen3-235B at fp8: 227.1B routed expert weights split over the GPUs; the other 7.99B
    (attention, routers at 8 bits; the 1.24B embedding and head at 16) on each of eight, 7 x
    9.24 GB more than one copy of every weight."""
    spec = _spec(tensor_parallel=8, attention_data_parallel=True)
    assert mem.routed_expert_params(spec) == pytest.approx(QWEN3_235B_ROUTED)
    outside = spec.total_params - QWEN3_235B_ROUTED - QWEN3_235B_EMBEDDINGS
    replicated = outside * 1 + QWEN3_235B_EMBEDDINGS * 2
    assert mem.replicated_weight_bytes(spec) == pytest.approx(replicated)
    assert replicated == pytest.approx(9.235e9, rel=1e-3)
    extra = mem.copy_weight_bytes(spec, 8) - mem.weight_bytes(spec)
    assert extra == pytest.approx(7 * replicated)
    assert mem.copy_weight_bytes(replace(spec, attention_data_parallel=False), 8) == (
        mem.weight_bytes(spec)
    )


def test_each_gpu_reads_the_dense_part_for_its_own_requests() -> None:
    """A step's read on eight GPUs: the experts once among them, the rest once on each."""
    tp = _spec(tensor_parallel=8)
    dp = replace(tp, attention_data_parallel=True)
    batch = 1024
    dense = weight_bytes_per_step(tp, batch) - mem.routed_expert_params(tp) * (
        1.0 - (1.0 - 8 / 128) ** batch
    )
    assert weight_bytes_per_step(dp, batch, 8) == pytest.approx(
        weight_bytes_per_step(tp, batch, 8) + 7 * dense
    )


def test_an_expert_layer_exchanges_tokens_once_where_tensor_parallel_reduces_twice() -> None:
    """Tensor parallel: an all-reduce after attention and one after the feed-forward, 188 on
    Qwen3-235B's 94 layers; attention data parallel: an all-gather and a reduce-scatter (an
    all-reduce's bytes) at each expert layer, 94, and Llama 4 Maverick's 24 expert layers of
    48 (interleave_moe_layer_step 2) exchange 24."""
    assert collectives_per_step(_spec(tensor_parallel=8)) == 188
    assert collectives_per_step(_spec(tensor_parallel=8, attention_data_parallel=True)) == 94
    maverick = _spec("llama-4-maverick-serve", tensor_parallel=8, attention_data_parallel=True)
    assert collectives_per_step(maverick) == 24


def test_attention_data_parallel_holds_fewer_users_and_says_its_layout() -> None:
    """Replicated attention weights leave less room for the KV cache: fewer users fit on 8x
    H200 than under tensor parallelism, and the estimate names the layout."""
    build = _h200(8)
    tp = serving_estimate(build, _spec(tensor_parallel=8), "qwen3-235b-a22b-serve")
    dp = serving_estimate(
        build, _spec(tensor_parallel=8, attention_data_parallel=True), "qwen3-235b-a22b-serve"
    )
    assert tp is not None and dp is not None
    assert dp.max_users_fit < tp.max_users_fit
    assert dp.weights_gb > tp.weights_gb
    assert dp.parallelism.startswith("attention data parallel x8")


def test_a_batched_server_prefills_prompts_together_within_its_token_budget() -> None:
    """TensorRT-LLM fills an iteration with waiting prompts up to max_num_tokens (8,192 by
    default): 64 prompts of 128 tokens share each all-reduce's start-up, so a prompt's share
    of the 8-GPU prefill is smaller than alone; one running user prefills alone."""
    spec = _spec("llama-3.1-405b-serve", prompt_tokens=128, output_tokens=128)
    assert mem.BATCHED_MAX_NUM_TOKENS == 8192
    assert prompts_per_pass(spec, 10_000, H100_BYTES) == 64
    assert prompts_per_pass(spec, 10, H100_BYTES) == 10
    assert prompts_per_pass(spec, 1, H100_BYTES) == 1
    assert prompts_per_pass(replace(spec, engine=Engine.VLLM), 10_000, H100_BYTES) == 1
    c = cards(_h200(8), default_calibration())
    assert c is not None
    assert prefill_s(spec, c, 64) < prefill_s(spec, c)


def test_a_mixture_of_experts_estimate_carries_its_own_interval_below_the_figure() -> None:
    """TensorRT-LLM's published MoE rows (bench_serving TRTLLM_MOE) run slower than dlrig
    times them on most rows: the estimate carries MOE_NOTE and the MoE interval, 0.711-1.137x
    (held_out.moe_serving_band); a dense model keeps the serving interval."""
    from dlrig.model.estimate import estimate
    from dlrig.model.serving import MOE_NOTE, MOE_RATIO_BAND, SERVING_RATIO_BAND

    build = _h200(8)
    moe = estimate(build, load_workload("qwen3-235b-a22b-serve"))
    dense = estimate(build, load_workload("llama-3.1-70b-serve"))
    assert MOE_NOTE in moe.assumptions
    assert (moe.throughput_ratio_low, moe.throughput_ratio_high) == MOE_RATIO_BAND == (0.711, 1.137)
    assert dense.has_interval
    assert (dense.throughput_ratio_low, dense.throughput_ratio_high) == SERVING_RATIO_BAND


def test_a_moe_layer_pays_its_moe_paths_fixed_time() -> None:
    """Beyond a dense layer's 25 us, each expert layer pays its MoE path's fixed time: 104 us
    on the batched engine (an NSight profile of TensorRT-LLM's CUTLASS MoE path: 145 us a MoE
    layer at batch 1, 41.4 us of it GEMMs) and 30 us on vLLM (benchmark_moe.py: 44.54 us for
    Qwen3-30B-A3B at batch 1 on an H100, 14 us of it the experts' read). Mixtral's 32 expert
    layers: 32 x (25 + 104) us a step; a dense model pays none of it."""
    from dlrig.model.serving import ServingLimit, decode_parts_s

    c = cards(
        resolve_build({"gpus": [{"model": "A100 SXM4 80GB", "count": 1}]}, "t",
                      load_catalog(None)),
        default_calibration(),
    )  # fmt: skip
    assert c is not None
    overhead = ServingLimit.ENGINE_OVERHEAD.value
    mixtral = _spec("mixtral-8x7b-serve", tensor_parallel=1)
    assert decode_parts_s(mixtral, c, 1, 0.0, 100.0)[overhead] == pytest.approx(32 * 129e-6)
    vllm = replace(mixtral, engine=Engine.VLLM)
    assert decode_parts_s(vllm, c, 1, 0.0, 100.0)[overhead] == pytest.approx(32 * 55e-6)
    dense = _spec("llama-3.1-8b-serve", tensor_parallel=1)
    assert decode_parts_s(dense, c, 1, 0.0, 100.0)[overhead] == pytest.approx(32 * 25e-6)


def test_mixtral_int8_at_batch_1_on_an_a100_as_baseten_measured() -> None:
    """Baseten (2024, 'Faster Mixtral inference with TensorRT-LLM and quantization'): Mixtral
    8x7B int8 on one A100 with TensorRT-LLM, 512-token prompt, 128 tokens out, one request:
    81 perceived tokens/s; dlrig, with its MoE path's fixed time a layer, 83."""
    build = resolve_build(
        {"gpus": [{"model": "A100 SXM4 80GB", "count": 1}]}, "t", load_catalog(None)
    )
    spec = _spec(
        "mixtral-8x7b-serve", quantization=WeightFormat.INT8, prompt_tokens=512,
        output_tokens=128,
    )  # fmt: skip
    est = serving_estimate(build, spec, "mixtral-8x7b-serve")
    assert est is not None
    assert est.tokens_per_s_per_user == pytest.approx(81, rel=0.05)


def test_moe_gemms_run_at_the_share_tensorrt_llms_table_gives() -> None:
    """TensorRT-LLM perf-overview @00f37686, eight H200 in FP8 at 2048/128: Qwen3-235B-A22B
    3,331 output tokens/s (attention data parallel, experts split), Llama 3.1 405B 456 (TP8).
    Their prompts' FLOPs a second, 2 per active weight per token: 2.37 and 5.92 PFLOP/s, a
    ratio of 0.40, MOE_GEMM_SHARE. Qwen3-235B's routed experts hold 0.658 of its linear
    layers' FLOPs, so they take 1 + 0.658 x (1 / 0.4 - 1) = 1.99x the dense time."""
    from dlrig.model.serving import MOE_GEMM_SHARE, matmul_time_factor

    qwen, llama = _spec(), _spec("llama-3.1-405b-serve")
    moe_flops_s = 3331 / 128 * 2048 * 2 * qwen.active_params
    dense_flops_s = 456 / 128 * 2048 * 2 * llama.active_params
    assert moe_flops_s / dense_flops_s == pytest.approx(MOE_GEMM_SHARE, abs=0.005)
    assert matmul_time_factor(qwen) == pytest.approx(1.987, abs=0.001)
    assert matmul_time_factor(llama) == 1.0


def test_a_batched_engine_held_back_by_its_fixed_time_is_told_to_batch_more() -> None:
    """One user of Qwen3-235B on TensorRT-LLM (two H200 a copy): 94 MoE layers x (25 + 104) us
    of fixed time, 12.1 ms of a 16 ms step, binds. The engine already replays CUDA graphs, so
    the advice is more users a step, not the batched engine it runs."""
    from dlrig.model.served import BATCHED_ENGINE_OVERHEAD_ADVICE, served_advice
    from dlrig.model.serving import ServingLimit

    est = serving_estimate(_h200(2), _spec(users=1), "t")
    assert est is not None and est.engine == Engine.BATCHED.value
    assert est.binding is ServingLimit.ENGINE_OVERHEAD
    assert est.decode_parts_s["engine_overhead"] == pytest.approx(94 * (25e-6 + 104e-6))
    assert served_advice(est) == BATCHED_ENGINE_OVERHEAD_ADVICE
    assert "serve.engine: batched" not in served_advice(est)


def test_vllms_fused_moe_runs_at_its_kernel_benchmarks_share() -> None:
    """vLLM's benchmark_moe.py, Qwen3-30B-A3B's experts in FP8 on an H100 (vllm-project/
    vllm#24700, main): 911.6 us at 2,048 tokens, 1,647.6 us at 4,096. The 2,048 tokens more,
    each 8 experts x 3 x 2,048 x 768 weights x 2 FLOPs, take 736 us: 210 TFLOPS, 0.20 of the
    dense FP8 rate dlrig gives vLLM there (0.74 x 1,402.6 TFLOPS). SGLang runs the same
    kernel; TensorRT-LLM keeps 0.40, so a MoE's linear layers take longer on vLLM."""
    from dlrig.model.serving import BATCHED, SGLANG, VLLM, matmul_time_factor

    flops = 2048 * 8 * 3 * 2048 * 768 * 2
    tflops = flops / (1647.6e-6 - 911.6e-6) / 1e12
    assert tflops == pytest.approx(210, rel=0.01)
    assert tflops / (0.74 * 1402.6) == pytest.approx(VLLM.moe_gemm_share, abs=0.005)
    assert SGLANG.moe_gemm_share == VLLM.moe_gemm_share == 0.20
    assert BATCHED.moe_gemm_share == 0.40
    spec = _spec("qwen3-30b-a3b-serve")
    on_vllm = matmul_time_factor(replace(spec, engine=Engine.VLLM))
    assert on_vllm > matmul_time_factor(replace(spec, engine=Engine.BATCHED)) > 1.0
