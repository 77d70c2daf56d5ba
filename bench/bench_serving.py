"""Accuracy of `dlrig.model.serving` on published LLM decode and serving measurements.

    .venv/bin/python bench/bench_serving.py [--out FILE]

Predicts each published point (llama.cpp batch-1 decode on consumer cards, TensorRT-LLM batch-1
decode on an H200, vLLM batch-1 decode on an H100 and an A100 and its time per output token at
a client concurrency, TensorRT-LLM maximum-throughput serving on 8x H100) with the shipped engine
profiles and writes the prediction, the measurement, the error and the source to
bench/results/serving.md. The tests in tests/model/test_serving.py hold the 20% (batch 1) and
25% (8-GPU server) bounds; this file also lists the 8-GPU points the tests do not hold.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import provenance
from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.model.serving import ServingEstimate, serving_estimate
from dlrig.model.serving_batch import batch_run
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, KVPrecision, ServeSpec, WeightFormat

REPO = Path(__file__).resolve().parents[1]
LLAMA_BENCH = (
    "[XiongjieDai/GPU-Benchmarks-on-LLM-Inference](https://github.com/XiongjieDai/"
    "GPU-Benchmarks-on-LLM-Inference) llama.cpp tg 1024, May 2024"
)
NVIDIA_BLOG = (
    "[NVIDIA blog, Llama 3.3 70B speculative decoding](https://developer.nvidia.com/blog/"
    "boost-llama-3-3-70b-inference-throughput-3x-with-nvidia-tensorrt-llm-speculative-"
    "decoding/), 2024-12-17, baseline without draft"
)
TRTLLM = (
    "[TensorRT-LLM perf-overview](https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/"
    "performance/perf-overview.md) @00f37686, Llama 3.1 405B FP8, H100 TP8"
)
# vLLM's own rows (serve.engine vllm). Calibration: the vLLM profile's bandwidth share was
# solved from these two batch-1 rows (src/dlrig/model/serving.py, VLLM).
VLLM_INFERENCEBENCH = (
    "[InferenceBench concurrency sweep](https://yobitelcomm.github.io/bench/recipes/"
    "concurrency-sweep/), vLLM 0.21.0, H100-80GB-HBM3, fp16, chatbot-short, 2026-05-16, "
    "TPOT p50"
)
VLLM_MUSGRAVE = (
    "[J. Musgrave, vLLM sweep on A100](https://johnmusgrave.com/p/vllm-throughput-latency-"
    'sweep-on), vLLM 0.23.0, A100 40GB, BF16, 1024/128, concurrency 1 ("about 75 tokens/sec")'
)
# vLLM sweeps (TPOT p50 at each client concurrency): no engine share was chosen on them; the
# decode step's structure was, with them in view (bench/provenance.toml).
VLLM_A6000 = (
    "[ai-factory-ops-lab inference benchmark report](https://ld-singh.github.io/ai-factory-"
    "ops-lab/portfolio-lab/06-validation-reports/inference-benchmark-report/), vLLM 0.23.0, "
    "RTX A6000, Qwen2.5-7B-Instruct, 2026-06-27"
)


@dataclass(frozen=True)
class Point:
    label: str
    workload: str
    gpu: str
    count: int
    changes: dict[str, object]
    measured: float
    bound: float
    source: str
    full_concurrency: bool = False
    tested: bool = True


LOCAL = {"engine": Engine.LOCAL, "prompt_tokens": 1, "output_tokens": 1024}
# trtllm-bench's throughput runs (every TensorRT-LLM perf-overview row) set max_batch_size and
# max_num_tokens from a rough count of the requests its KV cache holds (tensorrt_llm/bench/
# build/tuning.py, calc_engine_setting and finetune_setting): every card's memory (NVML's
# total) less the weights at 1 byte a parameter in FP8 and 0.5 in NVFP4, 0.95 of that over
# 2 x layers x max(TP, KV heads) x head_dim KV bytes a token of ISL + OSL tokens; max_batch_size
# that count capped at 4,096 and rounded up (to 32s below 256, 128s below 1,024, 256s above),
# max_num_tokens the capped count x (1 + ISL / OSL), at most 32,768, rounded up (256s, at least
# 2,048, below 4,096; 512s below 8,192; 1,024s above). Under attention data parallelism each
# GPU's scheduler takes max_batch_size.
TRTLLM_BENCH_MAX_BATCH = 4096
TRTLLM_BENCH_MAX_TOKENS = 32768
TRTLLM_BENCH_KV_FRACTION = 0.95
TRTLLM_BENCH_WEIGHT_BYTES = {WeightFormat.FP8: 1.0, WeightFormat.NVFP4: 0.5}
FP8_SERVE = {"quantization": WeightFormat.FP8, "kv_precision": KVPrecision.FP8}
# Each perf-overview row times a fixed dataset of requests of one length, all queued at once
# (perf-overview @00f37686, 'Preparing a Dataset': $num_requests by ISL/OSL); predicted as that
# batch runs (serving_batch.batch_run: waves of the requests the build runs at
# once, the last with the rest), not as an endless queue.
PERF_OVERVIEW_REQUESTS = {"128/128": 30000, "128/2048": 3000, "128/4096": 1500, "500/2000": 3000,
                          "1000/1000": 3000, "1000/2000": 1500, "2048/128": 3000,
                          "2048/2048": 1500, "5000/500": 1500, "20000/2000": 1000}  # fmt: skip


def _round_up(value: float, step: int) -> int:
    return step * math.ceil(value / step)


def trtllm_bench_settings(
    workload: str, gpu: str, count: int, changes: dict[str, Any]
) -> dict[str, int]:
    """max_batch and max_num_tokens as trtllm-bench sets them for a throughput run of
    `workload` on `count` of the catalog's `gpu` with `changes` (its lengths and formats)."""
    w = load_workload(workload)
    assert w.serve is not None
    spec = replace(w.serve, **changes)
    card = load_catalog(None).find(GPU, gpu)
    kv_bytes = 1.0 if spec.kv_precision is KVPrecision.FP8 else 2.0
    per_token_gib = 2 * spec.layers * max(count, spec.kv_heads) * spec.head_dim * kv_bytes / 2**30
    weights_gib = spec.total_params * TRTLLM_BENCH_WEIGHT_BYTES.get(spec.quantization, 2.0) / 2**30
    free_gib = card.memory_gb * count - weights_gib
    requests = free_gib * TRTLLM_BENCH_KV_FRACTION / (per_token_gib * spec.context_tokens)
    batch = min(requests, TRTLLM_BENCH_MAX_BATCH)
    step = 32 if batch < 256 else 128 if batch < 1024 else 256
    max_batch = max(64, _round_up(batch, step))
    tokens = min(batch * (1 + spec.prompt_tokens / spec.output_tokens), TRTLLM_BENCH_MAX_TOKENS)
    if tokens < 4096:
        max_tokens = max(2048, _round_up(tokens, 256))
    else:
        max_tokens = _round_up(tokens, 512 if tokens < 8192 else 1024)
    return {"max_batch": max_batch, "max_num_tokens": max_tokens}


# SGLang 0.5.6's serial runs on one A100 SXM4 40GB in AccelMark (FreedomIntelligence/AccelMark,
# the "interactive" scenario: one request at a time, its result.json posted in the issue),
# TPOT p50 at the suite's median lengths (suite A p50 280 in / 310 out, suite F 95 / 150,
# suite D 28,650 / 256). The first two set the SGLang profile (serving.SGLANG); the third,
# a long context whose KV read is a fifth of the step, sets nothing.
SGLANG_ACCELMARK = (
    "[AccelMark suite {suite}, SGLang 0.5.6, A100-SXM4-40GB]"
    "(https://github.com/FreedomIntelligence/AccelMark/issues/{issue}), TPOT p50"
)
# Qwen2.5-0.5B-Instruct's config.json (huggingface.co/Qwen/Qwen2.5-0.5B-Instruct): 24 layers,
# hidden 896, 14 heads, 2 KV heads of 64, vocabulary 151,936, tied embeddings; 494,032,768
# parameters (its model card: 0.49B).
QWEN25_05B = {"total_params": 494032768, "active_params": 494032768, "layers": 24,
              "hidden_size": 896, "heads": 14, "kv_heads": 2, "head_dim": 64,
              "vocab_size": 151936, "tied_embeddings": True}  # fmt: skip
# InferenceBench's chatbot-short prompts and answers are short; their lengths are not
# published: 128/128 assumed (an 8B model's KV cache is then 0.2% of the weights it reads).
VLLM_SHORT = {"engine": Engine.VLLM, "prompt_tokens": 128, "output_tokens": 128}
POINTS = [
    Point("4090, Llama 3 8B Q4_K_M, batch 1", "llama-3.1-8b-serve", "RTX 4090", 1,
          {**LOCAL, "quantization": WeightFormat.INT4}, 127.74, 0.20, LLAMA_BENCH),
    Point("4090, Llama 3 8B F16, batch 1", "llama-3.1-8b-serve", "RTX 4090", 1,
          {**LOCAL, "quantization": WeightFormat.BF16}, 54.34, 0.20, LLAMA_BENCH),
    Point("3090, Llama 3 8B Q4_K_M, batch 1", "llama-3.1-8b-serve", "RTX 3090", 1,
          {**LOCAL, "quantization": WeightFormat.INT4}, 111.74, 0.20, LLAMA_BENCH),
    Point("3090, Llama 3 8B F16, batch 1", "llama-3.1-8b-serve", "RTX 3090", 1,
          {**LOCAL, "quantization": WeightFormat.BF16}, 46.51, 0.20, LLAMA_BENCH),
    Point("2x 3090, Llama 3 70B Q4_K_M, batch 1", "llama-3.1-70b-serve", "RTX 3090", 2,
          {**LOCAL, "quantization": WeightFormat.INT4}, 16.29, 0.20, LLAMA_BENCH),
    Point("2x 4090, Llama 3 70B Q4_K_M, batch 1", "llama-3.1-70b-serve", "RTX 4090", 2,
          {**LOCAL, "quantization": WeightFormat.INT4}, 19.06, 0.20, LLAMA_BENCH),
    Point("H200, Llama 3.3 70B fp8, batch 1", "llama-3.1-70b-serve", "H200 SXM 141GB", 1,
          {"quantization": WeightFormat.FP8, "prompt_tokens": 128, "output_tokens": 256},
          51.14, 0.20, NVIDIA_BLOG),
    Point("vLLM, H100, Llama 3.1 8B fp16, batch 1", "llama-3.1-8b-serve", "H100 SXM5 80GB", 1,
          {**VLLM_SHORT, "quantization": WeightFormat.FP16}, 1000 / 6.48, 0.20,
          VLLM_INFERENCEBENCH),
    Point("vLLM, A100 40GB, Llama 3.1 8B bf16, batch 1", "llama-3.1-8b-serve", "A100 SXM4 40GB",
          1, {"engine": Engine.VLLM, "prompt_tokens": 1024, "output_tokens": 128}, 75.0, 0.20,
          VLLM_MUSGRAVE),
    Point("SGLang, A100 40GB, Llama 3 8B bf16, batch 1", "llama-3.1-8b-serve", "A100 SXM4 40GB",
          1, {"engine": Engine.SGLANG, "prompt_tokens": 280, "output_tokens": 310}, 1000 / 12.93,
          0.20, SGLANG_ACCELMARK.format(issue=37, suite="A")),
    Point("SGLang, A100 40GB, Qwen2.5-0.5B bf16, batch 1", "llama-3.1-8b-serve",
          "A100 SXM4 40GB", 1, {"engine": Engine.SGLANG, **QWEN25_05B, "prompt_tokens": 95,
          "output_tokens": 150}, 1000 / 1.89, 0.20, SGLANG_ACCELMARK.format(issue=43, suite="F")),
    Point("SGLang, A100 40GB, Llama 3.1 8B bf16, 28,650-token prompts, batch 1",
          "llama-3.1-8b-serve", "A100 SXM4 40GB", 1,
          {"engine": Engine.SGLANG, "prompt_tokens": 28650, "output_tokens": 256}, 1000 / 15.65,
          0.20, SGLANG_ACCELMARK.format(issue=41, suite="D")),
    *[
        Point(f"8x H100, Llama 3.1 405B fp8, {isl}/{osl}, its dataset sent at once",
              "llama-3.1-405b-serve", "H100 SXM5 80GB", 8,
              {**FP8_SERVE, "prompt_tokens": isl, "output_tokens": osl}, measured, 0.25,
              TRTLLM, full_concurrency=True)
        for isl, osl, measured in [
            (1000, 1000, 2919), (128, 2048, 4340), (500, 2000, 3994), (1000, 2000, 2895),
            (2048, 2048, 2296), (5000, 500, 610), (2048, 128, 453),
        ]
    ],
]  # fmt: skip


def predict(p: Point) -> tuple[float, ServingEstimate]:
    cat = load_catalog(None)
    doc = {"name": p.label, "gpus": [{"model": p.gpu, "count": p.count}]}
    build = resolve_build(doc, "bench", cat)
    w = load_workload(p.workload)
    assert w.serve is not None
    changes = p.changes
    if p.full_concurrency:
        changes = {**changes, **trtllm_bench_settings(p.workload, p.gpu, p.count, changes)}
    spec = replace(w.serve, **changes)  # type: ignore[arg-type]
    est = serving_estimate(build, spec, w.name)
    assert est is not None
    if p.full_concurrency:
        requests = PERF_OVERVIEW_REQUESTS[f"{spec.prompt_tokens}/{spec.output_tokens}"]
        est = serving_estimate(build, replace(spec, users=max(est.max_users_fit, 1)), w.name)
        assert est is not None
        return batch_run(build, spec, requests, w.name).tokens_per_s_total, est
    return est.batch1_tokens_per_s, est


# TensorRT-LLM perf-overview rows the efficiencies were not chosen on (Llama 3.1 8B FP8 and
# Llama 3.3 70B FP8, same table): total output tokens/s at maximum concurrency. The decode
# step's structure was chosen with them in view (bench/provenance.toml).
ISL_OSL = ["128/128", "128/2048", "128/4096", "500/2000", "1000/1000", "1000/2000", "2048/128",
           "2048/2048", "5000/500", "20000/2000"]  # fmt: skip
HELD_OUT = [
    ("Llama 3.1 8B fp8, H100 TP1", "llama-3.1-8b-serve", "H100 SXM5 80GB", 1, True,
     [28312, 22714, 14325, 17660, 15220, 13899, 3450, 9305, 3459, 1351]),
    ("Llama 3.3 70B fp8, H100 TP2", "llama-3.1-70b-serve", "H100 SXM5 80GB", 2, True,
     [6378, 6651, 4199, 5222, 4205, 4146, 762, 3082, 898, 437]),
    ("Llama 3.3 70B fp8, H200 TP1", "llama-3.1-70b-serve", "H200 SXM 141GB", 1, False,
     [3803, 4336, 2872, 3666, 2909, 2994, 442, 2003, 566, 283]),
    ("Llama 3.1 8B fp8, H200 TP1", "llama-3.1-8b-serve", "H200 SXM 141GB", 1, False,
     [27911, 26221, 18027, 20770, 17744, 16828, 3538, 12194, 3902, 1804]),
]  # fmt: skip


# The same table's other dense rows, read 2026-12-07 after every other serving constant was
# set: Llama 3.1 405B FP8 on eight H200 (TP8), and NVFP4 weights (nvidia/*-FP4 checkpoints, FP8
# KV cache) on Blackwell: Llama 3.3 70B on one B200 or GB200, Llama 3.1 405B on four. The NVFP4
# rows came out 29-40% fast, and the FP4 kernels' measured gain (serving.FP4_GAIN_SHARE) was
# looked for then: calibration since (bench/provenance.toml). Its MoE rows are TRTLLM_MOE
# below. Its RTX PRO 6000 dense rows: Llama 3.3 70B on one card (TP1, PP1), predicted; the
# rest ran pipeline parallelism within a copy (TP x PP), which `serve` cannot state: not
# predicted. The one-card rows came out 7-39% slow, and the FP4 rate Blackwell's graphics dies
# reach (serving.FP4_GRAPHICS_BLACKWELL_SHARE) was looked for then.
FP4_SERVE: dict[str, Any] = {"quantization": WeightFormat.NVFP4, "kv_precision": KVPrecision.FP8}
TRTLLM_MORE: list[tuple[str, str, str, int, dict[str, Any], list[float | None]]] = [
    ("Llama 3.1 405B fp8, H200 TP8", "llama-3.1-405b-serve", "H200 SXM 141GB", 8, FP8_SERVE,
     [3814, 5348, 4741, 4724, 3330, 3722, 456, 2948, 650, 505]),
    ("Llama 3.3 70B nvfp4, B200 TP1", "llama-3.1-70b-serve", "B200 SXM 180GB", 1, FP4_SERVE,
     [11147, 9922, 6831, 7762, 7007, 6271, 1339, 4783, 1459, 665]),
    ("Llama 3.3 70B nvfp4, GB200 TP1", "llama-3.1-70b-serve", "GB200 186GB", 1, FP4_SERVE,
     [12189, 11309, 7849, 9028, 7326, 6513, 1450, 5646, 1602, 755]),
    ("Llama 3.1 405B nvfp4, B200 TP4", "llama-3.1-405b-serve", "B200 SXM 180GB", 4, FP4_SERVE,
     [6281, 8020, 6345, 6244, 5209, 4933, 749, 4212, 1048, 672]),
    ("Llama 3.1 405B nvfp4, GB200 TP4", "llama-3.1-405b-serve", "GB200 186GB", 4, FP4_SERVE,
     [6740, 8151, 6608, 6540, 5389, 5135, 797, 4407, 1112, 739]),
    ("Llama 3.3 70B nvfp4, RTX PRO 6000 TP1", "llama-3.1-70b-serve", "RTX PRO 6000 Server", 1,
     FP4_SERVE, [3264, 2422, 1349, 1856, 1787, 1594, 393, 1074, 401, 142]),
]  # fmt: skip


# The same table's mixture-of-experts rows (nvidia/*-FP8 and *-FP4 checkpoints), read
# 2026-12-07. Its MoE command adds `--ep` and `enable_attention_dp: true`: on more than one
# GPU each runs attention for its own requests and the GPUs split the experts, predicted so
# (serve.attention_data_parallel). The page's YAML nests the option under cuda_graph_config,
# which forbids fields it does not know (CudaGraphConfig is a StrictBaseModel, extra="forbid",
# tensorrt_llm/llmapi/llm_args.py), so runs that started set it at the top level. The
# constants chosen on them are in bench/provenance.toml. Blank cells (None): the table has no
# figure there.
FP8_DP = {**FP8_SERVE, "attention_data_parallel": True}
FP4_DP = {**FP4_SERVE, "attention_data_parallel": True}
TRTLLM_MOE: list[tuple[str, str, str, int, dict[str, Any], list[float | None]]] = [
    ("Llama 4 Scout nvfp4, B200", "llama-4-scout-serve", "B200 SXM 180GB", 1, FP4_SERVE,
     [25342, 14699, 8932, 11977, 10591, 9356, 3137, 7152, 2937, 1644]),
    ("Llama 4 Scout nvfp4, GB200", "llama-4-scout-serve", "GB200 186GB", 1, FP4_SERVE,
     [19954, 15238, 9556, 11795, 7738, 8581, 3295, 7464, 3107, 1767]),
    ("Llama 4 Scout fp8, 4x H200", "llama-4-scout-serve", "H200 SXM 141GB", 4, FP8_DP,
     [30354, 34316, 21332, 24630, 21636, 18499, 3699, 14949, 4605, 2105]),
    ("Llama 4 Scout fp8, 4x H100", "llama-4-scout-serve", "H100 SXM5 80GB", 4, FP8_DP,
     [None, 15130, 8603, 12399, 12129, 9838, 3253, 7972, 3342, None]),
    ("Qwen3-235B-A22B nvfp4, 8x B200", "qwen3-235b-a22b-serve", "B200 SXM 180GB", 8, FP4_DP,
     [63362, 66057, 39496, 57117, 42391, 34105, 7329, 26854, 8190, 4453]),
    ("Qwen3-235B-A22B fp8, 8x H200", "qwen3-235b-a22b-serve", "H200 SXM 141GB", 8, FP8_DP,
     [30429, 42821, 26852, 28026, 23789, 22061, 3331, 16672, 3623, 1876]),
    ("Qwen3-235B-A22B fp8, 8x H100", "qwen3-235b-a22b-serve", "H100 SXM5 80GB", 8, FP8_DP,
     [None, 19658, 12447, 18351, 14898, 15136, None, 9924, 3225, None]),
    ("Qwen3-30B-A3B nvfp4, B200", "qwen3-30b-a3b-serve", "B200 SXM 180GB", 1, FP4_SERVE,
     [39827, 37844, 24953, 27817, 25828, 22051, 6251, 17554, 6142, 2944]),
    ("Qwen3-30B-A3B nvfp4, GB200", "qwen3-30b-a3b-serve", "GB200 186GB", 1, FP4_SERVE,
     [24107, 31311, 26337, 20604, 17481, 17177, 6595, 14719, 5908, 3203]),
    ("Qwen3-30B-A3B nvfp4, RTX PRO 6000", "qwen3-30b-a3b-serve", "RTX PRO 6000 Server", 1,
     FP4_SERVE, [28011, 12540, 7491, 10695, 9910, 8378, 3257, 5908, 2530, 871]),
    ("Qwen3-30B-A3B nvfp4, 2x RTX PRO 6000", "qwen3-30b-a3b-serve", "RTX PRO 6000 Server", 2,
     FP4_DP, [32646, 22744, 15049, 17266, 16431, 13323, 3785, 10679, 3799, 1558]),
    ("Qwen3-30B-A3B nvfp4, 4x RTX PRO 6000", "qwen3-30b-a3b-serve", "RTX PRO 6000 Server", 4,
     FP4_DP, [36819, 35715, 28139, 26175, 24046, 25131, 4311, 18134, 5212, 2551]),
    ("Qwen3-30B-A3B nvfp4, 8x RTX PRO 6000", "qwen3-30b-a3b-serve", "RTX PRO 6000 Server", 8,
     FP4_DP, [39490, 52676, 33895, 44088, 31785, 28881, 4798, 22391, 5965, None]),
    ("Llama 4 Maverick nvfp4, 8x B200", "llama-4-maverick-serve", "B200 SXM 180GB", 8, FP4_DP,
     [124323, 112676, 68170, None, 79617, 63766, 18088, 52195, None, 12678]),
    ("Llama 4 Maverick fp8, 8x H200", "llama-4-maverick-serve", "H200 SXM 141GB", 8, FP8_DP,
     [63994, 40572, 24616, 37835, 31782, 34734, 7307, 20957, 8456, 4106]),
    ("Llama 4 Maverick fp8, 8x H100", "llama-4-maverick-serve", "H100 SXM5 80GB", 8, FP8_DP,
     [None, 10829, 6744, 10108, 9677, 9151, None, 6916, 3457, None]),
]  # fmt: skip


def _zoo_row(
    workload: str, gpu: str, count: int, changes: dict[str, Any]
) -> tuple[Build, ServeSpec, str]:
    """A bench row as it ran: `count` GPUs of the catalog's `gpu`, a zoo workload's serve
    block with `changes` over it, and the workload's name."""
    build = resolve_build({"gpus": [{"model": gpu, "count": count}]}, "bench", load_catalog(None))
    w = load_workload(workload)
    assert w.serve is not None
    return build, replace(w.serve, **changes), w.name


def zoo_estimate(workload: str, gpu: str, count: int, **changes: Any) -> ServingEstimate:
    """dlrig's serving estimate of a zoo workload's row (_zoo_row)."""
    est = serving_estimate(*_zoo_row(workload, gpu, count, changes))
    assert est is not None
    return est


def zoo_batch_run(workload: str, gpu: str, count: int, requests: int, **changes: Any) -> float:
    """Output tokens/s of `requests` requests of a zoo workload's row (_zoo_row) sent at once
    (serving_batch.batch_run)."""
    build, spec, name = _zoo_row(workload, gpu, count, changes)
    return batch_run(build, spec, requests, name).tokens_per_s_total


def max_throughput(
    workload: str, gpu: str, count: int, lengths: str, formats: dict[str, Any] | None = None
) -> float:
    """Total output tokens/s of the published layout (one copy over all `count` GPUs: TP1,
    TP2) running the row's dataset (PERF_OVERVIEW_REQUESTS) at `lengths` ("ISL/OSL"), in
    `formats` (fp8 weights and KV cache unless given)."""
    isl, osl = (int(x) for x in lengths.split("/"))
    changes = {**(formats or FP8_SERVE), "prompt_tokens": isl, "output_tokens": osl,
               "tensor_parallel": count}  # fmt: skip
    changes.update(trtllm_bench_settings(workload, gpu, count, changes))
    return zoo_batch_run(workload, gpu, count, PERF_OVERVIEW_REQUESTS[lengths], **changes)


def held_out_rows() -> list[str]:
    """TensorRT-LLM's 8B and 70B points: predicted vs measured total output tokens/s."""
    rows = []
    for label, workload, gpu, count, tested, measured in HELD_OUT:
        errors = [
            max_throughput(workload, gpu, count, lengths) / m - 1.0
            for lengths, m in zip(ISL_OSL, measured, strict=True)
        ]
        cells = " | ".join(f"{e:+.0%}" for e in errors)
        worst = max(abs(e) for e in errors)
        rows.append(f"| {label} | {cells} | {worst:.0%} | {'yes' if tested else 'no'} |")
        print(f"{label}: worst {worst:.0%}", flush=True)
    return rows


def perf_overview_rows(
    table: list[tuple[str, str, str, int, dict[str, Any], list[float | None]]],
) -> list[tuple[str, str, float, float]]:
    """A perf-overview table predicted (TRTLLM_MORE, TRTLLM_MOE): (label, ISL/OSL, measured,
    predicted total output tokens/s) for each length it measured."""
    return [
        (label, lengths, m, max_throughput(workload, gpu, count, lengths, formats))
        for label, workload, gpu, count, formats, measured in table
        for lengths, m in zip(ISL_OSL, measured, strict=True)
        if m is not None
    ]


def perf_overview_lines(
    table: list[tuple[str, str, str, int, dict[str, Any], list[float | None]]],
    rows: list[tuple[str, str, float, float]],
) -> list[str]:
    """One line per layout: its error at each ISL/OSL (blank where not measured) and its
    median |error|."""
    lines = []
    for label, *_ in table:
        errors = {lengths: p / m - 1.0 for name, lengths, m, p in rows if name == label}
        cells = " | ".join(f"{errors[lo]:+.0%}" if lo in errors else "" for lo in ISL_OSL)
        ordered = sorted(abs(e) for e in errors.values())
        median = ordered[len(ordered) // 2]
        lines.append(f"| {label} | {cells} | {median:.0%} |")
        print(f"{label}: median |error| {median:.0%}", flush=True)
    return lines


def perf_overview_section(
    source: str,
    text: str,
    table: list[tuple[str, str, str, int, dict[str, Any], list[float | None]]],
) -> list[str]:
    """A perf-overview table's result section: the source's provenance and `text`, then one
    line per layout (perf_overview_lines)."""
    return [
        "",
        provenance.status([source]) + text,
        "",
        "| model, GPUs | " + " | ".join(ISL_OSL) + " | median |",
        "|---|" + "---|" * (len(ISL_OSL) + 1),
        *perf_overview_lines(table, perf_overview_rows(table)),
    ]


# Qwen2.5-7B-Instruct's config.json (28 layers, hidden 3584, 28 heads, 4 KV heads, head dim
# 128, vocab 152064, untied embeddings; 7.62e9 parameters), as llama-3.1-8b-serve's fields.
QWEN25_7B = {"total_params": 7.62e9, "active_params": 7.62e9, "layers": 28, "hidden_size": 3584,
             "heads": 28, "kv_heads": 4, "head_dim": 128, "vocab_size": 152064,
             "tied_embeddings": False}  # fmt: skip
# vLLM sweeps: TPOT p50 (ms) at each client concurrency. The A6000 harness sends one fixed
# prompt, "Explain what a GPU scheduler does, in two sentences." (SHORT_PROMPT in
# portfolio-lab/04-inference-serving/harness/loadgen.py, ld-singh/ai-factory-ops-lab
# @HEAD 2026-06), as a chat message: with Qwen2.5's template and its default system prompt
# about 39 tokens (counted by hand: 11 of the question, 15 of the system prompt, 13 of the
# template's markers); its answers are 51-53 tokens (the report's `gen` column): 39/52. Every
# request sends that same prompt, so all 39 tokens are `shared_prefix_tokens`: vLLM's prefix
# cache (on by default) skips its whole 16-token blocks and computes the last 7.
# InferenceBench's 128/128 as above; its client runs one Python thread per stream
# (harness/drivers/closed_loop.py, yobitelcomm/bench) and its total throughput stays at
# 1,384 and 1,312 tok/s from 16 to 64 streams: those two rows may time the client as much as
# the server (kept, and counted).
VLLM_L4 = (
    "[wmx.dev serving benchmarks](https://ai.wmx.dev/benchmarks), vLLM 0.23.0, L4 on a "
    "4-vCPU g2-standard-4, Qwen2.5-0.5B-Instruct BF16, 256/128, `vllm bench serve`"
)
VLLM_HELD_OUT = [
    ("RTX A6000, Qwen2.5-7B bf16", "NVIDIA RTX A6000", {**QWEN25_7B, "shared_prefix_tokens": 39},
     39, 52, WeightFormat.BF16,
     [(1, 21.9), (8, 22.3), (64, 27.5), (128, 36.0), (256, 53.1)], VLLM_A6000),
    ("H100, Llama 3.1 8B fp16", "H100 SXM5 80GB", {}, 128, 128, WeightFormat.FP16,
     [(4, 6.59), (16, 10.94), (64, 46.91)], VLLM_INFERENCEBENCH),
    # Held out (vllm_l4): inter-token latency p50, read after every serving constant was set.
    ("L4, Qwen2.5-0.5B bf16", "NVIDIA L4", QWEN25_05B, 256, 128, WeightFormat.BF16,
     [(1, 5.1), (2, 5.2), (4, 5.3), (8, 5.5), (16, 6.0), (32, 7.1)], VLLM_L4),
]  # fmt: skip

# Time to first token (ms, p50) at each client concurrency, as the same sweeps report it, and
# one more sweep on an L4. The serving stack's time a request (serving.REQUEST_OVERHEAD_S) was
# chosen on InferenceBench's one-user row; no other row here set anything. Each harness sends
# its next request as soon as an answer ends (closed loop).
VLLM_INFERENCEBENCH_TTFT = VLLM_INFERENCEBENCH.replace("TPOT p50", "TTFT p50")
TTFT_POINTS = [
    ("H100, Llama 3.1 8B fp16", "H100 SXM5 80GB", {}, 128, 128, WeightFormat.FP16,
     [(1, 13.98), (4, 22.75), (16, 41.69), (64, 86.92)], VLLM_INFERENCEBENCH_TTFT),
    ("RTX A6000, Qwen2.5-7B bf16", "NVIDIA RTX A6000", {**QWEN25_7B, "shared_prefix_tokens": 39},
     39, 52, WeightFormat.BF16,
     [(1, 47.0), (2, 67.0), (4, 67.0), (8, 171.0), (64, 87.0), (128, 126.0), (256, 299.0)],
     VLLM_A6000),
    ("L4, Qwen2.5-0.5B bf16", "NVIDIA L4", QWEN25_05B, 256, 128, WeightFormat.BF16,
     [(1, 27.0), (2, 37.8), (4, 50.1), (8, 60.9), (16, 103.8), (32, 135.3)], VLLM_L4),
]  # fmt: skip


def vllm_estimate(
    gpu: str,
    structure: dict[str, Any],
    isl: int,
    osl: int,
    quantization: WeightFormat,
    users: int,
    engine: Engine = Engine.VLLM,
) -> ServingEstimate:
    """One of VLLM_HELD_OUT's points: Llama 3.1 8B's serving block with `structure` over it,
    on one `gpu` with `users` concurrent requests."""
    build = resolve_build({"gpus": [{"model": gpu, "count": 1}]}, "bench", load_catalog(None))
    w = load_workload("llama-3.1-8b-serve")
    assert w.serve is not None
    spec = replace(w.serve, **structure, engine=engine, quantization=quantization,
                   prompt_tokens=isl, output_tokens=osl, users=users)  # fmt: skip
    est = serving_estimate(build, spec, gpu)
    assert est is not None
    return est


def vllm_held_out_rows() -> list[tuple[str, float]]:
    """vLLM's time per output token at a client concurrency: predicted vs measured."""
    rows = []
    for label, gpu, structure, isl, osl, quantization, points, source in VLLM_HELD_OUT:
        for users, measured_ms in points:
            est = vllm_estimate(gpu, structure, isl, osl, quantization, users)
            batched = vllm_estimate(gpu, structure, isl, osl, quantization, users,
                                    Engine.BATCHED)  # fmt: skip
            predicted_ms = est.tpot_s * 1e3
            err = predicted_ms / measured_ms - 1.0
            err_batched = batched.tpot_s * 1e3 / measured_ms - 1.0
            print(f"vLLM {label}, concurrency {users}: {predicted_ms:.2f} ms vs {measured_ms:g} "
                  f"({err:+.1%}; as batched {err_batched:+.1%})", flush=True)  # fmt: skip
            rows.append((
                f"| {label}, concurrency {users} | {predicted_ms:.2f} | {measured_ms:g} "
                f"| {err:+.1%} | {err_batched:+.1%} | {est.binding.value} | {source} |",
                err,
            ))  # fmt: skip
    return rows


def ttft_rows() -> list[tuple[str, int, float, float, float]]:
    """TTFT_POINTS predicted: (label, concurrency, measured ms, predicted ms, predicted ms when
    every user asks at once)."""
    rows = []
    for label, gpu, structure, isl, osl, quantization, points, _ in TTFT_POINTS:
        for users, measured_ms in points:
            est = vllm_estimate(gpu, structure, isl, osl, quantization, users)
            rows.append((label, users, measured_ms, est.ttft_s * 1e3,
                         est.ttft_all_at_once_s * 1e3))  # fmt: skip
    return rows


# The same AccelMark runs' time to first token (TTFT p50 of its one-at-a-time requests), read
# after the SGLang profile was set on their TPOT: a lone prompt's pass at the suites' median
# prompt (280 tokens of Llama 3 8B, 28,650 of Llama 3.1 8B, 95 of Qwen2.5-0.5B), with the
# serving stack's time a request (serving.REQUEST_OVERHEAD_S, set on vLLM's rows). No
# constant was chosen on them.
SGLANG_TTFT_POINTS: list[tuple[str, dict[str, Any], float, str]] = [
    ("Llama 3 8B bf16, 280-token prompts", {"prompt_tokens": 280, "output_tokens": 310},
     32.52, SGLANG_ACCELMARK.format(issue=37, suite="A")),
    ("Llama 3.1 8B bf16, 28,650-token prompts", {"prompt_tokens": 28650, "output_tokens": 256},
     2987.93, SGLANG_ACCELMARK.format(issue=41, suite="D")),
    ("Qwen2.5-0.5B bf16, 95-token prompts", {**QWEN25_05B, "prompt_tokens": 95,
     "output_tokens": 150}, 16.46, SGLANG_ACCELMARK.format(issue=43, suite="F")),
]  # fmt: skip


def sglang_ttft_rows() -> list[tuple[str, float, float, str]]:
    """SGLANG_TTFT_POINTS predicted: (label, measured ms, predicted ms, source), one user on
    one A100 SXM4 40GB."""
    rows = []
    for label, changes, measured_ms, source in SGLANG_TTFT_POINTS:
        est = zoo_estimate("llama-3.1-8b-serve", "A100 SXM4 40GB", 1, engine=Engine.SGLANG,
                           **changes)  # fmt: skip
        rows.append((f"SGLang, A100 40GB, {label}, one user", measured_ms, est.ttft_s * 1e3,
                     source.replace("TPOT p50", "TTFT p50")))  # fmt: skip
    return rows


def ttft_lines(rows: list[tuple[str, int, float, float, float]]) -> list[str]:
    """The TTFT table: every row, its error as predicted / measured time - 1, and whether the
    measurement lies between the random-arrival and all-at-once figures (either may be the
    larger: arriving at once skips the wait for a step under way)."""
    lines = []
    sources = {label: source for label, *_, source in TTFT_POINTS}
    for label, users, measured_ms, predicted_ms, at_once_ms in rows:
        err = predicted_ms / measured_ms - 1.0
        low, high = sorted((predicted_ms, at_once_ms))
        between = "yes" if low <= measured_ms <= high else "no"
        print(f"TTFT {label}, concurrency {users}: {predicted_ms:.1f} ms vs {measured_ms:g} "
              f"({err:+.1%}), all at once {at_once_ms:.1f}", flush=True)  # fmt: skip
        lines.append(f"| {label}, concurrency {users} | {predicted_ms:.1f} | {at_once_ms:.1f} | "
                     f"{measured_ms:g} | {err:+.1%} | {between} | {sources[label]} |")  # fmt: skip
    return lines


# GPUStack's performance lab (github.com/gpustack/gpustack, docs/performance-lab/), read
# 2026-12-07 after every serving constant was set, held out (all but four rows, below): its
# vLLM baselines (`vllm serve <model>` with vLLM v0.11.0's defaults, `-tp 8` on the 8-GPU
# pages), timed by `vllm bench
# serve --backend openai-chat`: on random prompts of fixed lengths (32000/100, 4000/200,
# 2000/100, 128/4) every request sent at once (--num-prompts 100-1000, no request rate), and on
# the Qwen3-8B latency page ShareGPT at --max-concurrency 1-8 (closed loop). Rows:
# bench/data/gpustack.csv (page and commit per row). Each row is predicted as it ran: the
# `vllm` engine, the page's GPU and tensor parallel degree, the served checkpoint's format
# (BF16, DeepSeek-R1's native FP8), users = the prompts sent at once (or the concurrency), and
# the run's own mean lengths (its total input and generated tokens over its requests: the
# model may stop an answer early, 77-92 of 100 tokens on the 32K rows). The figure compared is
# output tokens/s over the whole run ("Output token throughput"): a run of N requests sent at
# once as that batch runs (serving_batch.batch_run: waves of the requests the
# engine runs at once, the last with the rest; since 2026-12-07, as every bench's batch of
# requests sent at once), a closed loop at its concurrency's steady rate. At the run's mean
# lengths its total tokens/s ("Total Token throughput", prompt + output) is the same ratio, so
# either gives the same error. The answers the model stops early make a wave end raggedly; that
# is not modelled. The chat template's few added tokens a prompt are not counted.
# The pages' optimized runs on TensorRT-LLM (the batched engine; source gpustack_trtllm) were
# read after the vLLM rows on the H100 came out 57-126% fast where the A100's came within 15%:
# the same machines' TensorRT-LLM runs split the same way (A100 -19% to +6%, H100 +109% to
# +135%), where dlrig's TensorRT-LLM profile is within about 6% of NVIDIA's own H100 rows
# (trtllm_other, trtllm_405b). That points at the H100 these pages ran on, not at either
# engine's model; no row is left out for it.
GPUSTACK_DATA = REPO / "bench" / "data" / "gpustack.csv"
GPUSTACK_WORKLOADS = {
    "qwen3-8b": "qwen3-8b-serve",
    "qwen3-14b": "qwen3-14b-serve",
    "qwen3-32b": "qwen3-32b-serve",
    "qwen3-235b-a22b": "qwen3-235b-a22b-serve",  # the Instruct-2507 checkpoint: same config
    "deepseek-r1-0528": "deepseek-v3-serve",  # DeepSeek-V3's architecture, native FP8
}
# The Qwen3-235B-A22B rows on eight H100 were cited beside MOE_GEMM_SHARE when it was chosen
# (bench/provenance.toml): a source of their own, gpustack_vllm_moe_seen, not held out.
GPUSTACK_SOURCES = {
    "gpustack_vllm": "dense models",
    "gpustack_trtllm": "dense models on TensorRT-LLM (the pages' optimized runs)",
    "gpustack_vllm_moe": "mixtures of experts",
    "gpustack_vllm_moe_seen": "Qwen3-235B-A22B on 8x H100 (cited beside MOE_GEMM_SHARE)",
    "gpustack_sglang": "dense models on SGLang (the pages' default-launch SGLang blocks)",
}


@dataclass(frozen=True)
class GpustackRow:
    source: str  # a key of GPUSTACK_SOURCES
    url: str
    engine: Engine  # vLLM; TensorRT-LLM (the batched engine) on the optimized runs; SGLang
    model: str
    gpu: str
    gpus: int
    quantization: WeightFormat
    kv_precision: KVPrecision
    dataset: str
    num_prompts: int
    max_concurrency: int | None
    prompt_tokens: int  # the run's mean: total input tokens / requests
    output_tokens: int  # the run's mean: total generated tokens / requests
    measured: float  # output tokens/s over the run
    mean_tpot_ms: float

    @property
    def users(self) -> int:
        """Requests in flight: every prompt at once, or the closed loop's concurrency."""
        return self.max_concurrency or self.num_prompts

    @property
    def label(self) -> str:
        lengths = f"{self.prompt_tokens}/{self.output_tokens}"
        load = (f"concurrency {self.max_concurrency}" if self.max_concurrency
                else f"{self.num_prompts} at once")  # fmt: skip
        count = f"{self.gpus}x " if self.gpus > 1 else ""
        label = f"{self.model}, {count}{self.gpu}, {self.dataset} {lengths}, {load}"
        if self.engine is Engine.BATCHED:
            label += f", TensorRT-LLM {self.quantization.value}"
        if self.engine is Engine.SGLANG:
            label += ", SGLang"
        return label


def read_gpustack(path: Path = GPUSTACK_DATA) -> list[GpustackRow]:
    """bench/data/gpustack.csv, one GpustackRow a benchmark block."""
    rows = []
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            n = int(r["num_prompts"])
            engine = (Engine.BATCHED if r["software"].startswith("TensorRT-LLM")
                      else Engine.SGLANG if r["software"].startswith("SGLang")
                      else Engine.VLLM)  # fmt: skip
            rows.append(GpustackRow(
                r["source"], r["url"], engine, r["model"], r["gpu"], int(r["gpus"]),
                WeightFormat(r["quantization"]), KVPrecision(r["kv_precision"]), r["dataset"],
                n, int(r["max_concurrency"]) if r["max_concurrency"] else None,
                round(int(r["total_input_tokens"]) / n),
                round(int(r["total_generated_tokens"]) / n),
                float(r["output_tokens_per_s"]), float(r["mean_tpot_ms"]),
            ))  # fmt: skip
    return rows


def gpustack_estimate(row: GpustackRow) -> ServingEstimate:
    """A GPUStack row as it ran: its engine, tensor parallel over the page's GPUs, `users`
    requests (the engine runs at most its batch limit and what its KV cache holds, the rest
    queue)."""
    return zoo_estimate(GPUSTACK_WORKLOADS[row.model], row.gpu, row.gpus, engine=row.engine,
                        quantization=row.quantization, kv_precision=row.kv_precision,
                        prompt_tokens=row.prompt_tokens, output_tokens=row.output_tokens,
                        users=row.users, tensor_parallel=row.gpus)  # fmt: skip


def gpustack_tokens_per_s(row: GpustackRow, est: ServingEstimate) -> float:
    """dlrig's output tokens/s over the row's run: its requests sent at once run as that batch
    (serving_batch.batch_run), a closed loop at its concurrency's steady rate."""
    if row.max_concurrency is not None:
        return est.tokens_per_s_total
    return zoo_batch_run(GPUSTACK_WORKLOADS[row.model], row.gpu, row.gpus, row.num_prompts,
                         engine=row.engine, quantization=row.quantization,
                         kv_precision=row.kv_precision, prompt_tokens=row.prompt_tokens,
                         output_tokens=row.output_tokens, tensor_parallel=row.gpus)  # fmt: skip


def gpustack_predictions() -> list[tuple[GpustackRow, ServingEstimate, float]]:
    """Each GPUStack row, its estimate at the requests in flight and dlrig's output tokens/s
    over its run (gpustack_tokens_per_s)."""
    rows = []
    for row in read_gpustack():
        est = gpustack_estimate(row)
        rows.append((row, est, gpustack_tokens_per_s(row, est)))
    return rows


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def gpustack_section(predictions: list[tuple[GpustackRow, ServingEstimate, float]]) -> list[str]:
    """The GPUStack rows' result section: per-row errors of output tokens/s, and each
    source's median and p90 |error| and signed median."""
    lines = []
    for source, what in GPUSTACK_SOURCES.items():
        mine = [(r, e, t) for r, e, t in predictions if r.source == source]
        errors = [t / r.measured - 1.0 for r, _, t in mine]
        absolute = [abs(x) for x in errors]
        summary = (f"{what}: median |error| {_quantile(absolute, 0.5):.0%}, p90 "
                   f"{_quantile(absolute, 0.9):.0%}, signed median "
                   f"{_quantile(errors, 0.5):+.0%} over {len(errors)} rows")  # fmt: skip
        print(f"GPUStack {summary}", flush=True)
        lines += [
            "",
            f"GPUStack performance lab, {what}: "
            + provenance.status([source])
            + " Output tokens/s over each `vllm bench serve` "
            "run (every prompt sent at once, or the ShareGPT rows' closed loop), predicted at "
            "the run's mean lengths: the prompts sent at once as that batch runs, in waves of "
            "the requests the engine runs at once (serving_batch.batch_run; "
            "`running` is one wave's), a closed loop at its concurrency. "
            f"{summary[0].upper()}{summary[1:]}. TPOT: the run's mean against dlrig's time per "
            "output token at the requests in flight.",
            "",
            "| point | predicted | measured | error | TPOT predicted (ms) | TPOT measured | "
            "running | binds | source |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for (r, e, t), err in zip(mine, errors, strict=True):
            print(f"{r.label}: {t:.1f} vs {r.measured:g} ({err:+.1%})", flush=True)
            lines.append(
                f"| {r.label} | {t:,.1f} | {r.measured:,.2f} | {err:+.1%} | "
                f"{e.tpot_s * 1e3:.1f} | {r.mean_tpot_ms:g} | {e.running_per_copy} | "
                f"{e.binding.value} | [{r.url.split('/docs/performance-lab/')[1]}]({r.url}) |"
            )
    return lines


# SGLang's own cookbook (github.com/sgl-project/sgl-cookbook), read 2026-12-07 after the SGLang
# profile was set: the low-concurrency runs of mixtures of experts on eight B200 at `--tp 8`
# (`python -m sglang.launch_server --model-path <model> --tp 8`, SGLang 0.5.6 / 0.5.6.post1;
# `sglang.bench_serving` on its random dataset, 10 prompts one at a time, so each request's
# lengths vary: the run's mean, total tokens / 10), median TPOT in ms. Its Llama 3.1 70B runs
# on "8x NVIDIA A100" (Llama3.1.md @1e3601bc, 18.63 and 18.81 ms at batch 1) are not
# predicted: the page names neither the cards' memory (40 or 80 GB, 1.6 and 2.0 TB/s) nor
# their link (SXM or PCIe).
SGLANG_COOKBOOK = (
    "https://github.com/sgl-project/sgl-cookbook/blob/{commit}/docs/autoregressive/{page}"
)
SGLANG_QWEN3 = SGLANG_COOKBOOK.format(commit="8e3bdb7e3f5ff87bd4cd7f65014e0e32634df894",
                                      page="Qwen/Qwen3.md")  # fmt: skip
SGLANG_DSR1 = SGLANG_COOKBOOK.format(commit="268193ccf59631fe01880790f184bee7c35eee95",
                                     page="DeepSeek/DeepSeek-R1.md")  # fmt: skip
SGLANG_COOKBOOK_MOE: list[tuple[str, str, WeightFormat, int, int, float, str]] = [
    ("Qwen3-235B-A22B bf16", "qwen3-235b-a22b-serve", WeightFormat.BF16, 610, 421, 10.12,
     SGLANG_QWEN3),
    ("Qwen3-235B-A22B bf16", "qwen3-235b-a22b-serve", WeightFormat.BF16, 610, 4445, 10.24,
     SGLANG_QWEN3),
    ("Qwen3-235B-A22B bf16", "qwen3-235b-a22b-serve", WeightFormat.BF16, 4194, 421, 10.33,
     SGLANG_QWEN3),
    ("DeepSeek-R1-0528 fp8", "deepseek-v3-serve", WeightFormat.FP8, 610, 421, 9.15, SGLANG_DSR1),
    ("DeepSeek-R1-0528 fp8", "deepseek-v3-serve", WeightFormat.FP8, 610, 4445, 9.20, SGLANG_DSR1),
    ("DeepSeek-R1-0528 fp8", "deepseek-v3-serve", WeightFormat.FP8, 4194, 421, 9.27, SGLANG_DSR1),
]  # fmt: skip


def sglang_cookbook_rows() -> list[tuple[str, float, float, str]]:
    """(label, measured tokens/s a user, predicted, source link) of SGLANG_COOKBOOK_MOE: one
    request at a time on 8x B200, tensor parallel 8."""
    rows = []
    for label, workload, quantization, isl, osl, tpot_ms, url in SGLANG_COOKBOOK_MOE:
        est = zoo_estimate(workload, "B200 SXM 180GB", 8, engine=Engine.SGLANG,
                           quantization=quantization, prompt_tokens=isl, output_tokens=osl,
                           tensor_parallel=8)  # fmt: skip
        rows.append((f"{label}, 8x B200 TP8, {isl}/{osl}, batch 1", 1000 / tpot_ms,
                     est.batch1_tokens_per_s, url))  # fmt: skip
    return rows


def sglang_cookbook_section() -> list[str]:
    rows = sglang_cookbook_rows()
    errors = [predicted / measured - 1.0 for _, measured, predicted, _ in rows]
    absolute = [abs(e) for e in errors]
    summary = (f"median |error| {_quantile(absolute, 0.5):.0%}, largest "
               f"{max(absolute):.0%} over {len(rows)} rows")  # fmt: skip
    print(f"SGLang cookbook MoE: {summary}", flush=True)
    lines = [
        "",
        "SGLang's cookbook, mixtures of experts on 8x B200 (`--tp 8`), one request at a time: "
        + provenance.status(["sglang_cookbook_moe"])
        + " Tokens/s of one user (1 / median TPOT, `sglang.bench_serving` random dataset, "
        "10 prompts at the run's mean lengths); mixtures of experts carry their own interval "
        "(serving.MOE_RATIO_BAND), these rows one of its units since latent attention's "
        "kernels were counted on them. Its "
        "Llama 3.1 70B rows on '8x NVIDIA A100' are not predicted: the page names neither the "
        f"cards' memory nor their link. {summary[0].upper()}{summary[1:]}.",
        "",
        "| point | predicted | measured | error | source |",
        "|---|---|---|---|---|",
    ]
    for (label, measured, predicted, url), err in zip(rows, errors, strict=True):
        page = url.split("/docs/autoregressive/")[1]
        lines.append(f"| {label} | {predicted:.1f} | {measured:.1f} | {err:+.1%} | "
                     f"[sgl-cookbook {page}]({url}) |")  # fmt: skip
    return lines


PROMPT_POINTS = [
    ("4090, Llama 3 8B Q4_K_M", "llama-3.1-8b-serve", "RTX 4090", 1, WeightFormat.INT4, 6898.71),
    ("4090, Llama 3 8B F16", "llama-3.1-8b-serve", "RTX 4090", 1, WeightFormat.BF16, 9056.26),
    ("3090, Llama 3 8B Q4_K_M", "llama-3.1-8b-serve", "RTX 3090", 1, WeightFormat.INT4, 3865.39),
    ("3090, Llama 3 8B F16", "llama-3.1-8b-serve", "RTX 3090", 1, WeightFormat.BF16, 4239.64),
    ("2x 3090, Llama 3 70B Q4_K_M", "llama-3.1-70b-serve", "RTX 3090", 2, WeightFormat.INT4,
     393.89),
    ("2x 4090, Llama 3 70B Q4_K_M", "llama-3.1-70b-serve", "RTX 4090", 2, WeightFormat.INT4,
     905.38),
]  # fmt: skip


def prompt_tokens_per_s(workload: str, gpu: str, count: int, quantization: WeightFormat) -> float:
    """llama-bench pp 1024 on the local engine: 1024 / the model's prefill time."""
    build = resolve_build({"gpus": [{"model": gpu, "count": count}]}, "bench", load_catalog(None))
    w = load_workload(workload)
    assert w.serve is not None
    spec = replace(w.serve, engine=Engine.LOCAL, quantization=quantization,
                   prompt_tokens=1024, output_tokens=1)  # fmt: skip
    est = serving_estimate(build, spec, w.name)
    assert est is not None
    return 1024 / est.prefill_s


def prompt_rows() -> list[str]:
    """llama-bench pp 1024: prompt tokens/s = 1024 / the model's prefill time."""
    rows = []
    for label, workload, gpu, count, quantization, measured in PROMPT_POINTS:
        predicted = prompt_tokens_per_s(workload, gpu, count, quantization)
        err = predicted / measured - 1.0
        print(f"{label} pp 1024: {predicted:.0f} vs {measured:g} ({err:+.1%})", flush=True)
        rows.append(
            f"| {label}, pp 1024 | {predicted:,.0f} | {measured:,.2f} | {err:+.1%} | 25% | yes "
            f"| {LLAMA_BENCH.replace('tg 1024', 'pp 1024')} |"
        )
    return rows


def per_call_us() -> float:
    """Median time of one serving_estimate on the 8x H100 405B point (what plan pays)."""
    cat = load_catalog(None)
    build = resolve_build({"gpus": [{"model": "H100 SXM5 80GB", "count": 8}]}, "bench", cat)
    w = load_workload("llama-3.1-405b-serve")
    assert w.serve is not None
    spec = replace(w.serve, users=64, min_tokens_per_s_per_user=20.0)
    times = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(50):
            serving_estimate(build, spec, w.name)
        times.append((time.perf_counter() - start) / 50)
    return sorted(times)[len(times) // 2] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "serving.md")
    args = parser.parse_args()
    rows = []
    for p in POINTS:
        predicted, est = predict(p)
        err = predicted / p.measured - 1.0
        rows.append((p, predicted, err, est))
        print(f"{p.label}: {predicted:.1f} vs {p.measured:g} ({err:+.1%})", flush=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO,
        check=False,
    ).stdout.strip()  # fmt: skip
    today = dt.datetime.now(dt.UTC).date().isoformat()
    lines = [
        "# Serving: decode and serving speed against published measurements",
        "",
        f"Command: `.venv/bin/python bench/bench_serving.py` ({today}, commit {commit}, "
        f"{machine()}, {sys.platform}). The model runs on the CPU; the measurements are "
        "the publishers' own, on the hardware named.",
        "",
        "Batch 1 rows compare the model's decode speed of one user (tokens/s); the 8x H100 "
        "rows compare total output tokens/s with as many users as the KV cache holds "
        "(TensorRT-LLM's maximum-throughput runs). `held` marks the points a test "
        "(`tests/model/test_serving.py`) holds within the bound; the others are shown as "
        "they come out.",
        "",
        "| point | predicted | measured | error | bound | held | binds | source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p, predicted, err, est in rows:
        held = "yes" if p.tested else "no"
        lines.append(
            f"| {p.label} | {predicted:,.1f} | {p.measured:,.2f} | {err:+.1%} | "
            f"{p.bound:.0%} | {held} | {est.binding.value} | {p.source} |"
        )
    lines += [
        "",
        provenance.status(["trtllm_other"]) + " TensorRT-LLM perf-overview, "
        "same commit, fp8 weights and KV cache; each row's dataset (the perf-overview's "
        "$num_requests for its lengths) sent at once and run as that batch runs, in waves of "
        "the requests the KV cache holds (serving_batch.batch_run); error of total output "
        "tokens/s per ISL/OSL. `held`: a test keeps every row within 25%.",
        "",
        "| model, GPUs | " + " | ".join(ISL_OSL) + " | worst | held |",
        "|---|" + "---|" * (len(ISL_OSL) + 2),
        *held_out_rows(),
    ]
    lines += [
        "",
        "Every perf-overview row here is predicted as its run ran: the row's dataset, "
        + ", ".join(f"{n:,} requests at {lo}" for lo, n in PERF_OVERVIEW_REQUESTS.items())
        + " (perf-overview @00f37686, 'Preparing a Dataset'), sent at once and run in waves of "
        "the requests the build runs at once, the last wave with the rest "
        "(serving_batch.batch_run), not as an endless queue at the build's capacity.",
    ]
    lines += perf_overview_section(
        "trtllm_more",
        " The same perf-overview table's other dense rows: Llama 3.1 405B FP8 on eight H200, "
        "and NVFP4 weights on Blackwell, Llama 3.3 70B on one RTX PRO 6000 among them; error of "
        "total output tokens/s per ISL/OSL. Its other dense RTX PRO 6000 rows ran pipeline "
        "parallelism within a copy, which `serve` cannot state: not predicted.",
        TRTLLM_MORE,
    )
    lines += perf_overview_section(
        "trtllm_moe",
        " The same table's mixture-of-experts rows, as they ran: one GPU, or attention data "
        "parallel with the experts split over the GPUs (`serve.attention_data_parallel`, the "
        "perf-overview's MoE command: `--ep`, `enable_attention_dp`); error of total output "
        "tokens/s per ISL/OSL, blank where the table has no figure.",
        TRTLLM_MOE,
    )
    vllm_rows = vllm_held_out_rows()
    errors = sorted(abs(e) for _, e in vllm_rows)
    lines += [
        "",
        "vLLM (`serve.engine: vllm`), " + provenance.status(["vllm_sweeps"]) + " Time per "
        "output token (ms, median) at each client concurrency, on vLLM's own sweeps: median "
        f"|error| {errors[len(errors) // 2]:.0%}, worst {errors[-1]:.0%} "
        f"over {len(errors)} rows. The L4 rows (inter-token latency p50): "
        + provenance.status(["vllm_l4"])
        + " Its batch-1 rows above are calibration: "
        + provenance.status(["vllm_batch1"]),
        "",
        "| point | predicted | measured | error | error as `batched` | binds | source |",
        "|---|---|---|---|---|---|---|",
        *(row for row, _ in vllm_rows),
    ]
    ttft = ttft_rows()
    lone = [abs(predicted / measured - 1.0) for _, users, measured, predicted, _ in ttft
            if users == 1]  # fmt: skip
    loaded = [min(p, a) <= m <= max(p, a) for _, users, m, p, a in ttft if users > 1]
    lines += [
        "",
        "Time to first token (ms, p50) on vLLM, " + provenance.status(["vllm_ttft"]) + " The "
        "serving stack's time a request (`serving.REQUEST_OVERHEAD_S`, 5.9 ms) was chosen on "
        "the H100's one-user row; a lone user's prompt is a pass of its own that reads every "
        "weight (`serving.alone_prefill_s`). Under load each harness sends the next request as "
        "an answer ends, so requests arrive in waves the model does not follow: it takes "
        "arrivals at random within a step (`serving.first_token_wait_s`), and gives beside it "
        "the last first token when every user asks at once "
        "(`serving.first_token_all_at_once_s`): the loaded rows' medians lie between the two "
        f"in {sum(loaded)} of {len(loaded)}. One-user rows: "
        f"{', '.join(f'{e:.0%}' for e in lone)} |error|.",
        "",
        "| point | predicted (at random) | all at once | measured | error | between | source |",
        "|---|---|---|---|---|---|---|",
        *ttft_lines(ttft),
    ]
    sglang_ttft = sglang_ttft_rows()
    lines += [
        "",
        "Time to first token (ms, p50) on SGLang, one user: "
        + provenance.status(["sglang_ttft"]),
        "",
        "| point | predicted | measured | error | source |",
        "|---|---|---|---|---|",
        *(f"| {label} | {predicted:.1f} | {measured:g} | {predicted / measured - 1:+.1%} | "
          f"{source} |" for label, measured, predicted, source in sglang_ttft),
    ]  # fmt: skip
    lines += gpustack_section(gpustack_predictions())
    lines += sglang_cookbook_section()
    lines += [
        "",
        "Prompt processing (prefill) of a local runner, prompt tokens/s:",
        "",
        "| point | predicted | measured | error | bound | held | source |",
        "|---|---|---|---|---|---|---|",
        *prompt_rows(),
    ]
    lines += [
        "",
        "Engine shares (stated in `src/dlrig/model/serving.py`, of the card's achievable "
        "rates from `dlrig.model.rates`) are fitted, not predicted out of sample: the local "
        "runner's 89% of bandwidth, 70 us per layer and token and 67% of the matmul rate in "
        "prefill on the llama.cpp rows; the batched server's 25 us per layer on the H200 row "
        "and its 74% of the matmul rate, a prompt's GEMMs and a decode step's alike, on the "
        "8x H100 405B rows; vLLM's 89% of bandwidth on its two batch-1 rows (its other shares "
        "are the batched server's). The decode GEMMs' read and FLOPs join as their power mean "
        "at p = 1.5, fitted on DeepGEMM's kernel timings (scripts/gemm_overlap.py), and the "
        "engines' all-reduce limits are read from their code; no serving row is out of sample "
        "any more: the TensorRT-LLM 8B/70B table, vLLM's sweeps and MLPerf's rows were in view "
        "when the decode step was given its structure. Batch-1 and 8x H100 rows above: "
        + provenance.status(["llama_bench", "trtllm_405b"]),
        "",
        f"One `serving_estimate` (8x H100, Llama 3.1 405B, 64 users, speed target): "
        f"{per_call_us():.0f} us median.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
