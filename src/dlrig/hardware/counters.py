"""Cumulative counters of the host and of a process tree, read through psutil (/proc on Linux).

Only reads: the caller (`dlrig.watch.host`) turns two readings into rates. A process that exits
between listing and reading is skipped: processes come and go.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

from dlrig.hardware.host import demand_s

# Names of block devices that are not disks: loop-mounted files and RAM disks.
_NOT_DISKS = ("loop", "ram", "zram")

# Processes that start one child and wait: a shell (`--shell`), `uv run`, `conda run`.
_WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "uv", "conda", "env", "time", "nice"})


@dataclass(frozen=True)
class HostCounters:
    """The host's cumulative counters at `at_s` (monotonic) and its memory now."""

    at_s: float
    cpu: tuple[tuple[float, float, float], ...]  # per CPU: (total, idle + iowait, iowait) s
    disks: dict[str, tuple[int, int, int]]  # whole disk -> (read bytes, written bytes, busy ms)
    swap_in_bytes: int
    swap_out_bytes: int
    swap_used_bytes: int
    memory_total_bytes: int
    memory_available_bytes: int


def read_host_counters() -> HostCounters:
    """Per-CPU times, whole disks' IO counters, swap and memory."""
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
    memory = psutil.virtual_memory()
    return HostCounters(
        at_s=time.monotonic(),
        cpu=tuple(cpu),
        disks=disks,
        swap_in_bytes=swap.sin,
        swap_out_bytes=swap.sout,
        swap_used_bytes=swap.used,
        memory_total_bytes=memory.total,
        memory_available_bytes=memory.available,
    )


def _is_whole_disk(name: str) -> bool:
    """A whole disk has /sys/block/NAME; its partitions (counted in it already) do not."""
    return not os.path.isdir("/sys/block") or os.path.exists(f"/sys/block/{name}")


@dataclass(frozen=True)
class ProcessCounters:
    """One process's cumulative counters.

    `reaped_cpu_s` is the CPU time of children it has waited for (gone from the tree): a
    DataLoader with `persistent_workers=False` starts and reaps workers each epoch, and their
    work shows only here once they exit.
    """

    pid: int
    cpu_s: float
    reaped_cpu_s: float
    rss_bytes: int
    threads: int
    read_bytes: int
    thread_cpu_s: dict[int, float]  # thread id -> CPU seconds (the main process only)
    demand_s: float | None  # main thread on a CPU or runnable (hardware.host)


@dataclass(frozen=True)
class TreeCounters:
    """A process tree's counters at `at_s` (monotonic): the root, the training process in it
    (`main_pid`) and every process that answered."""

    at_s: float
    root_pid: int
    main_pid: int
    processes: tuple[ProcessCounters, ...]


class ProcessTree:
    """The process tree rooted at `pid`."""

    def __init__(self, pid: int) -> None:
        self._root = psutil.Process(pid)

    def read(self) -> TreeCounters | None:
        """Every live process's counters; None once the root has exited."""
        try:
            tree = [self._root, *_descendants(self._root)]
        except psutil.Error:
            return None
        main_pid = self._main(tree).pid
        processes = []
        for proc in tree:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    rss = proc.memory_info().rss
                    n_threads = proc.num_threads()
                    per_thread = (
                        {t.id: t.user_time + t.system_time for t in proc.threads()}
                        if proc.pid == main_pid
                        else {}
                    )
            except psutil.Error:
                continue
            processes.append(
                ProcessCounters(
                    pid=proc.pid,
                    cpu_s=times.user + times.system,
                    reaped_cpu_s=getattr(times, "children_user", 0.0)
                    + getattr(times, "children_system", 0.0),
                    rss_bytes=rss,
                    threads=n_threads,
                    read_bytes=_read_bytes(proc),
                    thread_cpu_s=per_thread,
                    demand_s=demand_s(proc.pid),
                )
            )
        return TreeCounters(time.monotonic(), self._root.pid, main_pid, tuple(processes))

    def _main(self, tree: list[psutil.Process]) -> psutil.Process:
        """The training process: the root, or the only child of a wrapper that does no work.

        Found within `tree` (each member's parent) rather than by asking for children again:
        psutil reads every process of the machine to list one's children."""
        children_of: dict[int, list[psutil.Process]] = {}
        for proc in tree[1:]:
            try:
                children_of.setdefault(proc.ppid(), []).append(proc)
            except psutil.Error:
                continue
        main = self._root
        while True:
            children = children_of.get(main.pid, [])
            if len(children) != 1 or not _is_wrapper(main):
                return main
            main = children[0]


def _proc_children_file(pid: int) -> bool:
    """Whether the kernel lists a task's children in /proc (Linux 3.5+, CONFIG_PROC_CHILDREN)."""
    return os.path.exists(f"/proc/{pid}/task/{pid}/children")


_HAS_PROC_CHILDREN = _proc_children_file(os.getpid())


def _child_pids(pid: int) -> list[int]:
    """The pids pid started, from /proc/<pid>/task/*/children: a few small reads per process
    of the tree, where psutil.children() reads every process of the machine (~3 ms a sample on
    a busy host, the larger part of a watch tick)."""
    base = f"/proc/{pid}/task"
    out: list[int] = []
    try:
        tids = os.listdir(base)
    except OSError:
        return out  # the process is gone
    for tid in tids:
        try:
            with open(f"{base}/{tid}/children") as fh:
                out.extend(int(x) for x in fh.read().split())
        except OSError:
            continue  # the thread is gone
    return out


def _descendants(root: psutil.Process) -> list[psutil.Process]:
    """Every process below root; through /proc's children lists where the kernel has them."""
    if not _HAS_PROC_CHILDREN:
        return list(root.children(recursive=True))
    out: list[psutil.Process] = []
    todo = _child_pids(root.pid)
    seen = {root.pid}
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            out.append(psutil.Process(pid))
        except psutil.Error:
            continue
        todo.extend(_child_pids(pid))
    return out


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
