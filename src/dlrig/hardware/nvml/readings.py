"""What NVML reports, as dlrig keeps it: the system, one GPU's reading, a pair of GPUs, the clock
event bits and topology levels; the backend and calls-layer protocols."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol

from dlrig.units import bytes_to_gib

NVLINK_MAX_LINKS = 18
"""Links probed per GPU; an H100/H200 SXM has 18. Probing stops at the first link NVML rejects."""


class ClockEventReason(enum.IntFlag):
    """Why the clocks are below their maximum: NVML's `nvmlClocksEventReason*` bit values."""

    GPU_IDLE = 0x1
    APPLICATIONS_CLOCKS_SETTING = 0x2
    SW_POWER_CAP = 0x4
    HW_SLOWDOWN = 0x8
    SYNC_BOOST = 0x10
    SW_THERMAL_SLOWDOWN = 0x20
    HW_THERMAL_SLOWDOWN = 0x40
    HW_POWER_BRAKE_SLOWDOWN = 0x80
    DISPLAY_CLOCK_SETTING = 0x100


THERMAL_REASONS = ClockEventReason.SW_THERMAL_SLOWDOWN | ClockEventReason.HW_THERMAL_SLOWDOWN
POWER_REASONS = ClockEventReason.SW_POWER_CAP | ClockEventReason.HW_POWER_BRAKE_SLOWDOWN


class TopologyLevel(enum.StrEnum):
    """The nearest common ancestor of two GPUs on the PCIe tree (NVML_TOPOLOGY_*), near to far."""

    INTERNAL = "internal"  # the same board (a dual-GPU card)
    SINGLE = "single"  # one PCIe switch between them
    MULTIPLE = "multiple"  # several PCIe switches, no host bridge
    HOSTBRIDGE = "hostbridge"  # the same host bridge
    NODE = "node"  # the same NUMA node (CPU), different host bridges
    SYSTEM = "system"  # across the CPUs' interconnect (QPI/UPI/Infinity Fabric)


TOPOLOGY_CODES = {
    0: TopologyLevel.INTERNAL,
    10: TopologyLevel.SINGLE,
    20: TopologyLevel.MULTIPLE,
    30: TopologyLevel.HOSTBRIDGE,
    40: TopologyLevel.NODE,
    50: TopologyLevel.SYSTEM,
}


class NvmlCallError(Exception):
    """One NVML call failed; `kind` is the pynvml error class name without `NVMLError_`."""

    def __init__(self, kind: str, message: str | None = None) -> None:
        super().__init__(message or kind)
        self.kind = kind
        self.message = message or kind


@dataclass(frozen=True)
class NvmlSystem:
    """The library and driver: whether NVML answered, and the versions it reports."""

    available: bool
    error: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    device_count: int


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one moment. None = unsupported or failed (see `unsupported` and `failed`).

    `memory_used_bytes` is nvmlDeviceGetMemoryInfo_v2's `used` where the driver has v2 (the
    memory the processes and the driver's contexts hold, without the firmware's `reserved`
    part, which is given apart); v1's `used` counts the reserved memory as used too, so an idle
    GPU looks hundreds of MB full.
    """

    index: int
    lost: bool = False
    error: str | None = None
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_reserved_bytes: int | None = None  # only from nvmlDeviceGetMemoryInfo_v2
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_tx_kb_s: int | None = None
    pcie_rx_kb_s: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    power_limit_min_w: float | None = None
    power_limit_max_w: float | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    clock_graphics_mhz: int | None = None
    clock_sm_mhz: int | None = None
    clock_memory_mhz: int | None = None
    clock_sm_max_mhz: int | None = None
    clock_memory_max_mhz: int | None = None
    clocks_event_reasons: int | None = None
    utilization_gpu_pct: int | None = None
    utilization_memory_pct: int | None = None
    fan_speed_pct: int | None = None
    ecc_enabled: bool | None = None
    nvlink_active: tuple[bool, ...] | None = None
    nvlink_remote_bus_ids: tuple[str | None, ...] | None = None
    unsupported: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = field(default=())

    @property
    def memory_total_gb(self) -> float | None:
        """Total device memory in GiB (2**30 bytes, the unit of every memory figure:
        dlrig.units)."""
        return None if self.memory_total_bytes is None else bytes_to_gib(self.memory_total_bytes)

    @property
    def event_reasons(self) -> ClockEventReason | None:
        """The clock event (throttle) reasons as flags, None when unknown."""
        if self.clocks_event_reasons is None:
            return None
        known = sum(int(r) for r in ClockEventReason)
        return ClockEventReason(self.clocks_event_reasons & known)

    @property
    def event_reason_names(self) -> tuple[str, ...]:
        """Lower-case names of the active reason bits (`hw_thermal_slowdown`, ...)."""
        reasons = self.event_reasons
        if reasons is None:
            return ()
        return tuple(str(r.name).lower() for r in ClockEventReason if r in reasons)

    @property
    def thermal_throttled(self) -> bool | None:
        """True when a software or hardware thermal slowdown bit is set."""
        reasons = self.event_reasons
        return None if reasons is None else bool(reasons & THERMAL_REASONS)

    @property
    def power_capped(self) -> bool | None:
        """True when the software power cap or the hardware power brake bit is set."""
        reasons = self.event_reasons
        return None if reasons is None else bool(reasons & POWER_REASONS)

    @property
    def nvlink_active_count(self) -> int | None:
        """Active NVLink links, None when the GPU has no NVLink (or NVML cannot tell)."""
        return None if self.nvlink_active is None else sum(self.nvlink_active)


@dataclass(frozen=True)
class GpuPair:
    """How two GPUs reach each other: the common PCIe ancestor and NVLink links between them."""

    a: int
    b: int
    level: TopologyLevel | None
    nvlinks: int


class NvmlBackend(Protocol):
    """What the probe and the monitor need from NVML; `Nvml` implements it."""

    def system(self) -> NvmlSystem: ...
    def device_count(self) -> int: ...
    def read_gpu(self, index: int) -> GpuReading: ...
    def read_gpus(self) -> tuple[GpuReading, ...]: ...
    def topology(self) -> tuple[GpuPair, ...]: ...
    def close(self) -> None: ...


class NvmlCalls(Protocol):
    """The calls layer below `Nvml`: pynvml itself, a replay of a fixture, or a recorder."""

    def init(self) -> None: ...
    def system(self, call: str) -> Any: ...
    def device(self, index: int, call: str, arg: str | None = None) -> Any: ...
    def pair(self, a: int, b: int, call: str) -> Any: ...
    def events(self, timeout_ms: int) -> list[dict[str, Any]]: ...
    def begin_sample(self) -> None: ...
    def shutdown(self) -> None: ...
