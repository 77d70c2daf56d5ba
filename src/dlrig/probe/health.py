"""READING (touches the machine): every health source read into `HealthInputs` for
`dlrig.health` to judge: NVML's counters and Xid events, the kernel log's Xid lines, sysfs
(PCIe AER, EDAC, thermal zones), smartctl and a BMC. A source that cannot be read locally is a
note; a BMC the user named that cannot be read raises (the command exits 2)."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dlrig.hardware import kernel_log, smart, sysfs_health
from dlrig.hardware.bmc import BmcSource
from dlrig.hardware.nvml import NvmlSystem
from dlrig.hardware.nvml.health import GpuHealth, XidEvent
from dlrig.health.inputs import HealthInputs


class HealthSource(enum.StrEnum):
    """The sources `dlrig health --sources` chooses among."""

    NVML = "nvml"
    KERNEL_LOG = "kernel_log"
    SYSFS = "sysfs"
    SMART = "smart"
    BMC = "bmc"


class HealthNvml(Protocol):
    """What health reads from NVML (`dlrig.hardware.nvml.Nvml`)."""

    def system(self) -> NvmlSystem: ...
    def read_health(self) -> tuple[GpuHealth, ...]: ...
    def xid_events(self, timeout_ms: int = 0) -> tuple[XidEvent, ...]: ...


@dataclass(frozen=True)
class HealthOptions:
    """What to read: the sources, the filesystem root (/ on a machine; a copied tree of
    another), a saved kernel log to read instead of the ring buffer, and the BMC."""

    sources: Collection[HealthSource] = tuple(HealthSource)
    root: Path = Path("/")
    kernel_log_file: Path | None = None
    bmc: BmcSource | None = None
    smart_runner: smart.Runner | None = None


def now_utc() -> str:
    """The time now, ISO 8601 in UTC to the second."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def read_health_inputs(nvml: HealthNvml | None, options: HealthOptions) -> HealthInputs:
    """Every chosen source read once (the BMC last: it is the slowest)."""
    wanted = set(options.sources)
    taken = now_utc()
    notes: list[str] = []
    gpus: tuple[GpuHealth, ...] | None = None
    nvml_error = None
    nvml_xids: tuple[XidEvent, ...] = ()
    if HealthSource.NVML in wanted and nvml is not None:
        system = nvml.system()
        if system.available:
            nvml_xids = nvml.xid_events(0)  # registers now; what comes while reading counts
            gpus = nvml.read_health()
            nvml_xids += nvml.xid_events(0)
        else:
            nvml_error = system.error or "NVML unavailable"
    log = None
    if HealthSource.KERNEL_LOG in wanted:
        if options.kernel_log_file is not None:
            log = kernel_log.read_log_file(options.kernel_log_file)
        else:
            log = kernel_log.read_kernel_xids(
                options.root / "dev" / "kmsg",
                options.root / "proc" / "sys" / "kernel" / "random" / "boot_id",
            )
    aer = edac = zones = None
    if HealthSource.SYSFS in wanted:
        aer = sysfs_health.read_aer(options.root)
        edac = sysfs_health.read_edac(options.root)
        zones = sysfs_health.read_thermal_zones(options.root)
    drives = None
    if HealthSource.SMART in wanted:
        readings = smart.read_drives(options.smart_runner)
        drives = readings.drives
        if readings.note:
            notes.append(f"smartctl: {readings.note}")
    bmc = None
    if HealthSource.BMC in wanted and options.bmc is not None:
        bmc = options.bmc.read()
    return HealthInputs(
        taken_utc=taken,
        gpus=gpus,
        nvml_error=nvml_error,
        nvml_xids=nvml_xids,
        kernel_log=log,
        aer=aer,
        edac=edac,
        thermal_zones=zones,
        drives=drives,
        bmc=bmc,
        notes=tuple(notes),
        skipped=tuple(s.value for s in HealthSource if s not in wanted),
    )
