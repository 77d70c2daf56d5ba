"""How hard the job presses on the host's input stages in one sample (CPU saturation, the busiest
disk and the job's share of its reads): what the host detectors and the verdict both read."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from dlrig.watch.detectors.series import accelerator_busy
from dlrig.watch.detectors.thresholds import GPU_BUSY_PCT, SATURATED_RATIO
from dlrig.watch.samples import Sample


def accelerator_waiting(sample: Sample) -> bool:
    """The accelerator computed less than half the interval (unknown counts as not waiting)."""
    busy = accelerator_busy(sample)
    return busy is not None and busy < GPU_BUSY_PCT / 100


def cpu_saturation(sample: Sample) -> float:
    """How saturated the job's own loading CPUs are, 0-1: its loader workers (each computing or
    waiting for a CPU), its share of all the host's CPUs, or (with a GPU computing) the training
    process's busiest thread (a serial loader). Other processes' load is not the job's: a
    machine busy with something else raises this only through the workers' wait for a CPU."""
    job = sample.job
    if job is None:
        return 0.0
    cpus = max(1, sample.host.cpu_count)
    usable = min(job.workers, cpus)
    busy = job.workers_demand_cores if job.workers_demand_cores is not None else None
    workers = (busy if busy is not None else job.workers_cpu_cores) / usable if usable else 0.0
    serial = job.main_busiest_thread_cores if sample.gpus else 0.0
    return min(1.0, max(job.cpu_cores / cpus, workers, serial))


def busiest_disk(sample: Sample) -> tuple[str | None, float, float]:
    """(name, load ratio, read MB/s) of the disk nearest its limit in the interval (the load is
    its busy share, or its reads over its measured rate when a probe measured it)."""
    if not sample.host.disks:
        return None, 0.0, 0.0
    disk = max(sample.host.disks, key=lambda d: d.load_ratio)
    return disk.name, disk.load_ratio, disk.read_mb_s


def job_read_share(sample: Sample) -> float:
    """The job's share of the busiest disk's reads, 0-1 (its own storage reads over the disk's):
    a disk kept busy by another process is not this job's bottleneck."""
    _, _, disk_read_mb_s = busiest_disk(sample)
    if sample.job is None or disk_read_mb_s <= 0:
        return 0.0
    return min(1.0, sample.job.read_mb_s / disk_read_mb_s)


def storage_pressure(sample: Sample) -> float:
    """How much the job is held by its disk, 0-1: the busiest disk's busy share, weighted by the
    job's share of that disk's reads."""
    return busiest_disk(sample)[1] * job_read_share(sample)


# Loader workers this idle (cores each) leave the main thread as the CPU the job waits on.
IDLE_WORKER_CORES = 0.2
MAIN_THREAD_FIX = (
    "the training process's main thread is the limit while its loader workers idle: Python "
    "work in the loop, or the job's own setup (building the model, tracing, saving); a "
    "profiler (py-spy, torch.profiler) shows which; CUDA graphs or torch.compile for a loop "
    "that launches many small kernels"
)


def main_thread_bound(samples: Sequence[Sample]) -> bool:
    """CPU.1 from the main thread, not the loader: the training process's busiest thread at a
    full core while the DataLoader workers it has sit idle. Seen on a lent H200 over real jobs
    whose wall time was mostly building models (scripts/gpu-check): 4 workers at 0.02 cores."""
    jobs = [s.job for s in samples if s.job is not None]
    workers = max((j.workers for j in jobs), default=0)
    if not jobs or workers == 0:
        return False
    idle = statistics.fmean(j.workers_cpu_cores for j in jobs) / workers < IDLE_WORKER_CORES
    serial = statistics.fmean(j.main_busiest_thread_cores for j in jobs) >= SATURATED_RATIO
    return idle and serial
