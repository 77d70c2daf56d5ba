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
from typing import TYPE_CHECKING, Any

from dlrig.errors import CatalogError

if TYPE_CHECKING:
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
    # Measured / predicted throughput at the 10th and 90th percentile of the calibration
    # sources' residuals, each source weighing 1, widened until each source left out is
    # covered 80% on average (scripts/interval_band.py): the estimate's interval.
    throughput_ratio_low: float = 1.0
    throughput_ratio_high: float = 1.0
    # How far the model may misjudge one GPU against another on the same job (80% of pairs,
    # scripts/calibrate.py): errors both share cancel; the planner ties builds within it.
    comparison_ratio_low: float = 1.0
    # The same for two builds of one GPU model (count, cooling, host differ): the GPU's own
    # error cancels too, what is left is the scaling error (scripts/calibrate.py).
    same_gpu_ratio_low: float = 1.0
    # The interval of an estimate of several GPUs, the same from the rows of several GPUs.
    multi_gpu_ratio_low: float = 1.0
    multi_gpu_ratio_high: float = 1.0
    # The same two on a GPU model the fit has no rows of (meta.gpus): wider where the
    # calibration rows on GPUs their fit lacked erred more (scripts/interval_band.py).
    unfitted_gpu_ratio_low: float = 1.0
    unfitted_gpu_ratio_high: float = 1.0
    multi_gpu_unfitted_ratio_low: float = 1.0
    multi_gpu_unfitted_ratio_high: float = 1.0

    def fitted_gpu(self, name: str) -> bool:
        """Whether the fit had rows of this GPU model (meta.gpus, catalog names)."""
        return name in self.meta.get("gpus", ())

    def throughput_band(self, gpus: int, fitted_gpu: bool = True) -> tuple[float, float]:
        """(low, high) measured / predicted throughput an estimate of `gpus` GPUs carries, on a
        GPU model the fit had rows of or (`fitted_gpu` false) one it lacked."""
        if gpus > 1:
            if not fitted_gpu:
                return self.multi_gpu_unfitted_ratio_low, self.multi_gpu_unfitted_ratio_high
            return self.multi_gpu_ratio_low, self.multi_gpu_ratio_high
        if not fitted_gpu:
            return self.unfitted_gpu_ratio_low, self.unfitted_gpu_ratio_high
        return self.throughput_ratio_low, self.throughput_ratio_high

    @property
    def compute(self) -> ComputeFactors:
        """The shared factors of the per-layer-class compute model."""
        # Imported here: the rules read the calibration without the compute model.
        from dlrig.model.compute import ComputeFactors

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
        band = doc.get("uncertainty", {})
        low = float(band.get("throughput_ratio_low", 1.0))
        high = float(band.get("throughput_ratio_high", 1.0))
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
            throughput_ratio_low=low,
            throughput_ratio_high=high,
            comparison_ratio_low=float(band.get("comparison_ratio_low", 1.0)),
            same_gpu_ratio_low=float(band.get("same_gpu_ratio_low", 1.0)),
            multi_gpu_ratio_low=float(band.get("multi_gpu_ratio_low", low)),
            multi_gpu_ratio_high=float(band.get("multi_gpu_ratio_high", high)),
            unfitted_gpu_ratio_low=float(band.get("unfitted_gpu_ratio_low", low)),
            unfitted_gpu_ratio_high=float(band.get("unfitted_gpu_ratio_high", high)),
            multi_gpu_unfitted_ratio_low=float(
                band.get("multi_gpu_unfitted_ratio_low", band.get("multi_gpu_ratio_low", low))
            ),
            multi_gpu_unfitted_ratio_high=float(
                band.get("multi_gpu_unfitted_ratio_high", band.get("multi_gpu_ratio_high", high))
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
