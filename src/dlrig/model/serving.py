"""Serving a language model (issue 14): prefill and decode timed apart, time to first token,
time per output token, tokens/s per user and in total, the most users at a speed target, and
which limit binds.

Prefill is compute-bound: the prompt's FLOPs (2 per active weight per token, plus causal
attention) at the card's achievable matmul rate. A decode step runs two kinds of kernels one
after the other: the linear layers' GEMMs, which read the weights once for the whole batch
(for a mixture of experts, the experts some sequence in the batch routes to) and multiply
them by one row per sequence, and attention, which reads every sequence's KV cache. The
GEMMs take the slower of their read and their FLOPs (a mixture of experts' routed GEMMs at
MOE_GEMM_SHARE of the dense rate, and on TensorRT-LLM the CUDA-core work of each routed token
and expert beside them); attention, a kernel of its own after them, the slower of
its KV read and its own FLOPs.
A batched server splits weights and KV cache across its GPUs (tensor parallel) and
all-reduces the hidden state twice per layer; a local runner splits layers across cards
(pipeline: one card works at a time) and reads layers left in RAM at the host's bandwidth.
Continuous batching interleaves prompts with decoding: each user's prefill stalls the others'
steps once per answer; vLLM instead computes the prompts inside the decode steps (mixed_step),
where their FLOPs share the step's weight read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from dlrig.catalog.schema import GPU
from dlrig.enums import Precision, Vendor
from dlrig.errors import ValidationError
from dlrig.machine.model import Build
from dlrig.model import pcie
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import Calibration, default_calibration
from dlrig.model.compute import overlapped_s
from dlrig.model.device import busbw_gb_s, pcie_link
from dlrig.model.host import host_memory_bandwidth
from dlrig.model.interconnect import (
    NVLINK_ALLREDUCE_CURVE,
    XGMI_COLLECTIVE_LATENCY_S,
    curve_fraction,
    nvlink_ring_s,
    ring_allreduce_bus_factor,
)
from dlrig.model.memory import gpu_memory_bytes
from dlrig.model.rates import (
    DecodeGemm,
    achievable_matmul_tflops,
    achievable_memory_bandwidth_gb_s,
    measured_decode_gemm,
    measured_decode_matmul_tflops,
)
from dlrig.units import (
    BITS_PER_BYTE,
    MB,
    bytes_s_to_gb_s,
    bytes_to_gib,
    gb_s_to_bytes_s,
    gib_to_bytes,
    s_to_ms,
    s_to_us,
    tflops_to_flops,
    wh_to_kwh,
)
from dlrig.workloads.serving import Engine, KVPrecision, ServeSpec, WeightFormat

if TYPE_CHECKING:
    from dlrig.model.serving_batch import BatchRun
    from dlrig.model.serving_load import ServingLoad


class ServingLimit(StrEnum):
    """What holds a serving build back at the asked concurrency."""

    WEIGHT_MEMORY = "weight_memory"
    KV_MEMORY = "kv_memory"
    DECODE_BANDWIDTH = "decode_bandwidth"
    DECODE_ATTENTION = "decode_attention"
    DECODE_COMPUTE = "decode_compute"
    PREFILL_COMPUTE = "prefill_compute"
    INTERCONNECT = "interconnect"
    OFFLOAD = "offload"
    ENGINE_OVERHEAD = "engine_overhead"
    HOST = "host"


# A mixture of experts' routed GEMMs run many small GEMMs, one per expert, behind a
# permutation of the tokens, and reach less of the card than one dense GEMM of the same FLOPs
# (EngineProfile.moe_gemm_share, of the engine's dense GEMM rate). TensorRT-LLM's
# perf-overview gives the ratio on one card and engine: at 2048/128 on eight H200 in FP8,
# Qwen3-235B-A22B computes 3,331 / 128 x 2,048 = 53,295 prompt tokens/s at 44.4 GFLOP each
# (2.37 PFLOP/s) where Llama 3.1 405B computes 7,296 at 811.7 GFLOP (5.92 PFLOP/s): 0.40 of
# the dense rate, prompts being nearly all of both runs' FLOPs. Chosen on those rows
# (trtllm_moe, bench/provenance.toml).
MOE_GEMM_SHARE = 0.40
# vLLM's Triton fused MoE (SGLang's came from it) reaches less: Qwen3-30B-A3B's experts in FP8
# on an H100 took 911.6 us at 2,048 tokens and 1,647.6 us at 4,096 (benchmark_moe.py,
# vllm-project/vllm#24700, main before the PR): 154.6 GFLOP more in 736 us, 210 TFLOPS once
# the batch is large, 0.20 of the dense FP8 rate dlrig gives vLLM there (0.74 x 1,402.6).
VLLM_MOE_GEMM_SHARE = 0.20
# TensorRT-LLM's MoE op works on each routed (token, expert) pair on the CUDA cores beside its
# grouped GEMMs: the routing, copying the token to its expert, the activation and the
# quantization between the GEMMs, the weighted combine. Its measured times (aiconfigurator's
# silicon data for TensorRT-LLM 1.2.0rc5 on an H100, H200 and B200, data/calibration/
# trtllm_moe_kernel_times.csv) fit 731k FP32 FLOPs a pair at the card's FP32 rate, beside the
# GEMMs at the card's matmul rate (scripts/moe_kernel_check.py Part 2: the one-GPU rows under
# power-law routing, aiconfigurator's default for Qwen3 and Llama 4). It weighs most where
# top-8 routing meets small experts (Qwen3-30B-A3B's). vLLM's and SGLang's share
# (VLLM_MOE_GEMM_SHARE) was read off their whole fused MoE's time, so it holds their per-pair
# work already.
TRTLLM_MOE_PAIR_FP32_FLOP = 731e3


@dataclass(frozen=True)
class EngineProfile:
    """An engine's stated efficiencies.

    `bandwidth_efficiency`: share of the card's memory bandwidth its decode kernels reach
    (weights and KV cache alike); `compute_efficiency`: share of the achievable matmul rate
    its GEMMs reach, a prompt's rows or a decode step's (one row per sequence) alike, except
    where the card's decode GEMMs were timed (rates.measured_decode_matmul_tflops);
    `layer_overhead_s`: fixed time per layer and decode step (kernel launches, small
    kernels that never reach full bandwidth); `allreduce_latency_s`: one small all-reduce of
    its own kernel; `custom_allreduce_limits`: (GPUs, bytes) steps, the largest buffer that
    kernel takes on up to that many GPUs (the last step beyond): larger ones go to NCCL;
    `accumulates_fp16`: its 16-bit matmuls accumulate in FP16, and the compute share is of
    the card's FP16-accumulate rate (fp16_accumulate_speedup); `moe_layer_overhead_s`: fixed
    time per mixture-of-experts layer and step beyond the experts' GEMMs (routing, copying
    each token to its experts, quantizing, the activation, combining the outputs);
    `host_request_s`: the engine's CPU time a running request and iteration on an x86 server
    host (scheduling, preparing the inputs, sampling, bookkeeping), which overlaps the GPU's
    work in part (with_host_s); `moe_gemm_share`: a mixture of experts' routed GEMMs' rate
    over the dense GEMMs' (matmul_time_factor); `moe_pair_fp32_flop`: the CUDA-core work of
    each routed (token, expert) pair beyond what moe_gemm_share holds, in FP32 FLOPs
    (routed_pair_s).
    """

    bandwidth_efficiency: float
    compute_efficiency: float
    layer_overhead_s: float
    allreduce_latency_s: float
    custom_allreduce_limits: tuple[tuple[int, float], ...] = ((8, 0.0),)
    accumulates_fp16: bool = False
    moe_layer_overhead_s: float = 0.0
    host_request_s: float = 0.0
    moe_gemm_share: float = MOE_GEMM_SHARE
    moe_pair_fp32_flop: float = 0.0


# Shares below are of the card's achievable rates (dlrig.model.rates: a copy kernel's
# bandwidth, a large dense matmul's TFLOPS), not of the datasheet.
# Batched server, TensorRT-LLM-like (its C++ runtime, CUDA graphs, custom GEMV kernels):
# decode reads at ~96% of what a copy kernel reaches, plus ~25 us per layer and step (chosen
# on NVIDIA's H200 running Llama 3.3 70B fp8 at 51.14 tok/s at batch 1); its GEMMs reach 74%
# of the achievable matmul rate (chosen on TensorRT-LLM's 8x H100 Llama 3.1 405B fp8
# maximum-throughput runs, 7 ISL/OSL pairs), a decode step's as a prompt's: the same weight
# matrices times as many rows as the step runs sequences, hundreds to thousands at full load.
# Its own all-reduce kernel takes ~8 us for a few KB (NCCL's small-message latency is 10-20
# us); AUTO gives it buffers below 500 KB on more than four GPUs, below 1 MB on three or four,
# and up to its 16 MB workspace on two, NCCL the rest (the 2024 plugin's selectImplementation
# with two-shot disabled, nvbug 4718747, and the PyTorch backend's AllreduceOp in
# cpp/tensorrt_llm/thop/allreduceOp.cpp: the same thresholds; getMaxRequiredWorkspaceSize in
# cpp/tensorrt_llm/common/customAllReduceUtils.h). A decode share of its own (0.46, chosen on
# the 405B rows while every all-reduce was this kernel's) was dropped once the 405B steps'
# NCCL all-reduces were counted (bench/provenance.toml).
# A mixture-of-experts layer runs its CUTLASS MoE path: an NSight profile of TensorRT-LLM
# decoding Qwen3-Next-80B (NVFP4) at batch 1 on an RTX PRO 6000 spent 145 us in each MoE
# layer, 41.4 us of it in the experts' GEMMs, the rest in routing, scattering tokens to
# experts, quantizing, the activation and combining (morphllm.com/blog/morph-decode,
# 2026-04-09): 104 us a layer beyond the GEMMs.
# Its PyTorch backend (every perf-overview run since v0.19) spends CPU time on each running
# request every iteration, overlapped with the GPU's work by its overlap scheduler: 45.11 ms an
# iteration at 1,536 requests a GPU on a GB200's Grace host (TensorRT-LLM PR #10273, GPT-OSS-
# 120B, attention DP 2), 29.4 us a request; on an x86 host GRACE_HOST_SLOWDOWN less, 10.7 us.
GRACE_REQUEST_HOST_S = 45.11e-3 / 1536
# How much longer a Grace core takes over an engine's host code than an x86 server core: one
# PyTorch Linear's forward, CPU time, 37.08 us on a GB200 against 13.48 us on a Xeon 8480C
# (NVIDIA/TransformerEngine#2053).
GRACE_HOST_SLOWDOWN = 37.08 / 13.48
# The overlap scheduler prepares iteration n+1 on the host while the GPU runs iteration n, but
# each waits on the other at the iteration's edges (the sampled tokens, the inputs' copy), so
# neither hides the other whole where the two take about as long: an iteration takes their
# power mean at p = 1.5 (with_host_s). The same p joins a GEMM's read and FLOPs
# (GEMM_OVERLAP_EXPONENT), set on DeepGEMM's timings; here chosen on TensorRT-LLM's
# mixture-of-experts rows, whose many short requests on fast cards bring host and GPU close
# (bench/provenance.toml).
HOST_OVERLAP_EXPONENT = 1.5
BATCHED = EngineProfile(
    bandwidth_efficiency=0.96,
    compute_efficiency=0.74,
    layer_overhead_s=25e-6,
    allreduce_latency_s=8e-6,
    custom_allreduce_limits=((2, 16e6), (4, 1e6), (8, 5e5)),
    moe_layer_overhead_s=104e-6,
    host_request_s=GRACE_REQUEST_HOST_S / GRACE_HOST_SLOWDOWN,
    moe_pair_fp32_flop=TRTLLM_MOE_PAIR_FP32_FLOP,
)
# vLLM (V1 engine, 0.21-0.23: decode captured in CUDA graphs up to 512 sequences, linear layers
# on cuBLAS GEMMs rather than hand-written GEMV kernels, scheduling overlapped with the GPU).
# Solved from two of its own batch-1 rows, Llama 3.1 8B in 16 bits: 6.48 ms a token on an H100
# SXM (InferenceBench, vLLM 0.21.0, 2026-05-16) and ~75 tok/s on an A100 SXM 40GB at 1024/128
# (J. Musgrave, vLLM 0.23.0). The two cards' weight reads differ 2.2x, so the rows part the
# bandwidth share (0.894) from the fixed time per step (0.82 ms): 89% of a copy kernel, and
# the fixed time is TensorRT-LLM's 25 us a layer within 0.02 ms, so no separate host term.
# The compute share and the all-reduce's cost are TensorRT-LLM's: no vLLM row here sets them.
# Its custom all-reduce takes buffers up to 8 MiB on 2, 4, 6 or 8 GPUs, NCCL larger ones
# (CustomAllreduce(max_size=8192 * 1024), vllm/distributed/device_communicators/
# custom_all_reduce.py). Its scheduler is vLLM's own (mixed_step), its CPU time a request
# not counted (no published figure a request and step). A mixture-of-experts
# layer runs its fused MoE (Triton): Qwen3-30B-A3B's at batch 1 on an H100 took 44.54 us
# (benchmark_moe.py, fp8_w8a8, vllm-project/vllm#24700), of which reading the 8 experts one
# token routes to (37.7 MB at 89% of the H100's achievable 2.97 TB/s) takes 14 us: 30 us a
# layer beyond the read.
VLLM = replace(
    BATCHED,
    bandwidth_efficiency=0.89,
    custom_allreduce_limits=((8, 8 * 1024 * 1024),),
    moe_layer_overhead_s=30e-6,
    host_request_s=0.0,
    moe_gemm_share=VLLM_MOE_GEMM_SHARE,
    moe_pair_fp32_flop=0.0,
)
# Local runner (llama.cpp CUDA): fitted to llama-bench tg 1024 on a 4090 (Llama 3 8B Q4_K_M
# 127.74 tok/s, F16 54.34) and two 3090s (70B Q4_K_M 16.29): ~89% of the achievable bandwidth
# and ~70 us of launches per layer and token (a dozen kernels per layer without CUDA
# graphs); prefill at ~67% of the achievable 16-bit matmul rate of those GeForce cards,
# whose FP16-accumulate rate is 2.0x it (llama-bench pp 1024 on the same cards: 8B 3865-9056
# tok/s, 70B on two cards 394-905 tok/s). llama.cpp multiplies 16-bit and dequantized weights
# with cuBLAS at CUBLAS_COMPUTE_16F ("convert src0 and src1 to fp16, multiply as fp16",
# ggml-cuda.cu ggml_cuda_op_mul_mat_cublas, as the 2024 builds of those runs did for every
# prompt-sized matmul), so the share is of the FP16-accumulate rate: 0.67 / 2.0 = 0.335, the
# same figures on the cards it was chosen on and half of them where FP16 accumulation is no
# faster (A100, H100, L40S, RTX A-series).
LOCAL = EngineProfile(
    bandwidth_efficiency=0.89,
    compute_efficiency=0.335,
    layer_overhead_s=70e-6,
    allreduce_latency_s=20e-6,
    accumulates_fp16=True,
)
# SGLang (0.5.x: decode captured in CUDA graphs, FlashInfer attention, the scheduler's CPU
# work overlapped with the GPU's, its prompts in prefill passes of their own). Solved, as vLLM's
# was, from two of its own batch-1 rows on one card, the same harness and release: AccelMark's
# serial ("interactive") runs of SGLang 0.5.6 on an A100 SXM4 40GB, TPOT p50 12.93 ms for Meta
# Llama 3 8B Instruct and 1.89 ms for Qwen2.5-0.5B Instruct, both bf16 (FreedomIntelligence/
# AccelMark issues #37 and #43, result.json). The two models' weight reads differ 16x, so the
# rows part the bandwidth share from the fixed time a layer (SGLANG_FIT_ROWS in
# tests/model/test_serving_sglang.py solves them again). Its all-reduce below 8 MiB is its own
# kernel on 2, 4, 6 or 8 GPUs (CustomAllreduce._MAX_CAR_SIZE = 8192 * 1024, python/sglang/
# srt/distributed/device_communicators/custom_all_reduce.py @263bc85d), NCCL's above. The
# compute share, the MoE layer's fixed time (its fused MoE is the Triton kernel vLLM's came
# from) and the CPU time a request are vLLM's: no SGLang row here sets them.
SGLANG = replace(
    VLLM,
    bandwidth_efficiency=0.976,
    layer_overhead_s=47.5e-6,
)
ENGINES = {Engine.BATCHED: BATCHED, Engine.VLLM: VLLM, Engine.SGLANG: SGLANG, Engine.LOCAL: LOCAL}
# The engines' fixed time a layer was set on dense models, whose decode layer runs about ten
# kernels (SGLang's Llama: add-RMSNorm, QKV GEMM, rotary, KV write, attention, O GEMM,
# add-RMSNorm, gate-up GEMM, SiLU-and-mul, down GEMM; python/sglang/srt/models/llama.py).
# Multi-head latent attention decodes in its absorbed form with eight kernels more a layer:
# the query's and the latent's norms, the query's second projection, and on each side of the
# attention a per-tensor quantization and the batched GEMM that folds the key or value
# up-projection into the query or the output, then the copy that flattens the heads
# (DeepseekV2AttentionMLA.forward_absorb_prepare and forward_absorb_core,
# python/sglang/srt/models/deepseek_v2.py @3e4a39ee). Each costs what a dense layer's kernel
# does.
DENSE_LAYER_KERNELS = 10
LATENT_ATTENTION_EXTRA_KERNELS = 8
# A request's time in the serving stack beside the GPU's work, in its time to first token:
# the HTTP server parsing it, the tokenizer, the hand-off to the engine, the first token's
# detokenization and its streamed chunk back. Chosen on InferenceBench's one-user row (Llama
# 3.1 8B fp16 on an H100 SXM, vLLM 0.21.0, 128-token prompts: 13.98 ms p50): its time less
# the prompt's pass alone (alone_prefill_s). Hosts slower than that dedicated server's add
# more: a 4-vCPU L4 VM and a k3s-served RTX A6000 took 19 and 22 ms beyond their passes
# (bench/bench_serving.py TTFT_POINTS).
REQUEST_OVERHEAD_S = 5.9e-3

# TensorRT-LLM's inflight batching schedules the waiting requests' prompts into an iteration
# until its max_num_tokens is spent ("Tuning Max Batch Size and Max Num Tokens", TensorRT-LLM
# performance tuning guide): serving_memory.BATCHED_MAX_NUM_TOKENS unless
# serve.max_num_tokens sets it.
# It runs at most max_batch_size requests at once, 2,048 unless set (LlmArgs.max_batch_size,
# tensorrt_llm/llmapi/llm_args.py); trtllm-bench's throughput runs set it from the KV cache
# the run's lengths leave, capped at 4,096 (tensorrt_llm/bench/build/tuning.py,
# finetune_setting).
BATCHED_MAX_BATCH_SIZE = 2048

# vLLM's V1 scheduler has no prefill phase: each step gives every running request its next
# token, then fills what is left of the step's token budget with waiting prompts, in chunks
# (vllm/v1/core/sched/scheduler.py, Scheduler.schedule: "There's no 'decoding phase' nor
# 'prefill phase' in the scheduler", vllm-project/vllm @00024d3). Its OpenAI-compatible
# server's defaults (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, @99d7eb5): on a
# card of 70 GiB or more whose name has no "a100", max_num_seqs 1,024 and
# max_num_batched_tokens 8,192; on any other card 256 and 2,048.
VLLM_LARGE_CARD_BYTES = gib_to_bytes(70)
VLLM_MAX_NUM_SEQS = {False: 256, True: 1024}
VLLM_MAX_BATCHED_TOKENS = {False: 2048, True: 8192}
# Its prefix cache skips the shared prefix's whole blocks and holds their KV once
# (serving_memory.cached_prefix_tokens, VLLM_BLOCK_TOKENS).

# SGLang's scheduler runs waiting prompts in prefill passes of their own, as many as its
# chunked_prefill_size takes (mixing them into decode steps, --enable-mixed-chunk, is off by
# default), and at most max_running_requests at once: min(the KV pool's tokens // 2, its
# request pool), the pool 2,048, or up to 4,096 where the KV pool holds more than four of the
# model's longest contexts, which a serve block does not state (managers/tp_worker.py,
# model_executor/model_runner.py, release 0.5.5.post1); the whole contexts the KV cache holds
# bind before the tokens // 2 wherever a context is longer than 2 tokens, so the pool's 2,048
# is its default here.
SGLANG_MAX_RUNNING_REQUESTS = 2048

# The 80% interval a serving speed carries, measured / predicted, set as the training one is
# (scripts/interval_band.py): the 10th and 90th percentile over the published points of every
# serving source a constant above was chosen on (llama-bench, NVIDIA's H200 batch-1, TensorRT-
# LLM's perf-overview rows, vLLM's and SGLang's batch-1 rows, vLLM's concurrency sweeps, AMD's
# vLLM tables, Oracle's MI300X sweep, MLPerf v4.1's Llama 2 70B Offline runs and the
# perf-overview's NVFP4 Blackwell rows: bench/provenance.toml),
# each source weighing 1, widened until the
# sources, each left out in turn, have 80% of their rows inside the others' band (a fit's
# residuals understate its error on a source it never saw).
# bench/held_out.serving_band computes it, and tests/model/test_serving_band.py holds this copy
# to it; bench_accuracy.py reports what share of each source's rows it covers.
SERVING_RATIO_BAND = (0.867, 1.147)
# A mixture of experts' steps are timed from its experts' reads, their FLOPs at MOE_GEMM_SHARE
# of the dense GEMMs' rate, its MoE path's fixed time a layer (EngineProfile.
# moe_layer_overhead_s) and on TensorRT-LLM the CUDA-core work a routed (token, expert) pair
# (routed_pair_s); on TensorRT-LLM's published MoE rows (bench/bench_serving.py TRTLLM_MOE)
# that still runs fast on most rows, the more so on the 80 GB H100s. Its figures carry an
# interval of their own, set as the dense one is (bench/held_out.moe_serving_band: the
# training interval's method, scripts/interval_band.py) over the MoE calibration rows with
# each model of TensorRT-LLM's table a unit left out in turn, a new mixture of experts being
# what the band must hold; it lies mostly below the figure. tests/model/test_serving_band.py
# holds this copy to it.
MOE_RATIO_BAND = (0.711, 1.137)
MOE_NOTE = (
    "a mixture of experts: its steps are timed from the experts' reads, their GEMMs at "
    f"{MOE_GEMM_SHARE:g} of a dense GEMM's rate ({VLLM_MOE_GEMM_SHARE:g} on vLLM and SGLang's "
    "fused MoE), the MoE path's fixed time a layer and TensorRT-LLM's work on each routed "
    "token, which "
    "still runs fast on most of TensorRT-LLM's published MoE rows (bench/bench_serving.py), "
    f"so its interval, {MOE_RATIO_BAND[0]:.2f}-{MOE_RATIO_BAND[1]:.2f}x the figure, lies "
    "mostly below it (each of those models left out in turn)"
)


def serving_ratio_band(spec: ServeSpec) -> tuple[float, float]:
    """The interval on a serving figure, measured / predicted: SERVING_RATIO_BAND, or
    MOE_RATIO_BAND for a mixture of experts (MOE_NOTE)."""
    return MOE_RATIO_BAND if spec.is_moe else SERVING_RATIO_BAND


# On AMD Instinct, vLLM and SGLang run their own all-reduce kernel below 16 MB and RCCL above
# it ("for data sizes smaller than 16 MB ... falls back to using PyNccl (RCCL)": AMD ROCm blog,
# "QuickReduce: Up to 3x Faster All-reduce for vLLM and SGLang", 2025-08-26). Below it the
# engine's small-message latency holds: vLLM's custom all-reduce on MI300X takes 7.1-7.7 us up
# to 64 KB on 2 GPUs and 7.2-7.6 us up to 32 KB on 4 (ROCm/aiter#801, vllm-project/vllm#19744),
# as the 8 us the batched profile assumes.
ROCM_CUSTOM_ALLREDUCE_MAX_BYTES = 16 * MB
# An all-reduce over PCIe goes through the host bridge: slower to start than NVLink.
PCIE_ALLREDUCE_LATENCY_S = 25e-6
# A pipeline hop hands one token's hidden state to the next card over PCIe.
PIPELINE_HOP_S = 20e-6
ACTIVATION_BYTES = 2  # hidden states travel in 16 bits
TOKENS_PER_MILLION = 1e6
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Cards:
    """The GPUs serving: the slowest group paces them all (as the training model does)."""

    gpu: GPU
    count: int
    allreduce_busbw_gb_s: float
    nvlink: bool
    memory_bytes: float  # one card's, the smallest's (memory.gpu_memory_bytes)


@dataclass(frozen=True)
class ServingEstimate:
    """Serving figures at the asked concurrency (seconds, tokens/s, memory in GiB)."""

    model: str
    engine: str
    quantization: str
    kv_precision: str
    gpus: int
    gpu: str
    parallelism: str
    users: int
    prompt_tokens: int
    output_tokens: int
    prefill_s: float
    decode_step_s: float
    ttft_s: float
    # the last first token when every running user asks at once (first_token_all_at_once_s)
    ttft_all_at_once_s: float
    tpot_s: float
    host_step_s: float  # the engine's CPU time an iteration (host_step_s), overlapping the GPU
    host_wait_s: float  # of tpot_s, the time the GPU waits on the host: 0 unless the host binds
    tokens_per_s_per_user: float
    tokens_per_s_total: float
    batch1_tokens_per_s: float
    max_users_fit: int
    running_per_copy: int  # requests one copy runs at once; the rest wait (users_waiting)
    users_waiting: int  # of all the asked users, those waiting for a slot at any time
    queue_wait_s: float  # a waiting user's time in the queue, part of ttft_s
    max_users_at_target: int | None
    min_tokens_per_s_per_user: float | None
    weights_gb: float
    kv_per_user_gb: float
    kv_shared_gb: float  # the prompt prefix every user shares, held once per copy
    kv_per_token_per_layer_bytes: float
    kv_capacity_gb: float
    memory_available_gb: float
    fits: bool
    offloaded_fraction: float
    binding: ServingLimit
    decode_parts_s: dict[str, float]
    notes: tuple[str, ...]
    load: ServingLoad | None = None  # under Poisson arrivals (dlrig.model.serving_load)
    batch: BatchRun | None = None  # serve.requests sent at once (dlrig.model.serving_batch)


def cards(build: Build, cal: Calibration) -> Cards | None:
    """The build's GPUs as one serving group, with the all-reduce bandwidth between them."""
    if not build.gpus:
        return None
    group = min(build.gpus, key=lambda g: g.gpu.memory_bandwidth_gb_s)
    n = build.gpu_count
    gen, lanes = pcie_link(build, group, [])
    bus = busbw_gb_s(build, group.gpu, n, gen, lanes, cal)
    pcie_bus = pcie.pcie_theoretical_gb_s(gen, lanes) * cal.pcie_busbw_efficiency
    smallest = min(gpu_memory_bytes(g.gpu) for g in build.gpus)
    return Cards(group.gpu, n, bus, nvlink=n > 1 and bus > pcie_bus, memory_bytes=smallest)


def compute_precision(spec: ServeSpec) -> Precision:
    """The matmul precision: fp8 weights run fp8 matmuls; int8/int4 weights are dequantized
    to 16 bits (weight-only AWQ/GPTQ and llama.cpp kernels), as are 16-bit weights and 4-bit
    floats on a card without FP4 tensor cores (achievable_matmul_flops_s)."""
    return Precision.FP8 if spec.quantization is WeightFormat.FP8 else Precision.BF16


# Tensor cores that multiply 4-bit floats run them at twice their FP8 rate: Blackwell's fifth
# generation (B200 4.5 PFLOPS dense FP8, 9 FP4, NVIDIA DGX B200 datasheet's 72/144 PFLOPS over
# 8 GPUs; RTX 5090 838 and 1,676 dense TFLOPS, NVIDIA RTX Blackwell GPU architecture
# whitepaper) and CDNA 4 (MI355X, the catalog's figure). A catalog `fp4_tensor_tflops` wins
# (B300's Blackwell Ultra cores run FP4 faster still).
FP4_TENSOR_ARCHITECTURES = {"Blackwell", "Blackwell Ultra", "CDNA 4"}


# What FP4 GEMMs reach of the datasheet's FP4 over FP8 gain. Measured on a B200 with vLLM's
# CUTLASS kernels, Llama 3.1 8B's N = 6,144, K = 4,096 projection, inputs already quantized, at
# M = 1,024 rows (the largest M both were timed at on that shape): FP8 (per-channel weights,
# per-token activations) 2,341 TFLOPS (vllm-project/vllm#19566), NVFP4 2,895 TFLOPS
# (vllm-project/vllm#20646): 1.24x where the datasheet says 2x, a share of 0.62. The same pair
# gives 0.81x at M = 256 and 1.19x at 512; NVFP4 alone reaches 3,904 at M = 16,384. Looked for
# after TensorRT-LLM's NVFP4 Blackwell rows (bench_serving.TRTLLM_MORE) came out 29-40% fast
# with the full 2x; the share is the kernels', not fitted on those rows.
FP4_GAIN_SHARE = 1.24 / 2.0


def fp4_per_fp8_rate(gpu: GPU) -> float | None:
    """The card's dense FP4 over FP8 matrix rate, None where its tensor cores have no FP4
    (the weights are then dequantized to 16 bits for the matmul, as int4 weights are)."""
    if gpu.fp4_tensor_tflops and gpu.fp8_tensor_tflops:
        return gpu.fp4_tensor_tflops / gpu.fp8_tensor_tflops
    if gpu.architecture in FP4_TENSOR_ARCHITECTURES and gpu.fp8_tensor_tflops:
        return 2.0
    return None


# Blackwell's graphics dies (GB20x, sm_120: GeForce RTX 50, RTX PRO Blackwell) multiply
# block-scaled FP4 at their tensor cores' full rate, GeForce included: its halved FP32-accumulate
# rate spares the block-scaled MMA (an RTX 5090's nvf4 mma.sync loop retires 1,474 TFLOPS where
# FP8 accumulating in FP32 retires 370; main-horse.github.io/posts/5090-mm-perf). And their
# NVFP4 GEMMs reach most of it: torch._scaled_mm (cuBLASLt) on an RTX 5090, 1,310 TFLOPS at
# 4096^3 of its 1,676 dense (Dao-AILab/quack#153, 2026-06-15): 0.78, where a B200's FP4
# kernels gain only 1.24x over its FP8 ones (FP4_GAIN_SHARE). Looked for after the RTX PRO 6000's
# NVFP4 Llama 3.3 70B rows (bench_serving.TRTLLM_MORE) came out 7-39% slow on FP4_GAIN_SHARE.
FP4_GRAPHICS_BLACKWELL_SHARE = 0.78


def graphics_blackwell(gpu: GPU) -> bool:
    """A Blackwell graphics die (sm_120, GDDR7 memory), not the HBM datacenter parts (sm_100:
    B200, GB200, B300), whose tensor cores and FP4 kernels differ."""
    return gpu.architecture == "Blackwell" and not gpu.memory_type.upper().startswith("HBM")


def fp4_matmul_tflops(gpu: GPU) -> float | None:
    """The FP4 GEMM rate the card reaches (activations quantized to FP4 too, as TensorRT-LLM's
    NVFP4 runs): on a Blackwell graphics die, its dense FP4 peak (twice its full-rate FP8) x
    FP4_GRAPHICS_BLACKWELL_SHARE; elsewhere its achievable FP8 rate x the datasheet's FP4 gain x
    FP4_GAIN_SHARE. None without FP4 tensor cores."""
    ratio = fp4_per_fp8_rate(gpu)
    if ratio is None or not gpu.fp8_tensor_tflops:
        return None
    if graphics_blackwell(gpu):
        peak = ratio * gpu.fp8_tensor_tflops * fp16_accumulate_speedup(gpu)
        return peak * FP4_GRAPHICS_BLACKWELL_SHARE
    return achievable_matmul_tflops(gpu, Precision.FP8) * ratio * FP4_GAIN_SHARE


def fp4_note(spec: ServeSpec, gpu: GPU) -> str:
    """What the estimate says of 4-bit float weights' GEMMs on the card (fp4_matmul_tflops)."""
    fp4 = fp4_matmul_tflops(gpu)
    head = f"{spec.quantization.value} weights: {gpu.name}"
    if fp4 is None:
        return (
            f"{head} has no FP4 tensor cores, so they are dequantized to 16 bits for each matmul "
            "(weight-only, as int4)"
        )
    fp8 = achievable_matmul_tflops(gpu, Precision.FP8)
    why = (
        f"{FP4_GRAPHICS_BLACKWELL_SHARE:.0%} of its dense FP4 peak, what NVFP4 GEMMs reach on an "
        "RTX 5090"
        if graphics_blackwell(gpu)
        else f"{fp4 / fp8:.2f}x its FP8 rate where its datasheet says "
        f"{fp4_per_fp8_rate(gpu):g}x, the share NVFP4 kernels reached on a B200"
    )
    return f"{head}'s FP4 GEMMs reach {fp4:,.0f} TFLOPS (activations quantized too): {why}"


def fp16_accumulate_speedup(gpu: GPU) -> float:
    """How much faster the card's tensor cores multiply 16-bit matrices accumulating in FP16
    than in FP32: the datasheet's two FP16 rates, 2x on GeForce (NVIDIA's Ada and Ampere
    GeForce whitepapers), 1 where only one is stated (professional and datacenter cards run
    FP32 accumulation at full rate)."""
    if gpu.fp16_tensor_fp16acc_tflops and gpu.fp16_tensor_tflops:
        return gpu.fp16_tensor_fp16acc_tflops / gpu.fp16_tensor_tflops
    return 1.0


def achievable_matmul_flops_s(gpu: GPU, spec: ServeSpec, *, decode: bool = False) -> float:
    """FLOP/s one card's matmuls reach in this engine: the card's achievable dense matmul rate
    (dlrig.model.rates) x the engine's share; a decode step's GEMMs, where the card's vendor
    library was timed on decode shapes, at the rate those kernels reach once their FLOPs bind
    (rates.measured_decode_matmul_tflops). 4-bit float weights on FP4 tensor cores run at the
    FP4 GEMM rate (fp4_matmul_tflops)."""
    fp4 = fp4_matmul_tflops(gpu) if spec.quantization.is_fp4 else None
    profile = ENGINES[spec.engine]
    timed = (
        measured_decode_matmul_tflops(gpu, compute_precision(spec))
        if decode and fp4 is None and spec.engine.is_batched
        else None
    )
    if timed is not None:
        return tflops_to_flops(timed)
    if fp4 is not None:
        return tflops_to_flops(fp4) * profile.compute_efficiency
    return _engine_rate_flops_s(gpu, spec, compute_precision(spec))


def _engine_rate_flops_s(gpu: GPU, spec: ServeSpec, precision: Precision) -> float:
    """The card's achievable dense matmul rate at `precision` (16-bit products faster where
    the engine accumulates in FP16) x the engine's share."""
    profile = ENGINES[spec.engine]
    rate = tflops_to_flops(achievable_matmul_tflops(gpu, precision))
    if profile.accumulates_fp16 and precision is not Precision.FP8:
        rate *= fp16_accumulate_speedup(gpu)
    return rate * profile.compute_efficiency


def attention_precision(spec: ServeSpec) -> Precision:
    """The precision attention's score and value products run in: FP8 where the KV cache is
    FP8 (FP8 attention kernels take the cache as stored: TensorRT-LLM's FP8 FMHA,
    FlashAttention-3's FP8 path), else 16 bits. Never the weights' 4 bits: attention
    multiplies activations by cached keys and values, which no engine holds in FP4."""
    return Precision.FP8 if spec.kv_precision is KVPrecision.FP8 else Precision.BF16


def attention_flops_s(gpu: GPU, spec: ServeSpec) -> float:
    """FLOP/s one card's attention products reach: the card's achievable dense matmul rate at
    attention_precision x the engine's share, as its weight GEMMs'."""
    return _engine_rate_flops_s(gpu, spec, attention_precision(spec))


# The weight GEMMs of one transformer layer in a batched server: vLLM's Llama layer runs
# qkv_proj (QKVParallelLinear), o_proj, gate_up_proj (MergedColumnParallelLinear) and
# down_proj (vllm/model_executor/models/llama.py); a mixture of experts runs at least as many.
GEMMS_PER_LAYER = 4
# A GEMM's weight read and its FLOPs overlap, but not perfectly near the ridge where they take
# as long: its time is their power mean (read^p + flops^p)^(1/p). p = 1.5 joins best the 18
# dense FP8 GEMMs DeepGEMM timed on an H800 (M = 64, 128 and 4,096 rows; scripts/
# gemm_overlap.py: least mean |error| over p = 1.0-3.0 in steps of 0.1, 14.8%, at the batched
# engine's 0.74 share of the H100's achievable FP8 rate and its achievable copy bandwidth;
# the plain maximum errs 22.5% there). Chosen on no serving row, but after the serving rows at
# 100-500 sequences a step had been seen to run slower than the maximum gives.
GEMM_OVERLAP_EXPONENT = 1.5


def decode_gemm(gpu: GPU, spec: ServeSpec, batch: int) -> DecodeGemm | None:
    """How a batched server's decode GEMMs of `batch` rows run where the card's vendor library
    was timed on decode shapes (dlrig.model.rates.measured_decode_gemm: a fixed time per
    kernel, then the weights at a measured rate); None where the engine's share of the copy
    bandwidth stands for it (every NVIDIA card, a local runner's own kernels, FP4 weights)."""
    if not spec.engine.is_batched or spec.quantization.is_fp4:
        return None
    return measured_decode_gemm(gpu, compute_precision(spec), max(batch, 1))


def achievable_bandwidth_bytes_s(gpu: GPU, spec: ServeSpec) -> float:
    """Bytes/s one card's decode kernels read: its achievable bandwidth (dlrig.model.rates,
    a copy kernel) x the engine's share."""
    achievable = gb_s_to_bytes_s(achievable_memory_bandwidth_gb_s(gpu))
    return achievable * ENGINES[spec.engine].bandwidth_efficiency


def experts_touched_fraction(spec: ServeSpec, batch: int) -> float:
    """Share of routed experts a decode step reads: each of `batch` tokens picks k of E
    experts, so an expert is missed by all with probability (1 - k/E)^batch."""
    if not spec.is_moe or spec.experts is None or spec.experts_per_token is None:
        return 1.0
    return 1.0 - (1.0 - spec.experts_per_token / spec.experts) ** max(batch, 1)


def weight_bytes_per_step(spec: ServeSpec, batch: int, gpus: int = 1) -> float:
    """Weight bytes one decode step reads on a copy's `gpus` cards: the dense part of the
    layers, the experts the batch routes to, and the output head (the embedding is a lookup
    of one row); under attention data parallelism every card reads the dense part and the
    head for its own requests."""
    routed = mem.routed_expert_params(spec)
    dense_layers = max(mem.layer_params(spec) - routed, 0.0)
    if spec.is_moe:
        dense_layers = max(
            spec.active_params
            - routed * experts_touched_fraction(spec, 1)
            - mem.embedding_params(spec),
            0.0,
        )
    dense = dense_layers * mem.weight_bits(spec) + mem.head_params(spec) * mem.head_bits(spec)
    experts = routed * experts_touched_fraction(spec, batch) * mem.weight_bits(spec)
    readers = gpus if spec.attention_data_parallel else 1
    return (readers * dense + experts) / BITS_PER_BYTE


def _positions_within_chunks(first: float, last: float, chunk: int) -> float:
    """Mean of (p mod chunk) + 1 over positions p from `first` to `last`: the tokens a query
    at p attends to when attention stays within chunks of `chunk` tokens."""

    def integral(x: float) -> float:  # of (t mod chunk) from 0 to x
        whole, part = divmod(x, chunk)
        return whole * chunk * chunk / 2.0 + part * part / 2.0

    if last <= first:
        return first % chunk + 1.0
    return (integral(last) - integral(first)) / (last - first) + 1.0


def attended_context(spec: ServeSpec) -> float:
    """Tokens one decode step's query attends to, averaged over the layers: the mean decode
    context (the prompt plus half the answer) in a layer that sees it all; in a chunked
    local-attention layer (Llama 4) only the tokens of its own chunk so far."""
    first, last = float(spec.prompt_tokens), float(spec.prompt_tokens + spec.output_tokens)
    whole = (first + last) / 2.0
    if spec.attention_chunk_tokens is None:
        return whole
    local = _positions_within_chunks(first, last, spec.attention_chunk_tokens)
    chunked = spec.chunked_attention_layers
    return ((spec.layers - chunked) * whole + chunked * min(local, whole)) / spec.layers


def kv_bytes_per_step(spec: ServeSpec, batch: int) -> float:
    """KV-cache bytes one decode step reads: each sequence's cache at the context its query
    attends to (attended_context: the prompt plus half the answer, less in chunked layers)."""
    return batch * attended_context(spec) * mem.kv_bytes_per_token(spec)


def attention_dim(spec: ServeSpec) -> float:
    """Query heads x head dimension: the width of attention's score and value products."""
    return float(spec.heads * spec.head_dim)


def prefill_flops(spec: ServeSpec, prompt_tokens: int) -> float:
    """FLOPs of one prompt: its linear layers' (prefill_matmul_flops) plus its causal
    attention's (prefill_attention_flops)."""
    return prefill_matmul_flops(spec, prompt_tokens) + prefill_attention_flops(spec, prompt_tokens)


def prefill_attention_flops(spec: ServeSpec, prompt_tokens: int) -> float:
    """FLOPs of one prompt's causal attention, QK^T and PV over half the P x P scores:
    2 x L x P^2 x heads x dim; a chunked local-attention layer takes each chunk's square
    alone."""
    whole = float(prompt_tokens) ** 2
    squares = whole * spec.layers
    if spec.attention_chunk_tokens is not None:
        full, rest = divmod(prompt_tokens, spec.attention_chunk_tokens)
        local = full * float(spec.attention_chunk_tokens) ** 2 + float(rest) ** 2
        squares += spec.chunked_attention_layers * (local - whole)
    return 2.0 * squares * attention_dim(spec)


def prefill_matmul_flops(spec: ServeSpec, prompt_tokens: int) -> float:
    """FLOPs of one prompt's linear layers: 2 per active weight per token (the embedding is a
    lookup)."""
    return 2.0 * (spec.active_params - mem.head_params(spec)) * prompt_tokens


def matmul_time_factor(spec: ServeSpec) -> float:
    """How much longer a mixture of experts' linear layers take than the same FLOPs at the
    dense GEMMs' rate: the routed experts' share of the FLOPs runs at the engine's
    moe_gemm_share of it."""
    if not spec.is_moe or spec.experts is None or spec.experts_per_token is None:
        return 1.0
    routed = mem.routed_expert_params(spec) * spec.experts_per_token / spec.experts
    share = routed / max(spec.active_params - mem.embedding_params(spec) / 2.0, 1.0)
    return 1.0 + share * (1.0 / ENGINES[spec.engine].moe_gemm_share - 1.0)


def routed_pair_s(spec: ServeSpec, c: Cards, tokens: float) -> float:
    """Seconds the copy's cards spend on the CUDA-core work of `tokens` tokens' routed (token,
    expert) pairs, every MoE layer's (EngineProfile.moe_pair_fp32_flop at the card's FP32
    rate), split over the cards as the experts are."""
    if not spec.is_moe or spec.experts_per_token is None:
        return 0.0
    pairs = tokens * spec.experts_per_token * spec.moe_layers
    work = pairs * ENGINES[spec.engine].moe_pair_fp32_flop
    return work / (split_ways(spec, c) * tflops_to_flops(c.gpu.fp32_tflops))


def prefill_timed_flops(spec: ServeSpec, prompt_tokens: int) -> float:
    """A prompt's linear layers' FLOPs as the dense GEMMs' rate times them: stretched by
    matmul_time_factor (a mixture of experts' routed GEMMs). Its attention is timed apart, at
    its own rate (attention_flops_s)."""
    return prefill_matmul_flops(spec, prompt_tokens) * matmul_time_factor(spec)


def decode_gemm_flops(spec: ServeSpec, batch: int) -> float:
    """FLOPs of one decode step's linear layers: 2 per active weight per sequence (the
    embedding is a lookup; the output head multiplies)."""
    return batch * 2.0 * (spec.active_params - mem.embedding_params(spec) / 2.0)


def decode_attention_flops(spec: ServeSpec, batch: int) -> float:
    """FLOPs of one decode step's attention: QK^T and PV of one query over the context it
    attends to (attended_context), 4 x L x context x heads x dim."""
    return batch * 4.0 * spec.layers * attended_context(spec) * attention_dim(spec)


def allreduce_latency_s(spec: ServeSpec, c: Cards, buffer_bytes: float) -> float:
    """Start-up time of one all-reduce: the engine's own kernel over NVLink or Infinity Fabric,
    except on AMD Instinct above ROCM_CUSTOM_ALLREDUCE_MAX_BYTES, where RCCL's measured fixed
    cost over the Infinity Fabric mesh applies (interconnect.XGMI_COLLECTIVE_LATENCY_S); the
    host bridge's over PCIe."""
    if not c.nvlink:
        return PCIE_ALLREDUCE_LATENCY_S
    if c.gpu.vendor is Vendor.AMD and buffer_bytes > ROCM_CUSTOM_ALLREDUCE_MAX_BYTES:
        return XGMI_COLLECTIVE_LATENCY_S
    return ENGINES[spec.engine].allreduce_latency_s


def goes_to_nccl(spec: ServeSpec, c: Cards, buffer_bytes: float) -> bool:
    """An all-reduce over NVIDIA's NVLink larger than the engine's own kernel takes on this many
    GPUs (EngineProfile.custom_allreduce_limits) runs in NCCL."""
    if not c.nvlink or c.gpu.vendor is Vendor.AMD:
        return False
    limits = ENGINES[spec.engine].custom_allreduce_limits
    limit = next((b for gpus, b in limits if c.count <= gpus), limits[-1][1])
    return buffer_bytes > limit


def allreduce_notes(spec: ServeSpec, c: Cards, batch: int) -> list[str]:
    """What runs a decode step's all-reduces, where NCCL does (goes_to_nccl)."""
    if not spec.engine.is_batched or c.count <= 1:
        return []
    buffer_bytes = allreduce_buffer_bytes(spec, max(batch, 1))
    if not goes_to_nccl(spec, c, buffer_bytes):
        return []
    share = curve_fraction(NVLINK_ALLREDUCE_CURVE, buffer_bytes)
    return [
        f"each decode step's {collectives_per_step(spec)} all-reduces of "
        f"{buffer_bytes / MB:.1f} MB run in "
        f"NCCL (above the {spec.engine.value} engine's own kernel's limit on {c.count} GPUs), at "
        f"{share:.0%} of the link's large-message bus bandwidth for that size"
    ]


def collectives_per_step(spec: ServeSpec) -> int:
    """All-reduces a step runs over the copy's cards: two a layer under tensor parallelism
    (after attention and after the feed-forward); under attention data parallelism one
    all-gather of the tokens to the experts' cards and one reduce-scatter of their outputs
    a mixture-of-experts layer, together an all-reduce's bytes and steps."""
    return spec.moe_layers if spec.attention_data_parallel else 2 * spec.layers


def allreduce_buffer_bytes(spec: ServeSpec, tokens: int) -> float:
    """One tensor-parallel all-reduce's buffer: the hidden state of `tokens` tokens."""
    return tokens * spec.hidden_size * ACTIVATION_BYTES


def allreduce_s(spec: ServeSpec, c: Cards, tokens: int) -> float:
    """The copy's all-reduces of the hidden states of `tokens` (collectives_per_step), each a
    ring over the cards: the engine's own kernel at its start-up latency
    plus the ring's bytes at the link's bus bandwidth, or in NCCL (goes_to_nccl) at the bus
    bandwidth NCCL measures for the buffer's size (interconnect.nvlink_ring_s)."""
    if not spec.engine.is_batched or c.count <= 1:
        return 0.0
    buffer_bytes = allreduce_buffer_bytes(spec, tokens)
    bus_factor = ring_allreduce_bus_factor(c.count)
    if goes_to_nccl(spec, c, buffer_bytes):
        per_reduce = nvlink_ring_s(buffer_bytes, bus_factor, c.allreduce_busbw_gb_s)
    else:
        per_reduce = allreduce_latency_s(spec, c, buffer_bytes)
        per_reduce += buffer_bytes * bus_factor / gb_s_to_bytes_s(c.allreduce_busbw_gb_s)
    return collectives_per_step(spec) * per_reduce


def with_host_s(gpu_s: float, host_s: float) -> float:
    """An iteration's time when the host prepares the next while the GPU runs this one: the
    power mean of the two at HOST_OVERLAP_EXPONENT (compute.overlapped_s), the longer of the
    two where one is far the larger."""
    return overlapped_s(gpu_s, host_s, HOST_OVERLAP_EXPONENT)


def host_step_s(spec: ServeSpec, c: Cards, running: int) -> float:
    """The engine's CPU time an iteration: its time a request (EngineProfile.host_request_s,
    GRACE_HOST_SLOWDOWN longer on a superchip's Grace) for each request one scheduler runs (the
    copy's, or one GPU's under attention data parallelism, each GPU a process of its own)."""
    per_request = ENGINES[spec.engine].host_request_s
    if c.gpu.superchip_cpu == "grace":
        per_request *= GRACE_HOST_SLOWDOWN
    ranks = c.count if spec.attention_data_parallel else 1
    return per_request * math.ceil(running / ranks)


def split_ways(spec: ServeSpec, c: Cards) -> int:
    """How many cards share one step's work at once: all of them under tensor parallelism,
    one at a time in a local runner's layer split."""
    return c.count if spec.engine.is_batched else 1


def prefill_s(spec: ServeSpec, c: Cards, together: int = 1) -> float:
    """Seconds to prefill one prompt beside other work: the FLOPs of the tokens it computes
    (computed_prompt_tokens: a cached prefix's are skipped) on the cards working at once,
    plus its share of the all-reduces of the hidden states of the `together` prompts computed
    in one pass (prompts_per_pass): each all-reduce's start-up is paid once for all of them."""
    computed = computed_prompt_tokens(spec) / max(spec.prompt_tokens, 1)
    ways = split_ways(spec, c)
    linear = prefill_timed_flops(spec, spec.prompt_tokens) * computed
    attention = prefill_attention_flops(spec, spec.prompt_tokens) * computed
    compute = linear / (ways * achievable_matmul_flops_s(c.gpu, spec))
    compute += attention / (ways * attention_flops_s(c.gpu, spec))
    compute += routed_pair_s(spec, c, spec.prompt_tokens * computed)
    return compute + allreduce_s(spec, c, together * spec.prompt_tokens) / together


def prompts_per_pass(spec: ServeSpec, running: int, memory_bytes: float) -> int:
    """Prompts a batched server computes in one pass when `running` requests start together
    (a closed loop's answers end in the same step): as many whole prompts as its token budget
    a step takes (serving_memory.batched_max_num_tokens; SGLang's chunked prefill,
    serving_memory.sglang_chunked_prefill_tokens, on a card of `memory_bytes`). One on vLLM,
    whose prompts ride in the decode steps (mixed_step), and on a local runner, which
    computes them one at a time."""
    if spec.engine is Engine.BATCHED:
        budget = mem.batched_max_num_tokens(spec)
    elif spec.engine is Engine.SGLANG:
        budget = mem.sglang_chunked_prefill_tokens(spec, memory_bytes)
    else:
        return 1
    return max(1, min(running, budget // max(spec.prompt_tokens, 1)))


def alone_prefill_s(
    spec: ServeSpec, c: Cards, offloaded: float, host_gb_s: float, overlap_exponent: float
) -> float:
    """Seconds of a prompt prefilled in a pass of its own, as a lone user's is: the pass reads
    every weight once, as a decode step does (with the layers left in RAM, the engine's time a
    layer), beside the FLOPs of the tokens it computes at the prefill rate, all of them on the
    cards (prefill_s), and all-reduces their hidden states. Prompts prefilled beside other work
    share the read with it (prefill_s counts their FLOPs alone)."""
    parts = decode_parts_s(spec, c, 1, offloaded, host_gb_s)
    prompt_reduces = allreduce_s(spec, c, spec.prompt_tokens)
    parts[ServingLimit.DECODE_COMPUTE.value] = prefill_s(spec, c) - prompt_reduces
    parts[ServingLimit.INTERCONNECT.value] += prompt_reduces - allreduce_s(spec, c, 1)
    return decode_step_s(parts, overlap_exponent)


def decode_parts_s(
    spec: ServeSpec,
    c: Cards,
    batch: int,
    offloaded: float,
    host_gb_s: float,
    prefill_tokens: float = 0.0,
) -> dict[str, float]:
    """One decode step's parts: the GEMMs reading the weights on the cards and computing
    (decode_bandwidth and decode_compute: they overlap), attention after them (the slower of
    its KV-cache read and its FLOPs: latent attention shares one cached vector among all
    heads), layers left in RAM (read by the CPU at the host's bandwidth), all-reduces and the
    per-layer overhead (with, where the card's decode GEMMs were timed, their fixed time per
    kernel: `decode_gemm`). `prefill_tokens` of other requests' prompts ride in the same step
    (vLLM's mixed batches, mixed_step): their FLOPs join the GEMMs', which read the weights
    once for all of the step's rows."""
    ways = split_ways(spec, c)
    weights = weight_bytes_per_step(spec, batch, ways)
    bytes_s = ways * achievable_bandwidth_bytes_s(c.gpu, spec)
    attention_s = ways * attention_flops_s(c.gpu, spec)
    gemm = decode_gemm(c.gpu, spec, batch)
    gemm_bytes_s = ways * gemm.bytes_s if gemm is not None else bytes_s
    bandwidth = weights * (1.0 - offloaded) / gemm_bytes_s
    gemm_fixed_s = GEMMS_PER_LAYER * gemm.fixed_s if gemm is not None else 0.0
    prompts = prefill_tokens / max(spec.prompt_tokens, 1)
    compute = decode_gemm_flops(spec, batch) * matmul_time_factor(spec)
    compute += prompts * prefill_timed_flops(spec, spec.prompt_tokens)
    compute *= 1.0 - offloaded
    compute /= ways * achievable_matmul_flops_s(c.gpu, spec, decode=True)
    compute += prompts * prefill_attention_flops(spec, spec.prompt_tokens) / attention_s
    compute += routed_pair_s(spec, c, batch + prefill_tokens)
    attention = max(
        kv_bytes_per_step(spec, batch) / bytes_s,
        decode_attention_flops(spec, batch) / attention_s,
    )
    offload = weights * offloaded / gb_s_to_bytes_s(host_gb_s)
    hops = (c.count - 1) * PIPELINE_HOP_S if spec.engine is Engine.LOCAL else 0.0
    return {
        ServingLimit.DECODE_BANDWIDTH.value: bandwidth,
        ServingLimit.DECODE_COMPUTE.value: compute,
        ServingLimit.DECODE_ATTENTION.value: attention,
        ServingLimit.OFFLOAD.value: offload,
        ServingLimit.INTERCONNECT.value: allreduce_s(spec, c, batch + round(prefill_tokens)) + hops,
        ServingLimit.ENGINE_OVERHEAD.value: spec.layers * (layer_overhead_s(spec) + gemm_fixed_s)
        + spec.moe_layers * ENGINES[spec.engine].moe_layer_overhead_s,
    }


def layer_overhead_s(spec: ServeSpec) -> float:
    """The engine's fixed time a layer and decode step (EngineProfile.layer_overhead_s), with
    latent attention's extra kernels (LATENT_ATTENTION_EXTRA_KERNELS) at a dense layer's time a
    kernel."""
    dense = ENGINES[spec.engine].layer_overhead_s
    if spec.kv_latent_dim is None:
        return dense
    return dense * (1.0 + LATENT_ATTENTION_EXTRA_KERNELS / DENSE_LAYER_KERNELS)


# The parts of a decode step that run after its GEMMs, each whole.
SERIAL_LIMITS = (
    ServingLimit.DECODE_ATTENTION,
    ServingLimit.OFFLOAD,
    ServingLimit.INTERCONNECT,
    ServingLimit.ENGINE_OVERHEAD,
)


def gemm_overlap_exponent(gpu: GPU, spec: ServeSpec) -> float:
    """How the decode GEMMs' read and FLOPs join (decode_step_s): at GEMM_OVERLAP_EXPONENT,
    or as the slower of the two (infinite) where the card's decode GEMMs were timed (their
    measured times already hold what overlap the kernels get)."""
    if decode_gemm(gpu, spec, 1) is not None:
        return math.inf
    return GEMM_OVERLAP_EXPONENT


def decode_step_s(parts: dict[str, float], overlap_exponent: float = math.inf) -> float:
    """A step lasts the GEMMs' reading and computing, which overlap (their power mean at
    `overlap_exponent`: infinite is the slower of the two), plus what runs after them:
    attention, offloaded layers, all-reduces, launches."""
    read = parts[ServingLimit.DECODE_BANDWIDTH.value]
    flops = parts[ServingLimit.DECODE_COMPUTE.value]
    p = overlap_exponent
    big = max(read, flops)
    roofline = (
        big
        if math.isinf(p) or min(read, flops) <= 0.0
        else big * ((read / big) ** p + (flops / big) ** p) ** (1.0 / p)
    )
    return roofline + sum(parts[k.value] for k in SERIAL_LIMITS)


@dataclass(frozen=True)
class MixedStep:
    """A vLLM step at a client concurrency: `running` requests decode a token each (at most
    max_num_seqs and the contexts its KV cache holds; the other users wait for a slot),
    `prefill_tokens` of the others' prompts are computed beside them within the step's token
    budget, and `output_share` of the step's tokens are output tokens (all of them decode
    tokens when nothing is capped)."""

    running: int
    waiting: int
    prefill_tokens: float
    output_share: float


def max_running(spec: ServeSpec, c: Cards) -> int | None:
    """The most requests one copy's engine runs at once (on each of its GPUs under attention
    data parallelism, each a scheduler of its own): the workload's `serve.max_batch`, else
    vLLM's default max_num_seqs (vllm_batch_limits), SGLang's max_running_requests
    (SGLANG_MAX_RUNNING_REQUESTS) or TensorRT-LLM's max_batch_size (BATCHED_MAX_BATCH_SIZE);
    None on a local runner, which takes every user."""
    if not spec.engine.is_batched:
        return None
    defaults = {Engine.VLLM: vllm_batch_limits(c)[0], Engine.SGLANG: SGLANG_MAX_RUNNING_REQUESTS}
    default = defaults.get(spec.engine, BATCHED_MAX_BATCH_SIZE)
    ranks = c.count if spec.attention_data_parallel else 1
    return (spec.max_batch or default) * ranks


def vllm_batch_limits(c: Cards) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) vLLM's OpenAI server takes by default on this
    card (VLLM_MAX_NUM_SEQS, VLLM_MAX_BATCHED_TOKENS)."""
    large = c.memory_bytes >= VLLM_LARGE_CARD_BYTES and "a100" not in c.gpu.name.lower()
    return VLLM_MAX_NUM_SEQS[large], VLLM_MAX_BATCHED_TOKENS[large]


def with_engine_budget(spec: ServeSpec, c: Cards) -> ServeSpec:
    """`spec` with vLLM's default token budget on these cards where the workload leaves it to
    vLLM (vllm_batch_limits): vLLM's profiling pass runs that many tokens, so the prefill
    activations it keeps beside the KV cache (serving_memory.activation_bytes) are that
    budget's, 8,192 tokens on a large card."""
    if spec.engine is not Engine.VLLM or spec.max_num_tokens is not None:
        return spec
    return replace(spec, max_num_tokens=vllm_batch_limits(c)[1])


def computed_prompt_tokens(spec: ServeSpec) -> int:
    """Prompt tokens vLLM computes for a request whose first `shared_prefix_tokens` every
    request shares: the rest of the prompt once the cached whole blocks are skipped."""
    return spec.prompt_tokens - mem.cached_prefix_tokens(spec)


def request_overhead_s(spec: ServeSpec) -> float:
    """The serving stack's seconds a request beside the GPU's work: the workload's
    `serve.request_overhead_s`, else REQUEST_OVERHEAD_S."""
    return REQUEST_OVERHEAD_S if spec.request_overhead_s is None else spec.request_overhead_s


def ttft_note(spec: ServeSpec) -> str:
    """What the time to first token counts beside the GPU's work (request_overhead_s)."""
    stack = f"time to first token: {s_to_ms(request_overhead_s(spec)):.1f} ms a request in the "
    if spec.request_overhead_s is not None:
        return stack + "serving stack (serve.request_overhead_s)"
    return stack + (
        "serving stack (HTTP, tokenizer, the first token streamed back), as a dedicated server "
        "took with vLLM; a small or shared host took 19-22 ms (serve.request_overhead_s)"
    )


def first_token_wait_s(spec: ServeSpec, prefill_s: float, step_s: float, running: int) -> float:
    """A request's time from reaching the engine to its first token, past any queue: alone (the
    only request running), the pass of its prompt; beside running requests it waits for the
    step under way to end (half a step, arriving at random within it) before its prompt
    (_prompt_token_s; arrivals.py's engine does the same)."""
    if running == 1:
        return prefill_s
    return 0.5 * step_s + _prompt_token_s(spec, prefill_s, step_s)


def first_token_all_at_once_s(
    spec: ServeSpec, prefill_s: float, step_s: float, running: int
) -> float:
    """The last first token when every running user's request arrives at once, as a
    closed-loop benchmark's do once its answers end in the same step: the other prompts are
    computed before the last one's (back to back, or within vLLM's steps), with no step under
    way to wait for. first_token_wait_s times a request arriving at random; a loaded server's
    median lies between the two."""
    if running == 1:
        return prefill_s
    return (running - 1) * prefill_s + _prompt_token_s(spec, prefill_s, step_s)


def _prompt_token_s(spec: ServeSpec, prefill_s: float, step_s: float) -> float:
    """A prompt computed beside running requests until its first token: vLLM computes it inside
    the next step and the token comes at that step's end; an engine with a prefill phase emits
    it from the prompt's own pass."""
    return prefill_s + (step_s if mixes_prefill(spec) else 0.0)


def mixes_prefill(spec: ServeSpec) -> bool:
    """The engine computes prompts inside decode steps rather than stalling them (vLLM)."""
    return spec.engine is Engine.VLLM


def mixed_step(spec: ServeSpec, c: Cards, users: int, *, own_prompt: bool) -> MixedStep:
    """What a vLLM step holds with `users` clients each asking again as soon as an answer
    ends: `running` of them decode (at most max_num_seqs, and at most the contexts its KV
    cache holds: past them it preempts rather than runs more), and every answer of
    `output_tokens` steps brings one prompt into the steps, so a step computes running x
    prompt / output prompt tokens; a user's own prompt is not in its time per output token
    (`own_prompt` False leaves it out). Beyond the token budget the prompts wait, and only
    budget x output / (prompt + output) of a step's tokens are output tokens. The budget is the
    workload's `serve.max_num_tokens`, else vLLM's default on this card."""
    budget = spec.max_num_tokens or vllm_batch_limits(c)[1]
    held = mem.max_users_fit(spec, c.memory_bytes, c.count)
    running = max(1, min(users, max_running(spec, c) or users, held))
    per_answer = computed_prompt_tokens(spec) / max(spec.output_tokens, 1)
    senders = running if own_prompt else running - 1
    room = max(budget - running, 0)
    demand = running * (1.0 + per_answer)
    share = 1.0 if demand <= max(budget, running) else budget / demand
    return MixedStep(running, max(users - running, 0), min(senders * per_answer, room), share)


def queue_wait_s(spec: ServeSpec, running: int, answer_s: float) -> float:
    """Seconds a request waits for a slot when `running` of the copy's `spec.users` are served
    at once, an answer holding its slot `answer_s`. Clients that each ask again as soon as an
    answer ends: by Little's law over the closed loop, (users - running) / running answers'
    time. A batch sent at once (serve.requests): its median request's, behind the waves of
    `running` before its own."""
    users, slots = spec.users, max(running, 1)
    if spec.requests is not None:
        return (users // 2) // slots * answer_s
    return max(users - running, 0) / slots * answer_s


def queue_note(
    spec: ServeSpec, c: Cards, running: int, waiting: int, wait_s: float, fit: int
) -> str:
    """What the estimate says of users past what the engine runs at once: vLLM's scheduler
    admits a waiting request only while the KV cache has blocks for it and fewer than
    max_num_seqs run (vllm/v1/core/sched/scheduler.py, Scheduler.schedule, @00024d3);
    TensorRT-LLM's default capacity policy, GUARANTEED_NO_EVICT, starts a request only once
    its whole context's blocks are free ("a started request is never paused", TensorRT-LLM
    docs, performance-tuning-guide/useful-runtime-flags): the rest wait in its queue."""
    cap = max_running(spec, c)
    why = "the whole contexts its KV cache holds"
    if cap is not None and cap < fit:
        defaults = {Engine.VLLM: "vLLM's default max_num_seqs",
                    Engine.SGLANG: "SGLang's default max_running_requests"}  # fmt: skip
        why = (
            "serve.max_batch"
            if spec.max_batch
            else defaults.get(spec.engine, "TensorRT-LLM's default max_batch_size")
        )
    engine = (
        spec.engine.display_name if spec.engine in (Engine.VLLM, Engine.SGLANG) else "the engine"
    )
    head = f"{engine} runs at most {running} request{'s' * (running != 1)} at once here ({why})"
    if spec.requests is not None:
        return (
            f"{head}: the batch's other {waiting} request{'s' * (waiting != 1)} wait their turn "
            f"and run in waves as slots free; its median request queues {wait_s:.1f} s before "
            "its prompt starts (in the time to first token)"
        )
    return (
        f"{head}: the other {waiting} user{'s' * (waiting != 1)} wait for a slot, and as each "
        f"asks again when its answer ends, every request queues {wait_s:.1f} s before its "
        "prompt starts (in the time to first token)"
    )


def no_context_note(spec: ServeSpec, c: Cards, memory_bytes: float) -> str:
    """Why a batched engine cannot serve even one request beside the weights: vLLM refuses
    to start unless its KV cache holds one request of max_model_len ("To serve at least one
    request with the model's max seq len ...", check_enough_kv_cache_memory in
    vllm/v1/core/kv_cache_utils.py, @bbf906a), taken here as the request's own context,
    the smallest max_model_len that serves it."""
    room = mem.kv_capacity_bytes(spec, memory_bytes, c.count)
    need = mem.kv_cache_bytes(spec, 1)
    refusal = (
        "vLLM refuses to start with a max_model_len its cache cannot hold once"
        if spec.engine is Engine.VLLM
        else "the engine can admit no request"
    )
    return (
        f"one request's context ({spec.context_tokens:,} tokens, {bytes_to_gib(need):.2f} GiB "
        f"of KV cache) does not fit the {bytes_to_gib(room):.2f} GiB the weights leave: "
        f"{refusal}"
    )


def tpot_s(step_s: float, prefill_one_s: float, users: int, output_tokens: int) -> float:
    """Time per output token a user sees: a decode step plus the other users' prefills,
    each stalling the batch once per answer of `output_tokens`."""
    return step_s + (users - 1) * prefill_one_s / output_tokens


def total_tokens_per_s(
    step_s: float, prefill_one_s: float, users: int, output_tokens: int
) -> float:
    """Output tokens/s of all users: each answer's cycle is its prefill plus its decode
    steps, the others' prefills included."""
    cycle = output_tokens * step_s + users * prefill_one_s
    return users * output_tokens / cycle


def _step_at(spec: ServeSpec, c: Cards, users: int, host_gb_s: float) -> float:
    at = replace(spec, users=users)
    off = mem.offloaded_fraction(at, c.memory_bytes, c.count)
    return decode_step_s(
        decode_parts_s(at, c, users, off, host_gb_s), gemm_overlap_exponent(c.gpu, spec)
    )


def user_tpot_s(
    spec: ServeSpec, c: Cards, users: int, prefill_one_s: float, host_gb_s: float
) -> float:
    """Time per output token one of `users` sees: vLLM's mixed step (mixed_step), else a
    decode step plus the others' prefill stalls (tpot_s); either beside the engine's CPU time
    for the requests running (with_host_s)."""
    if not mixes_prefill(spec):
        gpu_s = tpot_s(_step_at(spec, c, users, host_gb_s), prefill_one_s, users,
                       spec.output_tokens)  # fmt: skip
        return with_host_s(gpu_s, host_step_s(spec, c, users))
    mix = mixed_step(spec, c, users, own_prompt=False)
    at = replace(spec, users=users)
    off = mem.offloaded_fraction(at, c.memory_bytes, c.count)
    step = decode_step_s(
        decode_parts_s(at, c, mix.running, off, host_gb_s, mix.prefill_tokens),
        gemm_overlap_exponent(c.gpu, spec),
    )
    return with_host_s(step, host_step_s(spec, c, mix.running))


def max_users_at_target(
    spec: ServeSpec, c: Cards, target: float, fit: int, host_gb_s: float
) -> int:
    """The most users (up to what fits) each still served at `target` tokens/s: per-user
    speed falls as users grow, so a bisection finds the edge."""

    def ok(users: int) -> bool:
        pre = prefill_s(spec, c, prompts_per_pass(spec, users, c.memory_bytes))
        return 1.0 / user_tpot_s(spec, c, users, pre, host_gb_s) >= target

    limit = max(fit, 1 if spec.engine is Engine.LOCAL else 0)
    if limit < 1 or not ok(1):
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def binding_limit(parts: dict[str, float], prefill_share_s: float) -> ServingLimit:
    """The largest part of a user's time per output token (of the GEMMs' read and FLOPs,
    the one the step waits on)."""
    shares = dict(parts)
    roof = ServingLimit.DECODE_BANDWIDTH.value
    other = ServingLimit.DECODE_COMPUTE.value
    loser = other if shares[roof] >= shares[other] else roof
    shares[loser] = 0.0
    shares[ServingLimit.PREFILL_COMPUTE.value] = prefill_share_s
    return ServingLimit(max(shares, key=lambda k: shares[k]))


def tensor_parallel_degree(
    spec: ServeSpec, gpus: int, memory_bytes: float, source: str = "the workload", nodes: int = 1
) -> int:
    """Cards one model copy spans within a node of `gpus`: `serve.tensor_parallel` when the
    workload sets it (it must divide the card count), else, on a batched server, the fewest
    cards that divide both the card count and the attention heads (vLLM's rule) and hold the
    weights with every user's context, the other cards of every node serving replicas; a local
    runner splits layers over all of a node's cards."""
    if spec.tensor_parallel is not None:
        if gpus % spec.tensor_parallel:
            raise ValidationError(
                f"{source}: serve.tensor_parallel = {spec.tensor_parallel} does not divide the "
                f"build's {gpus} GPU{'' if gpus == 1 else 's'}",
                field="serve.tensor_parallel",
                reason=f"a divisor of {gpus}",
                hint=f"set serve.tensor_parallel to a divisor of {gpus}, or leave it out",
            )
        return spec.tensor_parallel
    if spec.engine is Engine.LOCAL:
        return gpus
    options = tensor_parallel_options(spec, gpus)
    for d in options:
        users_per_copy = math.ceil(spec.users / (gpus // d * nodes))
        if mem.max_users_fit(spec, memory_bytes, d) >= users_per_copy:
            return d
    return options[-1]


def tensor_parallel_options(spec: ServeSpec, gpus: int) -> list[int]:
    """The cards one copy may span on a batched server, fewest first: the divisors of the card
    count that also divide the attention heads (each card holds whole heads)."""
    return [d for d in range(1, gpus + 1) if gpus % d == 0 and spec.heads % d == 0]


def uncalibrated_vendor_note(spec: ServeSpec, gpu: GPU) -> str | None:
    """Every engine profile's shares and per-layer times were chosen on NVIDIA GPUs (CUDA
    builds of TensorRT-LLM, vLLM and llama.cpp: bench/provenance.toml); on another vendor's
    card they carry no calibration of their own, which the estimate says rather than hides.
    On AMD Instinct, AMD's and Oracle's published vLLM runs on 8x MI300X are the check
    (bench/bench_amd.py); the MI300X's decode GEMMs are AMD's own timed kernels."""
    if gpu.vendor is Vendor.NVIDIA:
        return None
    measured = (
        "; published vLLM runs on 8x MI300X (AMD's, Oracle's) are its check there "
        "(BENCHMARKS.md, AMD serving)"
        if gpu.vendor is Vendor.AMD
        else ""
    )
    return (
        f"the {spec.engine.value} engine's shares and per-layer time were chosen on NVIDIA "
        f"GPUs: on the {gpu.name} they are not calibrated{measured}"
    )


def serving_estimate(
    build: Build, spec: ServeSpec, model_name: str, cal: Calibration | None = None
) -> ServingEstimate | None:
    """Serving figures for `spec` on `build`; None for a build without GPUs. Users spread
    evenly over the model's copies; each copy is timed on its own cards."""
    cal = cal or default_calibration()
    all_cards = cards(build, cal)
    if all_cards is None:
        return None
    memory_bytes = all_cards.memory_bytes
    spec = with_engine_budget(spec, all_cards)
    tp = tensor_parallel_degree(spec, all_cards.count, memory_bytes, model_name, build.nodes)
    # Copies of the model fill every node; one copy's cards share a node's links.
    replicas = all_cards.count // tp * build.nodes
    c = replace(all_cards, count=tp, nvlink=all_cards.nvlink and tp > 1)
    asked = spec.users
    spec = replace(spec, users=math.ceil(asked / replicas))
    scale = asked / spec.users  # copies' users add up to the asked users
    host = host_memory_bandwidth(build, cal.host_memory_bandwidth_gb_s)
    host_gb_s = host.gb_s
    notes: list[str] = []
    fit = mem.max_users_fit(spec, memory_bytes, c.count)
    weights = mem.copy_weight_bytes(spec, c.count)
    usable = c.count * mem.usable_bytes_per_gpu(spec, memory_bytes, c.count)
    offloaded = mem.offloaded_fraction(spec, memory_bytes, c.count)
    ram_gb = build.memory.size_gb if build.memory else None
    fits_weights = weights + c.count * mem.activation_bytes(spec, c.count) <= usable
    # A batched engine queues the users whose contexts its KV cache cannot hold at once
    # (queue_note); it cannot serve at all only when the weights, or one whole context
    # beside them, do not fit (no_context_note).
    fits = fits_weights and fit >= 1 if spec.engine.is_batched else offloaded < 1.0
    if offloaded > 0:
        notes.append(
            f"{offloaded:.0%} of the weights stay in system RAM, read at "
            f"{host_gb_s:.0f} GB/s by the CPU ({host.assumed or host.provenance})"
        )
        if ram_gb is not None and gib_to_bytes(ram_gb) < weights * offloaded:
            fits = False
            notes.append(f"the offloaded weights need more than the build's {ram_gb:.0f} GiB RAM")
    pre = prefill_s(spec, c)
    overlap = gemm_overlap_exponent(c.gpu, spec)
    if mixes_prefill(spec):
        mix = mixed_step(spec, c, spec.users, own_prompt=False)
        parts = decode_parts_s(spec, c, mix.running, offloaded, host_gb_s, mix.prefill_tokens)
        step = decode_step_s(parts, overlap)
        every = mixed_step(spec, c, spec.users, own_prompt=True)
        full_s = decode_step_s(
            decode_parts_s(spec, c, every.running, offloaded, host_gb_s, every.prefill_tokens),
            overlap,
        )
        running = mix.running
        host_s = host_step_s(spec, c, running)
        gpu_tpot = step
        tpot = with_host_s(step, host_s)
        per_copy_total = every.running * every.output_share / with_host_s(full_s, host_s)
        if running == 1:
            pre = alone_prefill_s(spec, c, offloaded, host_gb_s, overlap)
        queued_s = queue_wait_s(spec, running, spec.output_tokens * full_s)
        prefill_share = 0.0
    else:
        # Past the contexts its KV cache holds a batched server runs those and queues the
        # rest; a local runner offloads layers to hold every user (offloaded_fraction).
        running = (
            min(spec.users, max(fit, 1), max_running(spec, c) or spec.users)
            if spec.engine.is_batched
            else spec.users
        )
        pre = prefill_s(spec, c, prompts_per_pass(spec, running, c.memory_bytes))
        parts = decode_parts_s(spec, c, running, offloaded, host_gb_s)
        step = decode_step_s(parts, overlap)
        if running == 1:  # each prompt starts alone: a pass of its own over the weights
            pre = alone_prefill_s(spec, c, offloaded, host_gb_s, overlap)
        # Each iteration computes the step and the prompts that join it while the host
        # prepares the next (with_host_s).
        host_s = host_step_s(spec, c, running)
        gpu_tpot = tpot_s(step, pre, running, spec.output_tokens)
        tpot = with_host_s(gpu_tpot, host_s)
        paced_step = step + tpot - gpu_tpot  # each step with the GPU's wait on the host
        per_copy_total = total_tokens_per_s(paced_step, pre, running, spec.output_tokens)
        # A running request holds its slot for its prefill and `output_tokens` steps, each
        # stretched by the other running users' prefills: output x step + running x prefill.
        answer_s = spec.output_tokens * paced_step + running * pre
        queued_s = queue_wait_s(spec, running, answer_s)
        prefill_share = (running - 1) * pre / spec.output_tokens
    before_prompt_s = request_overhead_s(spec) + queued_s
    iteration_s = with_host_s(step, host_s)  # a request joins at an iteration's start
    ttft = before_prompt_s + first_token_wait_s(spec, pre, iteration_s, running)
    at_once = before_prompt_s + first_token_all_at_once_s(spec, pre, iteration_s, running)
    waiting = max(asked - replicas * running, 0) if fits else 0
    if waiting:
        notes.append(queue_note(spec, c, running * replicas, waiting, queued_s, fit))
    batch1 = 1.0 / _step_at(spec, c, 1, host_gb_s)
    target = spec.min_tokens_per_s_per_user
    at_target = None
    if target:
        at_target = replicas * max_users_at_target(spec, c, target, fit, host_gb_s)
    if not fits_weights and spec.engine.is_batched:
        binding = ServingLimit.WEIGHT_MEMORY
        notes.append("the weights do not fit the cards: more or larger GPUs, or a smaller format")
    elif spec.engine.is_batched and fit < 1:
        binding = ServingLimit.KV_MEMORY
        notes.append(no_context_note(spec, c, memory_bytes))
    elif spec.engine.is_batched and spec.users > fit and spec.requests is None:
        # A batch sent at once is meant to queue: its step's limit is what holds it back.
        binding = ServingLimit.KV_MEMORY
    elif host_s > gpu_tpot:
        binding = ServingLimit.HOST
    else:
        binding = binding_limit(parts, prefill_share)
    parallelism = "single GPU"
    if c.count > 1:
        link = "NVLink" if c.nvlink else "PCIe"
        parallelism = (
            f"tensor parallel x{c.count} over {link}"
            if spec.engine.is_batched
            else f"layers split over {c.count} GPUs"
        )
        if spec.attention_data_parallel:
            parallelism = (
                f"attention data parallel x{c.count}, experts split over the {c.count} GPUs "
                f"(expert parallel) over {link}"
            )
    if replicas > 1:
        parallelism = (
            f"{parallelism}, {replicas} copies of the model"
            if c.count > 1
            else f"{replicas} copies of the model, one per GPU"
        )
    if build.nodes > 1:
        parallelism += f" over {build.nodes} nodes"
    if spec.quantization.is_fp4:
        notes.append(fp4_note(spec, c.gpu))
    notes.append(
        "rates: each card's achievable matmul rate and bandwidth (dlrig.model.rates) x the "
        "engine's stated shares (dlrig.model.serving)"
    )
    if fits:
        notes.append(ttft_note(spec))
    if spec.is_moe:
        notes.append(MOE_NOTE)
    gemm = decode_gemm(c.gpu, spec, spec.users)
    if gemm is not None:
        notes.append(
            f"decode GEMMs on the {c.gpu.name}: {s_to_us(gemm.fixed_s):.1f} us each "
            f"({GEMMS_PER_LAYER} a layer, {spec.users} rows) before their weights stream at "
            f"{bytes_s_to_gb_s(gemm.bytes_s):,.0f} GB/s, measured ({gemm.provenance})"
        )
    notes.extend(allreduce_notes(spec, c, running))
    uncalibrated = uncalibrated_vendor_note(spec, c.gpu)
    notes.extend([uncalibrated] if uncalibrated else [])
    return ServingEstimate(
        model=model_name,
        engine=spec.engine.value,
        quantization=spec.quantization.value,
        kv_precision=spec.kv_precision.value,
        gpus=all_cards.count * build.nodes,
        gpu=c.gpu.name,
        parallelism=parallelism,
        users=asked,
        prompt_tokens=spec.prompt_tokens,
        output_tokens=spec.output_tokens,
        prefill_s=pre,
        decode_step_s=step,
        ttft_s=ttft,
        ttft_all_at_once_s=at_once,
        tpot_s=tpot,
        host_step_s=host_s,
        host_wait_s=tpot - gpu_tpot,
        tokens_per_s_per_user=1.0 / tpot,
        tokens_per_s_total=scale * per_copy_total,
        batch1_tokens_per_s=batch1,
        max_users_fit=replicas * fit,
        running_per_copy=running,
        users_waiting=waiting,
        queue_wait_s=queued_s,
        max_users_at_target=at_target,
        min_tokens_per_s_per_user=target,
        weights_gb=bytes_to_gib(weights),
        kv_per_user_gb=bytes_to_gib(mem.kv_bytes_per_user(spec)),
        kv_shared_gb=bytes_to_gib(mem.kv_shared_bytes(spec)),
        kv_per_token_per_layer_bytes=mem.kv_bytes_per_token_per_layer(spec),
        kv_capacity_gb=bytes_to_gib(replicas * mem.kv_capacity_bytes(spec, memory_bytes, c.count)),
        memory_available_gb=bytes_to_gib(replicas * usable),
        fits=fits,
        offloaded_fraction=offloaded,
        binding=binding,
        decode_parts_s=parts,
        notes=tuple(notes),
    )


def energy_kwh_per_million_tokens(power_w: float, tokens_per_s: float) -> float:
    """Wall energy to generate a million output tokens at `power_w` (kWh)."""
    if tokens_per_s <= 0:
        return float("inf")
    return wh_to_kwh(power_w * (TOKENS_PER_MILLION / tokens_per_s) / SECONDS_PER_HOUR)
