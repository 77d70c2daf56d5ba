"""Builds and workloads for the model tests, written inline so that a catalog edit cannot
change what a test checks."""

from __future__ import annotations

from typing import Any

from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.workloads import Workload, resolve_workload

# A GTX 1080 Ti as its datasheet gives it (11 GB GDDR5X, 484 GB/s, 11.34 TFLOPS FP32, no
# tensor cores, PCIe 3.0 x16, 250 W).
GTX_1080_TI: dict[str, Any] = {
    "name": "GTX 1080 Ti (test)", "memory_gb": 11, "memory_bandwidth_gb_s": 484,
    "fp32_tflops": 11.34, "fp16_tflops": 0.177, "tdp_w": 250, "pcie_gen": 3, "pcie_lanes": 16,
    "cooler": "blower",
}  # fmt: skip
# An RTX 3090 (24 GB, 936 GB/s, 35.6 FP32 / 71 FP16-tensor TFLOPS, PCIe 4.0, 350 W, open-air).
RTX_3090: dict[str, Any] = {
    "name": "RTX 3090 (test)", "memory_gb": 24, "memory_bandwidth_gb_s": 936, "fp32_tflops": 35.6,
    "tf32_tensor_tflops": 35.6, "fp16_tensor_tflops": 71, "bf16_tensor_tflops": 71, "tdp_w": 350,
    "pcie_gen": 4, "pcie_lanes": 16, "cooler": "open-air",
}  # fmt: skip
# An RTX A6000 (48 GB, 768 GB/s, 38.7 / 154.8 TFLOPS, blower, 300 W).
RTX_A6000: dict[str, Any] = {
    "name": "RTX A6000 (test)", "memory_gb": 48, "memory_bandwidth_gb_s": 768, "fp32_tflops": 38.7,
    "tf32_tensor_tflops": 77.4, "fp16_tensor_tflops": 154.8, "bf16_tensor_tflops": 154.8,
    "tdp_w": 300, "pcie_gen": 4, "pcie_lanes": 16, "cooler": "blower",
}  # fmt: skip
CPU_16: dict[str, Any] = {
    "name": "16-core CPU (test)", "family": "test", "cores": 16, "threads": 32, "base_ghz": 3.0,
    "pcie_lanes": 64, "pcie_gen": 4, "memory_channels": 4, "memory_type": "DDR4", "tdp_w": 150,
    "socket": "test",
}  # fmt: skip


def make_build(gpu: dict[str, Any] | None, count: int = 1, **extra: Any) -> Build:
    """A build with `count` GPUs of spec `gpu`, a 16-core CPU, 128 GB RAM, an NVMe SSD and a
    platinum PSU unless `extra` says otherwise."""
    doc: dict[str, Any] = {
        "name": "test build",
        "cpu": {"spec": CPU_16},
        "memory": {"size_gb": 128},
        "storage": [{"kind": "nvme", "capacity_tb": 2, "read_mb_s": 7000}],
        "psu": {"watts": 1600, "efficiency": "platinum"},
    }
    if gpu is not None:
        doc["gpus"] = [{"spec": gpu, "count": count}]
    doc.update(extra)
    return resolve_build(doc, "test")


def make_workload(model: str, **keys: Any) -> Workload:
    """A zoo workload with some keys overridden."""
    return resolve_workload({"model": model, **keys}, "test")
