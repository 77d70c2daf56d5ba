"""FP32 GEMM rates (model/rates.py fp32_datapath): each card's own measurement, else the median
share its datapath's measured cards reach. The measurements are torch.mm FP32 (TF32 off) from
zzc0721/torch-performance-test-data database.md @9d82827 and, for the MI325X, ROCm/gpu-operator
issue 419 (model/data/achievable_rates.toml)."""

from __future__ import annotations

import statistics

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.model.rates import (
    CDNA_MFMA_FP32,
    ISSUE_BOUND_FP32,
    SPARE_SLOT_FP32,
    achievable_matmul,
    fp32_datapath,
)


def gpu(name: str) -> GPU:
    return next(g for g in builtin_catalog().gpus if g.name == name)


@pytest.mark.parametrize(
    ("name", "datapath"),
    [
        ("Tesla V100 PCIe 32GB", SPARE_SLOT_FP32),  # GV100: 16 FP32 lanes per scheduler
        ("NVIDIA T4", SPARE_SLOT_FP32),  # TU104: 16
        ("A100 SXM4 80GB", SPARE_SLOT_FP32),  # GA100 (HBM die): 16
        ("GeForce GTX 1080 Ti", SPARE_SLOT_FP32),  # GP102: 32, two dispatch units
        ("GeForce RTX 3090", ISSUE_BOUND_FP32),  # GA102: 16 FP32 + 16 FP32-or-INT32
        ("NVIDIA L4", ISSUE_BOUND_FP32),  # AD104
        ("H100 SXM5 80GB", ISSUE_BOUND_FP32),  # GH100: 32 FP32 per scheduler
        ("B200 SXM 180GB", ISSUE_BOUND_FP32),
        ("AMD Instinct MI100", CDNA_MFMA_FP32),  # 46.1 matrix of 23.1 vector TFLOPS
        ("AMD Instinct MI210", CDNA_MFMA_FP32),  # 45.3 of 22.6
        ("AMD Instinct MI300X", "CDNA 3 FP32"),  # 163.4 both
    ],
)
def test_fp32_datapath_by_architecture(name: str, datapath: str) -> None:
    assert fp32_datapath(gpu(name)) == datapath


def test_issue_bound_cards_reach_two_thirds_of_their_fp32_peak() -> None:
    # The 17 measured cards with 32 FP32 lanes per scheduler, torch.mm TFLOPS of the catalog's
    # FP32 peak (database.md @9d82827, physical-machine rows first, their median): RTX 3070
    # 13.69/20.3, 3080 21.45/29.8, 3090 24.625/35.6, 4090 54.89/82.6, 5060 Ti 17.43/23.7, 5080
    # 33.64/56.3, 5090 65.78/104.8, A4000 11.90/19.2, A6000 23.92/38.7, L4 15.38/30.3, L40S
    # 46.88/91.6, H100 PCIe 36.95/51, H100 SXM 52.11/67, H200 SXM 51.34/67, B200 66.24/75, RTX
    # PRO 6000 Workstation 77.24/125 and Server 77.01/120: median 0.6645 (the 4090's). The L40
    # (AD102, 90.5 TFLOPS), unmeasured: 60.14.
    shares = [
        13.69 / 20.3, 21.45 / 29.8, 24.625 / 35.6, 54.89 / 82.6, 17.43 / 23.7, 33.64 / 56.3,
        65.78 / 104.8, 11.90 / 19.2, 23.92 / 38.7, 15.38 / 30.3, 46.88 / 91.6, 36.95 / 51,
        52.11 / 67, 51.34 / 67, 66.24 / 75, 77.24 / 125, 77.01 / 120,
    ]  # fmt: skip
    assert statistics.median(shares) == pytest.approx(0.6645, abs=1e-4)
    rate = achievable_matmul(gpu("NVIDIA L40"), Precision.FP32)
    assert rate.value == pytest.approx(90.5 * 54.89 / 82.6, abs=0.01)
    assert "17 measured cards" in rate.provenance


def test_cards_with_a_spare_issue_slot_keep_the_16bit_rule() -> None:
    # Their class's measured cards: the A100s (17.835, 18.11, 19.18, 18.88 of 19.5), the V100s
    # (SXM2 14.285 of 15.7, PCIe 13.40 of 14.0), the GTX 1080 Ti (10.09 of 11.34), the RTX 2080
    # Ti (13.04 of 14.2) and the T4 (4.35 of 8.1). Their median made Lambda's pre-Ampere
    # FP32 rows worse (leave-one-architecture-out, bench/provenance.toml), so a card without a
    # measurement on its die and clock, the TITAN V (GV100, 14.9 TFLOPS at 1455 MHz), keeps
    # NVIDIA's median 16-bit measured/datasheet share (0.8107): 14.9 x 0.8107 = 12.08 TFLOPS.
    rate = achievable_matmul(gpu("NVIDIA TITAN V"), Precision.FP32)
    assert "vendor median" in rate.provenance
    assert rate.value == pytest.approx(12.08, abs=0.01)


def test_mi100_fp32_runs_on_its_matrix_cores_as_the_mi210_does() -> None:
    # CDNA 1 and 2 run FP32 GEMMs as MFMA F32 at twice the vector rate; the MI210 reaches 33.68
    # of its 45.3 TFLOPS there (torch.mm, zzc0721/torch-performance-test-data issue 195), so the
    # MI100 is credited the same share of its 46.1: 34.27 TFLOPS, not 0.50 of it (the share its
    # one-shape FP16 rocblas-bench row gives, ROCm/Tensile issue 2087).
    rate = achievable_matmul(gpu("AMD Instinct MI100"), Precision.FP32)
    assert rate.value == pytest.approx(46.1 * 33.68 / 45.3, abs=0.01)


def test_an_rdna3_card_takes_the_rx_7900_xtx_share_of_its_dual_issue_peak() -> None:
    # RDNA 3's datasheet FP32 counts dual issue; torch.mm (rocBLAS SGEMM) on the RX 7900 XTX
    # reaches 25.225 of its 61.4 TFLOPS (median of four physical rows, zzc0721/torch-performance-
    # test-data database.md @9d82827). The Radeon PRO W7900 (61.3 TFLOPS) takes that share:
    # 25.18, not the 16-bit share's 52.6.
    rate = achievable_matmul(gpu("AMD Radeon PRO W7900"), Precision.FP32)
    assert fp32_datapath(gpu("AMD Radeon PRO W7900")) == "RDNA 3 FP32"
    assert rate.value == pytest.approx(61.3 * 25.225 / 61.4, abs=0.01)


@pytest.mark.parametrize(
    ("name", "tflops"),
    [
        ("GeForce RTX 3090", 24.625),  # median of the physical rows 24.46, 24.79
        ("NVIDIA L4", 15.38),  # physical machine; the same row's TF32: 31.88
        ("H100 PCIe 80GB", 36.95),  # physical machine
        ("GeForce GTX 1080 Ti", 10.09),  # a spare-slot card: its own row beats the 16-bit rule
        ("GeForce RTX 2080 Ti", 13.04),  # a 22 GB board: the same TU102 at the same clocks
        ("GeForce RTX 3080", 21.45),  # the physical 20 GB board; the 15.56 row left out
        ("AMD Radeon RX 7900 XTX", 25.225),  # median of four physical rows
        ("NVIDIA L40S", 46.88),
        ("H200 SXM 141GB", 51.34),
        ("AMD Instinct MI325X", 130.6),  # ROCm/gpu-operator issue 419, torch.matmul 16384^3
        # median of database.md's physical row 14.06 and issue 140's 14.51
        ("Tesla V100 SXM2 16GB", 14.285),
        ("A100 PCIe 80GB", 18.88),  # cuBLAS SGEMM 5120x4096x4096, YHs_Sample issue 4
        # cuBLAS volta_sgemm_128x128_tn, best of NeuSight's 6,460 linear shapes (@db1fdc96)
        ("Tesla V100 PCIe 32GB", 13.40),
    ],
)
def test_a_cards_own_fp32_measurement_is_used_as_published(name: str, tflops: float) -> None:
    rate = achievable_matmul(gpu(name), Precision.FP32)
    assert rate.value == tflops and rate.provenance.startswith("measured")


def test_fp32_rows_leave_the_16bit_rules_alone() -> None:
    # The RTX 3080's bf16 rate follows the Ampere GeForce cards' measured 16-bit rates (3090
    # 76.34 of 71: capped at its datasheet 59.5), not their FP32 share.
    assert achievable_matmul(gpu("GeForce RTX 3080"), Precision.BF16).value == pytest.approx(59.5)


def test_a_card_takes_the_fp32_rate_measured_on_its_die_at_its_clock() -> None:
    # The V100 SXM2 32GB runs the 16GB card's GV100 at 1530 MHz (15.7 TFLOPS FP32 each): its
    # 14.285 TFLOPS (torch.mm, zzc0721/torch-performance-test-data database.md @9d82827 and
    # issue 140), where the 16-bit share gave 12.73. A GH200 (GH100, 67 TFLOPS): the H100 SXM's
    # 52.11 and the H200 SXM's 51.34, median 51.725.
    v100 = achievable_matmul(gpu("Tesla V100 SXM2 32GB"), Precision.FP32)
    assert v100.value == 14.285 and "same die" in v100.provenance
    assert achievable_matmul(gpu("GH200 96GB"), Precision.FP32).value == pytest.approx(51.725)
    # The V100 PCIe 16GB runs GV100 at the 32GB card's 1380 MHz (14.0 TFLOPS FP32 each): the
    # 32GB card's 13.40 (NeuSight's linear collection), not the SXM2's 14.285 at 1530 MHz.
    pcie = achievable_matmul(gpu("Tesla V100 PCIe 16GB"), Precision.FP32)
    assert pcie.value == 13.40 and "same die" in pcie.provenance
    # No measured card shares the TITAN V's clock (1455 MHz): the rule stands.
    titan = achievable_matmul(gpu("NVIDIA TITAN V"), Precision.FP32)
    assert "same die" not in titan.provenance
