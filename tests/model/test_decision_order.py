"""Decision-order tests: the builds users pick between come out in the order published
measurements give (issue 10), and every estimate carries its interval."""

from __future__ import annotations

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import estimate
from dlrig.model.calibration import default_calibration
from dlrig.model.result import Estimate
from dlrig.report.estimate import estimate_dict
from dlrig.workloads import resolve_workload


def run(gpu_name: str, workload: str, count: int = 1, **fields: object) -> Estimate:
    gpu = load_catalog().find(GPU, gpu_name)
    build = Build(name=f"{count}x {gpu_name}", gpus=(GPUGroup(gpu, count),))
    return estimate(build, resolve_workload({"model": workload, **fields}, "test"))


@pytest.mark.parametrize("count", [1, 2])
def test_rtx_4090_beats_rx_7900_xtx_on_llama_lora(count: int) -> None:
    # torch.mm on the two cards: RX 7900 XTX 105.43 TFLOPS fp16 (PyTorch 2.7.1 + ROCm 6.3,
    # 2025-10-09) against RTX 4090 170.06 bf16 (2025-10-06), github.com/zzc0721/
    # torch-performance-test-data database.md; "the RTX 4090 is roughly 1.5-1.8x faster in real
    # AI workloads" (convly.ai/fr/rx-7900-xtx-vs-rtx-4090-for-ai/, 2026-05-20). Issue 10: plan
    # picked 2x 7900 XTX over 2x 4090 for llama-3-8b-lora.
    nvidia = run("GeForce RTX 4090", "llama-3-8b-lora", count)
    amd = run("AMD Radeon RX 7900 XTX", "llama-3-8b-lora", count)
    assert nvidia.samples_per_s > 1.3 * amd.samples_per_s


@pytest.mark.parametrize("count", [1, 3])
def test_rtx_5090_beats_rtx_5000_ada_on_llama_lora(count: int) -> None:
    # RTX 5090 bf16 torch.mm 242.18 TFLOPS (zzc0721/torch-performance-test-data, 2025-10-06);
    # a 250 W RTX 5000 Ada cannot hold its 261.1 TFLOPS datasheet rate: at the L40S's measured
    # 269.15 TFLOPS per 350 W (same source and date) it sustains about 192. Issue 10: plan picked
    # 3x RTX 5000 Ada over 3x RTX 5090 under 15,000 USD.
    consumer = run("GeForce RTX 5090", "llama-3-8b-lora", count)
    workstation = run("NVIDIA RTX 5000 Ada Generation", "llama-3-8b-lora", count)
    assert consumer.samples_per_s > workstation.samples_per_s


@pytest.mark.parametrize("workload", ["llama-3-8b-lora", "llama-3-8b"])
def test_h100_beats_a100_on_llm_fine_tuning(workload: str) -> None:
    # bf16 MAMF: H100 SXM 794.5 TFLOPS (2025-01-05) against A100 SXM 271.2 (2025-01-04),
    # github.com/stas00/ml-engineering compute/accelerator README; MosaicML/CoreWeave trained a
    # 7B GPT 3x faster on H100 (FP8) than on A100 (BF16)
    # (mosaicml.com/blog/coreweave-nvidia-h100-part-1, 2023). H100 must win, by less than 3.5x.
    h100 = run("H100 SXM5 80GB", workload)
    a100 = run("A100 SXM4 80GB", workload)
    assert 1.5 * a100.samples_per_s < h100.samples_per_s < 3.5 * a100.samples_per_s


def test_every_estimate_carries_the_leave_one_architecture_out_interval() -> None:
    # The interval is the 10th-90th percentile of measured / predicted throughput under
    # leave-one-architecture-out (calibration.toml [uncertainty], scripts/calibrate.py).
    cal = default_calibration()
    assert cal.throughput_ratio_low < 1.0 < cal.throughput_ratio_high
    est = run("GeForce RTX 4090", "resnet50")
    assert est.samples_per_s_low == pytest.approx(est.samples_per_s * cal.throughput_ratio_low)
    assert est.samples_per_s_low < est.samples_per_s < est.samples_per_s_high
    assert est.step_time_s_low < est.step_time_s < est.step_time_s_high
    doc = estimate_dict(est)
    assert doc["step"]["time_s_low"] == est.step_time_s_low
    assert doc["step"]["time_s_high"] == est.step_time_s_high
    assert doc["throughput"]["samples_per_s_low"] == est.samples_per_s_low
    assert doc["throughput"]["samples_per_s_high"] == est.samples_per_s_high


@pytest.mark.xfail(
    strict=True,
    reason="known miss (issue 10, left open): Lambda's 2024 run measured the RTX 4090 at least "
    "as fast as the RTX 6000 Ada on every job (BERT-large fp16 93 samples/s at batch 28 "
    "against 79 at batch 64; ResNet-50 fp16 1,301 against 1,146 img/s; GNMT fp16 159,511 "
    "against 160,184 tok/s; data/calibration/lambda_pytorch_train_v1_2024.csv), and llm.q "
    "measured 40,000 tok/s on a 4090 against 42,000 on the same-chip L40S for Qwen2.5-0.5B bf16 "
    "(bench/data/external_llm.csv); the model gives the 6000 Ada 1.04x the 4090 at the same "
    "batch, 0.94-1.5x at Lambda's batches, and predicts the 4090 ~20% slow on both sources. "
    "Neither a stronger L2 term nor a lower 6000 Ada clock nor overlapping kernel launches "
    "with GPU work fixed it (each tried on these rows: issue 10, note of 2026-12-04)",
)
def test_rtx_4090_at_least_matches_rtx_6000_ada_on_bert_large() -> None:
    # Same batch (28): the 6000 Ada's measured 79 samples/s came at batch 64, where a step
    # amortises its fixed costs better, so at 28 the measured ratio is above 93 / 79 = 1.18.
    consumer = run("GeForce RTX 4090", "bert-large-squad", batch_size=28)
    workstation = run("NVIDIA RTX 6000 Ada Generation", "bert-large-squad", batch_size=28)
    assert consumer.samples_per_s > 1.1 * workstation.samples_per_s


def test_an_estimate_of_several_gpus_carries_the_multi_gpu_interval() -> None:
    """An estimate of several GPUs carries the band of the calibration sources' rows of several
    GPUs (calibration.toml [uncertainty] multi_gpu_ratio_low/high, scripts/interval_band.py),
    not the one-GPU band: the two differ."""
    from dlrig.machine import resolve_build
    from dlrig.workloads import load_workload

    cal = default_calibration()
    assert cal.throughput_band(2) != cal.throughput_band(1)
    build = resolve_build({"gpus": [{"model": "RTX 4090", "count": 4}]}, "t", load_catalog(None))
    est = estimate(build, load_workload("resnet50"))
    assert est.samples_per_s_low == pytest.approx(est.samples_per_s * cal.multi_gpu_ratio_low)
    assert est.samples_per_s_high == pytest.approx(est.samples_per_s * cal.multi_gpu_ratio_high)
