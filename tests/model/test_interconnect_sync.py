"""The per-step synchronisation cost: data-parallel GPUs wait for the slowest at every
all-reduce, so scaling falls short of n even where the gradient exchange is hidden."""

from __future__ import annotations

import pytest
from model_fixtures import make_build, make_workload

from dlrig.model import estimate
from dlrig.model.interconnect import STEP_TIME_CV, straggler_factor

# An H100 SXM5 80GB as NVIDIA's datasheet gives it (80 GB HBM3, 3350 GB/s, 67 FP32 TFLOPS,
# 989 dense FP16/BF16 tensor TFLOPS, 700 W, 900 GB/s NVLink4 through the HGX board's NVSwitch,
# passive: cooled by the server).
H100_SXM = {
    "name": "H100 SXM5 (test)", "memory_gb": 80, "memory_bandwidth_gb_s": 3350,
    "fp32_tflops": 67, "tf32_tensor_tflops": 494.7, "fp16_tensor_tflops": 989.4,
    "bf16_tensor_tflops": 989.4, "tdp_w": 700, "pcie_gen": 5, "pcie_lanes": 16,
    "cooler": "passive", "form": "sxm", "nvlink_gb_s": 900, "interconnect": "nvswitch",
    "segment": "datacenter",
}  # fmt: skip


def test_straggler_cost_grows_with_the_gpu_count() -> None:
    """cv x sqrt(2 ln n) with cv = 0.02: 1.024 at 2 GPUs, 1.041 at 8, 1.071 at 512 (the
    issue: tokens/s per GPU falls 9-12% from 8 to 512 GPUs at scale; the wait for the slowest
    GPU is part of it, the network the rest)."""
    assert STEP_TIME_CV == 0.02
    assert straggler_factor(1) == 1.0
    assert straggler_factor(2) == pytest.approx(1.0235, abs=1e-4)
    assert straggler_factor(8) == pytest.approx(1.0408, abs=1e-4)
    assert straggler_factor(512) == pytest.approx(1.0707, abs=1e-4)
    assert straggler_factor(2) < straggler_factor(8) < straggler_factor(512)


def test_eight_hidden_exchange_gpus_no_longer_scale_to_eight() -> None:
    """Lambda 2024 (github.com/lambdal/deeplearning-benchmark@aa5addb6,
    pytorch-train-throughput-fp16.csv; shared/calibration/lambda_pytorch_train_v1_2024.csv):
    ResNet-50 fp16 at 1280 images per GPU on Dell's H100 SXM5 server: 2776 img/s on 1 GPU,
    22048 on 8 (7.94x). Before the synchronisation cost the model said 8.00x whatever the
    job; now it says less than 8 and stays within 5% of 7.94x."""
    job = make_workload("resnet50", dataset="synthetic", precision="fp16", batch_size=1280)
    one = estimate(make_build(H100_SXM), job)
    eight = estimate(make_build(H100_SXM, count=8), job)
    scaling = eight.samples_per_s / one.samples_per_s
    measured = 22048 / 2776
    assert scaling < 7.9
    assert abs(scaling - measured) / measured <= 0.05, scaling


def test_inference_does_not_wait_for_a_straggler() -> None:
    """Inference replicas run independently: no per-step all-reduce, no wait."""
    job = make_workload("llama-3-8b-inference")
    one = estimate(make_build(H100_SXM), job)
    eight = estimate(make_build(H100_SXM, count=8), job)
    assert eight.samples_per_s / one.samples_per_s == pytest.approx(8.0, rel=0.01)
