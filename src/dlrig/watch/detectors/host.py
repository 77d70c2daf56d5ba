"""The host detectors: the job's CPUs saturated while the accelerator waits (CPU.1), its disk
at its limit (DISK.3), and the machine swapping (RAM.2)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from dlrig.enums import Bottleneck, Severity
from dlrig.watch.detectors.pressure import (
    MAIN_THREAD_FIX,
    accelerator_waiting,
    busiest_disk,
    cpu_saturation,
    job_read_share,
    main_thread_bound,
)
from dlrig.watch.detectors.registry import Alarm, detector
from dlrig.watch.detectors.series import host_alarms
from dlrig.watch.detectors.thresholds import SATURATED_RATIO, SWAP_MB_S
from dlrig.watch.samples import Sample


@detector("CPU.1", "cpu_input_bound")
def cpu_input_bound(samples: Sequence[Sample]) -> list[Alarm]:
    """CPU.1: the CPU mostly preprocesses data; preprocessing while training needs at least 2
    cores per GPU. The accelerator idling while the job's CPUs are saturated means the step
    waits for preprocessed batches."""

    def starved(sample: Sample) -> bool:
        return accelerator_waiting(sample) and cpu_saturation(sample) >= SATURATED_RATIO

    def build(window: Sequence[Sample]) -> Alarm:
        job = window[-1].job
        saturation = statistics.fmean(cpu_saturation(s) for s in window)
        main_thread = main_thread_bound(window)
        return Alarm(
            rule="CPU.1",
            name="cpu_input_bound",
            severity=Severity.WARNING,
            start_s=window[0].t_s,
            end_s=window[-1].t_s,
            bottleneck=Bottleneck.CPU_PREPROCESSING,
            message="the accelerator waits while the job's "
            f"{'main thread is' if main_thread else 'CPUs are'} saturated ({saturation:.0%} busy)",
            fix=MAIN_THREAD_FIX
            if main_thread
            else "more DataLoader workers (num_workers), preprocessing once before training, "
            "or more CPU cores (CPU.1: at least 2 cores per GPU when preprocessing online)",
            evidence={
                "cpu_saturation_ratio": saturation,
                "workers": job.workers if job else None,
            },
        )

    return host_alarms(samples, starved, build)


@detector("DISK.3", "disk_saturated")
def disk_saturated(samples: Sequence[Sample]) -> list[Alarm]:
    """DISK.3: a disk can be too slow to keep the accelerator fed. A device busy 90% of the
    time, or reading at 90% of its measured rate, is at its limit; it is the job's bottleneck
    when the job does most of its reads and the accelerator waits meanwhile (otherwise the
    alarm is information)."""

    def build(window: Sequence[Sample]) -> Alarm:
        name = busiest_disk(window[-1])[0]
        load = statistics.fmean(busiest_disk(s)[1] for s in window)
        read_mb_s = statistics.fmean(busiest_disk(s)[2] for s in window)
        read_share = statistics.fmean(job_read_share(s) for s in window)
        mine = read_share >= 0.5
        waiting = mine and sum(accelerator_waiting(s) for s in window) > len(window) / 2
        return Alarm(
            rule="DISK.3",
            name="disk_saturated",
            severity=Severity.WARNING if waiting else Severity.INFO,
            start_s=window[0].t_s,
            end_s=window[-1].t_s,
            bottleneck=Bottleneck.STORAGE if waiting else None,
            message=f"disk {name} is at its limit: load {load:.0%}, "
            f"reading {read_mb_s:.0f} MB/s"
            + (" while the accelerator waits" if waiting else "")
            + ("" if mine else " (mostly for other processes)"),
            fix="move the dataset to an NVMe SSD or into RAM (DISK.3); read ahead "
            "asynchronously with more loader workers (DISK.2)",
            evidence={"disk": name, "read_mb_s": read_mb_s, "job_read_share": read_share},
        )

    return host_alarms(samples, lambda s: busiest_disk(s)[1] >= SATURATED_RATIO, build)


def _swap_mb_s(sample: Sample) -> float:
    return sample.host.swap_in_mb_s + sample.host.swap_out_mb_s


@detector("RAM.2", "swapping")
def swapping(samples: Sequence[Sample]) -> list[Alarm]:
    """RAM.2: less RAM than needed forces data to move piecemeal. A machine that swaps is
    paging the job's memory to disk: every touch of it waits for the disk."""

    def build(window: Sequence[Sample]) -> Alarm:
        rate = statistics.fmean(_swap_mb_s(s) for s in window)
        return Alarm(
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

    return host_alarms(samples, lambda s: _swap_mb_s(s) >= SWAP_MB_S, build)
