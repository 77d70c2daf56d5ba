"""Per-card achievable rates (model/rates.py): measured where published, a stated rule elsewhere."""

from __future__ import annotations

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.model.rates import (
    achievable_matmul,
    achievable_matmul_tflops,
    achievable_memory_bandwidth_gb_s,
    matmul_peak,
    shader_issue_rate,
)
from dlrig.units import TFLOPS


def gpu(name: str) -> GPU:
    return next(g for g in builtin_catalog().gpus if g.name == name)


def test_measured_rows_are_used_as_published() -> None:
    # RTX 5090 bf16 torch.mm 242.18 TFLOPS, zzc0721/torch-performance-test-data (2025-10-06);
    # H100 SXM bf16 MAMF 794.5 TFLOPS, stas00/ml-engineering (2025-01-05).
    assert achievable_matmul_tflops(gpu("GeForce RTX 5090"), Precision.BF16) == 242.18
    assert achievable_matmul_tflops(gpu("H100 SXM5 80GB"), Precision.BF16) == 794.5
    rate = achievable_matmul(gpu("H100 SXM5 80GB"), Precision.FP8)
    assert rate.value == 1402.6 and "2025-01-05" in rate.provenance


def test_rtx_5000_ada_is_power_limited_below_a_5090() -> None:
    # 250 W RTX 5000 Ada: its 261.1 TFLOPS datasheet rate needs more power than 250 W feeds at
    # the best Ada TFLOPS/W measured (L40S 269.15 TFLOPS at 350 W, zzc0721 2025-10-06):
    # 250 x 269.15 / 350 = 192.3 TFLOPS, below the 5090's measured 242.18.
    rate = achievable_matmul(gpu("NVIDIA RTX 5000 Ada Generation"), Precision.BF16)
    assert rate.value == pytest.approx(250 * 269.15 / 350)
    assert rate.provenance.startswith("power-limited")
    assert rate.value < achievable_matmul_tflops(gpu("GeForce RTX 5090"), Precision.BF16)


def test_7900_xtx_is_well_behind_a_4090() -> None:
    # torch.mm fp16: 7900 XTX 105.43 TFLOPS (PyTorch 2.7.1 + ROCm 6.3, 2025-10-09) against the
    # 4090's 170.06 bf16 (2025-10-06), both zzc0721/torch-performance-test-data.
    xtx = achievable_matmul_tflops(gpu("AMD Radeon RX 7900 XTX"), Precision.FP16)
    assert xtx == 105.43
    assert xtx < 0.7 * achievable_matmul_tflops(gpu("GeForce RTX 4090"), Precision.BF16)


def test_geforce_rule_rate_is_below_the_fp32_accumulate_datasheet_rate() -> None:
    # RTX 5080 has no measurement: the rule starts from the FP32-accumulate tensor rate, half
    # the FP16-accumulate figure on GeForce (Blackwell whitepaper), never from the latter.
    g = gpu("GeForce RTX 5080")
    assert g.fp16_tensor_fp16acc_tflops is not None and g.fp16_tensor_tflops is not None
    rate = achievable_matmul_tflops(g, Precision.FP16)
    assert rate <= g.fp16_tensor_tflops < g.fp16_tensor_fp16acc_tflops


def test_geforce_cards_reach_their_datasheet_rate_as_their_measured_cards_do() -> None:
    # Every measured GeForce card reaches its datasheet rate (RTX 3090 76.34 of 71, 3090 Ti 81
    # of 80 TFLOPS: Ampere median 1.04; RTX 4090 170.06 of 165.2), capped at the datasheet: an
    # RTX 3080 is credited its 59.5 FP32-accumulate TFLOPS, an RTX 4080's TF32 its datasheet
    # 48.7 (the 4090's measured TF32 is 85.65 of 82.6), where the vendor median (0.80, set by
    # data-centre cards) gave 47.6 and 39.1. Turing has no measured GeForce card: the RTX
    # 2080 Ti keeps the vendor median.
    assert achievable_matmul_tflops(gpu("GeForce RTX 3080"), Precision.FP16) == pytest.approx(
        gpu("GeForce RTX 3080").fp16_tensor_tflops
    )
    tf32 = achievable_matmul(gpu("GeForce RTX 4080"), Precision.TF32)
    assert tf32.value == pytest.approx(48.7)
    assert "Ada Lovelace GeForce median" in tf32.provenance
    ti = gpu("GeForce RTX 2080 Ti")
    peak, _, _ = matmul_peak(ti, Precision.FP16)
    assert achievable_matmul_tflops(ti, Precision.FP16) == pytest.approx(
        peak / TFLOPS * nvidia_median()
    )


def test_no_rule_derived_rate_exceeds_the_datasheet() -> None:
    # An efficiency above 1 is a bug: every rule-derived rate is at most the datasheet peak.
    # A rate that is the card's own measurement, or its measured 16-bit rate carried to TF32,
    # keeps the clock the card was measured at (an RTX 3090's 76.34 of 71 TFLOPS).
    for g in builtin_catalog().gpus:
        for precision in Precision:
            rate = achievable_matmul(g, precision)
            if rate.provenance.startswith("measured") or "measured:" in rate.provenance:
                continue
            peak, _, _ = matmul_peak(g, precision)
            assert 0 < rate.value * TFLOPS <= peak * 1.000001, (g.name, precision)
        assert 0 < achievable_memory_bandwidth_gb_s(g) <= g.memory_bandwidth_gb_s


def test_fp8_without_fp8_tensor_cores_runs_at_the_16bit_rate() -> None:
    a100 = gpu("A100 SXM4 80GB")
    assert achievable_matmul_tflops(a100, Precision.FP8) == 271.2


def test_t4_holds_24_tflops_and_caps_the_big_turing_cards() -> None:
    """Issue 10: L4/T4 were predicted 32-44% fast. A T4 sustains ~24 TFLOPS of fp16 cuBLAS
    HGEMM (of 65 listed) because it power-caps its clock at 70 W (NVIDIA developer forum,
    forums.developer.nvidia.com/t/about-gpu-peak-performance/264462). At that TFLOPS per watt a
    260 W Quadro RTX 8000 feeds 260 x 24 / 70 = 89.1 TFLOPS, not its 104 datasheet-derived."""
    assert achievable_matmul_tflops(gpu("NVIDIA T4"), Precision.FP16) == 24.0
    quadro = achievable_matmul(gpu("Quadro RTX 8000"), Precision.FP16)
    assert quadro.value == pytest.approx(260 * 24.0 / 70)
    assert quadro.provenance.startswith("power-limited")


def test_rtx_5000_ada_sustains_2316_mhz_of_its_2550_boost() -> None:
    # Boost 2550 MHz (catalog, sources.clocks). Tensor work at boost needs 261.1 TFLOPS x the
    # L40S's implied 1.05 W/TFLOPS (269.15 of 362 TFLOPS at 350 W, zzc0721 2025-10-06, over the
    # NVIDIA median measured/datasheet share, 0.81 over 19 cards' 16-bit measurements) = 275 W;
    # 250 W feeds 250/275 of it: 2316 MHz, and the estimate's assumptions say so.
    from dlrig.model.rates import sustained_clock, sustained_clock_notes

    card = gpu("NVIDIA RTX 5000 Ada Generation")
    clock = sustained_clock(card, Precision.BF16)
    assert clock.mhz == pytest.approx(2550 * 250 * 269.15 / (350 * 261.1 * nvidia_median()))
    assert round(clock.mhz) == 2316
    assert "sustained clock 2316 MHz" in sustained_clock_notes(card, Precision.BF16)[0]
    assert "sustained clock 2316 MHz" in achievable_matmul(card, Precision.BF16).provenance


def nvidia_median() -> float:
    """The NVIDIA median measured/datasheet ratio the rule applies (0.81 today)."""
    from dlrig.enums import Vendor
    from dlrig.model.rates import _table

    return _table().matmul_efficiency[(Vendor.NVIDIA, False)]


def test_a_starved_card_holds_its_base_clock() -> None:
    # NVIDIA rates the base clock as the one a card holds at its TDP under full load: a Quadro
    # RTX 8000 (base 1395, boost 1770 MHz) fed 100 W, a third of what its tensor work needs,
    # keeps 1395 MHz, not 100/306 of 1770.
    from dlrig.model.rates import sustained_clock

    starved = gpu("Quadro RTX 8000").model_copy(update={"tdp_w": 100})
    clock = sustained_clock(starved, Precision.FP16)
    assert clock.mhz == pytest.approx(1395)
    assert "held at the base clock" in clock.provenance


def test_cards_with_a_published_rate_carry_no_clock_note() -> None:
    # H100 SXM's 794.5 TFLOPS bf16 is measured (stas00/ml-engineering 2025-01-05): its clock is
    # already in the figure.
    from dlrig.model.rates import sustained_clock_notes

    assert sustained_clock_notes(gpu("H100 SXM5 80GB"), Precision.BF16) == ()


@pytest.mark.parametrize(
    ("name", "issue_t"),
    [
        # 4 warp schedulers x 32 lanes per SM per clock: FP32 TFLOPS x 64 / FP32 lanes per SM.
        ("Tesla V100 SXM2 16GB", 15.7),  # GV100: 64 FP32 lanes, issue = 15.7 FP32 TFLOPS
        ("A100 SXM4 80GB", 19.5),  # GA100 (HBM): 64 lanes, 108 SMs x 128 x 1.41 GHz
        ("NVIDIA A30", 10.3),  # GA100 too
        ("GeForce RTX 3090", 17.8),  # GA102: 128 lanes, 82 SMs x 128 x 1.695 GHz
        ("GeForce RTX 4090", 41.3),  # AD102: 128 SMs x 128 x 2.52 GHz
        ("H100 SXM5 80GB", 33.5),  # GH100: 128 lanes, half its 67 FP32 TFLOPS
        ("GeForce GTX 1080 Ti", 5.67),  # GP102: 28 SMs x 128 x 1.582 GHz
        ("AMD Radeon RX 7900 XTX", 0.0),  # not modelled: no instruction bound
    ],
)
def test_shader_issue_rate_from_fp32_lanes_per_sm(name: str, issue_t: float) -> None:
    assert shader_issue_rate(gpu(name)) / TFLOPS == pytest.approx(issue_t, rel=1e-3)


def test_a_measured_tf32_rate_is_the_cards_own_and_sets_no_rule() -> None:
    # zzc0721/torch-performance-test-data database.md @9d82827: float32 torch.mm with TF32
    # allowed. The H100 PCIe reaches 240.43 TFLOPS, 0.485 of its own 495.93 bf16 (datasheet
    # TF32 is half of 16-bit): its 350 W holds TF32 to the clock it holds 16-bit work to, where
    # the datasheet x vendor median gave 303. The rows say nothing about other cards: the
    # NVIDIA median and the watts per TFLOPS come from the 16-bit and FP8 rows alone.
    h100 = achievable_matmul(gpu("H100 PCIe 80GB"), Precision.TF32)
    assert h100.value == 240.43
    assert h100.provenance.startswith("measured")
    assert achievable_matmul_tflops(gpu("GeForce RTX 4090"), Precision.TF32) == 85.65
    assert achievable_matmul_tflops(gpu("A100 PCIe 40GB"), Precision.TF32) == 108.32
    a10 = gpu("NVIDIA A10")
    peak, _, _ = matmul_peak(a10, Precision.TF32)
    assert achievable_matmul_tflops(a10, Precision.TF32) == pytest.approx(
        peak / TFLOPS * nvidia_median()
    )


def test_tf32_holds_the_clock_the_cards_measured_16bit_rate_holds() -> None:
    # Where only the 16-bit rate is measured, TF32 is that rate x the datasheet's TF32/bf16
    # ratio: the five cards measured both ways (database.md @9d82827) reach 0.45-0.51 of their
    # own 16-bit rate in TF32, against the datasheets' 0.5. An RTX 3090 at its measured 76.34
    # bf16 TFLOPS: 76.34 x 35.6 / 71 = 38.28 (the vendor median gave the datasheet's 35.6);
    # an A100 SXM4 at 271.2: 135.6 (the median gave 125.3).
    rtx3090 = achievable_matmul(gpu("GeForce RTX 3090"), Precision.TF32)
    assert rtx3090.value == pytest.approx(76.34 * 35.6 / 71)
    assert rtx3090.provenance.startswith("measured bf16 76.34 TFLOPS")
    assert achievable_matmul_tflops(gpu("A100 SXM4 80GB"), Precision.TF32) == pytest.approx(135.6)
    # A card's own TF32 measurement comes first (H100 PCIe 240.43, not 495.93 / 2).
    assert achievable_matmul_tflops(gpu("H100 PCIe 80GB"), Precision.TF32) == 240.43


def test_a_probed_bf16_rate_carries_to_tf32_before_a_published_one() -> None:
    # The build's own probe is this machine: an RTX 4090 probed at 150 bf16 TFLOPS (a card
    # held below its boost) runs TF32 at 150 x 82.6 / 165.2 = 75, not the published 85.65
    # measured on another machine.
    from dlrig.machine.model import Measured, MeasuredGPU

    probe = Measured(
        taken="2026-12-04", gpus=(MeasuredGPU("GeForce RTX 4090", ((Precision.BF16, 150.0),)),)
    )
    tf32 = achievable_matmul(gpu("GeForce RTX 4090"), Precision.TF32, probe)
    assert tf32.value == pytest.approx(75.0)
    assert tf32.provenance.startswith("probe measurement 2026-12-04: bf16 150 TFLOPS")
    from dlrig.model.rates import measured_rate_notes

    notes = measured_rate_notes(probe, gpu("GeForce RTX 4090"), Precision.TF32)
    assert notes == (
        "matmul tf32 75.0 TFLOPS from probe measurement 2026-12-04: bf16 150 TFLOPS x datasheet "
        "TF32/bf16 82.6/165.2",
    )


def test_the_2025_cards_use_their_published_matmul_measurements() -> None:
    # stas00/ml-engineering MAMF tables: GB200 bf16 1,822.0 and fp8 3,615.6 TFLOPS (2025-09-17),
    # GH200 (900 W, HBM3e) bf16 828.6 (2025-01-04), MI355X bf16 1,565.0 (ROCm 7.0.2,
    # 2025-10-16); zzc0721: RTX PRO 6000 Blackwell Server Edition bf16 torch.mm 409.42
    # (2025-10-06); QuantumDrizzy/BLACKWALL: RTX 5060 Ti cuBLAS fp32-accumulate 47.0 (2026-06-05).
    measured = {
        ("GB200 186GB", Precision.BF16): 1822.0,
        ("GB200 186GB", Precision.FP8): 3615.6,
        ("GH200 144GB", Precision.BF16): 828.6,
        ("AMD Instinct MI355X", Precision.BF16): 1565.0,
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", Precision.BF16): 409.42,
        ("GeForce RTX 5060 Ti 16GB", Precision.FP16): 47.0,
    }
    for (name, precision), tflops in measured.items():
        assert achievable_matmul_tflops(gpu(name), precision) == tflops
    # A GB200 is the B200's silicon at 1,200 W: it measures 1.04x the 1,000 W B200's 1,745.
    b200 = achievable_matmul_tflops(gpu("B200 SXM 180GB"), Precision.BF16)
    assert 1822.0 / b200 == pytest.approx(1.044, abs=0.001)
