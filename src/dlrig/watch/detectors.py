"""Detectors: pure functions over a run's samples, each raising alarms with their times.

One detector per condition, registered with the guide rule it applies (or a WATCH.n id for the
monitor's own health checks, in the guide's form); the docstring says why. A detector sees the
whole series, so the same code serves the live run and `dlrig watch --show` on stored samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlrig.enums import Bottleneck, Modifier, Severity
from dlrig.hardware.nvml import ClockEventReason, GpuReading
from dlrig.units import bytes_to_gb
from dlrig.watch.samples import Sample

# The GPU is "busy" when NVML's utilization (the share of the sample period in which a kernel
# ran) is at least this; under it, the job waits for something else more than it computes.
GPU_BUSY_PCT = 50
# A load light enough that links may train down to save power (PCIe ASPM): below it, a
# slow link is not a fault.
GPU_LOADED_PCT = 10
# Saturation: a CPU, a loader worker or a disk busy at least this share of the interval.
SATURATED_RATIO = 0.9
# A host condition must last this many samples: one busy interval is a spike (a checkpoint
# written, an epoch starting), not the job's steady state. GPU reason bits count at once.
SUSTAINED_SAMPLES = 2
# Swap traffic above this is the machine paging the job's memory, not background noise.
SWAP_MB_S = 1.0
# COOL.1: "GPUs raise clocks and power until a temperature limit (usually 80 C)".
THROTTLE_TEMP_C = 80
# A clock this far under the GPU's highest of the run is a slowdown, not boost jitter.
CLOCK_DROP_RATIO = 0.10
# GPU memory at or above this share of the total: the next allocation may fail (GPU.2).
MEMORY_FULL_RATIO = 0.95
# A GPU this much below the median of its peers (utilization or SM clock) holds back every
# synchronous step of a data-parallel job.
STRAGGLER_RATIO = 0.85


@dataclass(frozen=True)
class Alarm:
    """A condition seen from `start_s` to `end_s` (seconds since the job started)."""

    rule: str
    name: str
    severity: Severity
    start_s: float
    end_s: float
    message: str
    gpu: int | None = None
    modifier: Modifier | None = None
    bottleneck: Bottleneck | None = None
    fix: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


Detector = Callable[[Sequence[Sample]], list[Alarm]]


@dataclass(frozen=True)
class RegisteredDetector:
    """A detector with the rule id it applies."""

    rule: str
    name: str
    detect: Detector


DETECTORS: list[RegisteredDetector] = []


def detector(rule: str, name: str) -> Callable[[Detector], Detector]:
    """Register a detector under its guide rule id."""

    def register(fn: Detector) -> Detector:
        DETECTORS.append(RegisteredDetector(rule, name, fn))
        return fn

    return register


def detect_all(samples: Sequence[Sample]) -> tuple[Alarm, ...]:
    """Every registered detector over the series, alarms in time order."""
    alarms = [alarm for d in DETECTORS for alarm in d.detect(samples)]
    return tuple(sorted(alarms, key=lambda a: (a.start_s, a.rule, a.gpu or 0)))


# -- helpers -------------------------------------------------------------------------------


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


def _has(reading: GpuReading, reasons: ClockEventReason) -> bool:
    flags = reading.event_reasons
    return flags is not None and bool(flags & reasons)


def _gpu_alarms(
    samples: Sequence[Sample],
    predicate: Callable[[GpuReading], bool],
    build: Callable[[int, float, float, list[GpuReading]], Alarm],
) -> list[Alarm]:
    alarms = []
    for index, series in gpu_series(samples).items():
        mask = [not r.lost and predicate(r) for _, r in series]
        for first, last in runs(mask):
            window = [r for _, r in series[first : last + 1]]
            alarms.append(build(index, series[first][0], series[last][0], window))
    return alarms


# -- GPU detectors -------------------------------------------------------------------------


def _thermal_bits(reading: GpuReading) -> bool:
    return _has(
        reading, ClockEventReason.SW_THERMAL_SLOWDOWN | ClockEventReason.HW_THERMAL_SLOWDOWN
    )


def _clock_falling_hot(reading: GpuReading, peak_clock_mhz: int, peak_temp_c: int) -> bool:
    """Without reason bits (old drivers, some boards): the SM clock 10% under the GPU's highest
    of the run, under load, while at the run's highest temperature and at least COOL.1's usual
    80 C limit (or the board's own slowdown threshold, if lower)."""
    temp, clock = reading.temperature_c, reading.clock_sm_mhz
    if reading.clocks_event_reasons is not None or temp is None or clock is None:
        return False
    limit_c = min(THROTTLE_TEMP_C, reading.temperature_slowdown_c or THROTTLE_TEMP_C)
    return (
        (reading.utilization_gpu_pct or 0) >= GPU_BUSY_PCT
        and temp >= max(limit_c, peak_temp_c - 1)
        and clock < (1 - CLOCK_DROP_RATIO) * peak_clock_mhz
    )


@detector("COOL.1", "thermal_throttle")
def thermal_throttle(samples: Sequence[Sample]) -> list[Alarm]:
    """COOL.1: GPUs raise clocks until a temperature limit (usually 80 C), then slow down: 0-10%
    for one GPU, 10-25% when several heat each other. Seen as NVML's thermal slowdown bits, or
    (without them) as the SM clock falling while the GPU is at its hottest."""
    alarms = []
    for index, series in gpu_series(samples).items():
        live = [r for _, r in series if not r.lost]
        peak_clock = max((r.clock_sm_mhz or 0 for r in live), default=0)
        peak_temp = max((r.temperature_c or 0 for r in live), default=0)
        mask = [
            not r.lost and (_thermal_bits(r) or _clock_falling_hot(r, peak_clock, peak_temp))
            for _, r in series
        ]
        for first, last in runs(mask):
            window = [r for _, r in series[first : last + 1]]
            peak = max((r.temperature_c or 0) for r in window)
            low = min((r.clock_sm_mhz or 0) for r in window)
            clock_max = window[-1].clock_sm_max_mhz
            of_max = f" of {clock_max}" if clock_max else ""
            how = "slowdown bits" if any(_thermal_bits(r) for r in window) else "clock falling"
            alarms.append(
                Alarm(
                    rule="COOL.1",
                    name="thermal_throttle",
                    severity=Severity.WARNING,
                    start_s=series[first][0],
                    end_s=series[last][0],
                    gpu=index,
                    modifier=Modifier.THERMAL_THROTTLE,
                    message=f"GPU {index} throttles for heat ({how}): {peak} C, SM clock down "
                    f"to {low}{of_max} MHz",
                    fix="blower-style coolers for cards side by side, space between the cards, "
                    "or water cooling for 4 GPUs (COOL.3, COOL.4); raise the case airflow",
                    evidence={
                        "temperature_c": peak,
                        "clock_sm_mhz": low,
                        "clock_sm_max_mhz": clock_max,
                        "peak_clock_sm_mhz": peak_clock,
                    },
                )
            )
    return alarms


@detector("PSU.2", "power_brake")
def power_brake(samples: Sequence[Sample]) -> list[Alarm]:
    """PSU.2: the power supply must feed every GPU through its own connectors. The power-brake
    signal (HW_POWER_BRAKE_SLOWDOWN) is asserted by the system when the supply cannot deliver:
    a fault, the clocks are cut hard."""

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        return Alarm(
            rule="PSU.2",
            name="power_brake",
            severity=Severity.ERROR,
            start_s=start,
            end_s=end,
            gpu=gpu,
            message=f"GPU {gpu}: hardware power brake engaged (the supply cannot deliver)",
            fix="check the PSU's capacity (PSU.1) and give each GPU its own PCIe power cables "
            "(PSU.2); reseat the power connectors",
            evidence={"power_w": window[-1].power_w, "power_limit_w": window[-1].power_limit_w},
        )

    return _gpu_alarms(samples, lambda r: _has(r, ClockEventReason.HW_POWER_BRAKE_SLOWDOWN), build)


@detector("WATCH.1", "hw_slowdown")
def hw_slowdown(samples: Sequence[Sample]) -> list[Alarm]:
    """WATCH.1: HW_SLOWDOWN without the thermal or power-brake bits that usually explain it is
    the board protecting itself (a failing fan, a power excursion): a fault to look at."""

    def only_hw(reading: GpuReading) -> bool:
        explained = ClockEventReason.HW_THERMAL_SLOWDOWN | ClockEventReason.HW_POWER_BRAKE_SLOWDOWN
        return _has(reading, ClockEventReason.HW_SLOWDOWN) and not _has(reading, explained)

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        return Alarm(
            rule="WATCH.1",
            name="hw_slowdown",
            severity=Severity.ERROR,
            start_s=start,
            end_s=end,
            gpu=gpu,
            message=f"GPU {gpu}: hardware slowdown without a thermal or power-brake cause",
            fix="check the card's fans and power cables; reseat the card; if it persists, "
            "the board may be failing",
            evidence={"temperature_c": window[-1].temperature_c},
        )

    return _gpu_alarms(samples, only_hw, build)


@detector("WATCH.2", "power_cap")
def power_cap(samples: Sequence[Sample]) -> list[Alarm]:
    """WATCH.2: the GPU holds its clocks to stay within its power limit (SW_POWER_CAP). Normal
    under full load; shown with the draw against the limit, since a lowered limit slows it."""

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        draw = max((r.power_w or 0.0) for r in window)
        limit = window[-1].power_limit_w
        against = f"{draw:.0f} W of its {limit:.0f} W limit" if limit else f"{draw:.0f} W"
        return Alarm(
            rule="WATCH.2",
            name="power_cap",
            severity=Severity.INFO,
            start_s=start,
            end_s=end,
            gpu=gpu,
            modifier=Modifier.POWER_CAP,
            message=f"GPU {gpu} is power-capped at {against}",
            fix="if the limit was lowered (nvidia-smi -pl), raising it back speeds the GPU up; "
            "the PSU must cover it (PSU.1)",
            evidence={"power_w": draw, "power_limit_w": limit},
        )

    return _gpu_alarms(samples, lambda r: _has(r, ClockEventReason.SW_POWER_CAP), build)


def _link_below_max(reading: GpuReading) -> bool:
    loaded = (reading.utilization_gpu_pct or 0) >= GPU_LOADED_PCT
    width, width_max = reading.pcie_width_current, reading.pcie_width_max
    gen, gen_max = reading.pcie_gen_current, reading.pcie_gen_max
    narrow = width is not None and width_max is not None and width < width_max
    slow = gen is not None and gen_max is not None and gen < gen_max
    return loaded and (narrow or slow)


@detector("PCIE.3", "pcie_downgraded")
def pcie_downgraded(samples: Sequence[Sample]) -> list[Alarm]:
    """PCIE.3: the slots and lanes must carry the GPUs. A link under its maximum width or
    generation while the GPU works (idle links train down to save power, which is fine) means a
    x4 slot, a riser cable, or a card not seated fully."""

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        r = window[-1]
        return Alarm(
            rule="PCIE.3",
            name="pcie_downgraded",
            severity=Severity.WARNING,
            start_s=start,
            end_s=end,
            gpu=gpu,
            modifier=Modifier.PCIE_DOWNGRADED,
            message=f"GPU {gpu}'s PCIe link runs at Gen{r.pcie_gen_current} "
            f"x{r.pcie_width_current} under load (max Gen{r.pcie_gen_max} x{r.pcie_width_max})",
            fix="reseat the card in a full x16 slot, avoid x4 slots and riser cables, and check "
            "the board's lane sharing (PCIE.2, PCIE.3)",
            evidence={
                "pcie_gen_current": r.pcie_gen_current,
                "pcie_gen_max": r.pcie_gen_max,
                "pcie_width_current": r.pcie_width_current,
                "pcie_width_max": r.pcie_width_max,
            },
        )

    return _gpu_alarms(samples, _link_below_max, build)


@detector("GPU.2", "gpu_memory_full")
def gpu_memory_full(samples: Sequence[Sample]) -> list[Alarm]:
    """GPU.2: too little memory is the second most costly mistake. Memory at 95% of the card is
    one allocation from an out-of-memory error (PyTorch's caching allocator also holds freed
    blocks, so the real need can be lower)."""

    def full(reading: GpuReading) -> bool:
        used, total = reading.memory_used_bytes, reading.memory_total_bytes
        if used is None or not total:
            return False
        return used / total >= MEMORY_FULL_RATIO

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        r = window[-1]
        used_gb = bytes_to_gb(r.memory_used_bytes or 0)
        return Alarm(
            rule="GPU.2",
            name="gpu_memory_full",
            severity=Severity.WARNING,
            start_s=start,
            end_s=end,
            gpu=gpu,
            message=f"GPU {gpu}'s memory is nearly full: {used_gb:.1f} of "
            f"{r.memory_total_gb or 0:.1f} GB",
            fix="a smaller batch with gradient accumulation, bf16/fp16 (GPU.3), activation "
            "checkpointing, or a GPU with more memory",
            evidence={
                "memory_used_bytes": r.memory_used_bytes,
                "memory_total_bytes": r.memory_total_bytes,
            },
        )

    return _gpu_alarms(samples, full, build)


@detector("WATCH.3", "gpu_straggler")
def gpu_straggler(samples: Sequence[Sample]) -> list[Alarm]:
    """WATCH.3: in data-parallel training every step waits for the slowest GPU. One GPU well
    below its peers' median utilization or SM clock (heat, a slow link, a cap) sets the pace."""
    series = gpu_series(samples)
    if len(series) < 2:
        return []
    alarms = []
    means: dict[int, dict[str, float]] = {}
    for index, readings in series.items():
        live = [r for _, r in readings if not r.lost]
        util = [r.utilization_gpu_pct for r in live if r.utilization_gpu_pct is not None]
        clock = [r.clock_sm_mhz for r in live if r.clock_sm_mhz is not None]
        means[index] = {
            "utilization_pct": statistics.fmean(util) if util else float("nan"),
            "clock_sm_mhz": statistics.fmean(clock) if clock else float("nan"),
        }
    for index, mine in means.items():
        for metric, value in mine.items():
            peers = [m[metric] for i, m in means.items() if i != index and m[metric] == m[metric]]
            if not peers or value != value:
                continue
            median = statistics.median(peers)
            loaded = metric != "utilization_pct" or median >= GPU_BUSY_PCT
            if loaded and median > 0 and value < STRAGGLER_RATIO * median:
                times = [t for t, _ in series[index]]
                alarms.append(
                    Alarm(
                        rule="WATCH.3",
                        name="gpu_straggler",
                        severity=Severity.WARNING,
                        start_s=times[0],
                        end_s=times[-1],
                        gpu=index,
                        message=f"GPU {index} is slower than its peers: {metric} "
                        f"{value:.0f} vs a median of {median:.0f}",
                        fix="look at this GPU's alarms (heat, PCIe link, power cap); reseat the "
                        "card or give it a cooler slot",
                        evidence={metric: value, f"peers_median_{metric}": median},
                    )
                )
                break  # one alarm per GPU
    return alarms


@detector("WATCH.4", "gpu_lost")
def gpu_lost(samples: Sequence[Sample]) -> list[Alarm]:
    """WATCH.4: a GPU that stops answering NVML has fallen off the bus (Xid 79): a hardware
    fault (power, seating, heat) that kills the job on it."""

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        return Alarm(
            rule="WATCH.4",
            name="gpu_lost",
            severity=Severity.ERROR,
            start_s=start,
            end_s=end,
            gpu=gpu,
            message=f"GPU {gpu} was lost: {window[0].error or 'it stopped answering NVML'}",
            fix="reseat the card and its power cables, check the PSU (PSU.1, PSU.2) and the "
            "kernel log for Xid errors; a reboot is needed to get it back",
            evidence={"error": window[0].error},
        )

    alarms = []
    for index, series in gpu_series(samples).items():
        for first, last in runs([r.lost for _, r in series]):
            window = [r for _, r in series[first : last + 1]]
            alarms.append(build(index, series[first][0], series[last][0], window))
    return alarms


# -- host detectors ------------------------------------------------------------------------


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
