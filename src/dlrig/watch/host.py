"""Samplers of the host and of the job's process tree, through psutil (/proc on Linux).

Each sampler keeps the previous cumulative counters and returns rates over the interval since
its last call; the first call only primes them (its rates are over the time since creation).
A process that exits between listing and reading is skipped: processes come and go.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Protocol

import psutil

from dlrig.hardware.host import demand_s
from dlrig.hardware.nvml import GpuReading, NvmlBackend
from dlrig.units import MB, ms_to_s
from dlrig.watch.samples import DiskSample, HostSample, JobSample

# Names of block devices that are not disks: loop-mounted files and RAM disks.
_NOT_DISKS = ("loop", "ram", "zram")


class HostSampler(Protocol):
    """Samples the machine: CPUs, memory, swap, disks."""

    def sample(self) -> HostSample: ...


class JobSampler(Protocol):
    """Samples the watched process tree; None once it is gone."""

    def sample(self) -> JobSample | None: ...


class GpuSampler(Protocol):
    """Samples every GPU (an empty tuple on a host without them)."""

    def sample(self) -> tuple[GpuReading, ...]: ...


@dataclass
class _Counters:
    at_s: float
    cpu: list[tuple[float, float, float]]  # per CPU: (total, idle + iowait, iowait) seconds
    disks: dict[str, tuple[int, int, int]]  # name -> (read bytes, written bytes, busy ms)
    swap_in_bytes: int
    swap_out_bytes: int


class PsutilHostSampler:
    """The host through psutil: per-CPU busy share and iowait, memory, swap, whole disks.

    `disk_limits_mb_s`: measured sequential read rates by disk name (from a saved probe), so
    that a disk reading at its measured rate counts as saturated however busy it looks.
    """

    def __init__(self, disk_limits_mb_s: dict[str, float] | None = None) -> None:
        self._limits = dict(disk_limits_mb_s or {})
        self._last = self._read()

    def _read(self) -> _Counters:
        cpu = []
        for t in psutil.cpu_times(percpu=True):
            iowait = getattr(t, "iowait", 0.0)
            cpu.append((sum(t), t.idle + iowait, iowait))
        disks = {}
        for name, io in (psutil.disk_io_counters(perdisk=True) or {}).items():
            if name.startswith(_NOT_DISKS) or not _is_whole_disk(name):
                continue
            disks[name] = (io.read_bytes, io.write_bytes, getattr(io, "busy_time", 0))
        swap = psutil.swap_memory()
        return _Counters(time.monotonic(), cpu, disks, swap.sin, swap.sout)

    def sample(self) -> HostSample:
        """Rates since the previous call."""
        now = self._read()
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
        memory = psutil.virtual_memory()
        swap = psutil.swap_memory()
        return HostSample(
            cpu_busy_ratio=tuple(busy),
            iowait_ratio=_clamp(iowait_s / total_s) if total_s > 0 else 0.0,
            memory_total_bytes=memory.total,
            memory_available_bytes=memory.available,
            swap_used_bytes=swap.used,
            swap_in_mb_s=max(0, now.swap_in_bytes - last.swap_in_bytes) / MB / interval_s,
            swap_out_mb_s=max(0, now.swap_out_bytes - last.swap_out_bytes) / MB / interval_s,
            disks=tuple(disks),
        )


def _is_whole_disk(name: str) -> bool:
    """A whole disk has /sys/block/NAME; its partitions (counted in it already) do not."""
    return not os.path.isdir("/sys/block") or os.path.exists(f"/sys/block/{name}")


def _clamp(ratio: float) -> float:
    return min(1.0, max(0.0, ratio))


@dataclass
class _ProcCounters:
    cpu_s: float
    read_bytes: int
    threads: dict[int, float]  # thread id -> CPU seconds (the main process only)
    demand_s: float | None  # main thread on a CPU or runnable (hardware.host)


class PsutilJobSampler:
    """The process tree rooted at `pid`: CPU, RSS, threads, bytes read; the main process's
    busiest thread (a serial loader in the training process shows as one thread at 1.0)."""

    def __init__(self, pid: int) -> None:
        self._root = psutil.Process(pid)
        self._last: dict[int, _ProcCounters] = {}
        self._last_s = time.monotonic()

    def _tree(self) -> list[psutil.Process]:
        try:
            return [self._root, *self._root.children(recursive=True)]
        except psutil.Error:
            return []

    def _main(self, tree: list[psutil.Process]) -> psutil.Process | None:
        """The training process: the root, or the only child of a wrapper that does no work.

        A shell (`--shell`), `uv run` or `conda run` starts one child and waits; stepping
        through such a root finds the process whose CPU the job's verdict is about.
        """
        main = self._root
        while True:
            try:
                children = main.children()
            except psutil.Error:
                return main
            if len(children) != 1 or not _is_wrapper(main):
                return main
            main = children[0]

    def sample(self) -> JobSample | None:
        """The tree's rates since the previous call; None when the root has exited."""
        tree = self._tree()
        if not tree:
            return None
        now_s = time.monotonic()
        interval_s = max(now_s - self._last_s, 1e-6)
        self._last_s = now_s
        main = self._main(tree)
        main_pid = main.pid if main is not None else self._root.pid
        current: dict[int, _ProcCounters] = {}
        cpu_cores = main_cores = workers_cores = busiest = 0.0
        main_demand: float | None = None
        workers_demand: float | None = None
        rss = threads = 0
        read_bytes_delta = 0
        workers = 0
        for proc in tree:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    rss += proc.memory_info().rss
                    n_threads = proc.num_threads()
                    read_bytes = _read_bytes(proc)
                    per_thread = (
                        {t.id: t.user_time + t.system_time for t in proc.threads()}
                        if proc.pid == main_pid
                        else {}
                    )
            except psutil.Error:
                continue
            threads += n_threads
            counters = _ProcCounters(
                times.user + times.system, read_bytes, per_thread, demand_s(proc.pid)
            )
            current[proc.pid] = counters
            last = self._last.get(proc.pid)
            if last is None:
                continue  # first sight: its rates start with the next sample
            cores = max(0.0, counters.cpu_s - last.cpu_s) / interval_s
            cpu_cores += cores
            read_bytes_delta += max(0, counters.read_bytes - last.read_bytes)
            demand = (
                None
                if counters.demand_s is None or last.demand_s is None
                else max(0.0, counters.demand_s - last.demand_s) / interval_s
            )
            if proc.pid == main_pid:
                main_cores = cores
                main_demand = demand
                for tid, cpu_s in per_thread.items():
                    busiest = max(busiest, (cpu_s - last.threads.get(tid, cpu_s)) / interval_s)
            elif proc.pid != self._root.pid:
                workers += 1
                workers_cores += cores
                if demand is not None:
                    workers_demand = (workers_demand or 0.0) + demand
        self._last = current
        return JobSample(
            processes=len(current),
            cpu_cores=cpu_cores,
            main_cpu_cores=main_cores,
            main_busiest_thread_cores=min(busiest, 1.0),
            workers=workers,
            workers_cpu_cores=workers_cores,
            rss_bytes=rss,
            threads=threads,
            read_mb_s=read_bytes_delta / MB / interval_s,
            main_demand_cores=main_demand,
            workers_demand_cores=workers_demand,
        )


_WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "uv", "conda", "env", "time", "nice"})


def _is_wrapper(proc: psutil.Process) -> bool:
    try:
        return proc.name() in _WRAPPERS
    except psutil.Error:
        return False


def _read_bytes(proc: psutil.Process) -> int:
    """Bytes the process read from storage (not the page cache); 0 where the OS hides it."""
    try:
        io = proc.io_counters()
    except (psutil.Error, AttributeError):
        return 0
    return int(getattr(io, "read_bytes", 0))


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
