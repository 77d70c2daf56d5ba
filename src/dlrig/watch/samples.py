"""What `dlrig watch` records at each tick: the host, the job's process tree, and each GPU.

Frozen values, units in the names; `sample_to_dict` / `sample_from_dict` are the one JSON form
(the history database stores it, `--show` replays it). Rates are over the interval since the
previous sample; a ratio is in [0, 1] (a share of time or of capacity).
"""

from __future__ import annotations

import dataclasses
import enum
import types
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

from dlrig.hardware.bmc import BmcReading
from dlrig.hardware.nvml import GpuReading
from dlrig.hardware.nvml.health import GpuHealth, XidEvent


@dataclass(frozen=True)
class DiskSample:
    """One block device over the interval: throughput and the share of time it was busy."""

    name: str
    read_mb_s: float
    write_mb_s: float
    busy_ratio: float  # iostat's %util / 100: time with at least one request in flight
    limit_read_mb_s: float | None = None  # its measured sequential read (a saved probe)

    @property
    def load_ratio(self) -> float:
        """How close the disk is to its limit: busy share, or reads over the measured rate."""
        if self.limit_read_mb_s:
            return max(self.busy_ratio, min(1.0, self.read_mb_s / self.limit_read_mb_s))
        return self.busy_ratio


@dataclass(frozen=True)
class JobSample:
    """The watched command's process tree over the interval.

    `main_*` is the training process (the command itself, or the one process a shell or
    launcher wrapper started); `workers_*` its descendants (DataLoader workers and the like).
    CPU is in cores (1.0 = one core busy the whole interval). `*_demand_cores` add the time
    the processes' main threads were runnable but waited for a CPU (`hardware.host.demand_s`):
    what they wanted to compute, which CPU time undercounts on a shared machine; None off Linux.
    """

    processes: int
    cpu_cores: float
    main_cpu_cores: float
    main_busiest_thread_cores: float
    workers: int
    workers_cpu_cores: float
    rss_bytes: int
    threads: int
    read_mb_s: float
    main_demand_cores: float | None = None
    workers_demand_cores: float | None = None


@dataclass(frozen=True)
class HostSample:
    """The machine over the interval: CPUs, memory, swap and disks."""

    cpu_busy_ratio: tuple[float, ...]  # per logical CPU
    iowait_ratio: float  # share of all CPU time spent idle with I/O outstanding
    memory_total_bytes: int
    memory_available_bytes: int
    swap_used_bytes: int
    swap_in_mb_s: float
    swap_out_mb_s: float
    disks: tuple[DiskSample, ...] = ()

    @property
    def cpu_count(self) -> int:
        """Logical CPUs of the host."""
        return len(self.cpu_busy_ratio)

    @property
    def cpu_busy_mean_ratio(self) -> float:
        """All CPUs together: the share of CPU time that was busy."""
        return sum(self.cpu_busy_ratio) / len(self.cpu_busy_ratio) if self.cpu_busy_ratio else 0.0


@dataclass(frozen=True)
class HealthSample:
    """Health at a tick where it was read (every `watch.host.HEALTH_REFRESH_S`): each GPU's
    counters, the Xids seen since the previous health sample (NVML's events and new kernel-log
    lines), and the BMC's latest reading when a BMC is watched (`bmc_error` when it failed)."""

    gpus: tuple[GpuHealth, ...] = ()
    xids: tuple[XidEvent, ...] = ()
    bmc: BmcReading | None = None
    bmc_error: str | None = None


@dataclass(frozen=True)
class Sample:
    """One tick: seconds since the job started, the host, the job and the GPUs (may be empty),
    and health where it was read at this tick (None at the others)."""

    t_s: float
    host: HostSample
    job: JobSample | None
    gpus: tuple[GpuReading, ...] = ()
    health: HealthSample | None = None


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    """The JSON form of a sample; GPU fields that are None are left out, and `health` too
    at a tick where it was not read."""
    data = {
        "t_s": sample.t_s,
        "host": dataclasses.asdict(sample.host),
        "job": None if sample.job is None else dataclasses.asdict(sample.job),
        "gpus": [
            {k: v for k, v in dataclasses.asdict(g).items() if v is not None and v != ()}
            for g in sample.gpus
        ],
    }
    if sample.health is not None:
        data["health"] = _plain(dataclasses.asdict(sample.health))
    return data


def _plain(value: Any) -> Any:
    """Enums as their values, for JSON."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _rebuild(kind: Any, value: Any) -> Any:
    """A value of the JSON form back as the type its field declares: dataclasses, tuples of
    them, enums and optional values (what the health sample's types hold)."""
    if value is None:
        return None
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        present = [a for a in get_args(kind) if a is not type(None)]
        return _rebuild(present[0], value) if len(present) == 1 else value
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = get_type_hints(kind)
        return kind(
            **{
                f.name: _rebuild(hints[f.name], value[f.name])
                for f in dataclasses.fields(kind)
                if f.name in value
            }
        )
    if origin is tuple:
        args = get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_rebuild(args[0], v) for v in value)
        return tuple(_rebuild(a, v) for a, v in zip(args, value, strict=False))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    return value


def sample_from_dict(data: dict[str, Any]) -> Sample:
    """Rebuild a sample from `sample_to_dict`'s form (lists back to tuples)."""
    host = dict(data["host"])
    host["cpu_busy_ratio"] = tuple(host["cpu_busy_ratio"])
    host["disks"] = tuple(DiskSample(**d) for d in host.get("disks", ()))
    job = data.get("job")
    health = data.get("health")
    return Sample(
        t_s=float(data["t_s"]),
        host=HostSample(**host),
        job=None if job is None else JobSample(**job),
        gpus=tuple(_gpu_from_dict(g) for g in data.get("gpus", ())),
        health=None if health is None else _rebuild(HealthSample, health),
    )


_TUPLE_FIELDS = ("nvlink_active", "nvlink_remote_bus_ids", "unsupported")


def _gpu_from_dict(data: dict[str, Any]) -> GpuReading:
    values = dict(data)
    for name in _TUPLE_FIELDS:
        if name in values:
            values[name] = tuple(values[name])
    if "failed" in values:
        values["failed"] = tuple(tuple(pair) for pair in values["failed"])
    return GpuReading(**values)
