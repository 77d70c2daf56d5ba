"""What a probe found: plain frozen values, no measuring here (see probe/run.py for that)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dlrig.hardware.disk import DiskSpeed
from dlrig.hardware.host import CpuInfo, Filesystem, MemoryInfo
from dlrig.hardware.nvml import GpuPair, GpuReading, NvmlSystem
from dlrig.hardware.torch_cuda import CudaStatus, GpuBandwidth
from dlrig.probe.measure_loader import LoaderScaling
from dlrig.probe.measure_memory import MemoryBandwidth


@dataclass(frozen=True)
class DiskProbe:
    """A filesystem and, when it could be measured, its speed (else the reason in `error`)."""

    filesystem: Filesystem
    speed: DiskSpeed | None
    error: str | None = None


@dataclass(frozen=True)
class GpuProbe:
    """One GPU: its NVML reading at rest, one under load (when torch could load it), torch's
    bandwidth and matmul figures, and the catalog part it matched."""

    reading: GpuReading
    loaded: GpuReading | None = None
    torch: GpuBandwidth | None = None
    catalog_name: str | None = None

    @property
    def index(self) -> int:
        """NVML's index of the GPU."""
        return self.reading.index

    @property
    def link_reading(self) -> GpuReading:
        """The reading to judge the PCIe link by: under load when there is one (idle links
        train down to save power, so an idle Gen1 link says nothing)."""
        return self.loaded if self.loaded is not None else self.reading


@dataclass(frozen=True)
class ProbeResult:
    """Everything one probe measured or read, and what it could not (as `notes`).
    `nccl_p2p_disabled`: the probe's environment sets NCCL_P2P_DISABLE, so the jobs started
    from it get no peer-to-peer from NCCL, over NVLink or PCIe."""

    host: str
    time_utc: str
    quick: bool
    cpu: CpuInfo
    memory: MemoryInfo
    memory_bandwidth: tuple[MemoryBandwidth, ...]
    disks: tuple[DiskProbe, ...]
    loader: LoaderScaling | None
    nvml: NvmlSystem
    gpus: tuple[GpuProbe, ...]
    topology: tuple[GpuPair, ...]
    cuda: CudaStatus
    p2p_gb_s: tuple[tuple[float | None, ...], ...] = ()
    nccl_p2p_disabled: bool = False
    notes: tuple[str, ...] = ()
    stage_s: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
