"""The exponent with which a GEMM's weight read and its FLOPs join (serving.GEMM_OVERLAP_EXPONENT).

    .venv/bin/python scripts/gemm_overlap.py

A GEMM reads its operands and multiplies them at once, but near the ridge, where both take as
long, neither hides the other completely: its time is modelled as the power mean
(read^p + flops^p)^(1/p) of the two (p infinite is the plain roofline maximum). p is chosen on
DeepGEMM's timings of 18 dense FP8 GEMMs on an H800 SXM5 (data/calibration/
deepgemm_fp8_gemm_h800.csv: M = 64, 128 and 4,096 rows over six weight shapes) as the one of
least mean |error| over p = 1.0-3.0 in steps of 0.1, with the read at the H100 SXM's
achievable copy bandwidth (the H800 has its memory and SMs) and the FLOPs at the batched
engine's share of its achievable FP8 matmul rate. No serving row enters it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMINGS = REPO / "data" / "calibration" / "deepgemm_fp8_gemm_h800.csv"
EXPONENTS = tuple(round(1.0 + 0.1 * i, 1) for i in range(21))
FP8_BYTES = 1
BF16_BYTES = 2


@dataclass(frozen=True)
class Gemm:
    """One timed GEMM: M rows of FP8 activations times an N x K FP8 weight, bf16 out."""

    m: int
    n: int
    k: int
    seconds: float

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def bytes_moved(self) -> float:
        return (self.n * self.k + self.m * self.k) * FP8_BYTES + self.m * self.n * BF16_BYTES


def read_gemms(path: Path = TIMINGS) -> list[Gemm]:
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    gemms = []
    for r in rows:
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        gemms.append(Gemm(m, n, k, 2.0 * m * n * k / (float(r["tflops"]) * 1e12)))
    return gemms


def joined_s(read_s: float, flops_s: float, p: float) -> float:
    """The power mean of a GEMM's read and FLOP times at exponent p (infinite: the slower)."""
    if math.isinf(p):
        return max(read_s, flops_s)
    return float((read_s**p + flops_s**p) ** (1.0 / p))


def mean_error(gemms: list[Gemm], bytes_s: float, flops_s: float, p: float) -> float:
    """Mean |predicted / measured - 1| of the GEMMs' times at exponent p."""
    errors = [
        abs(joined_s(g.bytes_moved / bytes_s, g.flops / flops_s, p) / g.seconds - 1.0)
        for g in gemms
    ]
    return sum(errors) / len(errors)


def best_exponent(gemms: list[Gemm], bytes_s: float, flops_s: float) -> tuple[float, float]:
    """(p, its mean |error|) of least mean |error| over EXPONENTS."""
    return min(((p, mean_error(gemms, bytes_s, flops_s, p)) for p in EXPONENTS), key=lambda t: t[1])


def h100_rates() -> tuple[float, float]:
    """(bytes/s, FLOP/s): the H100 SXM's achievable copy bandwidth, and the batched engine's
    share of its achievable FP8 matmul rate."""
    from dlrig.catalog.loader import builtin_catalog
    from dlrig.enums import Precision
    from dlrig.model.rates import achievable_matmul_tflops, achievable_memory_bandwidth_gb_s
    from dlrig.model.serving import BATCHED
    from dlrig.units import gb_s_to_bytes_s, tflops_to_flops

    gpu = next(g for g in builtin_catalog().gpus if g.name == "H100 SXM5 80GB")
    flops_s = tflops_to_flops(achievable_matmul_tflops(gpu, Precision.FP8))
    return gb_s_to_bytes_s(
        achievable_memory_bandwidth_gb_s(gpu)
    ), flops_s * BATCHED.compute_efficiency


def main() -> None:
    gemms = read_gemms()
    bytes_s, flops_s = h100_rates()
    for p in EXPONENTS:
        print(f"p = {p:.1f}: mean |error| {mean_error(gemms, bytes_s, flops_s, p):.1%}")
    p, err = best_exponent(gemms, bytes_s, flops_s)
    print(f"best: p = {p:.1f} ({err:.1%}); the plain maximum: "
          f"{mean_error(gemms, bytes_s, flops_s, math.inf):.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
