"""The per-step synchronisation cost: data-parallel GPUs wait for the slowest at every
all-reduce, so scaling falls short of n even where the gradient exchange is hidden, and the
more kernels a step launches, the more host noise it collects."""

from __future__ import annotations

import pytest
from model_fixtures import make_build, make_workload

from dlrig.model import estimate
from dlrig.model.interconnect import LAUNCH_TIME_CV, STEP_TIME_CV, straggler_wait_s

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


def test_straggler_wait_grows_with_the_gpu_count_and_the_launches() -> None:
    """sd = sqrt((0.02 x step)^2 + (0.2 x launch seconds)^2), waited sd x sqrt(2 ln n): a
    400 ms step with 15 ms of launches (ResNet-50's ~530 kernels at 28 us) spreads by 8.5 ms
    and waits 10.0 ms on 2 GPUs, 17.4 ms on 8, 30.2 ms on 512 (the issue: tokens/s per GPU
    falls 9-12% from 8 to 512 GPUs; the network is the rest); with 2.15 s of launches
    (Tacotron2's ~77,000) it spreads by 430 ms. One GPU waits for no one."""
    assert (STEP_TIME_CV, LAUNCH_TIME_CV) == (0.02, 0.2)
    assert straggler_wait_s(1, 0.4, 0.015) == 0.0
    assert straggler_wait_s(2, 0.4, 0.015) == pytest.approx(0.0100, abs=1e-4)
    assert straggler_wait_s(8, 0.4, 0.015) == pytest.approx(0.0174, abs=1e-4)
    assert straggler_wait_s(512, 0.4, 0.015) == pytest.approx(0.0302, abs=1e-4)
    assert straggler_wait_s(8, 0.4, 2.15) == pytest.approx(0.4301 * 2.0393, abs=1e-3)
    assert straggler_wait_s(8, 0.4, 0.0) == pytest.approx(0.008 * 2.0393, abs=1e-5)


def test_launch_heavy_jobs_scale_worse_than_convnets() -> None:
    """Lambda's 2-8 GPU rows (data/calibration/lambda_pytorch_train_v0_2022.csv and
    lambda_pytorch_train_v1_2024.csv, 1,241 rows with a 1-GPU row of the same job): per-GPU
    scaling efficiency is 0.98 for ResNet-50 (about 500 kernels a step) and 0.90-0.92 for
    BERT-large (about 2,000); on 8 H100 SXM at equal step time the model gives BERT-large the
    lower efficiency."""
    build1, build8 = make_build(H100_SXM), make_build(H100_SXM, count=8)
    res = make_workload("resnet50", dataset="synthetic", precision="fp16", batch_size=1280)
    bert = make_workload("bert-large-squad", dataset="synthetic", precision="fp16", batch_size=64)
    eff = {}
    for name, job in (("resnet50", res), ("bert", bert)):
        eff[name] = estimate(build8, job).samples_per_s / estimate(build1, job).samples_per_s / 8
    assert eff["bert"] < eff["resnet50"] - 0.01, eff


def test_eight_hidden_exchange_gpus_no_longer_scale_to_eight() -> None:
    """Lambda 2024 (github.com/lambdal/deeplearning-benchmark@aa5addb6,
    pytorch-train-throughput-fp16.csv; data/calibration/lambda_pytorch_train_v1_2024.csv):
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
