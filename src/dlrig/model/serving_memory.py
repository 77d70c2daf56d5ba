"""Memory of a serving workload: weights in their stored format, the KV cache per token and
per user, activations and the engine's reserve; how many users' contexts fit (issue 14).

One quantity per function; bytes are plain bytes. A card's memory comes in as bytes
(memory.gpu_memory_bytes: its label is GiB, dlrig.units), and every amount goes out in GiB.
"""

from __future__ import annotations

import math

from dlrig.units import BITS_PER_BYTE, MIB, gib_to_bytes
from dlrig.workloads.serving import Engine, KVPrecision, ServeSpec, WeightFormat

# Bits per weight of the transformer layers as each engine stores them. Batched servers run
# AWQ/GPTQ int4 with a 16-bit scale and zero per group of 128 weights (4 + 32/128 = 4.25),
# int8 and fp8 with one scale per channel or tensor (negligible), and keep the embedding and
# the output head in 16 bits. llama.cpp stores every tensor in its GGUF type: Q4_K_M averages
# 4.85 bits (it reports 4.58 GiB for Llama 3 8B's 8.03e9 weights, 39.59 GiB for 70B's
# 70.55e9: 4.90 and 4.82), Q8_0 8.5 bits (blocks of 32 with a 16-bit scale); it has no fp8,
# which it runs as Q8_0. The 4-bit floats carry their block scales: NVFP4 an FP8 (E4M3) scale
# per 16 values, 4 + 8/16 = 4.5 bits (its FP32 per-tensor scale is negligible; NVIDIA
# technical blog "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
# 2025-06-24), MXFP4 an 8-bit power-of-two (E8M0) scale per 32, 4 + 8/32 = 4.25 bits (OCP
# Microscaling Formats (MX) Specification v1.0, 2023-09; llama.cpp's GGUF MXFP4 type is the
# same block). llama.cpp has no NVFP4 type (ServeBlock refuses it for the local engine).
BATCHED_WEIGHT_BITS = {
    WeightFormat.BF16: 16.0,
    WeightFormat.FP16: 16.0,
    WeightFormat.FP8: 8.0,
    WeightFormat.INT8: 8.0,
    WeightFormat.INT4: 4.0 + 32.0 / 128.0,
    WeightFormat.NVFP4: 4.0 + 8.0 / 16.0,
    WeightFormat.MXFP4: 4.0 + 8.0 / 32.0,
}
LOCAL_WEIGHT_BITS = {
    WeightFormat.BF16: 16.0,
    WeightFormat.FP16: 16.0,
    WeightFormat.FP8: 8.5,
    WeightFormat.INT8: 8.5,
    WeightFormat.INT4: 4.85,
    WeightFormat.MXFP4: 4.0 + 8.0 / 32.0,
}
HEAD_BITS_BATCHED = 16.0
# vLLM's automatic prefix caching (on by default for generative models: vllm/engine/
# arg_utils.py _set_default_chunked_prefill_and_prefix_caching_args, @99d7eb5) hashes each
# full block of 16 tokens (CacheConfig.block_size's default on CUDA) by its tokens and the
# prefix before it, and a request whose prompt starts with a cached block points its block
# table at that block and raises its reference count instead of allocating its own: the
# blocks every request shares are held once ("Automatic Prefix Caching", docs.vllm.ai
# design/prefix_caching). A prompt found whole still computes its last block: the hit is
# capped at the prompt less one token, in whole blocks (vllm/v1/core/kv_cache_manager.py
# get_computed_blocks, "When all tokens hit the cache, we must recompute the last token to
# obtain logits", @6a1acac). SGLang's RadixAttention shares a common prefix the same way, token
# by token (Zheng et al., "SGLang", arXiv:2312.07104).
VLLM_BLOCK_TOKENS = 16
KV_BYTES = {KVPrecision.BF16: 2, KVPrecision.FP16: 2, KVPrecision.FP8: 1, KVPrecision.INT8: 1}

# What an engine keeps from each GPU for itself. vLLM's default gpu_memory_utilization is 0.90
# of the card, weights included (the rest: CUDA context, cuBLAS workspace, fragmentation);
# TensorRT-LLM gives the KV cache 0.90 of the memory still free once the weights are loaded
# (kv_cache_free_gpu_mem_fraction, "the default setting of 0.90", TensorRT-LLM
# docs/source/performance/perf-overview.md @00f37686, the runs bench_serving compares with);
# llama.cpp takes what it needs, about 0.5 GiB of CUDA context per card. Prefill activations:
# a chunk of tokens (vLLM's default 2048 batched tokens on a chat server, llama.cpp's 512-token
# micro-batch) times the hidden size in 16 bits, times 16 live copies (gate and up projections
# at ~3.5x the hidden size each, attention scratch, residuals).
BATCHED_USABLE_FRACTION = 0.90
TRTLLM_KV_FREE_FRACTION = 0.90
LOCAL_CONTEXT_BYTES = gib_to_bytes(0.5)
PREFILL_CHUNK_TOKENS = {Engine.VLLM: 2048, Engine.LOCAL: 512}
ACTIVATION_COPIES = 16
# TensorRT-LLM's inflight batching takes up to max_num_tokens tokens an iteration, 8,192 unless
# set (LlmArgs.max_num_tokens; serve.max_num_tokens).
BATCHED_MAX_NUM_TOKENS = 8192
# SGLang (python/sglang/srt/server_args.py, release 0.5.5.post1, _handle_gpu_memory_settings)
# sizes its chunked prefill and its CUDA graphs' largest batch by the card's memory, and gives
# the weights and the KV pool mem_fraction_static of the card: what is left once it reserves
# 512 MiB + 1.5 MiB a token of the prefill chunk (at least 2,048) + 2 MiB a graph batch + 1 GiB
# for each 8 GPUs of the copy, at least 10 GiB on cards above 60 GiB; the prefill's
# activations and the graphs live in that reserve. Tiers: (below GiB, chunk tokens, largest
# graph batch below tensor parallel 4, at 4 and more).
SGLANG_MEMORY_TIERS = (
    (20, 2048, 8, 8),
    (35, 2048, 24, 80),
    (60, 4096, 32, 160),
    (160, 8192, 256, 512),
    (math.inf, 16384, 512, 512),
)
SGLANG_RESERVED_MIB = 512.0
SGLANG_CHUNK_MIB_PER_TOKEN = 1.5
SGLANG_GRAPH_MIB_PER_BATCH = 2.0
SGLANG_LARGE_CARD_MIB = 60 * 1024
SGLANG_LARGE_CARD_RESERVE_MIB = 10 * 1024
# TensorRT-LLM sizes its KV cache from the memory a profiling pass of max_num_tokens tokens
# leaves free (KvCacheCreator, tensorrt_llm/_torch/pyexecutor/_util.py). NVIDIA's own planner
# models that pass's peak beyond the weights as 2 x max_num_tokens x the attention width (heads
# x head_dim) x a coefficient by the attention tensor-parallel degree (1 under attention data
# parallelism), twice as large for a mixture of experts, plus NCCL's buffers and 3.5 GiB of
# everything else the engine keeps (ai-dynamo/aiconfigurator @095f58a5: trtllm_backend.py
# ACTIVATION_COEFFICIENTS "tuned for TRT-LLM's measurement workflow", base_backend.py, systems/
# h100_sxm.yaml nccl_mem and other_mem). Its system files once gave 551 MB of CUDA and cuBLAS
# state for that last term; the sequences TensorRT-LLM held at once on one to four H100
# (data/calibration/trtllm_kv_capacity.csv, scripts/trtllm_kv_capacity_check.py) fit 3.5 GiB:
# with 551 MB the cache holds 6.6% more sequences than ran (median of 24), with 3.5 GiB 1.9%.
TRTLLM_ACTIVATION_COEFFICIENTS = {
    False: {1: 11.0, 2: 6.5, 4: 5.0, 8: 5.0},
    True: {1: 22.0, 2: 13.0, 4: 10.0, 8: 10.0},
}
TRTLLM_NCCL_BYTES = {1: 0.0, 2: 358_612_992.0, 4: 411_041_792.0, 8: 411_041_792.0}
TRTLLM_OTHER_BYTES = 3.5 * 2**30
# Under attention data parallelism TensorRT-LLM's MoE layer takes every rank's tokens at once:
# "the maximum number of tokens in MoE are multiplied by DP size when attention DP is enabled"
# (CutlassFusedMoE, tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py), and its
# profiling pass gives every rank max_num_tokens (KvCacheCreator repeats its dummy requests
# tp_size times, tensorrt_llm/_torch/pyexecutor/_util.py). The CUTLASS MoE workspace holds
# each routed (token, expert) row twice over (CutlassMoeFCRunner::getWorkspaceDeviceBufferSizes,
# cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cu): the GEMMs' inputs (the
# permuted token or FC1's activated output in the activations' format, or FC2's 16-bit
# output: the largest) and outputs (FC1's gated 16-bit output, twice the expert's width, or
# FC2's), and 20 bytes of indices and scales. aiconfigurator's MoE coefficient above was
# measured with the layer taking its own rank's tokens; the other ranks' rows come on top.
MOE_ROW_INDEX_BYTES = 20.0
MOE_GEMM_OUTPUT_BYTES = 2.0
MOE_PERMUTED_BYTES = {WeightFormat.FP8: 1.0, WeightFormat.NVFP4: 0.5}


def weight_bits(spec: ServeSpec) -> float:
    """Bits per weight of the transformer layers, in the engine's format for the quantization."""
    table = BATCHED_WEIGHT_BITS if spec.engine.is_batched else LOCAL_WEIGHT_BITS
    return table[spec.quantization]


def head_bits(spec: ServeSpec) -> float:
    """Bits per weight of the embedding and output head: 16 on a batched server (AWQ, GPTQ
    and fp8 checkpoints leave them unquantized), the layers' format in llama.cpp."""
    if spec.engine.is_batched:
        return HEAD_BITS_BATCHED
    return weight_bits(spec)


def embedding_params(spec: ServeSpec) -> float:
    """Weights of the token embedding and (untied) output head: vocabulary x hidden each."""
    per_matrix = float(spec.vocab_size) * spec.hidden_size
    return per_matrix if spec.tied_embeddings else 2.0 * per_matrix


def head_params(spec: ServeSpec) -> float:
    """Weights of the output head, read once per decode step (vocabulary x hidden)."""
    return float(spec.vocab_size) * spec.hidden_size


def layer_params(spec: ServeSpec) -> float:
    """Weights in the transformer layers: all weights less the embedding and head."""
    return max(spec.total_params - embedding_params(spec), 0.0)


def weight_bytes(spec: ServeSpec) -> float:
    """Bytes every weight takes in memory, layers in their format and embeddings in theirs."""
    return (
        layer_params(spec) * weight_bits(spec) + embedding_params(spec) * head_bits(spec)
    ) / BITS_PER_BYTE


def routed_expert_params(spec: ServeSpec) -> float:
    """All routed experts' weights: total - active = routed x (1 - k/E)."""
    if not spec.is_moe or spec.experts is None or spec.experts_per_token is None:
        return 0.0
    return (spec.total_params - spec.active_params) / (1.0 - spec.experts_per_token / spec.experts)


def replicated_weight_bytes(spec: ServeSpec) -> float:
    """Bytes of the weights outside the routed experts (attention, shared experts, dense
    layers, embeddings), which attention data parallelism holds whole on every GPU."""
    return weight_bytes(spec) - routed_expert_params(spec) * weight_bits(spec) / BITS_PER_BYTE


def copy_weight_bytes(spec: ServeSpec, gpus: int) -> float:
    """Bytes one copy's `gpus` cards hold of weights: each weight once, split among them;
    under attention data parallelism the weights outside the experts once per card."""
    extra = (gpus - 1) * replicated_weight_bytes(spec) if spec.attention_data_parallel else 0.0
    return weight_bytes(spec) + extra


def kv_bytes_per_token_per_layer(spec: ServeSpec) -> float:
    """KV-cache bytes one token adds in one layer: K and V for each KV head (GQA shares them
    among query heads), or the latent vector for latent attention."""
    elements = spec.kv_latent_dim or 2 * spec.kv_heads * spec.head_dim
    return float(elements * KV_BYTES[spec.kv_precision])


def kv_bytes_per_token(spec: ServeSpec) -> float:
    """KV-cache bytes one token of context holds across all layers."""
    return kv_bytes_per_token_per_layer(spec) * spec.layers


# Tokens a prefix cache shares at a time: vLLM's blocks, SGLang's radix tree token by token
# (server_args.py: page_size 1 unless an attention backend asks for more).
PREFIX_CACHE_TOKENS = {Engine.VLLM: VLLM_BLOCK_TOKENS, Engine.SGLANG: 1}


def cached_prefix_tokens(spec: ServeSpec) -> int:
    """Leading prompt tokens whose KV every request shares, held once in the cache: on vLLM
    and SGLang the shared prefix up to the prompt less one token (a prompt found whole still
    computes its last token, whose logits give the first answer), in whole cache units
    (PREFIX_CACHE_TOKENS); 0 on the batched profile, which computes every prompt whole
    (TensorRT-LLM's KV block reuse is not modelled), and on llama.cpp, whose server gives
    each of its --parallel slots a KV cache of its own (cache_prompt reuses a slot's own
    previous prompt, tools/server)."""
    unit = PREFIX_CACHE_TOKENS.get(spec.engine)
    if unit is None:
        return 0
    reusable = min(spec.shared_prefix_tokens, spec.prompt_tokens - 1)
    return max(reusable, 0) // unit * unit


def kv_bytes_per_user(spec: ServeSpec) -> float:
    """KV cache one more user adds: its finished conversation, prompt plus output tokens (a
    paged cache holds what is used, so the full context is what each user finally needs),
    less the prefix blocks it shares with every other user (cached_prefix_tokens)."""
    return kv_bytes_per_token(spec) * (spec.context_tokens - cached_prefix_tokens(spec))


def kv_shared_bytes(spec: ServeSpec) -> float:
    """KV cache of the prompt prefix every user shares, held once (cached_prefix_tokens)."""
    return kv_bytes_per_token(spec) * cached_prefix_tokens(spec)


def kv_cache_bytes(spec: ServeSpec, users: int) -> float:
    """KV cache of `users` whole contexts on one copy: the shared prefix once, and each
    user's own tokens."""
    if users <= 0:
        return 0.0
    return kv_shared_bytes(spec) + users * kv_bytes_per_user(spec)


def batched_max_num_tokens(spec: ServeSpec) -> int:
    """The tokens one TensorRT-LLM iteration computes at most: the workload's
    `serve.max_num_tokens`, else BATCHED_MAX_NUM_TOKENS."""
    return spec.max_num_tokens or BATCHED_MAX_NUM_TOKENS


def _sglang_tier(memory_bytes: float) -> tuple[float, int, int, int]:
    return next(t for t in SGLANG_MEMORY_TIERS if memory_bytes < gib_to_bytes(t[0]))


def sglang_chunked_prefill_tokens(spec: ServeSpec, memory_bytes: float) -> int:
    """The prompt tokens one SGLang prefill pass computes at most: the workload's
    `serve.max_num_tokens`, else its default chunked_prefill_size on a card of
    `memory_bytes` (SGLANG_MEMORY_TIERS)."""
    return spec.max_num_tokens or _sglang_tier(memory_bytes)[1]


def sglang_mem_fraction_static(spec: ServeSpec, memory_bytes: float, gpus: int) -> float:
    """SGLang's default mem_fraction_static on a card of `memory_bytes` in a copy of `gpus`:
    the share left for weights and KV pool once its reserve is taken (SGLANG_MEMORY_TIERS)."""
    _, _, graphs_small, graphs_large = _sglang_tier(memory_bytes)
    graphs = graphs_small if gpus < 4 else graphs_large
    memory_mib = memory_bytes / MIB
    reserved = (
        SGLANG_RESERVED_MIB
        + SGLANG_CHUNK_MIB_PER_TOKEN * max(sglang_chunked_prefill_tokens(spec, memory_bytes), 2048)
        + SGLANG_GRAPH_MIB_PER_BATCH * graphs
        + gpus / 8 * 1024
    )
    if memory_mib > SGLANG_LARGE_CARD_MIB:
        reserved = max(reserved, SGLANG_LARGE_CARD_RESERVE_MIB)
    return max(memory_mib - reserved, 0.0) / memory_mib


def expert_width(spec: ServeSpec) -> float:
    """One routed expert's intermediate width: its three gated matrices of hidden_size x
    width, from the routed weights over the experts of every MoE layer."""
    if not spec.is_moe or spec.experts is None or spec.moe_layers == 0:
        return 0.0
    per_expert = routed_expert_params(spec) / (spec.experts * spec.moe_layers)
    return per_expert / (3.0 * spec.hidden_size)


def moe_dispatch_workspace_bytes(spec: ServeSpec, gpus: int) -> float:
    """What one card's MoE workspace holds on TensorRT-LLM under attention data parallelism
    for the other `gpus` - 1 ranks' tokens of a profiling pass (max_num_tokens each, every
    token routed to experts_per_token experts), MOE_ROW_INDEX_BYTES and the widest input and
    output buffers a row."""
    topk = spec.experts_per_token
    if spec.engine is not Engine.BATCHED or not spec.attention_data_parallel or topk is None:
        return 0.0
    hidden, width = float(spec.hidden_size), expert_width(spec)
    permuted = MOE_PERMUTED_BYTES.get(spec.quantization, MOE_GEMM_OUTPUT_BYTES)
    inputs = max(hidden * permuted, hidden * MOE_GEMM_OUTPUT_BYTES, width * permuted)
    outputs = max(2.0 * width * MOE_GEMM_OUTPUT_BYTES, hidden * MOE_GEMM_OUTPUT_BYTES)
    rows = max(gpus - 1, 0) * batched_max_num_tokens(spec) * topk
    return rows * (inputs + outputs + MOE_ROW_INDEX_BYTES)


def activation_bytes(spec: ServeSpec, gpus: int) -> float:
    """What one of a copy's `gpus` cards keeps beside the weights and the KV cache for running:
    on TensorRT-LLM its profiling pass's peak (TRTLLM_ACTIVATION_COEFFICIENTS at the attention
    tensor-parallel degree, the MoE workspace for the other ranks' tokens under attention data
    parallelism, NCCL's buffers on more than one card, its CUDA and cuBLAS state);
    on SGLang nothing beyond its reserve (sglang_mem_fraction_static holds it); elsewhere one
    chunk of prefill tokens in flight: `serve.max_num_tokens` on vLLM (its default on the card
    where the serving estimate resolves it: serving.with_engine_budget), else
    PREFILL_CHUNK_TOKENS."""
    if spec.engine is Engine.SGLANG:
        return 0.0
    if spec.engine is not Engine.BATCHED:
        chunk = spec.max_num_tokens or PREFILL_CHUNK_TOKENS[spec.engine]
        return chunk * spec.hidden_size * 2.0 * ACTIVATION_COPIES
    degree = 1 if spec.attention_data_parallel else min(gpus, 8)
    key = max(k for k in TRTLLM_NCCL_BYTES if k <= degree)
    coefficient = TRTLLM_ACTIVATION_COEFFICIENTS[spec.is_moe][key]
    activations = 2.0 * batched_max_num_tokens(spec) * spec.heads * spec.head_dim * coefficient
    nccl = TRTLLM_NCCL_BYTES[max(k for k in TRTLLM_NCCL_BYTES if k <= min(gpus, 8))]
    workspace = moe_dispatch_workspace_bytes(spec, gpus)
    return activations + workspace + nccl + TRTLLM_OTHER_BYTES


def usable_bytes_per_gpu(spec: ServeSpec, memory_bytes: float, gpus: int) -> float:
    """What the engine may fill on one card of `memory_bytes`: 90% on vLLM, SGLang's
    mem_fraction_static of a copy of `gpus`, all but the CUDA context on a local runner, all
    of it on TensorRT-LLM (its CUDA state is in activation_bytes)."""
    if spec.engine is Engine.VLLM:
        return memory_bytes * BATCHED_USABLE_FRACTION
    if spec.engine is Engine.SGLANG:
        return memory_bytes * sglang_mem_fraction_static(spec, memory_bytes, gpus)
    if spec.engine is Engine.BATCHED:
        return memory_bytes
    return max(memory_bytes - LOCAL_CONTEXT_BYTES, 0.0)


def free_bytes(spec: ServeSpec, memory_bytes: float, gpus: int) -> float:
    """Bytes the engine may fill on all cards once the weights and activations are in."""
    usable = gpus * (usable_bytes_per_gpu(spec, memory_bytes, gpus) - activation_bytes(spec, gpus))
    return max(usable - copy_weight_bytes(spec, gpus), 0.0)


def kv_capacity_bytes(spec: ServeSpec, memory_bytes: float, gpus: int) -> float:
    """Bytes for the KV cache on all cards: all that is free on vLLM and a local runner, its
    share of it on TensorRT-LLM."""
    free = free_bytes(spec, memory_bytes, gpus)
    return free * TRTLLM_KV_FREE_FRACTION if spec.engine is Engine.BATCHED else free


def reserve_bytes_per_gpu(spec: ServeSpec, memory_bytes: float, gpus: int) -> float:
    """What the engine keeps on one card beyond the weights and the KV cache: the memory it
    leaves unfilled (vLLM's 10%, SGLang's reserve, the CUDA context), the prefill's
    activations, and on TensorRT-LLM the free memory its KV cache leaves."""
    unfilled = memory_bytes - usable_bytes_per_gpu(spec, memory_bytes, gpus)
    left = free_bytes(spec, memory_bytes, gpus) - kv_capacity_bytes(spec, memory_bytes, gpus)
    return unfilled + activation_bytes(spec, gpus) + left / gpus


def max_users_fit(spec: ServeSpec, memory_bytes: float, gpus: int) -> int:
    """The most users whose whole contexts fit in the KV cache at once, the prefix they
    share held once among them."""
    room = kv_capacity_bytes(spec, memory_bytes, gpus) - kv_shared_bytes(spec)
    return max(math.floor(room / kv_bytes_per_user(spec)), 0)


def offloaded_fraction(spec: ServeSpec, memory_bytes: float, gpus: int) -> float:
    """Share of the weights a local runner leaves in system RAM when the cards cannot hold
    them with the users' KV cache (llama.cpp's partial -ngl); 0 on a batched server."""
    if spec.engine.is_batched:
        return 0.0
    room = gpus * (usable_bytes_per_gpu(spec, memory_bytes, gpus) - activation_bytes(spec, gpus))
    room -= kv_cache_bytes(spec, spec.users)
    weights = weight_bytes(spec)
    return min(max(1.0 - room / weights, 0.0), 1.0)
