"""What the health checks judge: the readings of every source (`HealthInputs`), and the earlier
reading they compare counters with (`Baseline`), so that growth since the last probe or saved
health reading is judged, not a counter's lifetime total.

Counters are kept flat (`counters()`: "gpu/<uuid>/ecc_aggregate_uncorrected" -> 3), which is
also what the history stores for the next comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dlrig.hardware.bmc import BmcReading
from dlrig.hardware.kernel_log import KernelXids
from dlrig.hardware.nvml.health import NVLINK_COUNTERS, GpuHealth, XidEvent
from dlrig.hardware.smart import DriveHealth
from dlrig.hardware.sysfs_health import AerCounters, EdacCounters, ThermalZone

GPU_COUNTERS = (
    "ecc_volatile_corrected",
    "ecc_volatile_uncorrected",
    "ecc_aggregate_corrected",
    "ecc_aggregate_uncorrected",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "pcie_replay_count",
)
DRIVE_COUNTERS = ("media_errors", "reallocated_sectors", "pending_sectors", "offline_uncorrectable")


@dataclass(frozen=True)
class HealthInputs:
    """Every source's reading at one moment. A source not read is None with the reason in
    `notes`; `gpus` is None when NVML is unavailable (`nvml_error` says why)."""

    taken_utc: str
    gpus: tuple[GpuHealth, ...] | None = None
    nvml_error: str | None = None
    nvml_xids: tuple[XidEvent, ...] = ()
    kernel_log: KernelXids | None = None
    aer: tuple[AerCounters, ...] | None = None
    edac: tuple[EdacCounters, ...] | None = None
    thermal_zones: tuple[ThermalZone, ...] | None = None
    drives: tuple[DriveHealth, ...] | None = None
    bmc: BmcReading | None = None
    notes: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # sources left out on purpose (`--sources`)

    @property
    def xids(self) -> tuple[XidEvent, ...]:
        """NVML's events and the kernel log's lines together."""
        logged = self.kernel_log.events if self.kernel_log is not None else ()
        return self.nvml_xids + logged


def gpu_key(gpu: GpuHealth) -> str:
    """A GPU's key in the counters: its UUID (stable across reboots), else its index."""
    return gpu.uuid or f"index{gpu.index}"


def counters(inputs: HealthInputs) -> dict[str, float]:
    """Every counter of the reading, flat, for the next reading to compare with."""
    out: dict[str, float] = {}
    for gpu in inputs.gpus or ():
        if gpu.lost:
            continue
        for name in GPU_COUNTERS:
            value = getattr(gpu, name)
            if value is not None:
                out[f"gpu/{gpu_key(gpu)}/{name}"] = value
        for link in gpu.nvlink_errors or ():
            for name in NVLINK_COUNTERS:
                value = getattr(link, name)
                if value is not None:
                    out[f"gpu/{gpu_key(gpu)}/nvlink{link.link}/{name}"] = value
    for aer in inputs.aer or ():
        for name in ("correctable", "nonfatal", "fatal"):
            value = getattr(aer, name)
            if value is not None:
                out[f"aer/{aer.device}/{name}"] = value
    for mc in inputs.edac or ():
        for name in ("corrected", "uncorrected"):
            value = getattr(mc, name)
            if value is not None:
                out[f"edac/{mc.name}/{name}"] = value
    for drive in inputs.drives or ():
        for name in DRIVE_COUNTERS:
            value = getattr(drive, name)
            if value is not None:
                out[f"drive/{drive.serial or drive.name}/{name}"] = value
    return out


@dataclass(frozen=True)
class Baseline:
    """The earlier reading: when, from what (`probe` or `health`), its counters, the GPUs it
    saw, where the kernel log stood, and the newest BMC log entry it had seen."""

    taken_utc: str
    source: str
    counters: dict[str, float] = field(default_factory=dict)
    gpu_count: int | None = None
    gpu_uuids: tuple[str, ...] = ()
    kernel_boot_id: str | None = None
    kernel_last_seq: int | None = None

    def growth(self, key: str, now: float | None) -> float | None:
        """How much a counter grew since the baseline; None when either side is unknown. A
        counter below its earlier value was reset (a reboot, a driver reload): all of it is new."""
        if now is None or key not in self.counters:
            return None
        before = self.counters[key]
        return now if now < before else now - before


def baseline_from(inputs: HealthInputs, source: str) -> Baseline:
    """The baseline a reading leaves for the next one."""
    gpus = [g for g in inputs.gpus or () if not g.lost]
    log = inputs.kernel_log
    return Baseline(
        taken_utc=inputs.taken_utc,
        source=source,
        counters=counters(inputs),
        gpu_count=None if inputs.gpus is None else len(inputs.gpus),
        gpu_uuids=tuple(g.uuid for g in gpus if g.uuid),
        kernel_boot_id=None if log is None else log.boot_id,
        kernel_last_seq=None if log is None else log.last_seq,
    )


def baseline_to_dict(baseline: Baseline) -> dict[str, Any]:
    """The JSON form the history keeps (and `--json` shows as `baseline`)."""
    return {
        "taken_utc": baseline.taken_utc,
        "source": baseline.source,
        "counters": dict(baseline.counters),
        "gpu_count": baseline.gpu_count,
        "gpu_uuids": list(baseline.gpu_uuids),
        "kernel_boot_id": baseline.kernel_boot_id,
        "kernel_last_seq": baseline.kernel_last_seq,
    }


def baseline_from_dict(data: dict[str, Any]) -> Baseline:
    """Rebuild a baseline from `baseline_to_dict`'s form (unknown keys ignored)."""
    return Baseline(
        taken_utc=str(data.get("taken_utc", "")),
        source=str(data.get("source", "health")),
        counters={str(k): float(v) for k, v in (data.get("counters") or {}).items()},
        gpu_count=data.get("gpu_count"),
        gpu_uuids=tuple(data.get("gpu_uuids") or ()),
        kernel_boot_id=data.get("kernel_boot_id"),
        kernel_last_seq=data.get("kernel_last_seq"),
    )
