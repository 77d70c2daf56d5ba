"""Regenerate src/dlrig/model/data/calibration.toml from the measurements in data/calibration.

    .venv/bin/python scripts/calibrate.py [--data DIR] [--out FILE] [--exclude-gpu NAME]
    .venv/bin/python scripts/calibrate.py --check    # exit 1 unless the shipped file is what
                                                     # the data gives (every value but the date)

What is fitted, and how (few parameters, physical forms, so that other GPUs are predicted too):

- GPU compute. A step's work is split by layer class from the model's structure
  (dlrig.model.layers: dense GEMMs, convolutions, attention scores, pointwise bytes, the fp32
  loss, optimizer bytes, kernel launches) and timed per class (dlrig.model.compute):
  gpu = GEMM s / e_gemm[path] + conv s / e_conv[path] + bytes / (BW x e_mem) + kernels x g,
  host = kernels x h, step = (gpu^p + host^p)^(1/p): the host's launches overlap the GPU's
  work and bind only where they take longer (compute.overlapped_s).
  Peaks and bandwidths come from the catalog and the per-card sustained factors, so a GPU
  enters only through its datasheet. Fitted, shared by every model and GPU: e_gemm and
  e_conv on 16-bit tensor cores, TF32 tensor cores and shader cores, e_mem, g (the GPU-side
  seconds per kernel), the host's seconds per kernel h and the exponent p (searched over
  HOST_KERNEL_S, HOST_OVERLAP_EXPONENTS), the intensity scale (searched over
  INTENSITY_SCALES) that sets how a layer's width against the device's ridge point lowers its
  efficiency, and the lane-instructions an NCHW transpose spends per element it moves
  (searched over TRANSPOSE_INSTRUCTIONS), which bound the transposes on cards whose SMs issue
  few instructions per byte of memory bandwidth (dlrig.model.compute.transposes_s). Every
  efficiency is at most its cap (the best single-GEMM share of peak, MAMF data; 1 for
  memory): given h and p, each row's step implies its GPU seconds, and the fit is linear in
  1/e - 1/cap >= 0 and g, by non-negative least squares on relative error re-weighted towards
  the median (L1). Nothing is fitted per model. Data: every usable single-GPU row of Lambda's
  2022 and 2024 PyTorch benchmarks.
- PCIe: measured host-to-device copy rate / theoretical rate, median over pinned rows (NUMA-
  local, one direction, CPU-initiated, buffers under 10 GiB) and over pageable rows >= 1 MB.
- Collectives: NVLink/NVSwitch bus bandwidth at large messages / the link's one-way spec, median;
  latency from the smallest messages; PCIe and network efficiencies from the rows that state
  their link.
- The interval every training estimate carries ([uncertainty]): scripts/interval_band.py, from
  every row of the calibration sources (bench/provenance.toml), each predicted from outside its
  source, each source weighing 1, widened until each source left out in turn is covered 80% on
  average; on a GPU model the fit has no rows of, wider where the calibration rows on such GPUs
  err more. Rerun this script after any change to the model: the residuals move with it.
- Set by hand from the sources named beside them: CPU rates, CUDA context size, cooling
  factors (guide COOL.*), PSU efficiencies (80 PLUS).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import math
import re
import statistics
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import interval_band
from calibration_data import DEFAULT_DATA_DIR, REPO, LambdaRow, read_lambda_rows

from dlrig.catalog import load_catalog
from dlrig.model import compute, estimate
from dlrig.model.calibration import Calibration, default_calibration, parse_calibration
from dlrig.model.launch_queue import host_step_s, unsynchronized_loop_s
from dlrig.model.layers import layer_work
from dlrig.model.pcie import pcie_theoretical_gb_s
from dlrig.model.rates import (
    ComputePath,
    is_16bit,
    matmul_peak,
    shader_issue_rate,
    sustained_bandwidth_factor,
    sustained_rate_factor,
)
from dlrig.units import MIB, TFLOPS

OUT = REPO / "src" / "dlrig" / "model" / "data" / "calibration.toml"

HAND_SET: dict[str, Any] = {
    "cpu": {
        # MEM.1: a CPU's path to RAM is about 60 GB/s.
        "memory_bandwidth_gb_s": 60.0,
        # AVX2: 2 FMA units x 8 fp32 lanes x 2 FLOPs per core per cycle.
        "flops_per_cycle": 32.0,
        # PyTorch CPU training (oneDNN) of ResNet-50, fp32 batch 8, reached 0.73-0.84 of that
        # peak on 2 vCPUs of an AVX-512 AMD EPYC (bench/bench_cpu_train.py, 2026-12-04: 1.40-
        # 1.62 s a step against the 0.25 once assumed, 5.0 s).
        "efficiency": 0.75,
    },
    "memory": {
        # CUDA context and cuBLAS/cuDNN workspaces: 0.3-1 GB per process (PyTorch CUDA notes).
        "cuda_context_gb": 0.8,
        # PyTorch caching allocator fragmentation (assumed 5% of tensors).
        "allocator_overhead_fraction": 0.05,
    },
    "thermal": {
        # COOL.1: 10-25% when several GPUs heat each other; GPU.5: open-air side by side ~30%.
        "open_air_crowded": 0.80,
        # COOL.3: two spaced open-air cards are safe: a small loss.
        "open_air_pair": 0.95,
        # COOL.6: several blowers accept a 10-15% loss.
        "blower_crowded": 0.88,
        "blower_pair": 0.95,
    },
    "power": {
        # 80 PLUS (115 V internal) efficiency at 50% load, by tier (CLEAResult 80 PLUS program).
        "psu_efficiency": {
            "white": 0.80,
            "bronze": 0.85,
            "silver": 0.88,
            "gold": 0.90,
            "platinum": 0.92,
            "titanium": 0.94,
        },
        # Sustained training draws ~85% of the PSU.1 sum (GPUs near their power limit, CPU
        # below its TDP): assumed.
        "gpu_average_power_fraction": 0.85,
    },
}

BUCKET_BYTES = 25 * 2**20  # PyTorch DDP bucket_cap_mb default: 25 MiB


# ---------------------------------------------------------------------------------------------
# PCIe


def _link(text: str) -> tuple[int, int] | None:
    m = re.search(r"Gen(\d) x(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def fit_pcie(data_dir: Path) -> dict[str, Any]:
    """Median measured/theoretical ratio for pinned and for pageable host-to-device copies."""
    pinned: list[float] = []
    pageable: list[float] = []
    with (data_dir / "pcie_host_device_bandwidth.csv").open() as fh:
        for rec in csv.DictReader(fh):
            link = _link(rec["link"])
            if link is None or rec["direction"] != "H2D" or not rec["bandwidth_GBps"]:
                continue
            text = " ".join(rec.values()).lower()
            if any(w in text for w in ("remote", "concurrent", "gpu-initiated", "bam")):
                continue
            if re.search(r"\b(10|20) gib\b", rec["transfer_size"].lower()):
                continue  # the large-buffer drop of one report, not a typical batch
            ratio = float(rec["bandwidth_GBps"]) / pcie_theoretical_gb_s(*link)
            if "pageable" in rec["host_memory"]:
                size = rec["transfer_size"].lower()
                if "kb" not in size:
                    pageable.append(ratio)
            elif "pinned" in rec["host_memory"]:
                pinned.append(ratio)
    return {
        "pinned_efficiency": round(statistics.median(pinned), 3),
        "pageable_efficiency": round(statistics.median(pageable), 3),
        "pinned_rows": len(pinned),
        "pageable_rows": len(pageable),
    }


# ---------------------------------------------------------------------------------------------
# Collectives

# One-way link bandwidth per GPU (GB/s) of the systems whose curves are used, from the row's
# interconnect text; network rows: the node's NIC bandwidth.
NVLINK_SPEC = re.compile(r"\((\d+) GB/s uni-dir spec\)")


def fit_collectives(data_dir: Path) -> dict[str, Any]:
    """Bus-bandwidth efficiencies and the small-message latency of all-reduce."""
    curves: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    specs: dict[tuple[str, str], float] = {}
    with (data_dir / "nccl_collective_busbw.csv").open() as fh:
        for rec in csv.DictReader(fh):
            if rec["collective"] != "all_reduce" or rec["num_nodes"] != "1":
                continue
            key = (rec["system"], rec["num_gpus"])
            size = float(rec["payload_bytes"]) if rec["payload_bytes"] else 0.0
            algbw = float(rec["algbw_GBps"]) if rec["algbw_GBps"] else 0.0
            curves.setdefault(key, []).append((size, algbw, float(rec["busbw_GBps"])))
            m = NVLINK_SPEC.search(rec["interconnect"])
            if m and "NVSwitch" in rec["interconnect"]:
                specs[key] = float(m.group(1))
    nvlink = [max(b for _, _, b in curves[k]) / spec for k, spec in specs.items()]
    latencies = [
        size / (algbw * 1e9)
        for points in curves.values()
        for size, algbw, _ in points
        if 0 < size <= 65536 and algbw > 0
    ]
    # All-reduce over PCIe: 3 A100s spanning a non-NVLink pair reach 20 GB/s busbw on a Gen4
    # x16 link (nccl_collective_busbw.csv); 2 RTX 2080 Ti without P2P move 5.71 GB/s on Gen3
    # x16 (pcie_host_device_bandwidth.csv); 8 A6000 P2P reads reach 26.34 GB/s on Gen4.
    pcie = [20.0 / pcie_theoretical_gb_s(4, 16), 5.71 / pcie_theoretical_gb_s(3, 16)]
    pcie.append(26.34 / pcie_theoretical_gb_s(4, 16))
    # Between nodes (nccl_collective_busbw.csv multi-node rows): hierarchical ring time
    # 2(N-1)/N x bytes / (node NIC GB/s x eff) equated to the measured 2(n-1)/n x bytes / busbw.
    network_rows = [  # (GPUs, nodes, busbw GB/s, node NIC GB/s)
        (32, 4, 381.80, 8 * 50.0),  # p6-b200: 8 x 50 GB/s EFA v4 per node
        (16, 2, 86.0, 4 * 2 * 200 / 8.0 / 2),  # 4 dual-port 200 Gb IB (one port's rate each)
        (32, 4, 310.07, 3200 / 8.0),  # p5en: 3200 Gbit/s EFA per node
    ]
    network = []
    for n, nodes, busbw, nic in network_rows:
        measured_s = 2 * (n - 1) / n / busbw
        ideal_s = 2 * (nodes - 1) / nodes / nic
        network.append(ideal_s / measured_s)
    return {
        "nvlink_busbw_efficiency": round(statistics.median(nvlink), 3),
        "pcie_busbw_efficiency": round(statistics.median(pcie), 3),
        "latency_s": round(statistics.median(latencies), 7),
        "bucket_bytes": BUCKET_BYTES,
        "network_efficiency": round(statistics.median(network), 3),
        "nvlink_curves": len(nvlink),
    }


# ---------------------------------------------------------------------------------------------
# GPU compute

SIMT_PATHS = (ComputePath.SIMT_FP32, ComputePath.SIMT_16BIT)
# Unknowns of the linear fit, each 1/efficiency - 1/cap >= 0 (so every efficiency <= its cap),
# then the GPU-side seconds per kernel.
GEMM_COLUMNS = {ComputePath.TENSOR_16BIT: 0, ComputePath.TENSOR_TF32: 1, ComputePath.SIMT_FP32: 2}
CONV_COLUMNS = {ComputePath.TENSOR_16BIT: 3, ComputePath.TENSOR_TF32: 4, ComputePath.SIMT_FP32: 5}
MEMORY_COLUMN, KERNEL_COLUMN, WIDTH = 6, 7, 8
# Intensity scales tried (the ridge point's multiplier in compute.width_factor; 1 is the plain
# roofline, below 1 what caches and fusion save): the one whose fits best predict the
# architectures left out of them is kept (fit_compute).
INTENSITY_SCALES = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 3.0)
# How much longer a step took on Lambda's 2022 software than on its 2024 software (the
# `older_stack` rows), tried like the intensity scale: the model is fitted to the newer
# software, and predicts a 2022 row through this factor. Measured directly: on the 54 jobs
# both runs timed on the same GPU at the same batch and precision (A100, RTX A6000, Quadro RTX
# 8000), the 2024 throughput is a median 1.08x the 2022 one (0.91-1.57x).
OLDER_STACK_TIME_FACTORS = (1.0, 1.04, 1.08, 1.12, 1.16)
# Lane-instructions of index arithmetic per element an NCHW transpose moves
# (compute.transposes_s), tried like the intensity scale; 0 leaves the transposes to their
# bytes alone.
TRANSPOSE_INSTRUCTIONS = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0)
# The host's seconds to launch one eager kernel of a training step, and the exponent of the
# power mean that overlaps them with the GPU's work (compute.overlapped_s), tried like the
# intensity scale. 0 us is no host term at all (the GPU-side figure then carries every
# per-kernel second, as the model did before); 15 us is today's PyTorch on an H100 host
# (compute.HOST_DISPATCH_S); the rest spans Lambda's older stacks.
# The fitted GPU-side seconds per kernel (36 us) is no launch gap: the lent H200's profiles
# show 3-6 us of idle a kernel (bench_h200, "idle / per-kernel cost"); it stands in for what
# small layers lose beside large ones. Pinned at 5 us (the host's seconds and the exponents,
# 1.5 added, searched as here), the refit put the GEMMs at 0.62 of peak, not at the cap 0.776
# (2026-12-07): NeuSight's training rows went from 14.2% to 9.2% median and the H200 jobs from
# 10.5% to 7.7%, but bench_accuracy's training, all rows, from 8.5% / 24.3% to 10.1% / 28.9%,
# the large-GEMM LLM sources losing most (DGX Cloud 3.6% -> 15.2%, NeMo 4.4% -> 14.7%, MPT
# 5.5% -> 10.8%); Lambda's leave-one-architecture-out mean error went from 10.5% to 11.6% (at
# 6 us, host 40 us, exponent 1.5). Not taken: a GEMM efficiency that falls with the layer's
# size would have to carry that term first.
HOST_KERNEL_S = (0.0, 15e-6, 20e-6, 30e-6, 40e-6, 50e-6, 60e-6)
HOST_OVERLAP_EXPONENTS = (2.0, 4.0, math.inf)


@dataclass(frozen=True)
class RowFeatures:
    """One row's class seconds at efficiency 1 on its path, and its measured step time."""

    path: ComputePath
    times: compute.ClassTimes
    measured_s: float


def row_features(row: LambdaRow, scale: float, transpose_instructions: float) -> RowFeatures:
    """The class seconds of one Lambda row at its GPU's sustained rates, as the estimate
    computes them (dlrig.model.estimate: datasheet x the card's sustained factors)."""
    w = row.workload
    peak_at_boost, path, _ = matmul_peak(row.gpu, w.precision)
    peak = peak_at_boost * sustained_rate_factor(row.gpu, w.precision)
    times = compute.class_times(
        layer_work(w), w, w.batch_size, peak,
        row.gpu.memory_bandwidth_gb_s * sustained_bandwidth_factor(row.gpu),
        winograd=path in SIMT_PATHS, operand_bytes=compute.operand_bytes(path.value),
        sixteen_traffic=compute.moves_16bit_activations(is_16bit(w.precision), path.value),
        optimizer_params=w.params * w.trainable_fraction, intensity_scale=scale,
        l2_bytes=(row.gpu.l2_cache_mb or 0.0) * MIB, mixed_precision=is_16bit(w.precision),
        unaligned_share=compute.unaligned_gemm_share(peak_at_boost, row.gpu.fp32_tflops * TFLOPS),
        issue_rate=shader_issue_rate(row.gpu), transpose_instructions=transpose_instructions,
    )  # fmt: skip
    if path is ComputePath.SIMT_16BIT:
        path = ComputePath.SIMT_FP32  # one shader-core efficiency
    # the step on the software the fit models: a row whose own software ran the job
    # measured_stack_speed faster would have taken that much longer on it
    step_s = w.batch_size / row.measured_samples_per_s * row.measured_stack_speed
    return RowFeatures(path, times, step_s)


def mamf_efficiency_cap(data_dir: Path) -> float:
    """The best share of peak a matmul reaches: median over NVIDIA accelerators of the
    maximum achievable matmul FLOPS (MAMF) / theoretical (mamf_max_achievable_matmul_tflops.csv).
    No model's matmuls beat the best-shaped single GEMM, so this caps every fitted path."""
    shares = []
    with (data_dir / "mamf_max_achievable_matmul_tflops.csv").open() as fh:
        for rec in csv.DictReader(fh):
            if rec["accelerator"].startswith("NVIDIA"):
                shares.append(float(rec["efficiency_pct"]) / 100.0)
    return statistics.median(shares)


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares by an active set: solve, drop the most negative, repeat."""
    active = list(range(a.shape[1]))
    x = np.zeros(a.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        if (sol >= 0).all():
            x[:] = 0
            x[active] = sol
            return x
        active.pop(int(np.argmin(sol)))
    return x


@dataclass(frozen=True)
class Design:
    """Every row's seconds per unknown (`a`: class seconds at efficiency 1 in its path's
    columns, kernels in the GPU-kernel column), the seconds the caps already give (`known`:
    class seconds at the cap, memory at 1), its measured step and its kernels, for one
    intensity scale and transpose figure; `older` marks the 2022 rows."""

    a: np.ndarray
    known: np.ndarray
    measured_s: np.ndarray
    kernels: np.ndarray
    older: np.ndarray


def design(feats: list[RowFeatures], rows: list[LambdaRow], cap: float) -> Design:
    a = np.zeros((len(feats), WIDTH))
    known = np.zeros(len(feats))
    for i, f in enumerate(feats):
        t = f.times
        a[i, GEMM_COLUMNS[f.path]] = t.gemm_s
        a[i, CONV_COLUMNS[f.path]] = t.conv_s
        a[i, MEMORY_COLUMN] = t.memory_s
        a[i, KERNEL_COLUMN] = t.kernels
        known[i] = (t.gemm_s + t.conv_s) / cap + t.memory_s
    measured = np.array([f.measured_s for f in feats])
    kernels = a[:, KERNEL_COLUMN].copy()
    return Design(a, known, measured, kernels, np.array([r.older_stack for r in rows]))


def gpu_seconds(step_s: np.ndarray, host_s: np.ndarray, exponent: float) -> np.ndarray:
    """The GPU seconds that, overlapped with the host's (compute.overlapped_s), make the
    measured step; NaN where the host alone already takes longer than it."""
    if math.isinf(exponent):
        return np.where(host_s < step_s, step_s, np.nan)
    left = step_s**exponent - host_s**exponent
    return np.where(left > 0, np.abs(left) ** (1.0 / exponent), np.nan)


def _fit(d: Design, step_s: np.ndarray, host_s: np.ndarray, exponent: float,
         rows: np.ndarray) -> np.ndarray:  # fmt: skip
    """The unknowns by least relative error on the GPU seconds each row implies, over `rows`
    (the ones whose host time leaves the GPU a share of the step)."""
    gpu = gpu_seconds(step_s, host_s, exponent)
    use = rows & np.isfinite(gpu) & (gpu > 0.05 * step_s)
    return _irls(d.a[use] / gpu[use, None], 1.0 - d.known[use] / gpu[use])


def _irls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Iteratively re-weighted NNLS of a @ x = b, towards the least absolute relative error."""
    weights = np.ones(len(b))
    x = np.zeros(WIDTH)
    for _ in range(20):
        x = _nnls(a * weights[:, None], b * weights)
        weights = 1.0 / np.sqrt(np.maximum(np.abs(a @ x - b), 0.02))
    return x


def _held_out_error(
    d: Design, step_s: np.ndarray, host_s: np.ndarray, exponent: float, groups: np.ndarray
) -> float:
    """Mean absolute relative throughput error of every row, each predicted by the fit on the
    rows of the other groups (architectures): what a GPU generation the fit never saw gets."""
    errors = np.zeros(len(step_s))
    for g in np.unique(groups):
        out = groups == g
        x = _fit(d, step_s, host_s, exponent, ~out)
        gpu = d.known[out] + d.a[out] @ x
        if math.isinf(exponent):
            predicted = np.maximum(gpu, host_s[out])
        else:
            predicted = (gpu**exponent + host_s[out] ** exponent) ** (1.0 / exponent)
        errors[out] = np.abs(step_s[out] / predicted - 1.0)
    return float(np.mean(errors))


def fit_compute(rows: list[LambdaRow], eff_cap: float) -> dict[str, Any]:
    """Fit the shared compute parameters on relative step-time error: GEMM and convolution
    efficiency per path (16-bit tensor, TF32 tensor, shader cores), the memory efficiency and
    the GPU-side seconds per kernel by least absolute error; the intensity scale, the
    transposes' instructions per element moved, the older software's time factor
    (OLDER_STACK_TIME_FACTORS) and the host's seconds per kernel with their overlap exponent
    (HOST_KERNEL_S, HOST_OVERLAP_EXPONENTS) by search, the choice whose fits predict each
    architecture left out of them best (the in-sample error is nearly flat between scales 1
    and 1.5 and let a 0.3-point change pick either, while held-out LLM rows moved 1.4 points
    between them). The search alternates: the first three with no host term, then the host
    pair with them fixed, then the first three again with that pair. Nothing per model."""
    groups = np.array([r.gpu.architecture for r in rows])
    # The older software's factor is relative: without rows of both runs it is not in the data,
    # and NVIDIA's tables do not give it either (data/calibration/dle_container_pairs.csv: one
    # job both eras time alike, BERT-large SQuAD FP32 on V100, 12 -> 12 seq/s on one GPU, 67 ->
    # 85.5 on eight, NGC 20.06 -> 21.11; taking their 1.138 put 477 rows beyond 25% where 1.0
    # put 392, 2026-12-07): such a fit assumes none.
    both_runs = len({r.older_stack for r in rows}) == 2
    stacks = OLDER_STACK_TIME_FACTORS if both_runs else (1.0,)
    designs = {
        (scale, instructions): design(
            [row_features(r, scale, instructions) for r in rows], rows, eff_cap
        )
        for scale in INTENSITY_SCALES
        for instructions in TRANSPOSE_INSTRUCTIONS
    }

    def step_s(d: Design, stack: float) -> np.ndarray:
        return np.where(d.older, d.measured_s / stack, d.measured_s)

    def best_shape(host: float, exponent: float) -> tuple[float, float, float, float]:
        tried = [
            (_held_out_error(d, step_s(d, stack), d.kernels * host, exponent, groups), *key, stack)
            for key, d in designs.items()
            for stack in stacks
        ]
        return min(tried)

    _, scale, instructions, stack = best_shape(0.0, math.inf)
    d = designs[(scale, instructions)]
    _, host, exponent = min(
        (_held_out_error(d, step_s(d, stack), d.kernels * h, p, groups), h, p)
        for h in HOST_KERNEL_S
        for p in HOST_OVERLAP_EXPONENTS
    )
    _, scale, instructions, stack = best_shape(host, exponent)
    d = designs[(scale, instructions)]
    steps = step_s(d, stack)
    x = _fit(d, steps, d.kernels * host, exponent, np.ones(len(rows), dtype=bool))

    def eff(col: int) -> float:
        return round(1.0 / (1.0 / eff_cap + float(x[col])), 4)

    gemm = {p.value: eff(c) for p, c in GEMM_COLUMNS.items()}
    conv = {p.value: eff(c) for p, c in CONV_COLUMNS.items()}
    return {
        "matmul_efficiency": gemm,
        "conv_efficiency": conv,
        "memory_efficiency": round(1.0 / (1.0 + float(x[MEMORY_COLUMN])), 4),
        "gpu_kernel_s": round(float(x[KERNEL_COLUMN]), 8),
        "host_kernel_s": host,
        "host_overlap_exponent": exponent,
        "intensity_scale": scale,
        "transpose_instructions_per_move": instructions,
        "older_stack_time_factor": stack,
    }


def complete_efficiencies(eff: dict[str, float]) -> dict[str, float]:
    """Paths without data borrow a physical neighbour: FP8 tensor cores as 16-bit ones, 16-bit
    on shader cores as FP32 shader cores; the CPU path is set by hand."""
    out = dict(eff)
    out.setdefault(ComputePath.TENSOR_16BIT.value, 0.5)
    out.setdefault(ComputePath.TENSOR_FP8.value, out[ComputePath.TENSOR_16BIT.value])
    out.setdefault(ComputePath.TENSOR_TF32.value, out[ComputePath.TENSOR_16BIT.value])
    out.setdefault(ComputePath.SIMT_FP32.value, 0.7)
    out.setdefault(ComputePath.SIMT_16BIT.value, out[ComputePath.SIMT_FP32.value])
    out[ComputePath.CPU.value] = HAND_SET["cpu"]["efficiency"]
    return out


def calibrate(
    data_dir: Path,
    exclude_gpu: str | None = None,
    exclude_architecture: str | None = None,
    *,
    exclude_version: str | None = None,
    cleaned: bool = True,
) -> dict[str, Any]:
    """The whole calibration document (TOML tables as dicts), fitted on the single-GPU rows of
    both Lambda runs, optionally without one GPU, one architecture or one of the two runs
    (`exclude_version` "v0" or "v1": leave-one-source-out), and with `cleaned=False` on every
    row, the ones left out on evidence put back (read_lambda_rows)."""
    rows, skipped = read_lambda_rows(data_dir, load_catalog(), cleaned=cleaned)
    if exclude_gpu:
        rows = [r for r in rows if r.gpu.name != exclude_gpu]
    if exclude_architecture:
        rows = [r for r in rows if r.gpu.architecture != exclude_architecture]
    if exclude_version:
        rows = [r for r in rows if r.version != exclude_version]
    cap = mamf_efficiency_cap(data_dir)
    fit = fit_compute(rows, cap)
    pcie = fit_pcie(data_dir)
    coll = fit_collectives(data_dir)
    return {
        "meta": {
            "generated_by": "scripts/calibrate.py",
            "date": dt.date.today().isoformat(),
            "data": "data/calibration: lambda_pytorch_train_v0_2022.csv, "
            "lambda_pytorch_train_v1_2024.csv, mamf_max_achievable_matmul_tflops.csv, "
            "pcie_host_device_bandwidth.csv, nccl_collective_busbw.csv",
            "lambda_rows_used": len(rows),
            "lambda_rows_skipped": skipped,
            "gpus": sorted({r.gpu.name for r in rows}),
            "excluded_gpu": exclude_gpu or "",
            "excluded_architecture": exclude_architecture or "",
            "excluded_run": exclude_version or "",
            "rows_left_out_on_evidence_kept": not cleaned,
            "matmul_efficiency_cap": round(cap, 4),
            "older_stack_time_factor": fit["older_stack_time_factor"],
        },
        "compute": {
            "memory_efficiency": fit["memory_efficiency"],
            "gpu_kernel_s": fit["gpu_kernel_s"],
            "host_kernel_s": fit["host_kernel_s"],
            "host_overlap_exponent": fit["host_overlap_exponent"],
            "intensity_scale": fit["intensity_scale"],
            "transpose_instructions_per_move": fit["transpose_instructions_per_move"],
            "matmul_efficiency": complete_efficiencies(fit["matmul_efficiency"]),
            "conv_efficiency": complete_efficiencies(fit["conv_efficiency"]),
        },
        "pcie": pcie,
        "collectives": coll,
        **HAND_SET,
    }


def to_toml(doc: dict[str, Any], prefix: str = "") -> str:
    """A small TOML writer for nested tables of numbers, strings and lists."""
    scalars = {k: v for k, v in doc.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in doc.items() if isinstance(v, dict)}
    lines = []
    if prefix and scalars:
        lines.append(f"[{prefix}]")
    for k, v in scalars.items():
        lines.append(f"{_key(k)} = {_value(v)}")
    if scalars:
        lines.append("")
    for k, v in tables.items():
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        lines.append(to_toml(v, name))
    return "\n".join(lines)


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _value(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return repr(round(float(v), 6))
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def predicted_units_per_s(row: LambdaRow, cal: Calibration) -> float:
    """dlrig's throughput for a Lambda row, in Lambda's unit, on the software the row ran:
    a 2022 row takes the calibration's older_stack_time_factor longer a step, one whose
    software's speed on the job was measured (LambdaRow.measured_stack_speed) runs at that
    speed. Replicas (each GPU its own copy, no gradient exchange) run as that many one-GPU
    jobs."""
    if row.replicas:
        one = dataclasses.replace(row, num_gpus=1, platform=None, measured=None, replicas=False)
        return row.num_gpus * predicted_units_per_s(one, cal)
    est = estimate(row.build(), row.workload, calibration=cal)
    stack = float(cal.meta.get("older_stack_time_factor", 1.0)) if row.older_stack else 1.0
    rate = est.samples_per_s * row.units_per_sample / stack * row.measured_stack_speed
    if row.unsynced_epoch_steps:
        # the epoch as its timer read it (LambdaRow.unsynced_epoch_steps): the same samples
        # over the host's time to queue them instead of the GPU's to train them
        steps, step_s = row.unsynced_epoch_steps, est.step_time_s * stack
        timed = unsynchronized_loop_s(steps, step_s, host_step_s(row.workload, cal.compute))
        rate *= steps * step_s / timed
    return rate


def leave_one_architecture_out(
    data_dir: Path,
    architectures: set[str],
    *,
    exclude_version: str | None = None,
    cleaned: bool = True,
) -> dict[str, Calibration]:
    """One calibration per architecture, fitted on every single-GPU row of the others (of one
    Lambda run only with `exclude_version`; on every row with `cleaned=False`)."""
    return {
        arch: parse_calibration(
            calibrate(
                data_dir,
                exclude_architecture=arch,
                exclude_version=exclude_version,
                cleaned=cleaned,
            ),
            f"loao:{arch}",
        )
        for arch in sorted(architectures)
    }


def comparison_band(rows: list[LambdaRow], loao: dict[str, Calibration]) -> dict[str, Any]:
    """How far the model misjudges one GPU against another on the same job, from the
    single-GPU rows each predicted by the fit without its architecture (what a GPU the fit
    never saw gets): comparison_ratio_low."""
    ratios = [
        r.measured_units_per_s / predicted_units_per_s(r, loao[r.gpu.architecture]) for r in rows
    ]
    return {
        "comparison_rows": len(ratios),
        "comparison_ratio_low": round(comparison_ratio_low(rows, ratios), 4),
    }


# Lambda's runs as bench/provenance.toml names them.
LAMBDA_RUNS = {"v0": "lambda_2022", "v1": "lambda_2024"}
MAX_GPUS_IN_NODE = 8  # v0's 16-GPU rows span two nodes: not a one-node build
PROVENANCE = REPO / "bench" / "provenance.toml"


def band_sources() -> tuple[str, ...]:
    """The training sources the interval is set on: those bench/provenance.toml says some
    constant other than the interval itself was set looking at (calibration sources). A
    held-out source never sets it; one becomes calibration, and joins, when a constant is
    chosen on its rows."""
    doc = tomllib.loads(PROVENANCE.read_text(encoding="utf-8"))
    used = {key for c in doc["constants"] if "[uncertainty]" not in c["where"] for key in c["rows"]}
    return tuple(k for k, v in doc["sources"].items() if v["kind"] == "training" and k in used)


def lambda_run_residuals(
    data_dir: Path, held: str, fitted: Calibration
) -> list[interval_band.Residual]:
    """Every row (all rows: none left out on evidence) of one Lambda run, 1-8 GPUs in one node,
    predicted by `fitted`, the fit on the other run alone."""
    every, _ = read_lambda_rows(data_dir, load_catalog(), multi_gpu=True, cleaned=False)
    return [
        interval_band.Residual(
            LAMBDA_RUNS[held],
            r.num_gpus,
            r.measured_units_per_s / predicted_units_per_s(r, fitted),
            fitted.fitted_gpu(r.gpu.name),
        )
        for r in every
        if r.version == held and r.num_gpus <= MAX_GPUS_IN_NODE
    ]


def calibration_residuals(data_dir: Path) -> list[interval_band.Residual]:
    """Every row of every calibration source (band_sources), predicted from outside its source:
    each Lambda run by the fit on the other run (leave-one-source-out), every other source by
    the shipped fit (model/data/calibration.toml, which fits on Lambda alone), as its own bench
    predicts it (bench/held_out.py), all rows."""
    bench = str(REPO / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import held_out  # bench/held_out.py: each source read and predicted by its own bench

    sources = band_sources()
    residuals = []
    for held, key in LAMBDA_RUNS.items():
        if key in sources:
            fitted = calibrate(data_dir, exclude_version=held, cleaned=False)
            residuals += lambda_run_residuals(
                data_dir, held, parse_calibration(fitted, f"without {held}")
            )
    shipped = default_calibration()
    residuals += [
        interval_band.Residual(p.source, p.gpus, p.ratio, shipped.fitted_gpu(p.gpu))
        for p in held_out.every_pair()
        if p.source in sources and p.source not in LAMBDA_RUNS.values()
    ]
    return residuals


def interval_table(residuals: list[interval_band.Residual]) -> dict[str, Any]:
    """The [uncertainty] keys of the interval (interval_band: source-weighted percentiles of
    the calibration sources' residuals, widened until each source left out is covered 80% on
    average)."""
    found = interval_band.bands(residuals)
    single, multi = found["single_gpu"].fitted, found["multi_gpu"].fitted
    single_new, multi_new = found["single_gpu"].unfitted, found["multi_gpu"].unfitted
    return {
        "method": "10th/90th percentile of measured / predicted over the calibration sources' "
        "rows, each predicted from outside its source, each source weighing 1; widened about "
        "the median until the sources, each left out in turn, have 80% of their rows inside "
        "(scripts/interval_band.py)",
        "sources": list(single.sources),
        "rows": single.rows,
        "throughput_ratio_low": round(single.low, 4),
        "throughput_ratio_high": round(single.high, 4),
        "widening": single.widening,
        "multi_gpu_sources": list(multi.sources),
        "multi_gpu_rows": multi.rows,
        "multi_gpu_ratio_low": round(multi.low, 4),
        "multi_gpu_ratio_high": round(multi.high, 4),
        "multi_gpu_widening": multi.widening,
        # A GPU model the fit has no rows of: wider by what Lambda's runs, each predicted by the
        # fit on the other, show for the GPUs that fit lacked (interval_band).
        "unfitted_gpu_ratio_low": round(single_new.low, 4),
        "unfitted_gpu_ratio_high": round(single_new.high, 4),
        "unfitted_gpu_widening": single_new.widening,
        "multi_gpu_unfitted_ratio_low": round(multi_new.low, 4),
        "multi_gpu_unfitted_ratio_high": round(multi_new.high, 4),
        "multi_gpu_unfitted_widening": multi_new.widening,
    }


def comparison_ratio_low(rows: list[LambdaRow], ratios: list[float]) -> float:
    """How far the model can misjudge one GPU against another on the same job: over every pair
    of single-GPU rows of one job (model, precision, batch) on two different GPUs, each
    predicted without its architecture, the 80th percentile of |log| of (measured a/b) /
    (predicted a/b), as the ratio below 1 it allows. Errors both GPUs share (the job's own)
    cancel in a comparison; what is left is what a ranking can trust, and `plan` ties builds
    within it."""
    by_job: dict[tuple[str, str, int], list[tuple[str, float]]] = {}
    for row, ratio in zip(rows, ratios, strict=True):
        key = (row.lambda_model, row.workload.precision.value, row.workload.batch_size)
        by_job.setdefault(key, []).append((row.gpu.name, ratio))
    spreads = [
        abs(float(np.log(a / b)))
        for same_job in by_job.values()
        for i, (gpu_a, a) in enumerate(same_job)
        for gpu_b, b in same_job[i + 1 :]
        if gpu_a != gpu_b
    ]
    if not spreads:
        return 1.0
    return float(np.exp(-np.quantile(spreads, 0.8)))


def same_gpu_ratio_low(
    data_dir: Path, loao: dict[str, Calibration], comparison_ratio_low: float
) -> float:
    """How far the model can misjudge one build against another of the same GPU model (a
    different count, cooling or host): the GPU's own error cancels, what is left is the
    scaling error. The 80th percentile of |log| of predicted / measured scaling (n GPUs in one
    node over 1, same job and GPU, each predicted without its architecture), as a ratio below
    1; never wider than the comparison of two different GPUs."""
    rows, _ = read_lambda_rows(data_dir, load_catalog(), multi_gpu=True)
    rows = [r for r in rows if r.num_gpus <= 8 and r.gpu.architecture in loao]
    predicted = [predicted_units_per_s(r, loao[r.gpu.architecture]) for r in rows]

    def job(r: LambdaRow) -> tuple[str, str, int, str, str]:
        w = r.workload
        return (r.lambda_model, w.precision.value, w.batch_size, r.gpu.name, r.version)

    one_gpu: dict[tuple[str, str, int, str, str], tuple[float, float]] = {
        job(r): (r.measured_units_per_s, p)
        for r, p in zip(rows, predicted, strict=True)
        if r.num_gpus == 1
    }
    spreads = [
        abs(float(np.log((p / one_gpu[job(r)][1]) / (r.measured_units_per_s / one_gpu[job(r)][0]))))
        for r, p in zip(rows, predicted, strict=True)
        if r.num_gpus > 1 and job(r) in one_gpu
    ]
    if not spreads:
        return comparison_ratio_low
    return round(max(float(np.exp(-np.quantile(spreads, 0.8))), comparison_ratio_low), 4)


HEADER = (
    "# Generated by scripts/calibrate.py from data/calibration/*.csv; do not edit by hand.\n"
    "# Fitted: compute (shared per-path efficiencies, GPU and host seconds per kernel and their\n"
    "# overlap, intensity scale,\n"
    "# instructions per NCHW transpose move),\n"
    "# pcie, collectives; meta.older_stack_time_factor, how much longer Lambda's 2022\n"
    "# software ran a step than its 2024 software (the model predicts the newer);\n"
    "# uncertainty, the interval, from the calibration sources' residuals.\n"
    "# Set by hand with sources in scripts/calibrate.py: cpu, memory,\n"
    "# thermal (guide COOL.*), power (80 PLUS).\n\n"
)


def full_document(data_dir: Path) -> dict[str, Any]:
    """What calibration.toml holds: the fit on every row, the comparison bands from the
    leave-one-architecture-out fits, and the interval from the calibration sources' residuals.
    Sources other than Lambda are predicted with the shipped file's fit: main() writes the fresh
    fit there first, so the interval is that fit's."""
    doc = calibrate(data_dir)
    rows, _ = read_lambda_rows(data_dir, load_catalog())
    loao = leave_one_architecture_out(data_dir, {r.gpu.architecture for r in rows})
    band = comparison_band(rows, loao)
    band["same_gpu_ratio_low"] = same_gpu_ratio_low(data_dir, loao, band["comparison_ratio_low"])
    doc["uncertainty"] = {**interval_table(calibration_residuals(data_dir)), **band}
    return doc


def differences(fresh: dict[str, Any], shipped: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two calibration documents, `meta.date` (the day
    the file was written) aside; `fresh` is compared as the TOML writer rounds it."""
    fresh = tomllib.loads(to_toml(fresh)) if not prefix else fresh
    out = []
    for key in sorted(set(fresh) | set(shipped)):
        name = f"{prefix}{key}"
        if name == "meta.date":
            continue
        a, b = fresh.get(key), shipped.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{name}.")
        elif a != b:
            out.append(f"{name}: data gives {a!r}, file has {b!r}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--exclude-gpu", default=None, help="fit without this catalog GPU")
    parser.add_argument(
        "--check", action="store_true", help="compare with --out instead of writing it"
    )
    args = parser.parse_args()
    if args.exclude_gpu:
        doc = calibrate(args.data, args.exclude_gpu)
    elif args.check:
        doc = full_document(args.data)
    else:
        # The interval's non-Lambda residuals are predicted by the shipped fit: write the fresh
        # fit first (the interval of the file before), then the whole document.
        shipped = tomllib.loads(args.out.read_text()) if args.out.exists() else {}
        fit = calibrate(args.data)
        if "uncertainty" in shipped:
            fit["uncertainty"] = shipped["uncertainty"]
        args.out.write_text(HEADER + to_toml(fit))
        default_calibration.cache_clear()
        doc = full_document(args.data)
    if args.check:
        diff = differences(doc, tomllib.loads(args.out.read_text()))
        for line in diff:
            print(line)
        print(f"{args.out}: {'differs from' if diff else 'reproduced from'} {args.data}")
        sys.exit(1 if diff else 0)
    args.out.write_text(HEADER + to_toml(doc))
    print(f"wrote {args.out} ({doc['meta']['lambda_rows_used']} Lambda rows)")


if __name__ == "__main__":
    main()
