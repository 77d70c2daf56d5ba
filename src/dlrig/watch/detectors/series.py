"""Reading a run's samples for the detectors: runs of a condition, each GPU's series, the
accelerator's busy share, a GPU's clock-event bits, and the alarms of a host or GPU condition."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from dlrig.hardware.nvml import ClockEventReason, GpuReading
from dlrig.watch.detectors.registry import Alarm
from dlrig.watch.detectors.thresholds import SUSTAINED_SAMPLES
from dlrig.watch.samples import Sample


def runs(mask: Sequence[bool], min_length: int = 1) -> Iterator[tuple[int, int]]:
    """(first, last) index of each run of True at least `min_length` long."""
    start: int | None = None
    for i, flag in enumerate([*mask, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start >= min_length:
                yield start, i - 1
            start = None


def gpu_series(samples: Sequence[Sample]) -> dict[int, list[tuple[float, GpuReading]]]:
    """Each GPU index's readings with their times."""
    series: dict[int, list[tuple[float, GpuReading]]] = {}
    for sample in samples:
        for reading in sample.gpus:
            series.setdefault(reading.index, []).append((sample.t_s, reading))
    return series


def accelerator_busy(sample: Sample) -> float | None:
    """The share of the interval the accelerator computed: NVML utilization averaged over the
    GPUs that answer, or on a host without GPUs the share of time the training process's main
    thread computed or was ready to (its CPU use when the scheduler does not say)."""
    gpus = [g.utilization_gpu_pct for g in sample.gpus if not g.lost]
    known = [u for u in gpus if u is not None]
    if sample.gpus:
        return sum(known) / len(known) / 100 if known else None
    if sample.job is None:
        return None
    job = sample.job
    demand = job.main_demand_cores if job.main_demand_cores is not None else job.main_cpu_cores
    return min(1.0, demand)


def gpus_busy(samples: Sequence[Sample], threshold_pct: float = 50.0) -> int:
    """How many GPUs computed at least `threshold_pct` of some interval of the run: the GPUs a
    data-parallel job used, whatever else the machine holds."""
    busy = {
        g.index
        for s in samples
        for g in s.gpus
        if not g.lost and g.utilization_gpu_pct is not None
        and g.utilization_gpu_pct >= threshold_pct
    }  # fmt: skip
    return len(busy)


def has_reason(reading: GpuReading, reasons: ClockEventReason) -> bool:
    """Any of `reasons` among the reading's clock-event bits (False when NVML gave none)."""
    flags = reading.event_reasons
    return flags is not None and bool(flags & reasons)


def gpu_alarms(
    samples: Sequence[Sample],
    predicate: Callable[[GpuReading], bool],
    build: Callable[[int, float, float, list[GpuReading]], Alarm],
    *,
    lost: bool = False,
) -> list[Alarm]:
    """One alarm from `build(gpu, start_s, end_s, readings)` for each run of a GPU's readings
    that match `predicate`. Only the readings of a GPU that answered are matched, since a lost
    GPU's fields are all unknown; with `lost`, only those of a lost GPU (WATCH.4)."""
    alarms = []
    for index, series in gpu_series(samples).items():
        mask = [r.lost == lost and predicate(r) for _, r in series]
        for first, last in runs(mask):
            window = [r for _, r in series[first : last + 1]]
            alarms.append(build(index, series[first][0], series[last][0], window))
    return alarms


def host_alarms(
    samples: Sequence[Sample],
    predicate: Callable[[Sample], bool],
    build: Callable[[Sequence[Sample]], Alarm],
) -> list[Alarm]:
    """One alarm from `build(window)` for each run of samples that match `predicate` for at
    least `SUSTAINED_SAMPLES` in a row: a shorter one is a spike, not the job's steady state."""
    mask = [predicate(s) for s in samples]
    return [build(samples[first : last + 1]) for first, last in runs(mask, SUSTAINED_SAMPLES)]
