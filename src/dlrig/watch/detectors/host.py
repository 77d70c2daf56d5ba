"""The host detectors: the job's CPUs saturated while the accelerator waits (CPU.1), its disk
at its limit (DISK.3), and the machine swapping (RAM.2)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from dlrig.enums import Bottleneck, Severity
from dlrig.watch.detectors.pressure import (
    accelerator_waiting,
    busiest_disk,
    cpu_saturation,
    job_read_share,
)
from dlrig.watch.detectors.registry import Alarm, detector
from dlrig.watch.detectors.series import runs
from dlrig.watch.detectors.thresholds import SATURATED_RATIO, SUSTAINED_SAMPLES, SWAP_MB_S
from dlrig.watch.samples import Sample


@detector("CPU.1", "cpu_input_bound")
def cpu_input_bound(samples: Sequence[Sample]) -> list[Alarm]:
    """CPU.1: the CPU mostly preprocesses data; preprocessing while training needs at least 2
    cores per GPU. The accelerator idling while the job's CPUs are saturated means the step
    waits for preprocessed batches."""
    mask = [accelerator_waiting(s) and cpu_saturation(s) >= SATURATED_RATIO for s in samples]
    alarms = []
    for first, last in runs(mask, SUSTAINED_SAMPLES):
        window = samples[first : last + 1]
        job = window[-1].job
        alarms.append(
            Alarm(
                rule="CPU.1",
                name="cpu_input_bound",
                severity=Severity.WARNING,
                start_s=window[0].t_s,
                end_s=window[-1].t_s,
                bottleneck=Bottleneck.CPU_PREPROCESSING,
                message="the accelerator waits while the job's CPUs are saturated "
                f"({statistics.fmean(cpu_saturation(s) for s in window):.0%} busy)",
                fix="more DataLoader workers (num_workers), preprocessing once before training, "
                "or more CPU cores (CPU.1: at least 2 cores per GPU when preprocessing online)",
                evidence={
                    "cpu_saturation_ratio": statistics.fmean(cpu_saturation(s) for s in window),
                    "workers": job.workers if job else None,
                },
            )
        )
    return alarms


@detector("DISK.3", "disk_saturated")
def disk_saturated(samples: Sequence[Sample]) -> list[Alarm]:
    """DISK.3: a disk can be too slow to keep the accelerator fed. A device busy 90% of the
    time, or reading at 90% of its measured rate, is at its limit; it is the job's bottleneck
    when the job does most of its reads and the accelerator waits meanwhile (otherwise the
    alarm is information)."""
    mask = [busiest_disk(s)[1] >= SATURATED_RATIO for s in samples]
    alarms = []
    for first, last in runs(mask, SUSTAINED_SAMPLES):
        window = samples[first : last + 1]
        name = busiest_disk(window[-1])[0]
        read_mb_s = statistics.fmean(busiest_disk(s)[2] for s in window)
        waiting = sum(accelerator_waiting(s) for s in window) > len(window) / 2
        mine = statistics.fmean(job_read_share(s) for s in window) >= 0.5
        waiting = waiting and mine
        alarms.append(
            Alarm(
                rule="DISK.3",
                name="disk_saturated",
                severity=Severity.WARNING if waiting else Severity.INFO,
                start_s=window[0].t_s,
                end_s=window[-1].t_s,
                bottleneck=Bottleneck.STORAGE if waiting else None,
                message=f"disk {name} is at its limit: load "
                f"{statistics.fmean(busiest_disk(s)[1] for s in window):.0%}, "
                f"reading {read_mb_s:.0f} MB/s"
                + (" while the accelerator waits" if waiting else "")
                + ("" if mine else " (mostly for other processes)"),
                fix="move the dataset to an NVMe SSD or into RAM (DISK.3); read ahead "
                "asynchronously with more loader workers (DISK.2)",
                evidence={
                    "disk": name,
                    "read_mb_s": read_mb_s,
                    "job_read_share": statistics.fmean(job_read_share(s) for s in window),
                },
            )
        )
    return alarms


@detector("RAM.2", "swapping")
def swapping(samples: Sequence[Sample]) -> list[Alarm]:
    """RAM.2: less RAM than needed forces data to move piecemeal. A machine that swaps is
    paging the job's memory to disk: every touch of it waits for the disk."""
    mask = [s.host.swap_in_mb_s + s.host.swap_out_mb_s >= SWAP_MB_S for s in samples]
    alarms = []
    for first, last in runs(mask, SUSTAINED_SAMPLES):
        window = samples[first : last + 1]
        rate = statistics.fmean(s.host.swap_in_mb_s + s.host.swap_out_mb_s for s in window)
        alarms.append(
            Alarm(
                rule="RAM.2",
                name="swapping",
                severity=Severity.WARNING,
                start_s=window[0].t_s,
                end_s=window[-1].t_s,
                message=f"the machine swaps {rate:.1f} MB/s",
                fix="add RAM (RAM.2: at least the largest GPU's memory, more for big datasets), "
                "or fewer loader workers / a smaller prefetch_factor",
                evidence={"swap_mb_s": rate, "swap_used_bytes": window[-1].host.swap_used_bytes},
            )
        )
    return alarms
