"""The GPU detectors: heat (COOL.1), power brake (PSU.2), hardware slowdown and power cap
(WATCH.1, WATCH.2), a PCIe link below its maximum (PCIE.3), full memory (GPU.2), a straggler
(WATCH.3) and a lost GPU (WATCH.4)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from dlrig.enums import Modifier, Severity
from dlrig.hardware.nvml import ClockEventReason, GpuReading
from dlrig.units import bytes_to_gib
from dlrig.watch.detectors.registry import Alarm, detector
from dlrig.watch.detectors.series import gpu_alarms, gpu_series, has_reason
from dlrig.watch.detectors.thresholds import (
    CLOCK_DROP_RATIO,
    GPU_BUSY_PCT,
    GPU_LOADED_PCT,
    MEMORY_FULL_RATIO,
    STRAGGLER_RATIO,
    THROTTLE_TEMP_C,
)
from dlrig.watch.samples import Sample


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
    peak_clock: dict[int, int] = {}
    peak_temp: dict[int, int] = {}
    for index, series in gpu_series(samples).items():
        live = [r for _, r in series if not r.lost]
        peak_clock[index] = max((r.clock_sm_mhz or 0 for r in live), default=0)
        peak_temp[index] = max((r.temperature_c or 0 for r in live), default=0)

    def hot(reading: GpuReading) -> bool:
        return bool(reading.thermal_throttled) or _clock_falling_hot(
            reading, peak_clock[reading.index], peak_temp[reading.index]
        )

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        peak = max((r.temperature_c or 0) for r in window)
        low = min((r.clock_sm_mhz or 0) for r in window)
        clock_max = window[-1].clock_sm_max_mhz
        of_max = f" of {clock_max}" if clock_max else ""
        how = "slowdown bits" if any(r.thermal_throttled for r in window) else "clock falling"
        return Alarm(
            rule="COOL.1",
            name="thermal_throttle",
            severity=Severity.WARNING,
            start_s=start,
            end_s=end,
            gpu=gpu,
            modifier=Modifier.THERMAL_THROTTLE,
            message=f"GPU {gpu} throttles for heat ({how}): {peak} C, SM clock down "
            f"to {low}{of_max} MHz",
            fix="blower-style coolers for cards side by side, space between the cards, "
            "or water cooling for 4 GPUs (COOL.3, COOL.4); raise the case airflow",
            evidence={
                "temperature_c": peak,
                "clock_sm_mhz": low,
                "clock_sm_max_mhz": clock_max,
                "peak_clock_sm_mhz": peak_clock[gpu],
            },
        )

    return gpu_alarms(samples, hot, build)


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

    return gpu_alarms(
        samples, lambda r: has_reason(r, ClockEventReason.HW_POWER_BRAKE_SLOWDOWN), build
    )


@detector("WATCH.1", "hw_slowdown")
def hw_slowdown(samples: Sequence[Sample]) -> list[Alarm]:
    """WATCH.1: HW_SLOWDOWN without the thermal or power-brake bits that usually explain it is
    the board protecting itself (a failing fan, a power excursion): a fault to look at."""

    def only_hw(reading: GpuReading) -> bool:
        explained = ClockEventReason.HW_THERMAL_SLOWDOWN | ClockEventReason.HW_POWER_BRAKE_SLOWDOWN
        return has_reason(reading, ClockEventReason.HW_SLOWDOWN) and not has_reason(
            reading, explained
        )

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

    return gpu_alarms(samples, only_hw, build)


# A capped GPU drawing less than this share of its limit on average hit the cap in bursts.
POWER_CAP_DRAW_SHARE = 0.9


@detector("WATCH.2", "power_cap")
def power_cap(samples: Sequence[Sample]) -> list[Alarm]:
    """WATCH.2: the GPU holds its clocks to stay within its power limit (SW_POWER_CAP). Normal
    under full load; shown with the draw against the limit, since a lowered limit slows it."""

    def build(gpu: int, start: float, end: float, window: list[GpuReading]) -> Alarm:
        draw = max((r.power_w or 0.0) for r in window)
        limit = window[-1].power_limit_w
        against = f"{draw:.0f} W of its {limit:.0f} W limit" if limit else f"{draw:.0f} W"
        if limit and draw < POWER_CAP_DRAW_SHARE * limit:
            # NVML's draw is a ~1 s average: a load ramping up touches the cap within it.
            against = (
                f"its {limit:.0f} W limit, in bursts (the sample's average draw: {draw:.0f} W)"
            )
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

    return gpu_alarms(samples, lambda r: has_reason(r, ClockEventReason.SW_POWER_CAP), build)


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

    return gpu_alarms(samples, _link_below_max, build)


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
        used_gb = bytes_to_gib(r.memory_used_bytes or 0)
        return Alarm(
            rule="GPU.2",
            name="gpu_memory_full",
            severity=Severity.WARNING,
            start_s=start,
            end_s=end,
            gpu=gpu,
            message=f"GPU {gpu}'s memory is nearly full: {used_gb:.1f} of "
            f"{r.memory_total_gb or 0:.1f} GiB",
            fix="a smaller batch with gradient accumulation, bf16/fp16 (GPU.3), activation "
            "checkpointing, or a GPU with more memory",
            evidence={
                "memory_used_bytes": r.memory_used_bytes,
                "memory_total_bytes": r.memory_total_bytes,
            },
        )

    return gpu_alarms(samples, full, build)


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

    return gpu_alarms(samples, lambda _: True, build, lost=True)
