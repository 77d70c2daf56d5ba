"""A card's decode GEMMs as its vendor library runs them (rates.measured_decode_gemm): the law in
achievable_rates.toml is what its kernel timings give, and it times the shapes it came from."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.model.rates import measured_decode_gemm
from dlrig.units import bytes_s_to_gb_s, s_to_us

TIMINGS = (
    Path(__file__).resolve().parents[2] / "data" / "calibration" / "mi300x_fp8_decode_gemm.csv"
)


def gpu(name: str) -> GPU:
    return next(g for g in builtin_catalog().gpus if g.name == name)


def _rows() -> list[dict[str, str]]:
    with TIMINGS.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(
    ("rows", "fixed_us", "gb_s"),
    [(1, 8.91, 3583), (16, 6.50, 3468), (32, 7.44, 3303), (64, 8.42, 2793), (128, 15.21, 2337),
     (256, 20.15, 1561)],
)  # fmt: skip
def test_the_mi300x_law_at_each_m_is_the_least_squares_line_through_amds_tuned_gemms(
    rows: int, fixed_us: float, gb_s: float
) -> None:
    """AITER's tuned CK a8w8 GEMMs on MI300X (ROCm/aiter@fbb52ddfad, 2025-09-26): 24 Llama 3.1
    70B/405B shapes at each M; at M=1, 6.17 us for 8192x1024 to 249.84 us for 53248x16384.
    Time against the FP8 weight bytes is a line at each M: at M=1 8.91 us, then 3,583 GB/s; the
    rate falls to 1,561 GB/s at M=256, where the FLOPs bind."""
    at_m = [r for r in _rows() if int(r["m"]) == rows]
    assert len(at_m) == 24
    weight_bytes = [int(r["n"]) * int(r["k"]) for r in at_m]  # one byte per FP8 weight
    slope, intercept = statistics.linear_regression(
        weight_bytes, [float(r["time_us"]) for r in at_m]
    )
    assert (intercept, 1.0 / slope / 1e3) == pytest.approx((fixed_us, gb_s), abs=0.01, rel=1e-3)
    law = measured_decode_gemm(gpu("AMD Instinct MI300X"), Precision.FP8, rows)
    assert law is not None and "fbb52ddfad" in law.provenance
    assert s_to_us(law.fixed_s) == pytest.approx(fixed_us)
    assert bytes_s_to_gb_s(law.bytes_s) == pytest.approx(gb_s)


def test_between_timed_ms_the_law_runs_linear_in_log_m_and_holds_its_ends() -> None:
    """M=8 sits 3/4 of the way from M=1 to M=16 in log M: 8.91 + 0.75 x (6.50 - 8.91) = 7.10 us
    and 3,583 + 0.75 x (3,468 - 3,583) = 3,497 GB/s; past M=256 the M=256 row holds."""
    mi300x = gpu("AMD Instinct MI300X")
    law = measured_decode_gemm(mi300x, Precision.FP8, 8)
    assert law is not None
    assert s_to_us(law.fixed_s) == pytest.approx(7.1025)
    assert bytes_s_to_gb_s(law.bytes_s) == pytest.approx(3496.75)
    assert measured_decode_gemm(mi300x, Precision.FP8, 4096) == measured_decode_gemm(
        mi300x, Precision.FP8, 256
    )


def test_the_law_times_llama_70b_tp8_layers_gemms_within_a_tenth() -> None:
    """Llama 3.1 70B at TP8 runs four GEMMs a layer (QKV 1280x8192, O 8192x1024, gate-up
    7168x8192, down 8192x3584): 15.98 + 6.17 + 26.36 + 12.10 = 60.6 us measured (AITER
    @fbb52ddfad); the law's 65.5 us is within 10%, where the weight bytes at the card's copy
    rate (4,100 GB/s, BabelStream) would take 26.9 us."""
    law = measured_decode_gemm(gpu("AMD Instinct MI300X"), Precision.FP8)
    assert law is not None
    shapes = [(1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)]
    measured = {(int(r["n"]), int(r["k"])): float(r["time_us"]) for r in _rows() if r["m"] == "1"}
    layer_us = sum(measured[s] for s in shapes)
    assert layer_us == pytest.approx(60.6, abs=0.05)
    law_us = sum(s_to_us(law.fixed_s + n * k / law.bytes_s) for n, k in shapes)
    assert law_us == pytest.approx(layer_us, rel=0.10)
    assert s_to_us(sum(n * k for n, k in shapes) / 4100e9) < 0.5 * layer_us


def test_only_the_timed_card_and_precision_have_a_law() -> None:
    """No BF16 decode GEMMs were timed on MI300X, none on NVIDIA cards: the engine's share of
    the copy bandwidth stands for them."""
    assert measured_decode_gemm(gpu("AMD Instinct MI300X"), Precision.BF16) is None
    assert measured_decode_gemm(gpu("H100 SXM5 80GB"), Precision.FP8) is None


def test_the_mi325x_runs_the_mi300x_die_at_its_own_bandwidth() -> None:
    """MI325X is the MI300X's CDNA 3 die (gfx942, 304 CUs: ROCm GPU specifications) with 6 TB/s
    of HBM3E: its decode GEMMs keep the 8.91 us fixed time and stream 4,950 / 4,100 (the two
    cards' achievable copy rates: datasheet x AMD's median, and BabelStream) times faster.
    CDNA 4 (MI355X) has no timings and keeps the engine's share."""
    mi300x = measured_decode_gemm(gpu("AMD Instinct MI300X"), Precision.FP8)
    mi325x = measured_decode_gemm(gpu("AMD Instinct MI325X"), Precision.FP8)
    assert mi300x is not None and mi325x is not None
    assert mi325x.fixed_s == mi300x.fixed_s
    assert mi325x.bytes_s == pytest.approx(mi300x.bytes_s * 4950 / 4100)
    assert "MI300X" in mi325x.provenance
    assert measured_decode_gemm(gpu("AMD Instinct MI355X"), Precision.FP8) is None
