"""Cost of serving under Poisson arrivals (issue 36; target: well under 1 s per estimate).

    .venv/bin/python bench/bench_arrivals.py [--calls N] [--out FILE]

Times `dlrig.model.estimate` of a serving workload with `serve.arrival_rate` and MLPerf's
Server-scenario bounds (loadgen/mlperf.conf, 99th percentile: llama3_1-8b 2 s / 100 ms,
llama2-70b 2 s / 200 ms, llama3_1-405b 6 s / 175 ms) on one H100, 8x H100 (70B: four
copies of two GPUs each, as `serve.tensor_parallel` sets them) and 2x RTX 4090, with the
same estimate without the arrival fields beside it, so that the difference is the
simulation's (one run at the asked rate, the bisection's eight, three for the limit). Prints
the answers too. Then MLPerf Inference v4.1's Llama 2 70B runs against dlrig: the Server runs'
passed request rates against its largest rate meeting their bounds, the Offline runs' total
output tokens/s against its throughput with every sequence the KV cache holds (both read by
bench/held_out.py for bench_accuracy). Writes bench/results/arrivals.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import provenance
from machine_info import machine, write_result

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.model import estimate
from dlrig.model.serving import SERVING_RATIO_BAND
from dlrig.model.serving_load import ServingLoad
from dlrig.workloads import load_workload, resolve_workload
from dlrig.workloads.serving import WeightFormat

REPO = Path(__file__).resolve().parents[1]
# (label, gpu, count, workload, serve changes: rate and MLPerf's bounds for the model size)
CASES = (
    ("Llama 3.1 8B bf16, 1x H100", "H100 SXM", 1, "llama-3.1-8b-serve",
     {"arrival_rate": 10.0, "ttft_target_s": 2.0, "tpot_target_s": 0.100}),
    ("Llama 3.1 70B fp8, 8x H100", "H100 SXM", 8, "llama-3.1-70b-serve",
     {"quantization": WeightFormat.FP8, "tensor_parallel": 2, "arrival_rate": 10.0,
      "ttft_target_s": 2.0,
      "tpot_target_s": 0.200}),
    ("Llama 3.1 405B fp8, 8x H100", "H100 SXM", 8, "llama-3.1-405b-serve",
     {"quantization": WeightFormat.FP8, "arrival_rate": 2.0, "ttft_target_s": 6.0,
      "tpot_target_s": 0.175}),
    ("Llama 3.1 70B int4, 2x RTX 4090", "RTX 4090", 2, "llama-3.1-70b-serve",
     {"quantization": WeightFormat.INT4, "users": 2, "arrival_rate": 0.1, "ttft_target_s": 2.0,
      "tpot_target_s": 0.200}),
)  # fmt: skip


# Arrival-rate measurements: MLPerf Inference v4.1's Server scenario (Poisson arrivals, p99
# TTFT <= 2 s and TPOT <= 200 ms), NVIDIA's closed-division Llama 2 70B runs with TensorRT-LLM
# in fp8 (configs/llama2-70b/Server: H100 TP2 x4 copies, H200 TP1 x8), results published
# 2024-08-28. The rate is the one the submitter ran and passed, so the true largest rate is at
# least it.
RESULTS = (
    "https://github.com/mlcommons/inference_results_v4.1/blob/"
    "a2f5d66d17e8f75c02fd74dfe810ecca6a046696/closed"
)
# Llama 2 70B (meta-llama/Llama-2-70b-chat-hf config.json: 80 layers, hidden 8192, 64 heads,
# 8 KV heads, head dim 128, vocabulary 32000; 68,976,648,192 parameters). Prompts: the mean
# `tok_input_length` of MLPerf's 24,576 OpenOrca samples, 222.3 tokens (as summarised in
# openshift-psap/performance-dashboard mlperf-data/summaries/llama2-70b-99.csv @7100702);
# answers: each run's own completed tokens/s over samples/s.
LLAMA2_70B_PARAMS = 68_976_648_192
MLPERF_PROMPT_TOKENS = 222
# Every run kept its KV cache in fp8. NVIDIA's configs run 806-1,024 sequences a copy
# (configs/llama2-70b/{Offline,Server}/__init__.py gpu_batch_size: H100 TP2 896 and 1,024,
# H200 TP1 806 and 896, GH200 TP1 806). At the samples' mean context, 222 + 290 / 2 = 367
# tokens, 16-bit KV (327,680 bytes a token) is 108-123 GB for an H100 pair and 97-108 GB for
# an H200, beside 69 GB of fp8 weights: more than the 90% of the memory left that
# TensorRT-LLM gives the cache (kvcache_free_gpu_mem_frac 0.90: 92 GB on two H100 80GB, 64 GB
# on an H200's 141 GB). In fp8 it fits.
# AMD's vLLM runs load fp8 KV-cache scales (code/llama2-70b-99/README.md: "KV cache scales
# for the quantized model weights are used", vLLM's tests/fp8_kv/llama2-70b-fp8-kv).
MLPERF_KV_PRECISION = "fp8"


def llama2_70b_doc(
    output_tokens: int, tensor_parallel: int, engine: str = "batched", users: int | None = None
) -> dict[str, Any]:
    """MLPerf's Llama 2 70B job as a serving workload: fp8 weights and KV cache, the dataset's
    mean prompt and a run's mean answer, `tensor_parallel` GPUs a copy. LoadGen hands the
    engine token IDs in-process (the dataset is pre-tokenized, no HTTP server): no serving
    stack's time a request."""
    serve: dict[str, Any] = {
        "layers": 80, "hidden_size": 8192, "heads": 64, "kv_heads": 8, "head_dim": 128,
        "vocab_size": 32000, "quantization": "fp8", "kv_precision": MLPERF_KV_PRECISION,
        "engine": engine, "prompt_tokens": MLPERF_PROMPT_TOKENS,
        "output_tokens": output_tokens, "tensor_parallel": tensor_parallel,
        "request_overhead_s": 0.0,
    }  # fmt: skip
    if users is not None:
        serve["users"] = users
    return {
        "name": "llama-2-70b (MLPerf)", "mode": "inference", "batch_size": 1,
        "precision": "fp8", "input": {"shape": [1], "dtype": "int64"},
        "dataset": "synthetic", "tokens": 1e7,
        "model": {"kind": "language", "params": LLAMA2_70B_PARAMS,
                  "forward_flops_per_token": 2 * LLAMA2_70B_PARAMS,
                  "activation_bytes_per_sample": 0,
                  "seq_len": MLPERF_PROMPT_TOKENS + output_tokens},
        "serve": serve,
    }  # fmt: skip


def _build(label: str, gpu: str, count: int) -> Build:
    return resolve_build({"name": label, "gpus": [{"model": gpu, "count": count}]},
                         "bench", load_catalog(None))  # fmt: skip


@dataclass(frozen=True)
class MlperfRun:
    """One MLPerf Inference v4.1 Llama 2 70B run: its GPUs and layout and what its log records
    (a Server run's p99 first-token and per-token times too)."""

    label: str
    gpu: str
    count: int
    tensor_parallel: int
    samples_per_s: float
    tokens_per_s: float
    url: str
    engine: str = "batched"
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None

    @property
    def output_tokens(self) -> int:
        return round(self.tokens_per_s / self.samples_per_s)


RESULTS_DATE = "2024-08-28"
HELD_OUT = (
    MlperfRun("MLPerf v4.1 Server, 8x H100 SXM 80GB (DGX H100), Llama 2 70B fp8, TP2 x4",
              "H100 SXM5 80GB", 8, 2, 74.42, 21605.79,
              f"{RESULTS}/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Server/"
              "performance/run_1/mlperf_log_summary.txt",
              ttft_p99_s=0.461278089, tpot_p99_s=0.175354317),
    MlperfRun("MLPerf v4.1 Server, 8x H200 SXM 141GB, Llama 2 70B fp8, TP1 x8",
              "H200 SXM 141GB", 8, 1, 100.35, 29228.22,
              f"{RESULTS}/NVIDIA/results/H200-SXM-141GBx8_TRT/llama2-70b-99/Server/performance/"
              "run_1/mlperf_log_summary.txt",
              ttft_p99_s=0.452744202, tpot_p99_s=0.146040006),
)  # fmt: skip


def predict(run: MlperfRun) -> ServingLoad:
    """dlrig's largest rate at MLPerf's bounds for one run's build and layout."""
    doc = llama2_70b_doc(run.output_tokens, run.tensor_parallel)
    doc["serve"].update({"ttft_target_s": 2.0, "tpot_target_s": 0.2})
    est = estimate(_build(run.label, run.gpu, run.count), resolve_workload(doc, "bench"),
                   arrivals=True)  # fmt: skip
    assert est.serving is not None and est.serving.load is not None
    return est.serving.load


# MLPerf Inference v4.1's Offline scenario: every sample queued at once, total output tokens/s
# (each run's mlperf_log_summary.txt, or its detail log's result_tokens_per_second). Layouts:
# NVIDIA's configs/llama2-70b/Offline/__init__.py (H100 TP2 x4 copies, H200 and GH200 TP1);
# AMD's one MI300X runs the whole model (vLLM, its only GPU). AMD's 8x MI300X runs are left
# out: the submission does not state their tensor-parallel layout.
OFFLINE = (
    MlperfRun("MLPerf v4.1 Offline, 8x H100 SXM 80GB (DGX H100), Llama 2 70B fp8, TP2 x4",
              "H100 SXM5 80GB", 8, 2, 84.4792, 24524.9,
              f"{RESULTS}/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Offline/"
              "performance/run_1/mlperf_log_summary.txt"),
    MlperfRun("MLPerf v4.1 Offline, 8x H200 SXM 141GB, Llama 2 70B fp8, TP1 x8",
              "H200 SXM 141GB", 8, 1, 107.477, 31302.7,
              f"{RESULTS}/NVIDIA/results/H200-SXM-141GBx8_TRT/llama2-70b-99/Offline/"
              "performance/run_1/mlperf_log_summary.txt"),
    MlperfRun("MLPerf v4.1 Offline, 1x GH200 144GB, Llama 2 70B fp8, TP1",
              "GH200 144GB", 1, 1, 13.9658, 4067.52,
              f"{RESULTS}/NVIDIA/results/GH200-GraceHopper-Superchip_GH200-144GB_aarch64x1_TRT/"
              "llama2-70b-99/Offline/performance/run_1/mlperf_log_detail.txt"),
    MlperfRun("MLPerf v4.1 Offline, 1x MI300X, Llama 2 70B fp8, vLLM",
              "AMD Instinct MI300X", 1, 1, 10.4445, 3062.72,
              f"{RESULTS}/AMD/results/1xMI300X_2xEPYC-9374F/llama2-70b-99.9/Offline/"
              "performance/run_1/mlperf_log_summary.txt", engine="vllm"),
)  # fmt: skip


def offline_tokens_per_s(run: MlperfRun) -> float:
    """dlrig's total output tokens/s for an Offline run: every copy with as many sequences as
    its KV cache holds."""
    build = _build(run.label, run.gpu, run.count)
    doc = llama2_70b_doc(run.output_tokens, run.tensor_parallel, run.engine)
    first = estimate(build, resolve_workload(doc, "bench")).serving
    assert first is not None
    doc = llama2_70b_doc(run.output_tokens, run.tensor_parallel, run.engine,
                         users=max(first.max_users_fit, 1))  # fmt: skip
    est = estimate(build, resolve_workload(doc, "bench")).serving
    assert est is not None
    return est.tokens_per_s_total


def held_out_lines() -> list[str]:
    rows = []
    for run in HELD_OUT:
        load = predict(run)
        assert load.max_requests_per_s is not None and load.at_max is not None
        x = load.at_max
        error = load.max_requests_per_s / run.samples_per_s - 1.0
        low, high = load.max_requests_per_s_low, load.max_requests_per_s_high
        assert low is not None and high is not None
        assert run.ttft_p99_s is not None and run.tpot_p99_s is not None
        inside = "yes" if low <= run.samples_per_s <= high else "no"
        rows.append(
            f"| [{run.label}]({run.url}) ({RESULTS_DATE}) | {run.samples_per_s:g} | "
            f"{load.max_requests_per_s:.1f} | {error:+.1%} | {low:.1f}-{high:.1f} | {inside} | "
            f"{run.ttft_p99_s * 1e3:.0f} / {run.tpot_p99_s * 1e3:.0f} ms | "
            f"{(x.ttft_p99_s or 0) * 1e3:.0f} / {(x.tpot_p99_s or 0) * 1e3:.0f} ms | "
            f"{load.saturated_requests_per_s:.1f} | {load.limit.value if load.limit else '-'} |"
        )
    return [
        "### MLPerf Inference v4.1 Server runs",
        "",
        "Poisson arrivals under MLPerf's p99 bounds (TTFT <= 2 s, TPOT <= 200 ms), NVIDIA's "
        "Llama 2 70B fp8 submissions; dlrig predicts the largest rate meeting the bounds on "
        "the same GPUs and layout, with 222-token prompts (the dataset's mean), each run's "
        "own mean answer (tokens/s over samples/s: 290 and 291) and an fp8 KV cache. The "
        "measured rate is the one the submitter ran, a lower bound of the true largest. The "
        "interval is dlrig's own (serving.load.max_requests_per_s_low/high): the largest rate "
        "searched again with every prefill and decode step at the serving interval's slow "
        "and fast ends. " + provenance.status(["mlperf_server"]),
        "",
        "| run | measured requests/s | dlrig's largest rate | error | interval | measured inside "
        "| measured p99 TTFT / TPOT | dlrig's p99 at its rate | dlrig's saturated rate "
        "| dlrig's limit |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def offline_lines() -> list[str]:
    rows = []
    for run in OFFLINE:
        predicted = offline_tokens_per_s(run)
        inside = "yes" if SERVING_RATIO_BAND[0] <= run.tokens_per_s / predicted <= (
            SERVING_RATIO_BAND[1]) else "no"  # fmt: skip
        rows.append(
            f"| [{run.label}]({run.url}) | {run.tokens_per_s:,.0f} | {predicted:,.0f} | "
            f"{predicted / run.tokens_per_s - 1.0:+.1%} | {run.output_tokens} | {inside} |"
        )
    return [
        "### MLPerf Inference v4.1 Offline runs",
        "",
        "Every sample queued at once: total output tokens/s, against dlrig's with every copy "
        "holding as many sequences as its KV cache takes (fp8 weights and KV cache, 222-token "
        "prompts, each run's mean answer). Measured inside: measured / predicted within the "
        f"serving interval ({SERVING_RATIO_BAND[0]}-{SERVING_RATIO_BAND[1]}). "
        + provenance.status(["mlperf_offline"]),
        "",
        "| run | measured tokens/s | dlrig | error | answer tokens | measured inside |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:.0f} ms (max {max(samples) * 1e3:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "arrivals.md")
    args = parser.parse_args()
    catalog = load_catalog(None)
    rows = []
    for label, gpu, count, name, changes in CASES:
        build = resolve_build({"name": label, "gpus": [{"model": gpu, "count": count}]},
                              "bench", catalog)  # fmt: skip
        base = load_workload(name)
        assert base.serve is not None
        fields = {
            k: v for k, v in changes.items() if k in ("quantization", "users", "tensor_parallel")
        }
        plain = replace(base, serve=replace(base.serve, **fields))  # type: ignore[arg-type]
        loaded = replace(base, serve=replace(base.serve, **changes))  # type: ignore[arg-type]
        estimate(build, plain)
        with_load, without = [], []
        est = None
        for _ in range(args.calls):
            t = time.perf_counter()
            estimate(build, plain)
            without.append(time.perf_counter() - t)
            t = time.perf_counter()
            est = estimate(build, loaded, arrivals=True)
            with_load.append(time.perf_counter() - t)
        assert est is not None and est.serving is not None and est.serving.load is not None
        load = est.serving.load
        x, m = load.at_rate, load.at_max
        at_rate = "-" if x is None or x.ttft_p99_s is None or x.tpot_p99_s is None else (
            f"{x.requests_per_s:g}/s: TTFT p99 {x.ttft_p99_s * 1e3:,.0f} ms, TPOT p99 "
            f"{x.tpot_p99_s * 1e3:.1f} ms, {x.utilisation:.0%} used"
        )  # fmt: skip
        at_max = "none" if m is None else f"{load.max_requests_per_s:,.3g}/s ({m.utilisation:.0%})"
        rows.append(
            f"| {label} | {load.ttft_target_s:g} s / {load.tpot_target_s * 1e3:g} ms | "
            f"{_ms(with_load)} | {_ms(without)} | {load.requests_simulated:,} | {at_rate} | "
            f"{at_max} | {load.limit.value if load.limit else '-'} |"
        )
    lines = [
        "## Serving under Poisson arrivals: cost of the simulation (issue 36)",
        "",
        f"Command: `.venv/bin/python bench/bench_arrivals.py --calls {args.calls}`; machine: "
        f"{machine()}; date: {dt.date.today().isoformat()}. Target: well under 1 s per "
        "estimate. One `estimate` call with `serve.arrival_rate` and MLPerf's Server bounds "
        "(99th percentile; loadgen/mlperf.conf) against the same call without them, median "
        f"(max) of {args.calls}; the answers beside (model figures, not measurements).",
        "",
        "| build | bounds (TTFT / TPOT) | estimate with arrivals | without | requests per run "
        "| at the asked rate | largest rate meeting the bounds | limit |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        *held_out_lines(),
        *offline_lines(),
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
