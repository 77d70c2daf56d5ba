"""torch.cuda measurements: "no CUDA" is data here; the real figures run on a lent GPU."""

from __future__ import annotations

import pytest

from dlrig.enums import Precision
from dlrig.hardware import torch_cuda


def test_cpu_only_torch_reports_no_cuda_as_data() -> None:
    status = torch_cuda.cuda_status()
    if status.available:
        pytest.skip("this machine has CUDA")
    assert status.reason is not None and status.reason.startswith("no CUDA")
    report = torch_cuda.measure_all(quick=True)
    assert report.available is False
    assert report.gpus == () and report.p2p_gb_s == ()


@pytest.mark.gpu
def test_real_gpu_figures_are_positive_and_bounded() -> None:
    if not torch_cuda.cuda_status().available:
        pytest.skip("no CUDA device")
    report = torch_cuda.measure_all(quick=True)
    gpu = report.gpus[0]
    # PCIe Gen5 x16 is 63 GB/s one way (PCI-SIG): a pinned copy above that is a timing bug.
    assert gpu.h2d_pinned_gb_s is not None and 0.5 < gpu.h2d_pinned_gb_s < 64
    assert gpu.device_memory_gb_s is not None and gpu.device_memory_gb_s > 50
    fp32 = next(m for m in gpu.matmul if m.precision is Precision.FP32)
    assert fp32.tflops is not None and fp32.tflops > 0.5
