"""Scheduler statistics of a task from /proc: time on a CPU and time runnable in a queue.

On a shared machine a process's CPU time alone undercounts how much it wants to compute: a busy
loop that shares a core with another gets half of it. The scheduler's run-queue wait adds the
time it was ready to run but waited, so `(on CPU + waiting) / wall` is the share of time it was
computing or wanted to (1.0 for a busy loop, contended or not; near 0 for one blocked on I/O or
a queue). Linux only (`/proc/PID/schedstat`, kernels with CONFIG_SCHED_INFO); None elsewhere.
"""

from __future__ import annotations

from dlrig.units import ns_to_s


def schedstat_s(pid: int, tid: int | None = None) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting) of a task: a process's main thread, or
    thread `tid` of it; None where the kernel does not say."""
    path = f"/proc/{pid}/schedstat" if tid is None else f"/proc/{pid}/task/{tid}/schedstat"
    try:
        with open(path, encoding="ascii") as fh:
            fields = fh.read().split()
    except OSError:
        return None
    if len(fields) < 2:
        return None
    return ns_to_s(int(fields[0])), ns_to_s(int(fields[1]))


def demand_s(pid: int, tid: int | None = None) -> float | None:
    """Seconds a task ran or was ready to run (see the module docstring)."""
    stat = schedstat_s(pid, tid)
    return None if stat is None else stat[0] + stat[1]
