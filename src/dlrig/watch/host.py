"""Samplers of the host and of the job's process tree: rates from `dlrig.hardware.counters`.

Each sampler keeps the previous cumulative counters and returns rates over the interval since
its last call; the first call only primes them (its rates are over the time since creation).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from dlrig.errors import DlrigError
from dlrig.hardware.bmc import BmcReading, BmcSource
from dlrig.hardware.counters import (
    ProcessCounters,
    ProcessTree,
    TreeCounters,
    read_host_counters,
)
from dlrig.hardware.kernel_log import KernelXids
from dlrig.hardware.nvml import GpuReading, Nvml, NvmlBackend
from dlrig.hardware.nvml.health import GpuHealth, XidEvent
from dlrig.units import MB, ms_to_s
from dlrig.watch.samples import DiskSample, HealthSample, HostSample, JobSample


class HostSampler(Protocol):
    """Samples the machine: CPUs, memory, swap, disks."""

    def sample(self) -> HostSample: ...


class GpuSampler(Protocol):
    """Samples every GPU (an empty tuple on a host without them)."""

    def sample(self) -> tuple[GpuReading, ...]: ...


class PsutilHostSampler:
    """The host through `dlrig.hardware.counters`: per-CPU busy share and iowait, memory, swap,
    whole disks.

    `disk_limits_mb_s`: measured sequential read rates by disk name (from a saved probe), so
    that a disk reading at its measured rate counts as saturated however busy it looks.
    """

    def __init__(self, disk_limits_mb_s: dict[str, float] | None = None) -> None:
        self._limits = dict(disk_limits_mb_s or {})
        self._last = read_host_counters()

    def sample(self) -> HostSample:
        """Rates since the previous call."""
        now = read_host_counters()
        last, self._last = self._last, now
        interval_s = max(now.at_s - last.at_s, 1e-6)
        busy, iowait_s, total_s = [], 0.0, 0.0
        for (total, idle, iowait), (total0, idle0, iowait0) in zip(now.cpu, last.cpu, strict=False):
            d_total = total - total0
            busy.append(_clamp(1.0 - (idle - idle0) / d_total) if d_total > 0 else 0.0)
            iowait_s += iowait - iowait0
            total_s += d_total
        disks = []
        for name, (read_b, write_b, busy_ms) in now.disks.items():
            read0, write0, busy0 = last.disks.get(name, (read_b, write_b, busy_ms))
            disks.append(
                DiskSample(
                    name=name,
                    read_mb_s=(read_b - read0) / MB / interval_s,
                    write_mb_s=(write_b - write0) / MB / interval_s,
                    busy_ratio=_clamp(ms_to_s(busy_ms - busy0) / interval_s),
                    limit_read_mb_s=self._limits.get(name),
                )
            )
        return HostSample(
            cpu_busy_ratio=tuple(busy),
            iowait_ratio=_clamp(iowait_s / total_s) if total_s > 0 else 0.0,
            memory_total_bytes=now.memory_total_bytes,
            memory_available_bytes=now.memory_available_bytes,
            swap_used_bytes=now.swap_used_bytes,
            swap_in_mb_s=max(0, now.swap_in_bytes - last.swap_in_bytes) / MB / interval_s,
            swap_out_mb_s=max(0, now.swap_out_bytes - last.swap_out_bytes) / MB / interval_s,
            disks=tuple(disks),
        )


def _clamp(ratio: float) -> float:
    return min(1.0, max(0.0, ratio))


class TreeReader(Protocol):
    """Reads a process tree's cumulative counters (`dlrig.hardware.counters.ProcessTree`)."""

    def read(self) -> TreeCounters | None: ...


class PsutilJobSampler:
    """The process tree rooted at `pid`: CPU, RSS, threads, bytes read; the main process's
    busiest thread (a serial loader in the training process shows as one thread at 1.0).

    Workers that start and exit between two samples (a DataLoader with
    `persistent_workers=False` and short epochs) are counted through the CPU time of reaped
    children, less what was already counted while they were seen alive.
    """

    def __init__(self, pid: int, tree: TreeReader | None = None) -> None:
        self._tree: TreeReader = tree if tree is not None else ProcessTree(pid)
        self._last: dict[int, ProcessCounters] = {}
        self._first_cpu_s: dict[int, float] = {}
        self._last_s = time.monotonic()

    def sample(self) -> JobSample | None:
        """The tree's rates since the previous call; None when the root has exited."""
        tree = self._tree.read()
        if tree is None or not tree.processes:
            return None
        interval_s = max(tree.at_s - self._last_s, 1e-6)
        self._last_s = tree.at_s
        current = {proc.pid: proc for proc in tree.processes}
        cpu_s = main_cpu_s = workers_cpu_s = busiest_s = reaped_s = 0.0
        main_demand: float | None = None
        workers_demand: float | None = None
        read_bytes_delta = workers = 0
        for proc in tree.processes:
            last = self._last.get(proc.pid)
            if last is None:
                self._first_cpu_s[proc.pid] = proc.cpu_s
                continue  # first sight: its rates start with the next sample
            used_s = max(0.0, proc.cpu_s - last.cpu_s)
            cpu_s += used_s
            reaped_s += max(0.0, proc.reaped_cpu_s - last.reaped_cpu_s)
            read_bytes_delta += max(0, proc.read_bytes - last.read_bytes)
            demand = (
                None
                if proc.demand_s is None or last.demand_s is None
                else max(0.0, proc.demand_s - last.demand_s) / interval_s
            )
            if proc.pid == tree.main_pid:
                main_cpu_s = used_s
                main_demand = demand
                for tid, thread_s in proc.thread_cpu_s.items():
                    busiest_s = max(busiest_s, thread_s - last.thread_cpu_s.get(tid, thread_s))
            elif proc.pid != tree.root_pid:
                workers += 1
                workers_cpu_s += used_s
                if demand is not None:
                    workers_demand = (workers_demand or 0.0) + demand
        # A reaped child's lifetime CPU lands in its parent's counter; the part already counted
        # from its own samples is taken out so that it counts once.
        gone = [pid for pid in self._last if pid not in current]
        counted_s = sum(self._last[pid].cpu_s - self._first_cpu_s.pop(pid, 0.0) for pid in gone)
        unseen_s = max(0.0, reaped_s - counted_s)
        cpu_s += unseen_s
        workers_cpu_s += unseen_s
        self._last = current
        return JobSample(
            processes=len(current),
            cpu_cores=cpu_s / interval_s,
            main_cpu_cores=main_cpu_s / interval_s,
            main_busiest_thread_cores=min(busiest_s / interval_s, 1.0),
            workers=workers,
            workers_cpu_cores=workers_cpu_s / interval_s,
            rss_bytes=sum(proc.rss_bytes for proc in tree.processes),
            threads=sum(proc.threads for proc in tree.processes),
            read_mb_s=read_bytes_delta / MB / interval_s,
            main_demand_cores=main_demand,
            workers_demand_cores=workers_demand,
        )


class NvmlGpuSampler:
    """Every GPU through `dlrig.hardware.nvml` (nothing when NVML is unavailable)."""

    def __init__(self, nvml: NvmlBackend) -> None:
        self._nvml = nvml

    @property
    def available(self) -> bool:
        """Whether NVML answered and sees at least one GPU."""
        return self._nvml.device_count() > 0

    def sample(self) -> tuple[GpuReading, ...]:
        """One reading per GPU; a lost GPU is an entry with `lost=True`."""
        if self._nvml.device_count() == 0:
            return ()
        return self._nvml.read_gpus()


HEALTH_REFRESH_S = 10.0
"""Health counters (ECC, remapped rows, NVLink and PCIe error counters: some 90 NVML calls per
H100) and the kernel log are read at most this often; dcgm-exporter collects every 30 s."""
BMC_REFRESH_S = 30.0
"""A BMC is read at most this often, on a thread of its own: a Redfish walk is tens of requests
that a BMC answers in seconds (ipmi_exporter and redfish_exporter scrape every 30-60 s)."""


class HealthSampler:
    """Health while a job runs: every `refresh_s` each GPU's counters and the Xids that came
    since (NVML's event set and new `NVRM: Xid` lines of the kernel log); the BMC's newest
    reading, read on a background thread every `bmc_refresh_s`, rides on the next health sample.
    `sample()` returns None at the ticks in between."""

    def __init__(
        self,
        nvml: Nvml | None,
        *,
        bmc: BmcSource | None = None,
        kernel_log: Callable[[], KernelXids] | None = None,
        refresh_s: float = HEALTH_REFRESH_S,
        bmc_refresh_s: float = BMC_REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._nvml = nvml
        self._bmc = bmc
        self._kernel_log = kernel_log
        self._refresh_s = refresh_s
        self._bmc_refresh_s = bmc_refresh_s
        self._clock = clock
        self._last_s: float | None = None
        self._log_where: tuple[str | None, int | None] | None = None
        self._lock = threading.Lock()
        self._bmc_new: tuple[BmcReading | None, str | None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._early_xids: tuple[XidEvent, ...] = ()

    def start(self) -> None:
        """Note where the kernel log stands (older Xids are not this job's), register for
        NVML's Xid events, read the BMC once (a BMC that cannot be read raises, before any job
        starts) and go on reading it on a thread. A second call does nothing."""
        if self._started:
            return
        self._started = True
        if self._kernel_log is not None:
            log = self._kernel_log()
            self._log_where = (log.boot_id, log.last_seq)
        if self._nvml is not None and self._nvml.device_count():
            self._early_xids = self._nvml.xid_events(0)  # registers; kept for the first sample
        if self._bmc is not None:
            self._bmc_new = (self._bmc.read(), None)
            self._thread = threading.Thread(target=self._read_bmc, name="dlrig-bmc", daemon=True)
            self._thread.start()

    def _read_bmc(self) -> None:
        bmc = self._bmc
        while bmc is not None and not self._stop.wait(self._bmc_refresh_s):
            try:
                reading: tuple[BmcReading | None, str | None] = (bmc.read(), None)
            except DlrigError as exc:
                reading = (None, str(exc))
            with self._lock:
                self._bmc_new = reading

    def _new_log_xids(self) -> tuple[XidEvent, ...]:
        if self._kernel_log is None:
            return ()
        log = self._kernel_log()
        boot, last = self._log_where or (None, None)
        fresh = tuple(
            e
            for e in log.events
            if e.boot_id != boot or last is None or (e.seq is not None and e.seq > last)
        )
        if log.last_seq is not None:
            self._log_where = (log.boot_id, log.last_seq)
        return fresh

    def sample(self, force: bool = False) -> HealthSample | None:
        """Health now, when `refresh_s` has passed since the last (or `force`: the run's last
        tick, so that a short job's Xids are not missed); None otherwise."""
        now = self._clock()
        due = self._last_s is None or now - self._last_s >= self._refresh_s - 0.05
        if not (due or force):
            return None
        self._last_s = now
        gpus: tuple[GpuHealth, ...] = ()
        xids, self._early_xids = self._early_xids, ()
        if self._nvml is not None and self._nvml.device_count():
            gpus = self._nvml.read_health()
            xids += self._nvml.xid_events(0)
        xids += self._new_log_xids()
        with self._lock:
            fresh, self._bmc_new = self._bmc_new, None
        bmc, error = fresh if fresh is not None else (None, None)
        if not (gpus or xids or bmc is not None or error is not None):
            return None  # nothing to say (no GPU, no Xid, no BMC): no health in the sample
        return HealthSample(gpus=gpus, xids=xids, bmc=bmc, bmc_error=error)

    def close(self) -> None:
        """Stop the BMC thread (a reading under way finishes within its own budget)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
