"""Peak rates of a compute device per precision (GPU.3: tensor cores only where they exist)."""

from __future__ import annotations

from enum import StrEnum

from dlrig.catalog.schema import CPU, GPU
from dlrig.enums import Precision
from dlrig.units import GHZ, TFLOPS


class ComputePath(StrEnum):
    """Which hardware units run the matrix multiplications; efficiencies are fitted per path."""

    TENSOR_FP8 = "tensor_fp8"
    TENSOR_16BIT = "tensor_16bit"
    TENSOR_TF32 = "tensor_tf32"
    SIMT_16BIT = "simt_16bit"
    SIMT_FP32 = "simt_fp32"
    CPU = "cpu"


def matmul_peak(gpu: GPU, precision: Precision) -> tuple[float, ComputePath, str | None]:
    """(peak FLOP/s, path, note) for matrix multiplications at `precision` on `gpu`.

    GPU.3: 16-bit runs fast only on tensor cores. Without them, 16-bit matmuls run at the best
    non-tensor rate: the card's FP16 shader rate when it is higher than FP32 (P100, Titan V
    without its tensor path), else the FP32 rate (GTX 10-series: cuBLAS computes in FP32, its
    1/64-rate FP16 is never used). TF32 falls back to FP32 before Ampere; FP8 falls back to the
    16-bit tensor rate before Ada/Hopper; bf16 without bf16 tensor cores runs as FP32.
    """
    if precision is Precision.FP8:
        if gpu.fp8_tensor_tflops:
            return gpu.fp8_tensor_tflops * TFLOPS, ComputePath.TENSOR_FP8, None
        peak, path, _ = matmul_peak(gpu, Precision.BF16)
        return peak, path, f"{gpu.name} has no FP8 tensor cores: FP8 runs at the 16-bit rate"
    if precision is Precision.FP16 or precision is Precision.BF16:
        tensor = gpu.fp16_tensor_tflops if precision is Precision.FP16 else gpu.bf16_tensor_tflops
        if tensor:
            return tensor * TFLOPS, ComputePath.TENSOR_16BIT, None
        shader = max(gpu.fp16_tflops or 0.0, gpu.fp32_tflops)
        if precision is Precision.BF16 and gpu.fp16_tensor_tflops:
            note = f"{gpu.name} has no bf16 tensor cores: bf16 runs on its shader cores"
            return gpu.fp32_tflops * TFLOPS, ComputePath.SIMT_FP32, note
        note = f"{gpu.name} has no {precision.value} tensor cores (GPU.3): non-tensor rate used"
        return shader * TFLOPS, ComputePath.SIMT_16BIT, note
    if precision is Precision.TF32:
        if gpu.tf32_tensor_tflops:
            return gpu.tf32_tensor_tflops * TFLOPS, ComputePath.TENSOR_TF32, None
        note = f"{gpu.name} has no TF32 tensor cores (before Ampere): TF32 runs as FP32"
        return gpu.fp32_tflops * TFLOPS, ComputePath.SIMT_FP32, note
    return gpu.fp32_tflops * TFLOPS, ComputePath.SIMT_FP32, None


def cpu_peak_flops_s(cpu: CPU, count: int, flops_per_cycle: float) -> float:
    """Peak FP32 FLOP/s of the node's CPUs: cores x clock x FLOPs per core per cycle."""
    ghz = cpu.boost_ghz or cpu.base_ghz
    return cpu.cores * count * ghz * GHZ * flops_per_cycle


def is_16bit(precision: Precision) -> bool:
    """Activations and gradients stored in 16 (or 8) bits rather than 32."""
    return precision in (Precision.FP16, Precision.BF16, Precision.FP8)
