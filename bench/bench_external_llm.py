"""Accuracy of `dlrig.model.estimate` on published LLM training throughput on current GPUs,
none of it used in any fit.

    .venv/bin/python bench/bench_external_llm.py [--out FILE] [--rows FILE]

Rows: bench/data/external_llm.csv, tokens/s per GPU as published with the job's layout (URL and
date per row): MosaicML llm-foundry's MPT 125M-70B tables (Composer + FSDP on 8-512 A100 40/80GB
and H100, seq 512-65536, bf16 and fp8), NVIDIA's DGX Cloud Llama 3.1 8B/70B tables (NeMo 24.09,
8-2048 H100, TP/PP/CP), NeMo 24.07's H100 FP8 pre-training, SFT and LoRA tables (Llama 2/3), NeMo's
long-sequence tables (Llama 2 7B on H100 and Llama 3 8B on B200, 4k-1M tokens, FP8), NeMo
AutoModel's H100 LoRA and pre-training tables (Llama 3.x 8B/70B, Qwen2.5 7B/32B, bf16; one GPU to
64), torchtitan's Llama 3.1 8B/70B tables (H100 at 500 W, H200), torchtune's README table (RTX
4090, A100) and llm.q's (a CUDA/C++ trainer: Qwen2.5 0.5B-14B on RTX 4090, RTX 5090, L40S, RTX PRO
6000 Blackwell and H100, 1 and 4 GPUs, bf16 and fp8), and MLPerf Training v5.0/v5.1's AMD
Instinct results (Llama 2 70B LoRA on 8-32 MI300X, MI325X, MI355X and Llama 3.1 8B pre-training
on 8 MI355X, FP8, AMD's NeMo/Megatron/Transformer Engine code on ROCm; each row the median of its
ten logged runs' throughput in 8192-token samples/s over its GPUs). Each row is
predicted with the shipped model and calibration (fitted on Lambda's rows only): a workload
built from the model's published structure at the row's sequence length, the row's micro-batch,
accumulation, precision and parallel layout, with the kernels its framework runs (fused loss and
activation, cuDNN or flash attention, CUDA graphs: `fused_loss` and below), on 8-GPU nodes of
the row's card. Writes
bench/results/external_llm.md (median and 90th percentile of |predicted / measured - 1| by
group) and bench/results/external_llm_rows.md (every row).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import provenance
from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.result import Estimate
from dlrig.workloads import resolve_workload

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data" / "external_llm.csv"
OUT = REPO / "bench" / "results" / "external_llm.md"
ROWS_OUT = REPO / "bench" / "results" / "external_llm_rows.md"
GPUS_PER_NODE = 8

# Published structures. MPT: llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml (@5e85bd6,
# read 2026-12-03): MLP expansion 4 (GELU, two matrices), vocabulary 50368, the LM head tied
# to the token embedding, no dropout, triton flash attention; heads set so head dim is 128
# (64 for 125M/350M). Llama 3.1: config.json of meta-llama/Llama-3.1-8B and -70B (the zoo's
# llama-3-8b / llama-3-70b entries: the same structure).
MPT = {
    "mpt-125m": (768, 12, 12),
    "mpt-350m": (1024, 24, 16),
    "mpt-760m": (1536, 24, 12),
    "mpt-1b": (2048, 24, 16),
    "mpt-3b": (2560, 32, 20),
    "mpt-7b": (4096, 32, 32),
    "mpt-13b": (5120, 40, 40),
    "mpt-30b": (7168, 48, 56),
    "mpt-70b": (8192, 80, 64),
}
MPT_VOCAB = 50368
# Llama 3.1: config.json of meta-llama/Llama-3.1-8B and -70B (the zoo's llama-3-8b and
# llama-3-70b: the same structure). Llama 2: meta-llama/Llama-2-7b-hf, -13b-hf, -70b-hf
# config.json (vocabulary 32000; 70B with 8 KV heads), transformers' parameter counts. Qwen2.5:
# Qwen/Qwen2.5-7B (the zoo's qwen2.5-7b-lora) and Qwen/Qwen2.5-32B config.json (hidden 5120,
# intermediate 27648, 64 layers, 40 heads, 8 KV heads, vocabulary 152064, untied, QKV biases:
# 32,763,876,352 parameters counted). Llama 3.2 3B: torchtune llama3_2_3b (@1814feb: hidden
# 3072, 28 layers, 24 heads, 8 KV heads, intermediate 8192, vocabulary 128256, the head tied to
# the embedding: 3,212,749,824 parameters counted). Qwen2.5 0.5B/1.5B/3B/14B: config.json of
# Qwen/Qwen2.5-0.5B (hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864), -1.5B
# (1536, 28, 12, 2, 8960), -3B (2048, 36, 16, 2, 11008), all three tied with vocabulary 151936,
# and -14B (5120, 48, 40, 8, 13824, untied, 152064); parameters counted from them with QKV
# biases (494,032,768; 1,543,714,304; 3,085,938,688; 14,770,033,664: transformers' counts).
# Yi 34B: 01-ai/Yi-34B config.json (hidden 7168, intermediate 20480, 60 layers, 56 heads, 8 KV
# heads, vocabulary 64000, untied: 34,389,757,248 parameters counted). Mistral 7B v0.2:
# mistral-community/Mistral-7B-v0.2 config.json (4096, 14336, 32, 32, 8, vocabulary 32000,
# untied: 7,241,732,096). Llama 3.1 405B: meta-llama/Llama-3.1-405B config.json (16384, 53248,
# 126 layers, 128 heads, 8 KV heads, vocabulary 128256, untied: 405,853,388,800).
# All gated (SwiGLU), no dropout.
TIED = {"llama-3.2-3b", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b"}
DENSE = {
    "llama-3.1-8b": (8030261248, 4096, 32, 32, 8, 14336, 128256),
    "llama-3.1-70b": (70553706496, 8192, 80, 64, 8, 28672, 128256),
    "llama-2-7b": (6738415616, 4096, 32, 32, 32, 11008, 32000),
    "llama-2-13b": (13015864320, 5120, 40, 40, 40, 13824, 32000),
    "llama-2-70b": (68976648192, 8192, 80, 64, 8, 28672, 32000),
    "qwen2.5-7b": (7615616512, 3584, 28, 28, 4, 18944, 152064),
    "qwen2.5-32b": (32763876352, 5120, 64, 40, 8, 27648, 152064),
    "llama-3.2-3b": (3212749824, 3072, 28, 24, 8, 8192, 128256),
    "qwen2.5-0.5b": (494032768, 896, 24, 14, 2, 4864, 151936),
    "qwen2.5-1.5b": (1543714304, 1536, 28, 12, 2, 8960, 151936),
    "qwen2.5-3b": (3085938688, 2048, 36, 16, 2, 11008, 151936),
    "qwen2.5-14b": (14770033664, 5120, 48, 40, 8, 13824, 152064),
    "yi-34b": (34389757248, 7168, 60, 56, 8, 20480, 64000),
    "mistral-7b-v0.2": (7241732096, 4096, 32, 32, 8, 14336, 32000),
    "llama-3.1-405b": (405853388800, 16384, 126, 128, 8, 53248, 128256),
}
# Cards not in the catalog, as their benchmark describes them: a catalog card with fields
# replaced. torchtitan's Grand Teton H100s: "96GB HBM2e with 2.4 TB/sec peak memory bandwidth"
# (benchmarks/llama3_h100_202412_torchtitan.md, Hardware), run at 500 W (the row's limit).
# AWS's A10G (g5 instances): the A10's GA102 with "24 GB of memory per GPU"
# (aws.amazon.com/ec2/instance-types/g5); only its memory enters the peak-memory rows it runs.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "NVIDIA A10G": ("NVIDIA A10", {"memory_gb": 24.0}),
    "H100 SXM 96GB HBM2e": (
        "H100 SXM5 80GB",
        {"memory_gb": 96.0, "memory_type": "HBM2e", "memory_bandwidth_gb_s": 2400.0},
    ),
}
# Catalog bookkeeping that a card spec written inline does not take.
_NOT_SPEC = ("aliases", "sources", "notes", "price_date", "street_price_usd",
             "street_price_date", "street_market")  # fmt: skip
NETWORKS = {
    "ib400x8": {"kind": "infiniband", "gbit_s": 400, "adapters_per_node": 8},
    "roce200x8": {"kind": "roce", "gbit_s": 200, "adapters_per_node": 8},
}


@dataclass(frozen=True)
class Row:
    source: str
    url: str
    date: str
    framework: str
    model: str
    params: float | None
    gpu: str
    gpus: int
    nodes: int
    network: str
    seq_len: int
    micro_batch: int
    grad_accum: int
    precision: str
    zero_stage: int
    tensor: int
    pipeline: int
    context_parallel: int
    virtual_pipeline: int
    sequence_parallel: bool
    checkpointing: str  # true | false | selective | unknown (run as false)
    compiled: bool
    finetune: str  # full | lora | qlora
    trainable_fraction: float | None
    cpu_offload: bool
    pure_16bit: bool  # master weights and Adam moments in 16 bits (no fp32 copy)
    flag: str  # why the row is left out of the figures (empty: kept)
    power_limit_w: float | None
    measured: float | None  # tokens/s per GPU (None: a memory row whose source gives no speed)
    published_mfu: float | None
    notes: str
    optimizer: str = "adamw"  # adamw | adamw8bit
    paged_optimizer: bool = False  # bitsandbytes Paged* optimizer: state pages to host RAM
    optimizer_in_backward: bool = False  # torchtune optimizer_in_bwd
    loss_chunks: int = 1  # llm.q --lmhead-chunks, where its benchmark command gives it
    # 'partial' checkpointing: the layers recomputed (Megatron's --recompute-num-layers)
    checkpointed_layers: int | None = None


# llm.q's tables ran "a total batch size of 524288 for <= 3B (single-GPU 7B uses half the total
# batch size)" in tokens (IST-DASLab/llmq README @f14f5e1, the table rows' source), reached by
# gradient accumulation over the micro-batches the tables list: the optimizer step and the
# gradient exchange run once per that many micro-batches, not every one.
LLMQ_TOTAL_BATCH_TOKENS = 524_288


def llmq_grad_accum(r: Row) -> int:
    """Micro-batches per optimizer step of an llm.q table row."""
    total = LLMQ_TOTAL_BATCH_TOKENS
    if r.gpus == 1 and r.model == "qwen2.5-7b":
        total //= 2
    return max(1, total // (r.seq_len * r.micro_batch * r.gpus))


def read_rows(path: Path) -> list[Row]:
    rows = _read_csv(path)
    for r in rows:
        if r.measured is None:
            raise ValueError(
                f"{path}: {r.source} {r.model}: measured_tokens_per_s_per_gpu is "
                "empty, expected the row's tokens/s per GPU"
            )
    return [
        dataclasses.replace(r, grad_accum=llmq_grad_accum(r)) if r.source == "llm.q" else r
        for r in rows
    ]


def _read_csv(path: Path) -> list[Row]:
    with path.open() as fh:
        return [
            Row(
                r["source"], r["url"], r["date"], r["framework"], r["model"],
                float(r["params"]) if r["params"] else None, r["gpu"], int(r["gpus"]),
                int(r["nodes"]), r["network"], int(r["seq_len"]), int(r["micro_batch"]),
                int(r["grad_accum"]), r["precision"], int(r["zero_stage"]), int(r["tensor"]),
                int(r["pipeline"]), int(r["context_parallel"]), int(r["virtual_pipeline"]),
                r["sequence_parallel"] == "true", r["activation_checkpointing"],
                r["compile"] == "true", r["finetune"],
                float(r["trainable_fraction"]) if r["trainable_fraction"] else None,
                r["cpu_offload"] == "true", r["pure_16bit"] == "true", r["flag"],
                float(r["power_limit_w"]) if r["power_limit_w"] else None,
                float(r["measured_tokens_per_s_per_gpu"])
                if r["measured_tokens_per_s_per_gpu"] else None,
                float(r["published_mfu"]) if r["published_mfu"] else None, r["notes"],
                r["optimizer"] or "adamw", r["paged_optimizer"] == "true",
                r["optimizer_in_backward"] == "true", int(r["loss_chunks"] or 1),
                int(r["checkpointed_layers"]) if r.get("checkpointed_layers") else None,
            )
            for r in csv.DictReader(fh)
        ]  # fmt: skip


def model_block(row: Row) -> dict[str, Any]:
    """The row's model at its sequence length: forward FLOPs per token are 2 x the parameters
    that multiply (all but the input embedding and learned positions; a tied head multiplies
    once) plus the attention scores' 4 L s h (MosaicML's and NeMo's MFU convention)."""
    s = row.seq_len
    if row.model in MPT:
        h, layers, heads = MPT[row.model]
        # NumParams in MosaicML's tables counts the learned positions (s x h: it grows with
        # the sequence length); they are looked up, not multiplied.
        params = row.params or 12.0 * layers * h * h + MPT_VOCAB * h + s * h
        matmul = params - s * h
        return {
            "kind": "language", "params": params,
            "forward_flops_per_token": 2.0 * matmul + 4.0 * layers * s * h,
            "seq_len": s, "hidden_size": h, "num_layers": layers, "num_heads": heads,
            "ffn_hidden_size": 4 * h, "vocab_size": MPT_VOCAB, "tied_embeddings": True,
            "dropout": False, "attention": attention_kernel(row),
        }  # fmt: skip
    params, h, layers, heads, kv_heads, ffn, vocab = DENSE[row.model]
    tied = row.model in TIED
    # An untied input embedding is looked up; a tied one also multiplies, as the head.
    matmul = params if tied else params - vocab * h
    return {
        "kind": "language", "params": params,
        "forward_flops_per_token": 2.0 * matmul + 4.0 * layers * s * h,
        "seq_len": s, "hidden_size": h, "num_layers": layers, "num_heads": heads,
        "kv_heads": kv_heads, "ffn_hidden_size": ffn, "vocab_size": vocab, "gated_mlp": True,
        "tied_embeddings": tied, "dropout": False, "attention": attention_kernel(row),
    }  # fmt: skip


# Sources whose grad_accum column is the run's own accumulation (see workload_doc).
PUBLISHED_ACCUMULATION = frozenset({"mlperf-training"})


def workload_doc(row: Row) -> dict[str, Any]:
    # The file's grad_accum counts whole sequences per GPU a step (its notes: "CP2 modelled as
    # whole sequences"); the job ran the published accumulation, context x as many
    # micro-batches of 1/context of a sequence each. MLPerf's rows record the published
    # accumulation itself (global batch / (data-parallel ranks x micro-batch), from each
    # submission's config): its Llama 2 70B LoRA at global batch 8 on 16 GPUs with context 2
    # gives each GPU half a sequence a step, which whole sequences cannot say.
    accumulation = row.grad_accum
    if row.source not in PUBLISHED_ACCUMULATION:
        accumulation *= row.context_parallel
    parallel: dict[str, Any] = {
        "strategy": "fsdp" if row.zero_stage else "ddp",
        "zero_stage": row.zero_stage,
        "tensor": row.tensor,
        "pipeline": row.pipeline,
        "context": row.context_parallel,
    }
    if row.cpu_offload:
        parallel["cpu_offload"] = True
    if row.sequence_parallel:
        parallel["sequence"] = True
    if row.pipeline > 1:
        # An interleaved schedule (v virtual stages) idles (p - 1) / (v m) of a step: v x the
        # micro-batches in dlrig's plain bubble (p - 1) / (m + p - 1).
        parallel["micro_batches"] = row.virtual_pipeline * accumulation
    finetune: dict[str, Any] = {}
    if row.finetune != "full":
        # None of these stacks is peft: torchtune's LoRALinear builds its adapters in the
        # model's dtype, NeMo 1.x's Megatron adapters and NeMo AutoModel's (TE, triton
        # kernels) run in the training precision.
        finetune["finetune"] = {"method": row.finetune, "adapter_precision": "16bit",
                                "trainable_fraction": row.trainable_fraction,
                                "adapter_dropout": adapter_dropout(row),
                                "target_modules": lora_targets(row)}  # fmt: skip
        if row.finetune == "qlora" and row.framework == "torchtune":
            # torchtune quantizes with torchao's NF4Tensor (torchtune/modules/peft/lora.py)
            finetune["finetune"]["base_format"] = "torchao-nf4"
    return {
        "name": f"{row.model} s{row.seq_len} ({row.source})",
        "model": model_block(row),
        "batch_size": row.micro_batch,
        "gradient_accumulation": accumulation,
        "precision": row.precision,
        "optimizer": row.optimizer,
        "optimizer_in_backward": row.optimizer_in_backward,
        "paged_optimizer": row.paged_optimizer,
        "dataset": "synthetic",
        "parallel": parallel,
        # torchtitan's 'selective' is its op policy (selective_checkpointing: every second
        # matmul's output and the attention's kept, the rest recomputed); llm.q's recomputes a
        # few cheap ops and is taken as none. 'partial' is Megatron's block method:
        # `checkpointed_layers` of the layers recompute whole.
        "activation_checkpointing": row.checkpointing in ("true", "partial"),
        "selective_checkpointing": row.checkpointing == "selective"
        and row.framework == "torchtitan",
        **({"checkpointed_layers": row.checkpointed_layers} if row.checkpointed_layers else {}),
        "fused_loss": fused_loss(row),
        "loss_chunks": TORCHTUNE_LOSS_CHUNKS if row.source == "torchtune" else row.loss_chunks,
        "chunked_logits_kept": row.source in CHUNKED_LOGITS_KEPT,
        "fused_activation": fused_activation(row),
        "cuda_graphs": cuda_graphs(row),
        "kernels": kernel_library(row),
        "pure_16bit": row.pure_16bit,
        "fp8_params": fp8_params(row),
        **({"fp8_transpose_cache": False} if fp8_params(row) and not transpose_cache(row) else {}),
        **finetune,
    }


def _gpu_entry(name: str) -> dict[str, Any]:
    if name not in VARIANTS:
        return {"model": name}
    base, changes = VARIANTS[name]
    spec = load_catalog().find(GPU, base).model_dump(mode="json", exclude_none=True)
    for key in _NOT_SPEC:
        spec.pop(key, None)
    return {"spec": {**spec, **changes, "name": name}}


def card_memory_gb(name: str) -> float:
    """A row's card's memory, as its benchmark describes it (VARIANTS) or as the catalog has it."""
    if name in VARIANTS:
        return float(VARIANTS[name][1]["memory_gb"])
    return load_catalog().find(GPU, name).memory_gb


def build_doc(row: Row) -> dict[str, Any]:
    gpu: dict[str, Any] = {**_gpu_entry(row.gpu), "count": min(row.gpus, GPUS_PER_NODE)}
    if row.power_limit_w:
        gpu["power_limit_w"] = row.power_limit_w
    doc: dict[str, Any] = {"name": f"{row.nodes}x {gpu['count']}x {row.gpu}", "gpus": [gpu]}
    if row.nodes > 1:
        doc["nodes"] = row.nodes
        doc["network"] = NETWORKS[row.network]
    return doc


@dataclass(frozen=True)
class Prediction:
    row: Row
    tokens_per_gpu: float
    fits: bool | None  # None: a layout whose memory dlrig does not model (llm.q's selective)
    bottleneck: str
    result: Estimate  # the whole estimate, for benches that show its stages

    @property
    def error(self) -> float:
        assert self.row.measured is not None, "read_rows refuses a row without a speed"
        return self.tokens_per_gpu / self.row.measured - 1.0


def predict(row: Row) -> Prediction:
    est = estimate(resolve_build(build_doc(row), "external_llm"),
                   resolve_workload(workload_doc(row), "external_llm"))  # fmt: skip
    assert est.tokens_per_s is not None
    # llm.q's selective recompute is given as none: the job dlrig is given keeps more, so its
    # memory verdict says nothing about the published one. torchtitan's is modelled.
    modelled = row.checkpointing in ("true", "false", "partial") or (
        row.checkpointing == "selective" and row.framework == "torchtitan"
    )
    # At the published micro-batch: one that fits only split (memory_plan) does not.
    fits = est.memory.max_batch_per_gpu >= row.micro_batch if modelled else None
    return Prediction(row, est.tokens_per_s / est.gpus, fits, str(est.bottleneck), est)


def _seq_bucket(r: Row) -> str:
    if r.seq_len <= 2048:
        return "seq <= 2k"
    return "seq 4k-8k" if r.seq_len <= 8192 else "seq 16k-64k"


def _size(r: Row) -> str:
    params = r.params or DENSE[r.model][0]
    if params < 2e9:
        return "< 2B params"
    return "2B-15B params" if params < 15e9 else ">= 30B params"


def _scale(r: Row) -> str:
    if r.gpus <= 8:
        return "8 GPUs"
    return "16-64 GPUs" if r.gpus <= 64 else ">= 128 GPUs"


# torchtune's recipes run CEWithChunkedOutputLoss: 8 chunks, each upcast to fp32 for its own
# cross-entropy, every chunk's log-softmax saved (pytorch/torchtune
# torchtune/modules/loss/ce_chunked_output_loss.py, num_output_chunks=8).
TORCHTUNE_LOSS_CHUNKS = 8
# lit-gpt's head runs in chunks of 128 tokens (`model(input_ids, lm_head_chunk_size=128)`) and
# chunked_cross_entropy takes the list: every chunk stays in the graph through the backward,
# as torchtune's do (Lightning-AI/litgpt finetune/lora.py and lit_gpt/utils.py @cc19015).
CHUNKED_LOGITS_KEPT = ("torchtune", "litgpt")


# Answer.AI's fsdp_qlora train.py: `lora_dropout: float = 0.1` (main's defaults, @50efa1e,
# 2024-03-26; the benchmark commands set no other), handed to peft's LoraConfig.
FSDP_QLORA_LORA_DROPOUT = 0.1

# MLPerf Training's Llama 2 70B LoRA as AMD's code runs it (every submitter's, v5.0 and v5.1):
# `adapter_dropout: ${oc.decode:${oc.env:LORA_DROPOUT,0.1}}`, `dropout_position: "pre"`, which no
# submitted config sets (mlcommons/training_results_v5.1@441d65f, AMD/benchmarks/
# llama2_70b_lora/implementations/MI300X_EPYC_9575F_pytorch_llama2_70b/src/conf/
# megatron_gpt_peft_tuning_config.yaml).
MLPERF_LORA_DROPOUT = 0.1

# lit-gpt's finetune/lora.py: `lora_dropout = 0.05` (Lightning-AI/litgpt @cc19015), the module
# constant its resource tables ran with.
LITGPT_LORA_DROPOUT = 0.05


def adapter_dropout(r: Row) -> float:
    """LoRA dropout of the row's stack: fsdp_qlora's train.py default (FSDP_QLORA_LORA_DROPOUT)
    MLPerf's Llama 2 70B LoRA config (MLPERF_LORA_DROPOUT) and lit-gpt's finetune/lora.py
    (LITGPT_LORA_DROPOUT); 0 for torchtune (its Llama LoRA
    recipes: `lora_dropout: 0.0`), NeMo (Megatron adapters, `adapter_dropout: 0.0`) and NeMo
    AutoModel, whose fused adapters the model counts alone."""
    return {
        "fsdp_qlora": FSDP_QLORA_LORA_DROPOUT,
        "mlperf-training": MLPERF_LORA_DROPOUT,
        "litgpt": LITGPT_LORA_DROPOUT,
    }.get(r.source, 0.0)


# The projections each stack's LoRA adapts (its default, which the rows' commands keep):
# Answer.AI fsdp_qlora's 'all' ["k_proj", "q_proj", "v_proj", "up_proj", "down_proj",
# "gate_proj"] (train.py @05ed9f2, lines 1158-1159: no o_proj); torchtune's Llama LoRA recipes
# q, v and output with the MLP (lora_attn_modules: ['q_proj', 'v_proj', 'output_proj'],
# apply_lora_to_mlp: True, as each row's notes give it); NeMo 1.x's LoRA its fused
# attention_qkv alone (the rows' notes: assumed, the framework's default); MLPerf's Llama 2 70B
# LoRA `target_modules: ['attention']`, NeMo's fused linear_qkv and linear_proj (AMD's
# megatron_gpt_peft_tuning_config.yaml, MLPERF_LORA_DROPOUT's file): q, k, v and o; NeMo
# AutoModel's "*_proj": all seven; lit-gpt's finetune/lora.py the fused QKV's query and value
# (lora_query, lora_value True, the rest False, Lightning-AI/litgpt @cc19015).
LORA_TARGETS = {
    "fsdp_qlora": ["q", "k", "v", "gate", "up", "down"],
    "litgpt": ["q", "v"],
    "torchtune": ["q", "v", "o", "gate", "up", "down"],
    "nemo-24.07": ["q", "k", "v"],
    "mlperf-training": ["q", "k", "v", "o"],
}


def lora_targets(r: Row) -> list[str]:
    """The projections the row's stack adapts (LORA_TARGETS; all seven otherwise)."""
    return LORA_TARGETS.get(r.source, ["q", "k", "v", "o", "gate", "up", "down"])


def fp8_params(r: Row) -> bool:
    """FP8 weight storage as the source states it: MLPerf's NeMo configs set `fp8_params` with
    FP8 (AMD's megatron_gpt_peft_tuning_config.yaml: `fp8_params: ${FP8}`), which the rows'
    notes record as "with FP8 params"."""
    return r.precision == "fp8" and "with FP8 params" in r.notes


def transpose_cache(r: Row) -> bool:
    """Whether the FP8 weights keep their transposed copy between steps. MLPerf's AMD-stack rows
    do not: v5.0 ran ROCm TE 1.9 (te_v1.9_mlperf_llama2) under NeMo's
    `disable_parameter_transpose_cache: True`, v5.1 sets ENABLE_TRANSPOSE_CACHE=0 in every
    config (mlcommons/training_results_v5.0 and v5.1, AMD/benchmarks/llama2_70b_lora and
    llama31_8b: Dockerfile, src/conf/megatron_gpt_peft_tuning_config.yaml, config_*.sh)."""
    return r.source != "mlperf-training"


def fused_loss(r: Row) -> bool:
    """The row's cross-entropy runs in one fused kernel from the 16-bit logits: llm-foundry's
    MPT (modeling_mpt.py: `loss_fn='fused_crossentropy'`, flash-attn's kernel, the default the
    benchmark tables ran) and llm.q (src/kernels/fused_classifier.cu). IST-DASLab/llmq and
    mosaicml/llm-foundry, read 2026-12-04. torchtitan compiles its loss with the model from
    2025 (torchtitan/components/loss.py build_cross_entropy_loss: `if
    job_config.training.compile: loss_fn = torch.compile(loss_fn)` at e7c0cae, the commit
    Trainy's runs name; at 9dec370, the December 2024 tables', train.py leaves that line
    commented out): Inductor fuses the fp32 cast with the log-softmax."""
    trainy_compiled = r.source == "torchtitan (Trainy)" and r.compiled
    return r.source in ("llm-foundry", "llm.q") or trainy_compiled


def fused_activation(r: Row) -> bool:
    """The row's SwiGLU runs in one kernel whose backward recomputes the SiLU from the saved
    gate and up outputs: llm.q (src/kernels/swiglu.cu, swiglu_backward takes only the input;
    IST-DASLab/llmq @b77d969, read 2026-12-04). PyTorch eager keeps the SiLU output too."""
    return r.source == "llm.q"


def cuda_graphs(r: Row) -> bool:
    """The row replays each transformer block as a CUDA graph: llm.q, whose benchmark command
    lines all pass `--use-cuda-graphs` (benchmarks/4090x1.md, 4090x4.md, H100x1.md,
    Pro6000x1.md, Pro6000x4.md: ARGS; scripts/train.py defaults it on; IST-DASLab/llmq
    @b77d969, read 2026-12-04)."""
    return r.source == "llm.q"


def kernel_library(r: Row) -> str:
    """The workload's `kernels` for the row's stack: `fused` for llm.q (its own CUDA kernels:
    src/kernels rmsnorm.cu, rope.cu, swiglu.cu, fused_classifier.cu; IST-DASLab/llmq @b77d969)
    and for NeMo / Megatron (Transformer Engine's LayerNormLinear and fused QKV and fc1
    matmuls, Megatron-Core's bias_swiglu_fusion, apply_rope_fusion and
    bias_dropout_fusion: NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py), as
    AMD's MLPerf code runs them on ROCm (its configs: USE_TE_SWIGLU=1, NVTE_FUSED_ATTN_CK=1);
    `liger` for NeMo AutoModel, whose NeMoAutoModelForCausalLM patches every model with Liger
    Kernel unless told not to (nemo_automodel/components/_transformers/auto_model.py:
    from_pretrained and from_config, `use_liger_kernel: bool = True`; NVIDIA-NeMo/Automodel
    @3977de9); `compile` where the row says the job ran torch.compile (torchtitan,
    torchtune); eager otherwise (torchtune's modules as written, llm-foundry's MPT)."""
    if r.source == "llm.q" or r.framework.startswith("nemo-2"):
        return "fused"
    if r.framework == "nemo-automodel":
        return "liger"
    return "compile" if r.compiled else "eager"


def attention_kernel(r: Row) -> str:
    """The workload's `attention` for the kernel the row's framework runs: Transformer Engine /
    cuDNN fused attention (NeMo and Megatron, llm.q: "cudnn"), else FlashAttention-2 through
    PyTorch SDPA or MosaicML's triton kernel ("flash"). NeMo AutoModel runs Hugging Face models
    on SDPA (its llm_benchmark configs: `attn: sdpa`, the 70B pretrain `attn_implementation:
    sdpa`; its PEFT configs name no TE attention; NVIDIA-NeMo/Automodel, read 2026-12-04)."""
    if r.framework == "nemo-automodel":
        return "flash"
    return "cudnn" if r.framework.startswith(("nemo", "llm.q")) else "flash"


def _attention_kernel(r: Row) -> str:
    return {"cudnn": "TE/cuDNN fused", "flash": "FA2/SDPA/triton"}[attention_kernel(r)]


GROUPS: list[tuple[str, Callable[[Row], str]]] = [
    ("GPU", lambda r: r.gpu + (f" at {r.power_limit_w:.0f} W" if r.power_limit_w else "")),
    ("source", lambda r: r.source),
    ("precision", lambda r: r.precision),
    ("sequence", _seq_bucket),
    ("model size", _size),
    ("scale", _scale),
    ("checkpointing", lambda r: {"true": "full recompute", "false": "none"}.get(
        r.checkpointing, r.checkpointing)),
    ("torch.compile", lambda r: "compiled" if r.compiled else "eager"),
    ("job", lambda r: r.finetune if r.finetune != "full" else "full training"),
    ("attention kernel", _attention_kernel),
]  # fmt: skip


def stats_cells(errors: list[float]) -> str:
    """Table cells of signed errors: rows | median |error| | p90 |error| | median signed."""
    abs_err = [abs(e) for e in errors]
    return (
        f"{len(errors)} | {statistics.median(abs_err):.1%} | "
        f"{float(np.quantile(abs_err, 0.9)):.1%} | {statistics.median(errors):+.1%}"
    )


def summary(preds: list[Prediction]) -> list[str]:
    lines = [
        "| group | rows | n | median abs error | p90 abs error | median signed |",
        "|---|---|---|---|---|---|",
        f"| all | all | {stats_cells([p.error for p in preds])} |",
    ]
    for title, key in GROUPS:
        groups: dict[str, list[float]] = {}
        for p in preds:
            groups.setdefault(key(p.row), []).append(p.error)
        for name, errs in sorted(groups.items()):
            lines.append(f"| {title} | {name} | {stats_cells(errs)} |")
    return lines


def row_table(preds: list[Prediction]) -> list[str]:
    lines = [
        "| source | model | GPU | GPUs | seq | mb x ga | prec | ZeRO/TP/PP/CP | ckpt | measured "
        "tok/s/GPU | pub. MFU | predicted | error | fits | bottleneck |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in preds:
        r = p.row
        mfu = f"{r.published_mfu:.1f}%" if r.published_mfu else ""
        lines.append(
            f"| {r.source} | {r.model} | {r.gpu} | {r.gpus} | {r.seq_len} | "
            f"{r.micro_batch} x {r.grad_accum} | {r.precision}{' compiled' if r.compiled else ''}"
            f" | {r.zero_stage}/{r.tensor}/{r.pipeline}/{r.context_parallel} | {r.checkpointing} | "
            f"{r.measured:,.0f} | {mfu} | {p.tokens_per_gpu:,.0f} | {p.error:+.1%} | "
            f"{ {True: 'yes', False: 'NO', None: 'n/a'}[p.fits] } | {p.bottleneck} |"
        )
    return lines


def source_status() -> list[str]:
    """Per source of the file: held out, or which constants were chosen looking at it."""
    from held_out import LLM_SOURCES

    keys = sorted(set(LLM_SOURCES.values()))
    titles = provenance.sources()
    return [f"- {titles[k].title}: {provenance.status([k])}" for k in keys]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--rows", type=Path, default=ROWS_OUT)
    args = parser.parse_args()
    every = read_rows(DATA)
    flagged = [r for r in every if r.flag]
    rows = [r for r in every if not r.flag]
    preds = [predict(r) for r in rows]
    not_fit = [p for p in preds if p.fits is False]
    by_source = Counter(p.row.source for p in not_fit)
    worst = sorted(preds, key=lambda p: -abs(p.error))[:10]
    head = [
        f"Command: `.venv/bin/python bench/bench_external_llm.py` ({dt.date.today()}, "
        f"{machine()}).",
        "",
    ]
    sources = sorted({(r.source, r.url, r.date) for r in rows})
    lines = [
        "# Accuracy of `dlrig estimate` on published LLM training (current GPUs, at scale)",
        "",
        *head,
        f"{len(rows)} rows from `bench/data/external_llm.csv`: tokens/s per GPU as published, "
        "each predicted with the shipped calibration (fitted on Lambda's rows only, none of "
        "these): the model's published structure at the row's sequence length, its micro-batch, "
        "accumulation, precision and layout (ZeRO stage, tensor, pipeline and context "
        "parallelism: `parallel.context` splits each sequence, its ring of keys and values "
        "behind the attention) on 8-GPU nodes; selective or unstated checkpointing as none; "
        "each row's `kernels` is its stack's (fused: llm.q, NeMo and Megatron; liger: NeMo "
        "AutoModel; compile where the row ran torch.compile; eager otherwise: "
        "kernel_library); the memory verdict is left out (n/a) where the layout "
        "is not modelled. Every row: `bench/results/external_llm_rows.md`.",
        "",
        "Sources: " + "; ".join(f"{s} ({u}, {d})" for s, u, d in sources) + ".",
        "",
        *source_status(),
        "",
        f"Left out ({len(flagged)}): "
        + ("; ".join(f"{r.model} on {r.gpu} ({r.source}): {r.flag}" for r in flagged) or "none")
        + ".",
        "",
        *summary(preds),
        "",
        f"Rows where dlrig says the published job does not fit in GPU memory: {len(not_fit)}"
        + (
            " (by source: "
            + ", ".join(f"{s} {n}" for s, n in sorted(by_source.items()))
            + "; " + ", ".join(f"{p.row.model} s{p.row.seq_len} mb{p.row.micro_batch} on "
                               f"{p.row.gpu}" for p in not_fit[:8]) + ")"
            if not_fit else ""
        )
        + ".",
        "",
        "Largest misses:",
        "",
        *row_table(worst),
    ]  # fmt: skip
    args.out.write_text("\n".join(lines) + "\n")
    args.rows.write_text(
        "\n".join(["# Every row of bench_external_llm.py", "", *head, *row_table(preds)]) + "\n"
    )
    print(f"wrote {args.out} and {args.rows}")


if __name__ == "__main__":
    main()
