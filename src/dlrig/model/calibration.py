"""The model's fitted and sourced factors, read once from `model/data/calibration.toml`.

`scripts/calibrate.py` regenerates that file from the measurements in the repository's
`data/calibration/` (Lambda's training throughput, NCCL bus bandwidth, PCIe copy rates; sources
and terms in its README); the factors are data, not constants in code. Parsed once per process
into frozen dataclasses: no pydantic in the hot path.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from dlrig.errors import CatalogError
from dlrig.model.compute import ComputeFactors


@dataclass(frozen=True)
class Calibration:
    """Every factor the performance model uses; see model/data/calibration.toml for sources."""

    matmul_efficiency: dict[str, float]
    conv_efficiency: dict[str, float]
    memory_efficiency: float
    gpu_kernel_s: float
    host_kernel_s: float
    host_overlap_exponent: float
    intensity_scale: float
    transpose_instructions_per_move: float
    pcie_pinned_efficiency: float
    pcie_pageable_efficiency: float
    nvlink_busbw_efficiency: float
    pcie_busbw_efficiency: float
    collective_latency_s: float
    bucket_bytes: float
    network_efficiency: float
    host_memory_bandwidth_gb_s: float
    cpu_flops_per_cycle: float
    cpu_efficiency: float
    cuda_context_gb: float
    allocator_overhead_fraction: float
    thermal_factor: dict[str, float]
    psu_efficiency: dict[str, float]
    gpu_average_power_fraction: float
    meta: dict[str, Any] = field(default_factory=dict)
    # Measured / predicted throughput at the 10th and 90th percentile of the model's
    # leave-one-architecture-out residuals (scripts/calibrate.py): the estimate's interval.
    throughput_ratio_low: float = 1.0
    throughput_ratio_high: float = 1.0
    # How far the model may misjudge one GPU against another on the same job (80% of pairs,
    # scripts/calibrate.py): errors both share cancel; the planner ties builds within it.
    comparison_ratio_low: float = 1.0
    # The same for two builds of one GPU model (count, cooling, host differ): the GPU's own
    # error cancels too, what is left is the scaling error (scripts/calibrate.py).
    same_gpu_ratio_low: float = 1.0

    @property
    def compute(self) -> ComputeFactors:
        """The shared factors of the per-layer-class compute model."""
        return ComputeFactors(
            self.matmul_efficiency, self.conv_efficiency, self.memory_efficiency,
            self.gpu_kernel_s, self.host_kernel_s, self.host_overlap_exponent,
            self.intensity_scale, self.transpose_instructions_per_move,
        )  # fmt: skip


def _floats(table: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in table.items()}


def parse_calibration(doc: dict[str, Any], source: str) -> Calibration:
    """Build a Calibration from the TOML document's tables."""
    try:
        compute = doc["compute"]
        pcie = doc["pcie"]
        coll = doc["collectives"]
        cpu = doc["cpu"]
        mem = doc["memory"]
        power = doc["power"]
        return Calibration(
            matmul_efficiency=_floats(compute["matmul_efficiency"]),
            conv_efficiency=_floats(compute["conv_efficiency"]),
            memory_efficiency=float(compute["memory_efficiency"]),
            gpu_kernel_s=float(compute["gpu_kernel_s"]),
            host_kernel_s=float(compute["host_kernel_s"]),
            host_overlap_exponent=float(compute["host_overlap_exponent"]),
            intensity_scale=float(compute["intensity_scale"]),
            transpose_instructions_per_move=float(compute["transpose_instructions_per_move"]),
            pcie_pinned_efficiency=float(pcie["pinned_efficiency"]),
            pcie_pageable_efficiency=float(pcie["pageable_efficiency"]),
            nvlink_busbw_efficiency=float(coll["nvlink_busbw_efficiency"]),
            pcie_busbw_efficiency=float(coll["pcie_busbw_efficiency"]),
            collective_latency_s=float(coll["latency_s"]),
            bucket_bytes=float(coll["bucket_bytes"]),
            network_efficiency=float(coll["network_efficiency"]),
            host_memory_bandwidth_gb_s=float(cpu["memory_bandwidth_gb_s"]),
            cpu_flops_per_cycle=float(cpu["flops_per_cycle"]),
            cpu_efficiency=float(cpu["efficiency"]),
            cuda_context_gb=float(mem["cuda_context_gb"]),
            allocator_overhead_fraction=float(mem["allocator_overhead_fraction"]),
            thermal_factor=_floats(doc["thermal"]),
            psu_efficiency=_floats(power["psu_efficiency"]),
            gpu_average_power_fraction=float(power["gpu_average_power_fraction"]),
            meta=dict(doc.get("meta", {})),
            throughput_ratio_low=float(doc.get("uncertainty", {}).get("throughput_ratio_low", 1.0)),
            throughput_ratio_high=float(
                doc.get("uncertainty", {}).get("throughput_ratio_high", 1.0)
            ),
            comparison_ratio_low=float(doc.get("uncertainty", {}).get("comparison_ratio_low", 1.0)),
            same_gpu_ratio_low=float(doc.get("uncertainty", {}).get("same_gpu_ratio_low", 1.0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{source}: malformed calibration data ({exc})") from None


@functools.lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The calibration shipped with dlrig (parsed once per process)."""
    resource = resources.files("dlrig.model").joinpath("data", "calibration.toml")
    with resource.open("rb") as fh:
        return parse_calibration(tomllib.load(fh), "model/data/calibration.toml")


def load_calibration(path: str | Path) -> Calibration:
    """A calibration from a TOML file (what scripts/calibrate.py writes)."""
    p = Path(path)
    with p.open("rb") as fh:
        return parse_calibration(tomllib.load(fh), str(p))
