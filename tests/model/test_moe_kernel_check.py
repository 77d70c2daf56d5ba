"""TensorRT-LLM's MoE op as NVIDIA's aiconfigurator timed it on an H100, an H200 and a B200
(data/calibration/trtllm_moe_kernel_times.csv), against the MoE layer dlrig's serving model
times (scripts/moe_kernel_check.py). One figure of the model is set from these rows, the
CUDA-core work a routed (token, expert) pair; the other tests state what the kernels say and
where dlrig parts from them."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import moe_kernel_check as check  # noqa: E402

from dlrig.model import serving  # noqa: E402

TIMINGS = check.read_timings()


def _rows(gpu: str, dtype: str, hidden: int, ep: int, routing: str) -> list[check.Timing]:
    return [
        t for t in TIMINGS
        if t.gpu.name == gpu and t.weight_dtype == dtype and t.hidden == hidden and t.ep == ep
        and t.routing == routing
    ]  # fmt: skip


def test_every_row_is_aiconfigurators_tensorrt_llm_1_2_timing() -> None:
    """2,340 timed layers: 3 expert shapes x BF16 and FP8 on the H100 and H200 (NVFP4 too on
    the B200) x EP 1 and 8 x two routings x 27 token counts, each citing its file."""
    assert len(TIMINGS) == 2340
    with check.TIMES.open() as fh:
        assert all("aiconfigurator@095f58a5:" in line for line in list(fh)[1:])


def test_qwen3_30b_experts_in_nvfp4_reach_a_sixth_of_a_b200s_fp4_rate() -> None:
    """Qwen3-30B-A3B's experts (2,048 x 768, 128, top 8) in NVFP4 on one B200 at 16,384
    tokens, power-law routing: 1,857.5 us, 666 TFLOPS of GEMMs, 0.16 of the 4,256 TFLOPS dlrig
    gives a B200's FP4 GEMMs; the same layer in FP8 on an H100 reaches 471, 0.34 of its 1,403."""
    b200 = next(t for t in _rows("B200 SXM 180GB", "nvfp4", 2048, 1, "power_law_1.2")
                if t.tokens == 16384)  # fmt: skip
    assert b200.seconds == pytest.approx(1857.5e-6, abs=0.1e-6)
    assert b200.local_flops / b200.seconds / 1e12 == pytest.approx(666, abs=1)
    h100 = next(t for t in _rows("H100 SXM5 80GB", "fp8", 2048, 1, "power_law_1.2")
                if t.tokens == 16384)  # fmt: skip
    assert h100.local_flops / h100.seconds / 1e12 == pytest.approx(471, abs=1)


def test_dlrigs_moe_layer_is_slower_than_the_op_in_a_decode_step() -> None:
    """At decode batches (256 tokens or fewer) on one H100 in FP8, dlrig's layer (the experts'
    read and FLOPs joined with the routed pairs' work, plus 104 us of MoE path a layer) takes
    longer than the measured op, which runs the whole path in 35-40 us plus the read: median
    +30% over the 42 rows of the two Qwen3 shapes under power-law routing."""
    rows = [t for t in _rows("H100 SXM5 80GB", "fp8", 2048, 1, "power_law_1.2")
            + _rows("H100 SXM5 80GB", "fp8", 4096, 1, "power_law_1.2")
            if check.regime(t) == "decode"]  # fmt: skip
    errors = [check.dlrig_layer_s(t) / t.seconds - 1.0 for t in rows]
    assert len(rows) == 42
    assert statistics.median(errors) == pytest.approx(0.30, abs=0.01)


def test_the_op_model_fits_the_one_gpu_rows_at_the_cards_own_rates() -> None:
    """Fitted on the EP 1 rows under power-law routing (585): 34.5 us a layer, the weights read
    at 1.12 of the achievable copy bandwidth, the GEMMs at 1.05 of the achievable matmul rate
    and 731k FP32 FLOPs of CUDA-core work a (token, expert) pair, 5.6% median |error|. At EP 8
    the busiest GPU takes 2.28x the fit at 4,096 tokens and more: power-law routing loads it."""
    one = [t for t in TIMINGS if t.ep == 1 and t.routing == "power_law_1.2"]
    fit = check.fit_op_model(one)
    assert len(one) == 585
    assert fit.fixed_s == pytest.approx(34.5e-6, abs=0.1e-6)
    assert (fit.read_share, fit.gemm_share) == (pytest.approx(1.12, abs=0.005),
                                                pytest.approx(1.05, abs=0.005))  # fmt: skip
    assert fit.pair_fp32_flop == pytest.approx(731e3, rel=0.002)
    assert fit.median_error == pytest.approx(0.056, abs=0.001)
    wide = [t for t in TIMINGS
            if t.ep == 8 and t.routing == "power_law_1.2" and t.tokens >= 4096]  # fmt: skip
    assert statistics.median(t.seconds / fit.seconds(t) for t in wide) == pytest.approx(
        2.28, abs=0.01
    )


def test_the_serving_model_takes_the_ops_work_a_routed_pair() -> None:
    """TensorRT-LLM's CUDA-core work a routed (token, expert) pair in the serving model is the
    op model's fit on the one-GPU rows under power-law routing, 731k FP32 FLOPs: the serving
    model times a row's pairs (serving.routed_pair_s) as the fit's pair term does, on one GPU
    and split over eight."""
    one = [t for t in TIMINGS if t.ep == 1 and t.routing == "power_law_1.2"]
    fit = check.fit_op_model(one)
    assert fit.pair_fp32_flop == pytest.approx(731e3, rel=0.002)
    for t in (one[0], next(t for t in TIMINGS if t.ep == 8)):
        cards = serving.Cards(t.gpu, t.ep, 1.0, nvlink=t.ep > 1, memory_bytes=0.0)
        fit_pairs_s = t.local_pairs * fit.pair_fp32_flop / (t.gpu.fp32_tflops * 1e12)
        assert serving.routed_pair_s(check.one_layer(t), cards, t.tokens) == pytest.approx(
            fit_pairs_s, rel=0.002
        )


def test_one_moe_gemm_share_misses_the_prompt_op_by_shape() -> None:
    """At 4,096 tokens and more under power-law routing, dlrig's prompt path (the routed FLOPs
    at MOE_GEMM_SHARE, 0.40 of the dense rate, and the routed pairs' 731k FP32 FLOPs each)
    against the op, median over each layout's rows: on the layout the share was chosen on
    (Qwen3-235B-A22B's experts, FP8, eight H200) -4% (-15% without the pairs' work);
    Qwen3-30B-A3B's small experts in NVFP4 on one B200, where the per-pair work binds, +13%
    (-51% without it: its perf-overview prompt rows ran 53-71% fast); the Mixtral-like experts
    (4,096 x 14,336, top 2) in FP8 on one H200, whose large GEMMs run near the card's rate,
    +217%. The pairs' work brings the Qwen3 shapes near the op; one GEMM share still cannot
    hold large experts too."""
    errors = check.prompt_errors(TIMINGS)
    chosen = errors["H200 SXM 141GB fp8 4096x1536 top 8 EP8 power_law_1.2"]
    small = errors["B200 SXM 180GB nvfp4 2048x768 top 8 EP1 power_law_1.2"]
    large = errors["H200 SXM 141GB fp8 4096x14336 top 2 EP1 power_law_1.2"]
    assert (len(chosen), len(small), len(large)) == (8, 5, 8)
    assert statistics.median(chosen) == pytest.approx(-0.04, abs=0.01)
    assert statistics.median(small) == pytest.approx(0.13, abs=0.01)
    assert statistics.median(large) == pytest.approx(2.17, abs=0.01)
