"""The serving model (dlrig.model.serving, issue 14) against published measurements, and its
memory arithmetic against the models' configs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.errors import ValidationError
from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import default_calibration
from dlrig.model.interconnect import NVLINK_ALLREDUCE_CURVE, curve_fraction
from dlrig.model.serving import (
    BATCHED,
    VLLM,
    ServingEstimate,
    ServingLimit,
    achievable_matmul_flops_s,
    allreduce_latency_s,
    allreduce_s,
    cards,
    experts_touched_fraction,
    goes_to_nccl,
    prefill_flops,
    serving_estimate,
    weight_bytes_per_step,
)
from dlrig.model.serving_batch import batch_run
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, KVPrecision, ServeSpec, WeightFormat

# llama.cpp llama-bench, Llama 3, text generation of 1024 tokens at batch 1 ("tg 1024"),
# snapshots of May 2024 on RunPod: https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference
# (README, LLaMA 3 NVIDIA table; read 2026-12-03).
LLAMA_BENCH = "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference"
# NVIDIA Technical Blog, "Boost Llama 3.3 70B Inference Throughput 3x with NVIDIA TensorRT-LLM
# Speculative Decoding" (2024-12-17): one H200, fp8, batch 1, no draft model: 51.14 tokens/s.
# https://developer.nvidia.com/blog/boost-llama-3-3-70b-inference-throughput-3x-with-nvidia-tensorrt-llm-speculative-decoding/
NVIDIA_SPEC_BLOG = (
    "developer.nvidia.com/blog/boost-llama-3-3-70b-...-speculative-decoding (2024-12-17)"
)
# TensorRT-LLM performance overview, Llama 3.1 405B FP8 on 8x H100 SXM (DGX H100), TP8: total
# output tokens/s with requests at an unbounded rate (maximum concurrency), per ISL/OSL pair
# (1000/1000: 2,919; 128/2048: 4,340; 500/2000: 3,994; 1000/2000: 2,895; 2048/2048: 2,296;
# 5000/500: 610; 2048/128: 453). The batched engine's compute shares were chosen on them.
# https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/performance/perf-overview.md
# (commit 00f37686aa854010d68bcbd0f4ab000221541ca6, read 2026-12-03).
TRTLLM_PERF = "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @00f37686"


def _build(gpu: str, count: int) -> Build:
    doc = {"name": f"{count}x {gpu}", "gpus": [{"model": gpu, "count": count}]}
    return resolve_build(doc, "test", load_catalog(None))


def gpu(name: str) -> GPU:
    return load_catalog(None).find(GPU, name)


def _spec(workload: str, **changes: object) -> ServeSpec:
    spec = load_workload(workload).serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _estimate(workload: str, gpu: str, count: int, **changes: object) -> ServingEstimate:
    est = serving_estimate(_build(gpu, count), _spec(workload, **changes), workload)
    assert est is not None
    return est


LOCAL_TG1024 = dict(engine=Engine.LOCAL, prompt_tokens=1, output_tokens=1024)


@pytest.mark.parametrize(
    ("workload", "gpu", "count", "quantization", "measured", "source"),
    [
        ("llama-3.1-8b-serve", "RTX 4090", 1, WeightFormat.INT4, 127.74, LLAMA_BENCH),
        ("llama-3.1-8b-serve", "RTX 4090", 1, WeightFormat.BF16, 54.34, LLAMA_BENCH),
        ("llama-3.1-8b-serve", "RTX 3090", 1, WeightFormat.INT4, 111.74, LLAMA_BENCH),
        ("llama-3.1-8b-serve", "RTX 3090", 1, WeightFormat.BF16, 46.51, LLAMA_BENCH),
        ("llama-3.1-70b-serve", "RTX 3090", 2, WeightFormat.INT4, 16.29, LLAMA_BENCH),
        ("llama-3.1-70b-serve", "RTX 4090", 2, WeightFormat.INT4, 19.06, LLAMA_BENCH),
    ],
)
def test_local_runner_batch1_decode_within_20_percent(
    workload: str, gpu: str, count: int, quantization: WeightFormat, measured: float, source: str
) -> None:
    """llama.cpp, one user: Q4_K_M is `int4`, F16 is `bf16` (both 16-bit)."""
    est = _estimate(workload, gpu, count, quantization=quantization, **LOCAL_TG1024)
    assert est.batch1_tokens_per_s == pytest.approx(measured, rel=0.20), source
    assert est.offloaded_fraction == 0.0


def test_h200_70b_fp8_batch1_decode_within_20_percent() -> None:
    """TensorRT-LLM, Llama 3.3 70B (Llama 3.1 70B's structure) fp8 on one H200: 51.14 tok/s."""
    est = _estimate(
        "llama-3.1-70b-serve",
        "H200 SXM 141GB",
        1,
        quantization=WeightFormat.FP8,
        prompt_tokens=128,
        output_tokens=256,
    )
    assert est.batch1_tokens_per_s == pytest.approx(51.14, rel=0.20), NVIDIA_SPEC_BLOG
    assert est.binding is ServingLimit.DECODE_BANDWIDTH


@pytest.mark.parametrize(
    ("prompt", "output", "requests", "measured"),
    [
        (1000, 1000, 3000, 2919),
        (128, 2048, 3000, 4340),
        (500, 2000, 3000, 3994),
        (1000, 2000, 1500, 2895),
        (2048, 2048, 1500, 2296),
        (5000, 500, 1500, 610),
        (2048, 128, 3000, 453),
    ],
)
def test_8x_h100_405b_fp8_at_full_concurrency_within_25_percent(
    prompt: int, output: int, requests: int, measured: float
) -> None:
    """TensorRT-LLM max-throughput runs: the row's dataset (`requests`, the perf-overview's
    $num_requests for its lengths) sent at once, as many running as the KV cache holds (ModelOpt
    fp8 checkpoints carry an fp8 KV cache), total output tokens/s over the run."""
    spec = dict(
        quantization=WeightFormat.FP8,
        kv_precision=KVPrecision.FP8,
        prompt_tokens=prompt,
        output_tokens=output,
    )
    first = _estimate("llama-3.1-405b-serve", "H100 SXM5 80GB", 8, **spec)
    assert first.max_users_fit > 50  # high concurrency, not a handful of users
    assert first.fits
    assert first.parallelism == "tensor parallel x8 over NVLink"
    serve = load_workload("llama-3.1-405b-serve").serve
    assert serve is not None
    build = _build("H100 SXM5 80GB", 8)
    run = batch_run(build, replace(serve, **spec), requests, "test")  # type: ignore[arg-type]
    assert run.tokens_per_s_total == pytest.approx(measured, rel=0.25), TRTLLM_PERF


# vLLM's own batch-1 rows, Llama 3.1 8B in 16 bits (read 2026-12-06): 6.48 ms a token (TPOT
# p50, concurrency 1) on an H100-80GB-HBM3 with vLLM 0.21.0, InferenceBench 2026-05-16,
# https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/ ; "about 75 tokens/sec" at
# concurrency 1, 1024-token prompts, 128-token answers, on an A100 40GB with vLLM 0.23.0,
# https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on .
VLLM_H100_TPOT_S = 6.48e-3
VLLM_A100_TOKENS_S = 75.0


def test_vllm_bandwidth_share_089_solves_its_two_batch1_rows() -> None:
    """serve.engine vllm reads at 0.89 of a copy kernel's bandwidth: the two rows (an H100 and
    an A100 40GB, whose weight reads take 2.2x apart) solve for that share (0.894) and a fixed
    time per step; the fixed time comes out as the batched profile's 32 layers x 25 us within
    0.05 ms, which is why vLLM has no host term of its own. Re-solved from the model's bytes
    and the catalog's bandwidth, so a change in either shows here."""
    short = dict(quantization=WeightFormat.FP16, prompt_tokens=128, output_tokens=128)
    h100 = _estimate("llama-3.1-8b-serve", "H100 SXM5 80GB", 1, engine=Engine.VLLM, **short)
    long_prompt = dict(prompt_tokens=1024, output_tokens=128)
    a100 = _estimate("llama-3.1-8b-serve", "A100 SXM4 40GB", 1, engine=Engine.VLLM, **long_prompt)
    reads = (ServingLimit.DECODE_BANDWIDTH.value, ServingLimit.DECODE_ATTENTION.value)
    # Reads at a share of 1: the model's weight and KV-cache reads x the profile's share.
    read_h100 = sum(h100.decode_parts_s[k] for k in reads) * VLLM.bandwidth_efficiency
    read_a100 = sum(a100.decode_parts_s[k] for k in reads) * VLLM.bandwidth_efficiency
    share = (read_a100 - read_h100) / (1.0 / VLLM_A100_TOKENS_S - VLLM_H100_TPOT_S)
    fixed_s = VLLM_H100_TPOT_S - read_h100 / share
    assert share == pytest.approx(0.894, abs=0.005)
    assert round(share, 2) == VLLM.bandwidth_efficiency == 0.89
    assert fixed_s == pytest.approx(32 * BATCHED.layer_overhead_s, abs=0.05e-3)
    assert VLLM.layer_overhead_s == BATCHED.layer_overhead_s == 25e-6


def test_vllm_batch1_decode_is_slower_than_the_tensorrt_like_profile() -> None:
    """The same job on the same card: vLLM's batch-1 step reads the weights at 0.89 of a copy
    kernel against TensorRT-LLM's 0.96, so it takes longer (Llama 3.3 70B fp8 on an H200:
    51.14 tok/s for TensorRT-LLM, NVIDIA's blog above; vLLM ~7% slower)."""
    trt = _estimate("llama-3.1-70b-serve", "H200 SXM 141GB", 1, quantization=WeightFormat.FP8)
    vllm = _estimate(
        "llama-3.1-70b-serve", "H200 SXM 141GB", 1, quantization=WeightFormat.FP8,
        engine=Engine.VLLM,
    )  # fmt: skip
    assert vllm.engine == "vllm" and trt.engine == "batched"
    assert vllm.batch1_tokens_per_s / trt.batch1_tokens_per_s == pytest.approx(0.93, abs=0.015)
    assert vllm.parallelism == trt.parallelism  # a batched server: the same layout
    # vLLM fills 0.90 of the card, the weights and its profiling pass's activations (8,192
    # tokens, its default budget on a 141 GiB card: 2.0 GiB) included; TensorRT-LLM's KV cache
    # is 0.90 of what the weights and its profiling pass (4.9 GiB here, 3.5 GiB of it kept
    # besides the activations) leave free (serving_memory): on 141 GiB with 68 GiB of
    # weights, 8% more.
    assert trt.max_users_fit / vllm.max_users_fit == pytest.approx(1.076, abs=0.01)


def test_kv_cache_per_token_per_layer_follows_gqa_heads() -> None:
    """Llama 3.1 8B config: 8 KV heads x 128 dims x (K, V) x 2 bytes = 4096 B per layer; the
    zoo's legacy kv_bytes_per_token (131072 = 32 layers x 4096) agrees."""
    spec = _spec("llama-3.1-8b-serve")
    assert mem.kv_bytes_per_token_per_layer(spec) == 4096
    assert mem.kv_bytes_per_token(spec) == load_workload("llama-3.1-8b-serve").kv_bytes_per_token
    fp8 = replace(spec, kv_precision=KVPrecision.FP8)
    assert mem.kv_bytes_per_token_per_layer(fp8) == 2048


def test_latent_attention_caches_the_latent_vector() -> None:
    """DeepSeek-V3 config: kv_lora_rank 512 + rope dim 64 = 576 elements, 2 bytes in bf16."""
    spec = _spec("deepseek-v3-serve", kv_precision=KVPrecision.BF16)
    assert mem.kv_bytes_per_token_per_layer(spec) == 1152


def test_int4_group_scales_cost_a_quarter_bit() -> None:
    """AWQ/GPTQ group size 128 with a 16-bit scale and zero: 4 + 32/128 = 4.25 bits, with the
    embedding and head left in 16 bits (Llama 3.1 8B: 2 x 128256 x 4096 of them)."""
    spec = _spec("llama-3.1-8b-serve", quantization=WeightFormat.INT4)
    assert mem.weight_bits(spec) == 4.25
    embeddings = 2 * 128256 * 4096
    expected = ((8030261248 - embeddings) * 4.25 + embeddings * 16) / 8
    assert mem.weight_bytes(spec) == pytest.approx(expected)


def test_moe_decode_reads_more_experts_as_the_batch_grows() -> None:
    """Mixtral (2 of 8 experts per token): one token reads its 12.9B active weights; a batch
    of 32 misses an expert with probability (3/4)^32, so it reads nearly all 46.7B."""
    spec = _spec("mixtral-8x7b-serve")
    assert experts_touched_fraction(spec, 1) == pytest.approx(0.25)
    assert experts_touched_fraction(spec, 32) == pytest.approx(1 - 0.75**32)
    one = weight_bytes_per_step(spec, 1)
    assert one == pytest.approx((12879925248 - 32000 * 4096) * 2, rel=1e-6)
    assert weight_bytes_per_step(spec, 32) == pytest.approx(
        (46702792704 - 32000 * 4096) * 2, rel=0.01
    )


def test_prefill_flops_count_causal_attention() -> None:
    """2 per active weight per token (no head) plus 2 x L x P^2 x heads x head_dim."""
    spec = _spec("llama-3.1-8b-serve")
    p = 2000
    expected = 2 * (8030261248 - 128256 * 4096) * p + 2 * 32 * p**2 * 32 * 128
    assert prefill_flops(spec, p) == pytest.approx(expected)


def test_users_beyond_the_kv_cache_queue_and_bind_on_kv_memory() -> None:
    """Past the contexts its KV cache holds, a batched engine runs those and queues the rest
    (TensorRT-LLM's GUARANTEED_NO_EVICT admits a request once its whole context has room):
    the job still runs, each step is the one at the users held, the total is theirs, and
    every request waits (users - held) / held answers (Little's law over the closed loop)
    before its prompt starts."""
    est = _estimate("llama-3.1-8b-serve", "RTX 4090", 1, users=1, prompt_tokens=8000)
    held = est.max_users_fit
    at = _estimate("llama-3.1-8b-serve", "RTX 4090", 1, users=held, prompt_tokens=8000)
    crowded = _estimate("llama-3.1-8b-serve", "RTX 4090", 1, users=3 * held, prompt_tokens=8000)
    assert held >= 1 and est.fits and crowded.fits
    assert crowded.binding is ServingLimit.KV_MEMORY
    assert (crowded.running_per_copy, crowded.users_waiting) == (held, 2 * held)
    assert crowded.tpot_s == pytest.approx(at.tpot_s)
    assert crowded.tokens_per_s_total == pytest.approx(at.tokens_per_s_total)
    # a running request holds its slot for its answer's tokens, each a step stretched by the
    # others' prefills (tpot), and its own prompt's pass
    answer_s = crowded.output_tokens * crowded.tpot_s + crowded.prefill_s
    assert crowded.queue_wait_s == pytest.approx(2 * answer_s)
    assert crowded.ttft_s == pytest.approx(at.ttft_s + crowded.queue_wait_s)
    assert at.users_waiting == 0 and at.queue_wait_s == 0.0


def test_one_context_that_does_not_fit_beside_the_weights_cannot_run() -> None:
    """Llama 3.1 70B in fp8 (67.7 GiB) on one H100 under vLLM: 0.90 x 80 GiB less the weights
    and the profiling pass's activations (vLLM's default 8,192-token budget on an 80 GiB card:
    8,192 x 8,192 x 2 B x 16 = 2.0 GiB) leaves 2.33 GiB, and one 20,300-token context takes 6.20
    GiB (80 layers x 8 KV heads x 128 x 2 x 2 B = 327,680 B a token, the model's config):
    vLLM refuses to start (check_enough_kv_cache_memory), so the job does not fit."""
    est = _estimate("llama-3.1-70b-serve", "H100 SXM5 80GB", 1, engine=Engine.VLLM,
                    quantization=WeightFormat.FP8, users=4, prompt_tokens=20000)  # fmt: skip
    assert est.kv_per_user_gb == pytest.approx(20300 * 327680 / 2**30)
    assert est.kv_capacity_gb == pytest.approx(2.33, abs=0.01)
    assert not est.fits and est.max_users_fit == 0
    assert est.binding is ServingLimit.KV_MEMORY and est.users_waiting == 0
    assert any("vLLM refuses to start" in n for n in est.notes)


@pytest.mark.parametrize(
    ("engine", "shared_tokens"),
    [
        # vLLM's prefix cache: 900 shared prompt tokens are 56 whole blocks of 16 = 896.
        (Engine.VLLM, 896),
        # The batched profile (TensorRT-LLM as timed, no block reuse) and llama.cpp's
        # per-slot cache keep every user's prefix of their own.
        (Engine.BATCHED, 0),
        (Engine.LOCAL, 0),
    ],
)
def test_a_shared_prefix_is_held_once_where_the_engine_shares_blocks(
    engine: Engine, shared_tokens: int
) -> None:
    """Llama 3.1 8B (32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B a token, its config),
    1,000-token prompts of which 900 are shared, 300-token answers, on one H100."""
    spec = _spec("llama-3.1-8b-serve", engine=engine, shared_prefix_tokens=900)
    assert mem.kv_bytes_per_user(spec) == (1300 - shared_tokens) * 131072
    assert mem.kv_shared_bytes(spec) == shared_tokens * 131072
    assert mem.kv_cache_bytes(spec, 10) == (shared_tokens + 10 * (1300 - shared_tokens)) * 131072
    card = 80 * 2**30
    room = mem.kv_capacity_bytes(spec, card, 1) - shared_tokens * 131072
    assert mem.max_users_fit(spec, card, 1) == int(room // ((1300 - shared_tokens) * 131072))


def test_vllm_holds_three_times_the_users_when_most_of_the_prompt_is_shared() -> None:
    alone = _estimate("llama-3.1-8b-serve", "H100 SXM5 80GB", 1, engine=Engine.VLLM)
    shared = _estimate("llama-3.1-8b-serve", "H100 SXM5 80GB", 1, engine=Engine.VLLM,
                       shared_prefix_tokens=900)  # fmt: skip
    # 1,300 tokens a user alone against 404 of its own: 3.2x the users in the same cache.
    assert shared.max_users_fit / alone.max_users_fit == pytest.approx(1300 / 404, rel=0.01)
    assert shared.kv_shared_gb == pytest.approx(896 * 131072 / 2**30)


def test_weights_larger_than_the_cards_bind_on_weight_memory() -> None:
    """Llama 3.1 70B in bf16 (141 GB) cannot be served from one 80 GB H100."""
    est = _estimate("llama-3.1-70b-serve", "H100 SXM5 80GB", 1)
    assert est.binding is ServingLimit.WEIGHT_MEMORY
    assert not est.fits


def test_local_runner_offloads_what_does_not_fit_and_pays_ram_bandwidth() -> None:
    """70B Q4_K_M (~43 GB) on one 24 GB card: llama.cpp keeps the rest in RAM; a token then
    costs the RAM read, so it is far slower than on two cards."""
    one = _estimate("llama-3.1-70b-serve", "RTX 3090", 1, quantization=WeightFormat.INT4,
                    **LOCAL_TG1024)  # fmt: skip
    two = _estimate("llama-3.1-70b-serve", "RTX 3090", 2, quantization=WeightFormat.INT4,
                    **LOCAL_TG1024)  # fmt: skip
    assert 0.4 < one.offloaded_fraction < 0.6
    assert one.binding is ServingLimit.OFFLOAD
    assert one.batch1_tokens_per_s < two.batch1_tokens_per_s / 3


def test_max_users_at_target_is_the_edge_of_the_speed_target() -> None:
    """Per-user speed falls as users grow: the answer meets the target, one more does not."""
    target = 30.0
    est = _estimate(
        "llama-3.1-8b-serve", "H100 SXM5 80GB", 1, users=1, min_tokens_per_s_per_user=target
    )
    n = est.max_users_at_target
    assert n is not None and 1 < n <= est.max_users_fit
    at = _estimate("llama-3.1-8b-serve", "H100 SXM5 80GB", 1, users=n)
    assert at.tokens_per_s_per_user >= target
    if n < est.max_users_fit:
        over = _estimate("llama-3.1-8b-serve", "H100 SXM5 80GB", 1, users=n + 1)
        assert over.tokens_per_s_per_user < target


def test_more_users_raise_total_and_lower_per_user_speed() -> None:
    few = _estimate("llama-3.1-8b-serve", "RTX 4090", 1, users=2)
    many = _estimate("llama-3.1-8b-serve", "RTX 4090", 1, users=16)
    assert many.tokens_per_s_total > 3 * few.tokens_per_s_total
    assert many.tokens_per_s_per_user < few.tokens_per_s_per_user
    assert many.ttft_s > few.prefill_s


def test_tensor_parallel_over_pcie_pays_more_latency_than_nvlink() -> None:
    """70B in bf16 (141 GB) needs all four 48 GB L40S (PCIe only) but two of four H100 SXM
    (NVSwitch), which then serve two copies of the model."""
    pcie = _estimate("llama-3.1-70b-serve", "L40S", 4)
    assert pcie.parallelism == "tensor parallel x4 over PCIe"
    assert pcie.decode_parts_s[ServingLimit.INTERCONNECT.value] > 0
    nv = _estimate("llama-3.1-70b-serve", "H100 SXM5 80GB", 4)
    assert nv.parallelism == "tensor parallel x2 over NVLink, 2 copies of the model"
    per_layer_pcie = pcie.decode_parts_s[ServingLimit.INTERCONNECT.value]
    assert per_layer_pcie > nv.decode_parts_s[ServingLimit.INTERCONNECT.value]


def test_a_build_without_gpus_has_no_serving_figures() -> None:
    build = resolve_build({"name": "cpu only", "cpu": {"model": "Ryzen 9 7950X"}}, "t",
                          load_catalog(None))  # fmt: skip
    assert serving_estimate(build, _spec("llama-3.1-8b-serve"), "x") is None


def test_a_small_model_on_many_cards_runs_one_copy_per_card() -> None:
    """vLLM practice: data-parallel copies rather than tensor parallel when one card holds
    the model; four copies serve four times the users of one at the same per-user speed."""
    one = _estimate("llama-3.1-8b-serve", "L40S", 1, users=16)
    four = _estimate("llama-3.1-8b-serve", "L40S", 4, users=64)
    assert four.parallelism == "4 copies of the model, one per GPU"
    assert four.tokens_per_s_total == pytest.approx(4 * one.tokens_per_s_total)
    assert four.tokens_per_s_per_user == pytest.approx(one.tokens_per_s_per_user)
    assert four.max_users_fit == 4 * one.max_users_fit


@pytest.mark.parametrize(
    ("workload", "gpu", "count", "quantization", "measured"),
    [
        ("llama-3.1-8b-serve", "RTX 4090", 1, WeightFormat.INT4, 6898.71),
        ("llama-3.1-8b-serve", "RTX 4090", 1, WeightFormat.BF16, 9056.26),
        ("llama-3.1-8b-serve", "RTX 3090", 1, WeightFormat.INT4, 3865.39),
        ("llama-3.1-8b-serve", "RTX 3090", 1, WeightFormat.BF16, 4239.64),
        ("llama-3.1-70b-serve", "RTX 3090", 2, WeightFormat.INT4, 393.89),
        ("llama-3.1-70b-serve", "RTX 4090", 2, WeightFormat.INT4, 905.38),
    ],
)
def test_local_runner_prompt_processing_within_25_percent(
    workload: str, gpu: str, count: int, quantization: WeightFormat, measured: float
) -> None:
    """llama-bench pp 1024 (prompt tokens/s) from the same table as the decode figures: the
    prefill (time to first token) side of the model."""
    est = _estimate(
        workload, gpu, count, quantization=quantization, engine=Engine.LOCAL,
        prompt_tokens=1024, output_tokens=1,
    )  # fmt: skip
    assert 1024 / est.prefill_s == pytest.approx(measured, rel=0.25), LLAMA_BENCH


# The same TensorRT-LLM table, rows the batched engine's efficiencies were NOT chosen on:
# Llama 3.1 8B FP8 on one H100 SXM and Llama 3.3 70B FP8 on two (TP2), total output tokens/s
# at maximum concurrency per ISL/OSL.
HELD_OUT_H100 = [
    pytest.param("llama-3.1-8b-serve", 1, lengths, measured)
    for lengths, measured in [
        ((128, 128), 28312), ((128, 2048), 22714), ((128, 4096), 14325), ((500, 2000), 17660),
        ((1000, 1000), 15220), ((1000, 2000), 13899), ((2048, 128), 3450),
        ((2048, 2048), 9305), ((5000, 500), 3459), ((20000, 2000), 1351),
    ]
] + [
    pytest.param("llama-3.1-70b-serve", 2, lengths, measured)
    for lengths, measured in [
        ((128, 128), 6378), ((128, 2048), 6651), ((128, 4096), 4199), ((500, 2000), 5222),
        ((1000, 1000), 4205), ((1000, 2000), 4146), ((2048, 128), 762), ((2048, 2048), 3082),
        ((5000, 500), 898), ((20000, 2000), 437),
    ]
]  # fmt: skip


@pytest.mark.parametrize(("workload", "count", "lengths", "measured"), HELD_OUT_H100)
def test_held_out_h100_serving_points_within_25_percent(
    workload: str, count: int, lengths: tuple[int, int], measured: float
) -> None:
    spec = dict(
        quantization=WeightFormat.FP8,
        kv_precision=KVPrecision.FP8,
        prompt_tokens=lengths[0],
        output_tokens=lengths[1],
    )
    spec["tensor_parallel"] = count  # the published layout: TP1 for 8B, TP2 for 70B
    first = _estimate(workload, "H100 SXM5 80GB", count, **spec)
    est = _estimate(workload, "H100 SXM5 80GB", count, users=first.max_users_fit, **spec)
    assert est.tokens_per_s_total == pytest.approx(measured, rel=0.25), TRTLLM_PERF


def test_tensor_parallel_sets_the_cards_one_copy_spans() -> None:
    """Llama 3.3 70B in fp8 (about 68 GiB of weights) fits one 80 GB H100, so on two the model
    serves a copy per GPU; TensorRT-LLM's perf-overview ran it TP2 (one copy over both), which
    `serve.tensor_parallel: 2` asks for."""
    fp8 = dict(quantization=WeightFormat.FP8, kv_precision=KVPrecision.FP8)
    default = _estimate("llama-3.1-70b-serve", "H100 SXM5 80GB", 2, **fp8)
    assert default.parallelism == "2 copies of the model, one per GPU"
    tp2 = _estimate("llama-3.1-70b-serve", "H100 SXM5 80GB", 2, tensor_parallel=2, **fp8)
    assert tp2.parallelism == "tensor parallel x2 over NVLink"


def test_a_tensor_parallel_degree_that_does_not_divide_the_gpus_is_refused() -> None:
    with pytest.raises(ValidationError) as err:
        _estimate("llama-3.1-8b-serve", "RTX 4090", 1, tensor_parallel=2)
    assert err.value.field == "serve.tensor_parallel"
    assert "does not divide the build's 1 GPU" in str(err.value)


def test_an_amd_card_is_told_its_engine_profile_is_not_calibrated_there() -> None:
    """Every engine profile was chosen on NVIDIA GPUs (bench/provenance.toml: TensorRT-LLM's,
    vLLM's and llama.cpp's CUDA rows), so a serving estimate on an MI300X says so, and points at
    the MI300X runs that came out slower; on an H100 it says nothing of the kind."""
    amd = _estimate("llama-3.1-70b-serve", "MI300X", 8)
    note = next(n for n in amd.notes if "not calibrated" in n)
    assert "AMD Instinct MI300X" in note and "(BENCHMARKS.md, AMD serving)" in note
    nvidia = _estimate("llama-3.1-70b-serve", "H100 SXM", 8)
    assert not any("not calibrated" in n for n in nvidia.notes)


def test_mi300x_fp8_decode_gemms_pay_amds_measured_fixed_time_per_kernel() -> None:
    """On an MI300X a batched server's FP8 decode GEMMs run as AMD timed them (AITER's tuned
    kernels, ROCm/aiter@fbb52ddfad): 8.91 us each before the weights stream at 3,583 GB/s. Llama
    3.1 70B at TP8, batch 1: 80 layers x (25 us + 4 GEMMs x 8.91 us) = 4.85 ms of fixed time a
    step, and its weights read at 8 x 3,583 GB/s; in BF16, untimed, the engine's 25 us a layer
    and its share of the copy rate stand."""
    fp8 = _estimate("llama-3.1-70b-serve", "MI300X", 8, engine=Engine.VLLM,
                    quantization=WeightFormat.FP8, tensor_parallel=8, users=1)  # fmt: skip
    parts = fp8.decode_parts_s
    assert parts[ServingLimit.ENGINE_OVERHEAD.value] == pytest.approx(80 * (25e-6 + 4 * 8.91e-6))
    weights = weight_bytes_per_step(_spec("llama-3.1-70b-serve", quantization=WeightFormat.FP8), 1)
    assert parts[ServingLimit.DECODE_BANDWIDTH.value] == pytest.approx(weights / (8 * 3583e9))
    assert any("8.9 us each" in n and "3,583 GB/s" in n for n in fp8.notes)
    bf16 = _estimate("llama-3.1-70b-serve", "MI300X", 8, engine=Engine.VLLM,
                     quantization=WeightFormat.BF16, tensor_parallel=8, users=1)  # fmt: skip
    assert bf16.decode_parts_s[ServingLimit.ENGINE_OVERHEAD.value] == pytest.approx(80 * 25e-6)
    assert not any("decode GEMMs on" in n for n in bf16.notes)


def test_an_mi300x_all_reduce_above_16_mb_is_rccls() -> None:
    """vLLM on AMD Instinct runs its own all-reduce below 16 MB and RCCL above it (AMD ROCm
    blog, QuickReduce, 2025-08-26). Llama 3.1 70B (hidden 8192, 16-bit activations) at 1,500
    users all-reduces 24.6 MB: RCCL's 64.7 us fixed cost over the MI300X mesh (Azure's
    rccl-tests, interconnect.XGMI_COLLECTIVE_LATENCY_S); at one user, 16 KB, the engine's 8 us.
    On H100s the engine kernel's 8 us is its start-up at any size (goes_to_nccl says when NCCL
    takes the buffer instead)."""
    spec = _spec("llama-3.1-70b-serve", engine=Engine.VLLM)
    buffer = 1500 * 8192 * 2
    amd = cards(_build("MI300X", 8), default_calibration())
    assert amd is not None
    assert allreduce_latency_s(spec, amd, buffer) == pytest.approx(64.7e-6)
    assert allreduce_latency_s(spec, amd, 8192 * 2) == pytest.approx(8e-6)
    nvidia = cards(_build("H100 SXM", 8), default_calibration())
    assert nvidia is not None
    assert allreduce_latency_s(spec, nvidia, buffer) == pytest.approx(8e-6)


@pytest.mark.parametrize(
    ("engine", "gpus", "buffer_bytes", "nccl"),
    [
        (Engine.BATCHED, 8, 499e3, False), (Engine.BATCHED, 8, 501e3, True),
        (Engine.BATCHED, 4, 0.99e6, False), (Engine.BATCHED, 4, 1.01e6, True),
        (Engine.BATCHED, 2, 15.9e6, False), (Engine.BATCHED, 2, 16.1e6, True),
        (Engine.VLLM, 8, 8 * 1024 * 1024, False), (Engine.VLLM, 8, 8 * 1024 * 1024 + 1, True),
        (Engine.VLLM, 2, 8 * 1024 * 1024 + 1, True),
    ],
)  # fmt: skip
def test_an_nvlink_all_reduce_goes_to_nccl_above_the_engines_own_kernels_limit(
    engine: Engine, gpus: int, buffer_bytes: float, nccl: bool
) -> None:
    """TensorRT-LLM's AUTO strategy keeps its own kernel below 500 KB on more than four GPUs,
    1 MB on three or four and its 16 MB workspace on two (allreduceOp.cpp, customAllReduceUtils.h
    getMaxRequiredWorkspaceSize); vLLM's CustomAllreduce takes up to 8 MiB on any of 2-8."""
    c = cards(_build("H100 SXM", gpus), default_calibration())
    assert c is not None
    assert goes_to_nccl(_spec("llama-3.1-70b-serve", engine=engine), c, buffer_bytes) is nccl


def test_an_nccl_all_reduce_runs_at_nccls_bus_bandwidth_for_its_size() -> None:
    """Llama 3.1 405B (hidden 16384, 126 layers) on 8x H100 at 256 sequences: 8.39 MB a
    buffer, over TensorRT-LLM's 500 KB: each of the step's 252 all-reduces sends 2 x 7/8 of it
    at NCCL's 32.3% of the plateau bus bandwidth for 8 MiB (interconnect.NVLINK_ALLREDUCE_CURVE,
    nccl_collective_busbw.csv); the estimate says so."""
    spec = _spec("llama-3.1-405b-serve")
    c = cards(_build("H100 SXM", 8), default_calibration())
    assert c is not None
    buffer = 256 * 16384 * 2
    plateau = c.allreduce_busbw_gb_s * 1e9
    share = curve_fraction(NVLINK_ALLREDUCE_CURVE, buffer)
    assert share == pytest.approx(0.3225, abs=0.001)
    assert allreduce_s(spec, c, 256) == pytest.approx(252 * 1.75 * buffer / (plateau * share))
    est = _estimate("llama-3.1-405b-serve", "H100 SXM", 8, users=256,
                    quantization=WeightFormat.FP8)  # fmt: skip
    assert any("252 all-reduces of 8.4 MB run in NCCL" in n for n in est.notes)


def test_decode_gemms_take_the_prompts_share_except_where_timed() -> None:
    """One GEMM share a batched engine (0.74 of the card's achievable matmul rate), a decode
    step's GEMMs as a prompt's; the MI300X's FP8 decode GEMMs at the 569.3 TFLOPS AMD's tuned
    kernels reach at M = 256 (achievable_rates.toml, from mi300x_fp8_decode_gemm.csv)."""
    h100 = gpu("H100 SXM5 80GB")
    spec = _spec("llama-3.1-70b-serve", quantization=WeightFormat.FP8)
    assert achievable_matmul_flops_s(h100, spec, decode=True) == pytest.approx(
        achievable_matmul_flops_s(h100, spec)
    )
    mi300x = gpu("AMD Instinct MI300X")
    vllm = _spec("llama-3.1-70b-serve", quantization=WeightFormat.FP8, engine=Engine.VLLM)
    assert achievable_matmul_flops_s(mi300x, vllm, decode=True) == pytest.approx(569.3e12)
