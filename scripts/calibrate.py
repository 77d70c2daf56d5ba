"""Regenerate src/dlrig/model/data/calibration.toml from the measurements in shared/calibration.

    .venv/bin/python scripts/calibrate.py [--data DIR] [--out FILE] [--exclude-gpu NAME]

What is fitted, and how (few parameters, physical forms, so that other GPUs are predicted too):

- GPU compute. A training step is  t = F_step / (peak_path x eff)  +  passes_w x A x B / (BW x
  eff_mem)  +  optimizer bytes / (BW x eff_mem)  +  t0_w  (see dlrig.model.compute). Peaks and
  bandwidths come from the catalog, so a GPU enters only through its datasheet: every fitted
  number is a property of a compute path or of a model, shared by all GPUs (which is what
  leave-one-GPU-out tests). Per model w: its matmul efficiency on 16-bit tensor cores and on
  shader cores (layer mix: Winograd convolutions, recurrent cells, ops autocast keeps in fp32),
  passes_w (bytes the memory-bound kernels move per byte of saved activation) and t0_w (a fixed
  per-step time). TF32 tensor-core efficiency is one number for all models; TF32 rows run on
  whichever path the fit finds faster (cuDNN picks the fastest algorithm). Efficiencies are
  capped by the best single-GEMM share of peak (MAMF data), times Winograd's 2.25 on shader
  cores. The fit is linear in 1/eff, passes_w and t0_w: non-negative least squares on relative
  error, re-weighted towards the median (L1). Models outside the data take the medians. Data:
  every usable single-GPU row of Lambda's 2022 PyTorch benchmark.
- PCIe: measured host-to-device copy rate / theoretical rate, median over pinned rows (NUMA-
  local, one direction, CPU-initiated, buffers under 10 GiB) and over pageable rows >= 1 MB.
- Collectives: NVLink/NVSwitch bus bandwidth at large messages / the link's one-way spec, median;
  latency from the smallest messages; PCIe and network efficiencies from the rows that state
  their link.
- Set by hand from the sources named beside them: memory-bandwidth efficiency, CPU rates, CUDA
  context size, cooling factors (guide COOL.*), PSU efficiencies (80 PLUS).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_data import DEFAULT_DATA_DIR, REPO, LambdaRow, read_lambda_rows

from dlrig.catalog import load_catalog
from dlrig.enums import Precision
from dlrig.model import compute, estimate
from dlrig.model.calibration import Calibration, parse_calibration
from dlrig.model.pcie import pcie_theoretical_gb_s
from dlrig.model.rates import (
    ComputePath,
    is_16bit,
    matmul_peak,
    sustained_bandwidth_factor,
    sustained_rate_factor,
)

OUT = REPO / "src" / "dlrig" / "model" / "data" / "calibration.toml"

# Achievable share of DRAM bandwidth for streaming kernels: BabelStream reaches ~80-90% of the
# spec on V100/A100 (e.g. ~790 of 900 GB/s on V100). Fixed, so that passes_w is identifiable.
MEMORY_EFFICIENCY = 0.8
# Fitted paths; the rest borrow: FP8 runs like 16-bit tensor cores, the CPU is set by hand.
FITTED_PATHS = (
    ComputePath.TENSOR_16BIT,
    ComputePath.TENSOR_TF32,
    ComputePath.SIMT_FP32,
    ComputePath.SIMT_16BIT,
)

HAND_SET: dict[str, Any] = {
    "cpu": {
        # MEM.1: a CPU's path to RAM is about 60 GB/s.
        "memory_bandwidth_gb_s": 60.0,
        # AVX2: 2 FMA units x 8 fp32 lanes x 2 FLOPs per core per cycle.
        "flops_per_cycle": 32.0,
        # PyTorch CPU training reaches a small share of peak (assumed).
        "efficiency": 0.25,
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


def _features(
    row: LambdaRow, path_override: ComputePath | None = None
) -> tuple[ComputePath, float, float, float, float]:
    """(path, matmul seconds at eff 1, memory seconds per activation pass, fixed optimizer
    seconds, measured step seconds) of one row; `path_override` SIMT_FP32 times the matmuls
    on the shader cores instead (the TF32 alternative cuDNN may pick)."""
    w = row.workload
    peak, path, _ = matmul_peak(row.gpu, w.precision)
    peak *= sustained_rate_factor(row.gpu, w.precision)
    if path_override is ComputePath.SIMT_FP32:
        peak = row.gpu.fp32_tflops * 1e12 * sustained_rate_factor(row.gpu, Precision.FP32)
        path = ComputePath.SIMT_FP32
    bw = row.gpu.memory_bandwidth_gb_s * sustained_bandwidth_factor(row.gpu)
    flops = compute.training_flop_multiplier(w) * w.forward_flops_per_sample * w.batch_size
    sixteen = compute.moves_16bit_activations(is_16bit(w.precision), path.value)
    per_pass = compute.memory_bound_bytes(w, w.batch_size, sixteen, 1.0)
    opt = compute.optimizer_bytes(w, w.params * w.trainable_fraction)
    measured = w.batch_size / row.measured_samples_per_s
    return (
        path,
        flops / peak,
        compute.bandwidth_time_s(per_pass, bw, MEMORY_EFFICIENCY),
        compute.bandwidth_time_s(opt, bw, MEMORY_EFFICIENCY),
        measured,
    )


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


SIMT_PATHS = (ComputePath.SIMT_FP32, ComputePath.SIMT_16BIT)
# cuDNN runs 3x3 convolutions on shader cores with Winograd F(2x2,3x3), which needs 2.25x fewer
# multiplications than the counted direct convolution (Lavin & Gray 2016): on those paths the
# counted FLOPs may run up to 2.25x faster than the matmul cap.
WINOGRAD_GAIN = 2.25


def fit_compute(rows: list[LambdaRow], eff_cap: float) -> dict[str, Any]:
    """Fit, on relative step-time error: 1/eff per tensor-core path (shared by all models), and
    per model its shader-core efficiency (the algorithms cuDNN picks there differ by layer
    mix), memory passes and fixed step time. Every efficiency is at most its cap
    (1/eff = 1/cap + a non-negative excess)."""
    models = sorted({r.workload.model_name or "" for r in rows})
    per_model = (*SIMT_PATHS, ComputePath.TENSOR_16BIT)
    paths = [
        p for p in FITTED_PATHS if p not in per_model and any(_features(r)[0] is p for r in rows)
    ]
    n_p, n_m = len(paths), len(models)
    width = n_p + 4 * n_m
    simt_cap = eff_cap * WINOGRAD_GAIN
    # TF32 rows may run on either path (cuDNN picks the faster): start on the tensor cores,
    # then give each row the path the current fit says is faster, and refit.
    on_simt = [False] * len(rows)
    tf32 = [_features(r)[0] is ComputePath.TENSOR_TF32 for r in rows]
    weights = np.ones(len(rows))
    x = np.zeros(width)
    for _ in range(30):  # iteratively re-weighted: towards the least absolute relative error
        a = np.zeros((len(rows), width))
        b = np.zeros(len(rows))
        for i, row in enumerate(rows):
            override = ComputePath.SIMT_FP32 if on_simt[i] else None
            path, t_mm, t_pass, t_opt, measured = _features(row, override)
            m = models.index(row.workload.model_name or "")
            if path in SIMT_PATHS:
                col, cap = n_p + 2 * n_m + m, simt_cap
            elif path is ComputePath.TENSOR_16BIT:
                col, cap = n_p + 3 * n_m + m, eff_cap
            else:
                col, cap = paths.index(path), eff_cap
            a[i, col] = t_mm / measured
            a[i, n_p + m] = t_pass / measured
            a[i, n_p + n_m + m] = 1.0 / measured
            b[i] = 1.0 - t_opt / measured - a[i, col] / cap
        x = _nnls(a * weights[:, None], b * weights)
        resid = np.abs(a @ x - b)
        weights = 1.0 / np.sqrt(np.maximum(resid, 0.02))
        for i, row in enumerate(rows):
            if tf32[i]:
                m = models.index(row.workload.model_name or "")
                t_tensor = _features(row)[1] * (
                    1 / eff_cap + x[paths.index(ComputePath.TENSOR_TF32)]
                )
                t_simt = _features(row, ComputePath.SIMT_FP32)[1] * (
                    1 / simt_cap + x[n_p + 2 * n_m + m]
                )
                on_simt[i] = bool(t_simt < t_tensor)
    eff = {p.value: round(1.0 / (1.0 / eff_cap + float(x[j])), 4) for j, p in enumerate(paths)}
    has_simt = {r.workload.model_name for r in rows if _features(r)[0] in SIMT_PATHS}
    has_tensor = {
        r.workload.model_name for r in rows if _features(r)[0] is ComputePath.TENSOR_16BIT
    }
    workloads: dict[str, dict[str, float]] = {}
    for m, name in enumerate(models):
        entry = {
            "memory_passes": round(float(x[n_p + m]), 4),
            "step_overhead_s": round(float(x[n_p + n_m + m]), 6),
        }
        if name in has_simt:
            entry["simt_efficiency"] = round(
                1.0 / (1.0 / simt_cap + float(x[n_p + 2 * n_m + m])), 4
            )
        if name in has_tensor:
            entry["tensor_efficiency"] = round(
                1.0 / (1.0 / eff_cap + float(x[n_p + 3 * n_m + m])), 4
            )
        workloads[name] = entry
    tensor = [w["tensor_efficiency"] for w in workloads.values() if "tensor_efficiency" in w]
    if tensor:
        eff[ComputePath.TENSOR_16BIT.value] = round(statistics.median(tensor), 4)
    simt = [w["simt_efficiency"] for w in workloads.values() if "simt_efficiency" in w]
    if simt:
        eff[ComputePath.SIMT_FP32.value] = round(statistics.median(simt), 4)
        eff[ComputePath.SIMT_16BIT.value] = eff[ComputePath.SIMT_FP32.value]
    return {"matmul_efficiency": eff, "workloads": workloads}


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
    data_dir: Path, exclude_gpu: str | None = None, exclude_architecture: str | None = None
) -> dict[str, Any]:
    """The whole calibration document (TOML tables as dicts), fitted on the single-GPU rows of
    both Lambda runs, optionally without one GPU or one architecture (leave-one-out)."""
    rows, skipped = read_lambda_rows(data_dir, load_catalog())
    if exclude_gpu:
        rows = [r for r in rows if r.gpu.name != exclude_gpu]
    if exclude_architecture:
        rows = [r for r in rows if r.gpu.architecture != exclude_architecture]
    cap = mamf_efficiency_cap(data_dir)
    fit = fit_compute(rows, cap)
    pcie = fit_pcie(data_dir)
    coll = fit_collectives(data_dir)
    workloads = fit["workloads"]
    passes = [w["memory_passes"] for w in workloads.values()]
    overheads = [w["step_overhead_s"] for w in workloads.values()]
    return {
        "meta": {
            "generated_by": "scripts/calibrate.py",
            "date": dt.date.today().isoformat(),
            "data": "shared/calibration: lambda_pytorch_train_v0_2022.csv, "
            "lambda_pytorch_train_v1_2024.csv, "
            "pcie_host_device_bandwidth.csv, nccl_collective_busbw.csv",
            "lambda_rows_used": len(rows),
            "lambda_rows_skipped": skipped,
            "gpus": sorted({r.gpu.name for r in rows}),
            "excluded_gpu": exclude_gpu or "",
            "excluded_architecture": exclude_architecture or "",
            "matmul_efficiency_cap": round(cap, 4),
        },
        "compute": {
            "memory_efficiency": MEMORY_EFFICIENCY,
            "default_memory_passes": round(statistics.median(passes), 4),
            "default_step_overhead_s": round(statistics.median(overheads), 6),
            "matmul_efficiency": complete_efficiencies(fit["matmul_efficiency"]),
            "workloads": workloads,
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
    """dlrig's throughput for a Lambda row, in Lambda's unit."""
    est = estimate(row.build(), row.workload, calibration=cal)
    return est.samples_per_s * row.units_per_sample


def leave_one_architecture_out(data_dir: Path, architectures: set[str]) -> dict[str, Calibration]:
    """One calibration per architecture, fitted on every single-GPU row of the others."""
    return {
        arch: parse_calibration(calibrate(data_dir, exclude_architecture=arch), f"loao:{arch}")
        for arch in sorted(architectures)
    }


def uncertainty(rows: list[LambdaRow], loao: dict[str, Calibration]) -> dict[str, Any]:
    """The interval every estimate carries: the 10th and 90th percentile of measured /
    predicted throughput over the single-GPU rows, each predicted by the fit without its
    architecture (what a GPU the fit never saw gets)."""
    ratios = [
        r.measured_units_per_s / predicted_units_per_s(r, loao[r.gpu.architecture]) for r in rows
    ]
    low, high = np.quantile(ratios, [0.1, 0.9])
    return {
        "method": "leave-one-architecture-out, single-GPU Lambda rows, 10th/90th percentile",
        "rows": len(ratios),
        "throughput_ratio_low": round(float(min(low, 1.0)), 4),
        "throughput_ratio_high": round(float(max(high, 1.0)), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--exclude-gpu", default=None, help="fit without this catalog GPU")
    args = parser.parse_args()
    doc = calibrate(args.data, args.exclude_gpu)
    if not args.exclude_gpu:
        rows, _ = read_lambda_rows(args.data, load_catalog())
        loao = leave_one_architecture_out(args.data, {r.gpu.architecture for r in rows})
        doc["uncertainty"] = uncertainty(rows, loao)
    header = (
        "# Generated by scripts/calibrate.py from shared/calibration/*.csv; do not edit by hand.\n"
        "# Fitted: compute.matmul_efficiency, compute.workloads, pcie, collectives.\n"
        "# Set by hand with sources in scripts/calibrate.py: memory efficiency, cpu, memory,\n"
        "# thermal (guide COOL.*), power (80 PLUS).\n\n"
    )
    args.out.write_text(header + to_toml(doc))
    print(f"wrote {args.out} ({doc['meta']['lambda_rows_used']} Lambda rows)")


if __name__ == "__main__":
    main()
