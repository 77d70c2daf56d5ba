"""dlrig against real training jobs timed on a lent H200 (bench/data/h200_gpu_check.json).

    .venv/bin/python bench/bench_h200.py

scripts/gpu-check ran scripts/gpu_jobs.py on a single H200: the real networks (torchvision,
transformers, peft) with random weights and synthetic data on the GPU, each step timed between
device synchronisations, then three steps under torch.profiler (kernels per step, GPU-busy
time). No H200 row is in the fit (Lambda's runs have none), but constants were chosen looking at
these jobs (bench/provenance.toml): the file says which, and the figures are calibration, not
held out. This script predicts each job with the shipped calibration on a 1x H200 SXM build,
at the job's batch, precision and settings, and compares step time, peak memory and kernel
count; and the matmul and memory rates dlrig assumes for the card against the ones measured.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import provenance
from machine_info import machine, write_result

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Bottleneck, Precision
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import compute, estimate, layers, memory
from dlrig.model.calibration import default_calibration
from dlrig.model.compute import ComputeFactors
from dlrig.model.memory import MEMORY_RATIO_BAND
from dlrig.model.rates import achievable_matmul, achievable_memory_bandwidth
from dlrig.units import GIB
from dlrig.workloads import Workload, resolve_workload
from dlrig.workloads.loader import zoo_document

BENCH_DIR = Path(__file__).resolve().parent
DATA = BENCH_DIR / "data" / "h200_gpu_check.json"
OUT = BENCH_DIR / "results" / "h200.md"
GPU_NAME = "H200 SXM 141GB"

# Llama 3.2 1B (huggingface.co/meta-llama/Llama-3.2-1B config.json: hidden 2048, intermediate
# 8192, 16 layers, 32 heads, 8 KV heads, tied embeddings), the job's 1,235,814,400 parameters.
# FLOPs per token: 2 x 1,235,746,816 matmul weights (16 x 60,817,408 in the layers, the
# 2048 x 128,256 head) + 4 x L x S x d for attention = 2.740 G. Activations without
# checkpointing, 34 s h L at 16-bit (Korthikanti et al. 2022) and the logits in bf16 and fp32:
# 3.86 GB, doubled as the 32-bit reference.
LLAMA_3_2_1B = {
    "params": 1235814400, "forward_flops_per_token": 2.7399e9,
    "activation_bytes_per_sample": 7.7e9, "hidden_size": 2048, "num_layers": 16,
    "num_heads": 32, "kv_heads": 8, "ffn_hidden_size": 8192, "tied_embeddings": True,
}  # fmt: skip

# The LoRA jobs step a bf16 model with peft's fp32 adapters and no torch.autocast
# (scripts/gpu_jobs.py: hf_step(..., autocast=not lora)): the adapters multiply, scale and add
# in fp32 (finetune.autocast: false).
PEFT_FP32_NO_AUTOCAST = {"method": "lora", "adapter_precision": "fp32", "autocast": False}

# Each recorded job as a zoo entry with the job's settings (scripts/gpu_jobs.py): its batch and
# precision, channels_last for the torchvision jobs, SGD where the job used it, the attention
# kernel transformers ran (SDPA: fused) and GPT-2's dropout (transformers' default 0.1).
JOBS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "resnet50": ("resnet50", {"batch_size": 256, "precision": "fp16",
                              "memory_format": "channels_last"}, {}),
    "vit-b16": ("vit-b16", {"batch_size": 256, "precision": "fp16", "optimizer": "sgd",
                            "memory_format": "channels_last"}, {}),
    # The BERT job keeps fp32 weights under autocast (scripts/gpu_jobs.py bert_large_squad), not
    # the zoo's apex O2 16-bit model: its gradients, and its residual stream, are fp32.
    "bert-large-squad": ("bert-large-squad", {"batch_size": 32, "optimizer": "adamw",
                                              "gradient_precision": "fp32"},
                         {"attention": "flash"}),
    "bert-large-squad-eager": ("bert-large-squad", {"batch_size": 32, "optimizer": "adamw",
                                                    "gradient_precision": "fp32"},
                               {"attention": "eager"}),
    # transformers' GPT-2: its config's activation_function is gelu_new, NewGELUActivation's
    # eight element-wise kernels in eager PyTorch (the zoo's nanoGPT runs one).
    "gpt2": ("gpt2", {"batch_size": 12}, {"dropout": True, "hidden_act": "gelu_new"}),
    "gpt2-no-dropout": ("gpt2", {"batch_size": 12}, {"dropout": False,
                                                     "hidden_act": "gelu_new"}),
    "llama-3-8b-lora": ("llama-3-8b-lora", {"batch_size": 2, "finetune": {
        **PEFT_FP32_NO_AUTOCAST, "trainable_fraction": 0.005223}}, {}),
    "llama-3-8b-lora-b1": ("llama-3-8b-lora", {"batch_size": 1, "finetune": {
        **PEFT_FP32_NO_AUTOCAST, "trainable_fraction": 0.005223}}, {}),
    "llama-3-8b-lora-bf16-adapters": ("llama-3-8b-lora", {
        "batch_size": 2, "finetune": {"method": "lora", "trainable_fraction": 0.005223,
                                      "adapter_precision": "16bit"}}, {}),
    "llama-3-8b-lora-b4-no-checkpointing": ("llama-3-8b-lora", {
        "batch_size": 4, "activation_checkpointing": False, "finetune": {
            **PEFT_FP32_NO_AUTOCAST, "trainable_fraction": 0.005223}}, {}),
    # The job's LoRA: r=16 on all 7 projections, 40,370,176 trainable parameters (its record),
    # one micro-batch a step.
    "qwen2.5-7b-lora": ("qwen2.5-7b-lora", {
        "batch_size": 2, "gradient_accumulation": 1,
        "finetune": {**PEFT_FP32_NO_AUTOCAST,
                     "trainable_fraction": 40370176 / 7615616512}}, {}),
    "qwen2.5-7b-lora-b4-no-checkpointing": ("qwen2.5-7b-lora", {
        "batch_size": 4, "gradient_accumulation": 1, "activation_checkpointing": False,
        "finetune": {**PEFT_FP32_NO_AUTOCAST,
                     "trainable_fraction": 40370176 / 7615616512}}, {}),
    "llama-3.2-1b-full": ("llama-3-8b", {
        "batch_size": 8, "activation_checkpointing": False, "parallel": "ddp"}, LLAMA_3_2_1B),
}  # fmt: skip


@dataclass(frozen=True)
class Compared:
    job: str
    measured_s: tuple[float, ...]
    predicted_s: float
    low_s: float
    high_s: float
    measured_gb: float
    predicted_gb: float
    measured_kernels: float
    predicted_kernels: float
    gpu_busy_share: float

    @property
    def error(self) -> float:
        return self.predicted_s / statistics.median(self.measured_s) - 1.0

    @property
    def within(self) -> bool:
        """The median repeat inside the interval (any repeat would count a job with a wide
        spread inside more often than its typical step is)."""
        return self.low_s <= statistics.median(self.measured_s) <= self.high_s


def workload_of(job: str) -> Workload:
    zoo_name, fields, model = JOBS[job]
    return workload_from(zoo_name, fields, model, job)


def workload_from(
    zoo_name: str, fields: dict[str, Any], model: dict[str, Any], job: str
) -> Workload:
    doc = copy.deepcopy(zoo_document(zoo_name))
    doc.update(fields, name=f"{job} (H200 job)", dataset="synthetic")
    doc["model"] = {**doc["model"], **model}
    return resolve_workload(doc, "bench_h200")


def compare(job: str, recorded: dict[str, Any], build: Build) -> Compared:
    workload = workload_of(job)
    est = estimate(build, workload)
    work = layers.layer_work(workload)
    sixteen = workload.precision in (Precision.FP16, Precision.BF16)
    kernels = compute.step_kernels(work, workload, workload.batch_size, mixed_precision=sixteen)
    runs = tuple(recorded["median_step_s_runs"])
    profile = recorded["profile"]
    # The record is torch.cuda.max_memory_allocated: the live tensors' peak, not the reserve
    # the estimate sizes the card by (memory.transformer_activation_bytes_per_sample).
    cal = default_calibration()
    need = memory.memory_need(
        workload, workload.batch_size, sixteen, memory.declared_layout(workload, 1),
        cal.cuda_context_gb, cal.allocator_overhead_fraction, allocated=True,
    )  # fmt: skip
    return Compared(
        job, runs, est.step_time_s, est.step_time_s_low, est.step_time_s_high,
        recorded["peak_allocated_gb"] * 1e9 / GIB,
        (need.peak_tensor_bytes - need.managed_bytes) / GIB,
        profile["kernels_per_step"], kernels,
        profile["gpu_busy_s_per_step"] / profile["wall_s_per_step"],
    )  # fmt: skip


def memory_summary(results: list[Compared]) -> str:
    """Peak tensors: dlrig's error and how many jobs the memory interval the other memory
    calibration sources give holds (held_out.memory_left_out_bands: the shipped band,
    memory.MEMORY_RATIO_BAND, is set on these jobs too, so it would judge them in-sample)."""
    import held_out

    errors = [abs(r.predicted_gb / r.measured_gb - 1.0) for r in results]
    bands = held_out.memory_left_out_bands(held_out.memory())
    low, high = bands.get("h200_memory", MEMORY_RATIO_BAND)
    inside = sum(low <= r.measured_gb / r.predicted_gb <= high for r in results)
    shipped_low, shipped_high = MEMORY_RATIO_BAND
    return (
        f"Peak tensors: median |error| {statistics.median(errors):.1%}, largest "
        f"{max(errors):.1%}; {inside} of {len(results)} inside the memory interval the other "
        f"memory calibration sources give ({low:.3f}-{high:.3f}x dlrig's figure; the shipped "
        f"{shipped_low:.3f}-{shipped_high:.3f}x is set on these jobs', torchtune's and "
        "fsdp_qlora's peaks)."
    )


def _other_ms(data: dict[str, Any], job: str) -> float:
    """Milliseconds a step of `job`'s kernels outside matmuls, convolutions, attention and the
    optimizer took, by the recorded profile."""
    return 1e3 * float(data["jobs"][job]["profile"]["kernel_s_per_step_by_class"]["other"])


def rate_rows(data: dict[str, Any], gpu: GPU) -> list[str]:
    rows = []
    for name, runs in data["matmul_tflops"].items():
        assumed = achievable_matmul(gpu, Precision(name))
        measured = statistics.mean(runs)
        rows.append(
            f"| matmul {name} | {' / '.join(f'{r:,.1f}' for r in runs)} TFLOPS | "
            f"{assumed.value:,.1f} TFLOPS ({assumed.provenance}) | "
            f"{assumed.value / measured - 1:+.1%} |"
        )
    bandwidth = achievable_memory_bandwidth(gpu)
    runs = data["device_memory_gb_s"]
    rows.append(
        f"| memory | {' / '.join(f'{r:,.0f}' for r in runs)} GB/s (device copy) | "
        f"{bandwidth.value:,.0f} GB/s ({bandwidth.provenance}) | "
        f"{bandwidth.value / statistics.mean(runs) - 1:+.1%} |"
    )
    return rows


SUMMARY = BENCH_DIR / "data" / "h200_gpu_check_summary.json"


def gpu_check_rows(summary: dict[str, Any]) -> list[str]:
    """One row per scripts/gpu-check step of the newest run: clean or not, seconds, what it
    read."""
    rows = []
    for step, record in summary["steps"].items():
        detail = record.get("detail") or record.get("error", "")
        rows.append(
            f"| {step} | {'ok' if record['ok'] else 'FAILED'} | {record.get('seconds', 0):.1f} | "
            f"{_step_reading(step, detail)} |"
        )
    return rows


def _step_reading(step: str, detail: Any) -> str:
    if not isinstance(detail, dict):
        return str(detail)
    if step == "real_jobs":
        verdict = detail["watch_verdict"]
        return (
            f"{len(detail['jobs'])} jobs, exit {detail['exit']}; `dlrig watch` over the whole "
            f"script: {verdict['summary']}"
        )
    if step == "probe":
        return "; ".join(detail["verdicts"])
    if step == "probe_train":
        return "; ".join(
            f"{stage}: measured {measured * 1e3:.1f} ms, estimated {estimated * 1e3:.1f} ms"
            for stage, measured, estimated in detail["rows"]
        )
    if step == "disk":
        return "; ".join(
            f"{mode}: {v['qd1_mb_s']:,.0f} MB/s at queue depth 1, {v['deep_mb_s']:,.0f} at "
            f"{v['depth']}"
            for mode, v in detail.items()
        )
    if step == "pytest_gpu":
        return f"exit {detail['exit']}: `{detail['first_line'].split()[0]}` (one dot a test)"
    return ", ".join(f"{k} {v}" for k, v in detail.items() if v not in (None, [], ""))


SWEEPS = {"resnet50-batches": "resnet50", "bert-large-squad-batches": "bert-large-squad"}


def smallest_batch_busy_us(data: dict[str, Any]) -> float:
    """The GPU's busy microseconds a kernel at each sweep's smallest batch, the larger."""
    return max(
        run["profile"]["gpu_busy_s_per_step"] / run["profile"]["kernels_per_step"] * 1e6
        for run in (data["jobs"][sweep]["runs"][0] for sweep in SWEEPS)
    )


def host_bound_note(data: dict[str, Any]) -> str:
    """The host's time per kernel at each sweep's smallest batch, from its step and kernels."""
    parts = []
    for sweep, job in SWEEPS.items():
        run = data["jobs"][sweep]["runs"][0]
        profile = run["profile"]
        parts.append(
            f"{job} at batch {run['batch']} took {run['median_step_s'] * 1e3:.1f} ms with the "
            f"GPU busy {profile['gpu_busy_s_per_step'] * 1e3:.1f} ms, "
            f"{run['median_step_s'] / profile['kernels_per_step'] * 1e6:.0f} us for each of "
            f"its {profile['kernels_per_step']:,.0f} kernels"
        )
    return "; ".join(parts) + "."


def sweep_rows(data: dict[str, Any], build: Build) -> list[str]:
    """Each batch of each sweep, and the sweep's job at its own batch, measured and predicted."""
    rows = []
    for sweep, job in SWEEPS.items():
        recorded = [*data["jobs"][sweep]["runs"], data["jobs"][job]]
        for run in recorded:
            zoo_name, fields, model = JOBS[job]
            workload = workload_from(zoo_name, {**fields, "batch_size": run["batch"]}, model, job)
            predicted = estimate(build, workload).step_time_s
            rows.append(
                f"| {job} | {run['batch']} | {run['median_step_s'] * 1e3:.1f} | "
                f"{run['profile']['gpu_busy_s_per_step'] * 1e3:.1f} | {predicted * 1e3:.1f} | "
                f"{predicted / run['median_step_s'] - 1:+.1%} |"
            )
    return rows


@dataclass(frozen=True)
class Split:
    """One job's step split into its parts, in seconds, measured and as dlrig counts them."""

    job: str
    batch: int
    step: tuple[float, float]
    matmuls: tuple[float, float]
    other: tuple[float, float]
    idle: float
    per_kernel: float
    kernels: tuple[float, float]


def step_splits(data: dict[str, Any], build: Build, cal: ComputeFactors) -> list[Split]:
    """Every job's step split into its parts, measured (the profile's kernel time by class;
    idle: the median step less the GPU-busy time) and as dlrig counts them (matmuls and
    attention at their rates, memory-bound kernels at the card's bandwidth, each counted
    kernel's fitted GPU-side seconds)."""
    splits = []
    for job in JOBS:
        recorded = data["jobs"][job]
        profile = recorded["profile"]
        by_class = profile["kernel_s_per_step_by_class"]
        matmul = by_class.get("gemm", 0.0) + by_class.get("attention", 0.0)
        matmul += by_class.get("conv", 0.0)
        step = recorded["median_step_s"]
        workload = workload_of(job)
        est = estimate(build, workload)
        work = layers.layer_work(workload)
        kernels = compute.step_kernels(work, workload, workload.batch_size, mixed_precision=True)
        fixed = kernels * cal.gpu_kernel_s
        gpu = est.stages_s[Bottleneck.GPU_COMPUTE]
        memory_s = est.stages_s[Bottleneck.GPU_MEMORY_BANDWIDTH]
        if kernels * cal.host_kernel_s >= gpu + memory_s:
            # The split below holds only while the GPU's side sets dlrig's step.
            raise RuntimeError(f"{job}: dlrig's step is host-bound; its compute is not split")
        other = by_class["other"] + by_class["optimizer"]
        idle = step - profile["gpu_busy_s_per_step"]
        measured_kernels = profile["kernels_per_step"]
        splits.append(
            Split(job, workload.batch_size, (step, est.step_time_s), (matmul, gpu - fixed),
                  (other, memory_s), idle, fixed, (measured_kernels, kernels))
        )  # fmt: skip
    return splits


def split_rows(splits: list[Split]) -> list[str]:
    """One table row a job: measured / dlrig in ms a step."""
    return [
        f"| {s.job} | {s.batch} | {s.step[0] * 1e3:.0f} / {s.step[1] * 1e3:.0f} | "
        f"{s.matmuls[0] * 1e3:.0f} / {s.matmuls[1] * 1e3:.0f} | "
        f"{s.other[0] * 1e3:.0f} / {s.other[1] * 1e3:.0f} | "
        f"{s.idle * 1e3:.0f} / {s.per_kernel * 1e3:.0f} | "
        f"{s.kernels[0]:,.0f} / {s.kernels[1]:,.0f} |"
        for s in splits
    ]


def split_note(splits: list[Split]) -> str:
    """What the split says about dlrig's fitted cost per kernel, from its own figures."""
    other = statistics.median(s.other[0] / s.other[1] for s in splits)
    low, high = (
        min(s.other[0] / s.other[1] for s in splits),
        max(s.other[0] / s.other[1] for s in splits),
    )
    idle_us = sorted(s.idle / s.kernels[0] * 1e6 for s in splits)
    by_job = {s.job: s for s in splits}
    one, two = by_job["llama-3-8b-lora-b1"], by_job["llama-3-8b-lora"]
    share = statistics.median(s.per_kernel / s.step[1] for s in splits)
    missing = statistics.median((s.other[0] + s.idle - s.other[1]) / s.per_kernel for s in splits)
    return (
        f"The kernels outside matmuls ran {low:.1f}-{high:.1f}x (median {other:.1f}x) the time "
        "dlrig gives their counted bytes at the card's bandwidth, and the GPU sat idle "
        f"{idle_us[0]:.1f}-{idle_us[-1]:.1f} us a measured kernel (median "
        f"{statistics.median(idle_us):.1f}). dlrig's fitted cost per kernel, a median "
        f"{share:.0%} of its step, stands in for that element-wise time and idle "
        f"(they come to a median {missing:.2f}x of it) more than for a fixed cost at each "
        f"kernel boundary: from batch {one.batch} to {two.batch} the Llama 3 8B LoRA job ran "
        f"{two.kernels[0] / one.kernels[0]:.2f}x the kernels and "
        f"{two.other[0] / one.other[0]:.2f}x the element-wise time, which grows with the "
        "batch where a cost a kernel would not."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    summary = json.loads(SUMMARY.read_text())
    gpu = load_catalog().find(GPU, GPU_NAME)
    build = Build(name=f"1x {gpu.name}", gpus=(GPUGroup(gpu, 1),))
    cal = default_calibration().compute
    splits = step_splits(data, build, cal)
    results = [compare(job, data["jobs"][job], build) for job in JOBS]
    errors = [abs(r.error) for r in results]
    lines = [
        "# dlrig's estimates against real training jobs on an H200",
        "",
        f"Command: `.venv/bin/python bench/bench_h200.py` ({dt.date.today()}, {machine()}).",
        "",
        f"Data: `bench/data/h200_gpu_check.json`, {data['provenance']}. No H200 row is in the "
        "fit of calibration.toml. " + provenance.status(["h200_jobs", "h200_memory"]) + " "
        "Each job is its zoo entry at the job's batch, "
        "precision and settings (bench_h200.JOBS), predicted on a 1x H200 SXM build with the "
        "shipped calibration. Measured: the median step of each run (one figure per run, "
        "oldest first); peak memory as torch.cuda.max_memory_allocated (tensors only, in GiB, "
        "the unit dlrig's GB is) against dlrig's model states and activations (its total adds "
        "the CUDA context and the allocator's share); kernels per step and the GPU-busy share "
        "(the union of kernel intervals over the wall time) from three steps under "
        "torch.profiler.",
        "",
        "| job | measured step (ms) | predicted (ms) [interval] | error | in interval | "
        "peak tensors measured / predicted (GiB) | kernels per step measured / dlrig | GPU busy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.job} | {' / '.join(f'{m * 1e3:.1f}' for m in r.measured_s)} | "
            f"{r.predicted_s * 1e3:.1f} [{r.low_s * 1e3:.1f}, {r.high_s * 1e3:.1f}] | "
            f"{r.error:+.1%} | {'yes' if r.within else 'no'} | "
            f"{r.measured_gb:.1f} / {r.predicted_gb:.1f} | "
            f"{r.measured_kernels:,.0f} / {r.predicted_kernels:,.0f} | {r.gpu_busy_share:.0%} |"
        )
    lines += [
        "",
        f"Step time: median |error| {statistics.median(errors):.1%}, largest "
        f"{max(errors):.1%}; {sum(r.within for r in results)} of {len(results)} jobs' median "
        "steps inside dlrig's interval. " + memory_summary(results),
        "",
        "Where the jobs' code differs from what the zoo entries describe: the zoo's gpt2 is "
        "nanoGPT's (one-kernel GELU, no dropout), the job transformers' GPT-2 (a composite "
        "NewGELU of 8 element-wise kernels, Conv1D layers, dropout 0.1): its jobs get "
        "`model.hidden_act: gelu_new`, whose kernels and bytes the model counts (eager; one "
        "fused kernel under `kernels: compile`). The Llama jobs are transformers' eager "
        "layers (`kernels: eager`, the default): RMSNorm's 8 kernels with fp32 "
        "intermediates, RoPE's 5 per tensor, SwiGLU's 2 (dlrig.model.layers). torchvision's "
        "ViT runs nn.MultiheadAttention, whose packed projections are split and transposed "
        "by copy kernels, not modelled. The element-wise and copy kernels took "
        f"{_other_ms(data, 'gpt2'):.0f} and {_other_ms(data, 'vit-b16'):.0f} ms a step "
        "(torch.profiler's kernels outside matmuls, convolutions and attention).",
        "",
        "## One job at several batches: the host's floor",
        "",
        "The same job at smaller batches (scripts/gpu_jobs.py `*-batches`, the newest run; the "
        "largest batch is the job above). GPU busy is the profile's union of kernel intervals. "
        "Where the step is much longer than it, the GPU waits on the host's Python and "
        "dispatch: " + host_bound_note(data) + " dlrig overlaps the host's launches, "
        f"{cal.host_kernel_s * 1e6:.0f} us a kernel, with the GPU's work, which carries "
        f"{cal.gpu_kernel_s * 1e6:.0f} us a kernel of its own (both fitted on Lambda's hosts: "
        "compute.overlapped_s, exponent "
        f"{cal.host_overlap_exponent:g}): the longer side sets the step. At these batches "
        "the host binds either way, and the GPU's busy time, at most "
        f"{smallest_batch_busy_us(data):.1f} us a kernel with its work included, puts the "
        f"GPU's own cost a kernel well below the fitted {cal.gpu_kernel_s * 1e6:.0f} us.",
        "",
        "| job | batch | measured step (ms) | GPU busy (ms) | predicted (ms) | error |",
        "|---|---|---|---|---|---|",
        *sweep_rows(data, build),
        "",
        "### Where each job's step goes",
        "",
        "Each column measured / dlrig, in ms a step. Measured: the median step; the profile's "
        "kernel time in matmuls, attention and convolutions, and in every other kernel "
        "(element-wise, casts, copies, norms, the optimizer); idle, the median step less the "
        "profile's GPU-busy time (the profiler slows the host, not the kernels). dlrig: its "
        "step; its matmul and attention time at the card's rates; its memory-bound time; "
        f"its counted kernels at the fitted {cal.gpu_kernel_s * 1e6:.0f} us of GPU time each "
        f"(host {cal.host_kernel_s * 1e6:.0f} us a kernel, hidden behind the GPU at these "
        "steps). " + split_note(splits),
        "",
        "| job | batch | step | matmuls and attention | other kernels | idle / per-kernel "
        "cost | kernels |",
        "|---|---|---|---|---|---|---|",
        *split_rows(splits),
        "",
        "## Every GPU code path: the newest gpu-check run",
        "",
        f"`bench/data/h200_gpu_check_summary.json`: {summary['provenance']}; started "
        f"{summary['started_utc']}, finished {summary['finished_utc']}.",
        "",
        "| step | result | seconds | what it read |",
        "|---|---|---|---|",
        *gpu_check_rows(summary),
        "",
        "## The card's rates: measured there, and what dlrig assumes",
        "",
        "| rate | measured (one per run) | dlrig | dlrig vs measured |",
        "|---|---|---|---|",
        *rate_rows(data, gpu),
        "",
        f"Measured by {data['matmul_method']}.",
        "",
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
