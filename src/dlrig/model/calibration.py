"""The model's fitted and sourced factors, read once from `data/calibration.toml`.

`scripts/calibrate.py` regenerates that file from the measurements in `shared/calibration/`
(Lambda's training throughput, NCCL bus bandwidth, PCIe copy rates); the factors are data, not
constants in code. Parsed once per process into frozen dataclasses: no pydantic in the hot path.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from dlrig.errors import CatalogError


@dataclass(frozen=True)
class WorkloadFactors:
    """Per-model facts fitted on measured throughput: memory-bound bytes moved per byte of
    saved activation, a fixed per-step time (kernel launches, sequential decoder steps), and
    the matmul efficiency on shader cores and on 16-bit tensor cores (which depend on the
    model's layers: cuDNN's Winograd convolutions beat the counted FLOPs on shader cores,
    recurrent layers and ops autocast keeps in fp32 fall short)."""

    memory_passes: float
    step_overhead_s: float
    simt_efficiency: float | None = None
    tensor_efficiency: float | None = None


@dataclass(frozen=True)
class Calibration:
    """Every factor the performance model uses; see data/calibration.toml for sources."""

    matmul_efficiency: dict[str, float]
    memory_efficiency: float
    default_memory_passes: float
    default_step_overhead_s: float
    workloads: dict[str, WorkloadFactors]
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

    def workload(self, name: str) -> WorkloadFactors:
        """The fitted factors of a zoo workload, or the defaults for any other."""
        found = self.workloads.get(name)
        if found is not None:
            return found
        return WorkloadFactors(self.default_memory_passes, self.default_step_overhead_s)


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
            memory_efficiency=float(compute["memory_efficiency"]),
            default_memory_passes=float(compute["default_memory_passes"]),
            default_step_overhead_s=float(compute["default_step_overhead_s"]),
            workloads={
                name: WorkloadFactors(
                    float(t["memory_passes"]),
                    float(t["step_overhead_s"]),
                    float(t["simt_efficiency"]) if "simt_efficiency" in t else None,
                    float(t["tensor_efficiency"]) if "tensor_efficiency" in t else None,
                )
                for name, t in compute.get("workloads", {}).items()
            },
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
