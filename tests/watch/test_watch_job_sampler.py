"""The job sampler's arithmetic over fake process-tree counters: reaped workers count once."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from dlrig.hardware.counters import ProcessCounters, TreeCounters
from dlrig.watch.host import PsutilJobSampler

ROOT = 100


def _proc(pid: int, cpu_s: float, reaped_cpu_s: float = 0.0) -> ProcessCounters:
    return ProcessCounters(
        pid=pid,
        cpu_s=cpu_s,
        reaped_cpu_s=reaped_cpu_s,
        rss_bytes=10**6,
        threads=1,
        read_bytes=0,
        thread_cpu_s={},
        demand_s=None,
    )


@dataclass
class _Tree:
    """Readings handed out one per call, one second apart."""

    readings: list[tuple[ProcessCounters, ...]]
    at_s: float = 0.0
    calls: list[int] = field(default_factory=list)

    def read(self) -> TreeCounters | None:
        if not self.readings:
            return None
        self.at_s += 1.0
        return TreeCounters(self.at_s, ROOT, ROOT, self.readings.pop(0))


def _sampler(readings: list[tuple[ProcessCounters, ...]]) -> PsutilJobSampler:
    sampler = PsutilJobSampler(ROOT, tree=_Tree(readings))
    sampler._last_s = 0.0  # the fake clock starts at 0
    return sampler


def test_workers_never_seen_alive_count_through_the_reaped_children() -> None:
    # Two workers of 0.9 CPU-s each started and were reaped within the second tick.
    sampler = _sampler([(_proc(ROOT, 1.0),), (_proc(ROOT, 1.1, reaped_cpu_s=1.8),)])
    sampler.sample()
    job = sampler.sample()
    assert job is not None
    assert job.cpu_cores == pytest.approx(0.1 + 1.8)
    assert job.workers_cpu_cores == pytest.approx(1.8)


def test_a_worker_seen_alive_then_reaped_counts_once() -> None:
    # Worker 201 is first seen at 0.5 s of CPU, then at 1.0 s (0.5 counted), then exits at 1.2 s:
    # its 1.2 s lifetime lands in the reaped counter; 0.5 was counted, 0.2 (unseen end) is new
    # and 0.5 (before first sight) counts as well, since no tick saw it.
    sampler = _sampler(
        [
            (_proc(ROOT, 1.0), _proc(201, 0.5)),
            (_proc(ROOT, 1.0), _proc(201, 1.0)),
            (_proc(ROOT, 1.0, reaped_cpu_s=1.2),),
        ]
    )
    sampler.sample()
    second = sampler.sample()
    third = sampler.sample()
    assert second is not None and third is not None
    assert second.workers_cpu_cores == pytest.approx(0.5)
    assert third.workers_cpu_cores == pytest.approx(1.2 - 0.5)
    assert third.cpu_cores == pytest.approx(0.7)


def test_gone_root_ends_the_job() -> None:
    sampler = _sampler([])
    assert sampler.sample() is None


def test_the_training_process_under_a_shell_wrapper_is_the_main_one() -> None:
    # `dlrig watch --shell` runs the job under /bin/sh; the sh's one child is the training
    # process (its `; true` keeps sh from exec-ing the child in its place).
    import subprocess
    import sys
    import time

    import psutil

    from dlrig.hardware.counters import ProcessTree

    shell = subprocess.Popen(
        ["/bin/sh", "-c", f"{sys.executable} -c 'import time; time.sleep(30)'; true"]
    )
    try:
        deadline = time.monotonic() + 10
        tree = ProcessTree(shell.pid).read()
        while tree is not None and len(tree.processes) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            tree = ProcessTree(shell.pid).read()
        assert tree is not None and len(tree.processes) == 2
        child = next(p.pid for p in tree.processes if p.pid != shell.pid)
        assert (tree.root_pid, tree.main_pid) == (shell.pid, child)
    finally:
        for proc in psutil.Process(shell.pid).children(recursive=True):
            proc.kill()
        shell.kill()
        shell.wait()
