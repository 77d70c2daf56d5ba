"""The verdict of a watched run: which stage held the job back, with evidence and the fix.

The guide's question (section 10): "which part is holding it back?" answered from observation.
When the accelerator computed most of the time, the compute stage is the bottleneck (slowed by
any modifiers the detectors found); otherwise the input stage under the most pressure while the
accelerator waited (a saturated disk, saturated CPUs, a full PCIe link) is. On a host without a
GPU the compute stage keeps the name `gpu_compute` and the verdict says the CPU computes.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dlrig.enums import Bottleneck, Modifier
from dlrig.hardware.nvml import GpuReading
from dlrig.units import KB, PCIE_GENS, gb_s_to_bytes_s, pcie_lane_gb_s
from dlrig.watch.detectors.pressure import (
    MAIN_THREAD_FIX,
    busiest_disk,
    cpu_saturation,
    job_read_share,
    main_thread_bound,
    storage_pressure,
)
from dlrig.watch.detectors.registry import Alarm
from dlrig.watch.detectors.series import accelerator_busy
from dlrig.watch.detectors.thresholds import SATURATED_RATIO
from dlrig.watch.samples import Sample

# The accelerator computing at least this share of the time makes compute the bottleneck: the
# rest is the launch and synchronisation overhead every training loop has.
COMPUTE_BOUND_RATIO = 0.7
# NVML's memory utilization (share of time device memory was read or written) this high with a
# busy GPU marks a bandwidth-bound job.
MEMORY_BOUND_RATIO = 0.8
# An input stage needs at least this pressure (a share of its capacity) to be named.
PRESSURE_RATIO = 0.5

FIXES = {
    Bottleneck.CPU_PREPROCESSING: "more DataLoader workers (num_workers: CPU.1 wants at least "
    "2 cores per GPU when preprocessing while training), or preprocess once before training; "
    "pin_memory=True so the copies skip the CPU (PCIE.1, RAM.1)",
    Bottleneck.STORAGE: "move the dataset to an NVMe SSD or into RAM (DISK.3); load "
    "asynchronously, several batches ahead (DISK.2)",
    Bottleneck.PCIE: "pin_memory=True with non_blocking copies overlaps the link with compute "
    "(PCIE.1); give each GPU 8 or more lanes (PCIE.2) and reseat a card whose link trained down",
    Bottleneck.GPU_MEMORY_BANDWIDTH: "bf16/fp16 halves the bytes moved (GPU.3); a GPU with more "
    "memory bandwidth (GPU.1)",
}
MODIFIER_FIXES = {
    Modifier.THERMAL_THROTTLE: "blower coolers, space between the cards or water cooling "
    "(COOL.3, COOL.4)",
    Modifier.POWER_CAP: "restore a lowered power limit (nvidia-smi -pl) within the PSU's "
    "capacity (PSU.1)",
    Modifier.PCIE_DOWNGRADED: "reseat the card in a full x16 slot (PCIE.3)",
}


@dataclass(frozen=True)
class Verdict:
    """The bottleneck (None when nothing was saturated and nothing computed), its evidence and
    fix, the modifiers slowing it, and the MLPerf-style utilization: the share of the run's
    time the accelerator computed."""

    bottleneck: Bottleneck | None
    evidence: dict[str, Any]
    fix: str | None
    modifiers: tuple[Modifier, ...] = ()
    utilization: float | None = None
    device_is_cpu: bool = True
    summary: str = ""
    stage_pressure: dict[str, float] = field(default_factory=dict)


def pcie_ratio(reading: GpuReading) -> float | None:
    """PCIe traffic (the busier direction) over the link's current payload rate."""
    gen, width = reading.pcie_gen_current, reading.pcie_width_current
    if gen is None or gen not in PCIE_GENS or not width:
        return None
    rate_kb_s = max(reading.pcie_rx_kb_s or 0, reading.pcie_tx_kb_s or 0)
    return rate_kb_s * KB / (gb_s_to_bytes_s(pcie_lane_gb_s(gen)) * width)


HEALTH_RULE_PREFIX = "HEALTH."


def judge(samples: Sequence[Sample], alarms: Sequence[Alarm]) -> Verdict:
    """The run's verdict from its samples and the detectors' alarms; hardware faults the health
    checks raised (an Xid, an ECC error, a failed PSU or fan) are named in it, since the stage
    that held the job back matters less than a part that needs an action."""
    verdict = _judge_stages(samples, alarms)
    faults = [
        a for a in alarms if a.rule.startswith(HEALTH_RULE_PREFIX) and a.severity.value == "error"
    ]
    if not faults:
        return verdict
    parts = list(dict.fromkeys(str(a.evidence.get("part") or a.rule) for a in faults))
    named = ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else "")
    evidence = {
        **verdict.evidence,
        "health_faults": [{"rule": a.rule, "name": a.name, "message": a.message} for a in faults],
    }
    fix = faults[0].fix or "act on the health alarms"
    return replace(
        verdict,
        evidence=evidence,
        fix=f"{fix}; then {verdict.fix}" if verdict.fix else fix,
        summary=f"hardware faults during the run ({named}); {verdict.summary}",
    )


def _judge_stages(samples: Sequence[Sample], alarms: Sequence[Alarm]) -> Verdict:
    """The stage verdict: which input stage or the compute held the job back."""
    device_is_cpu = not any(s.gpus for s in samples)
    device = "cpu" if device_is_cpu else "gpu"
    busy = [b for b in (accelerator_busy(s) for s in samples) if b is not None]
    if not busy:
        return Verdict(
            bottleneck=None,
            evidence={"samples": len(samples), "compute_device": device},
            fix=None,
            device_is_cpu=device_is_cpu,
            summary="too few samples to judge: the job ended before the first interval",
        )
    utilization = statistics.fmean(busy)
    modifiers = tuple(dict.fromkeys(a.modifier for a in alarms if a.modifier is not None))
    evidence: dict[str, Any] = {
        "samples": len(samples),
        "compute_device": device,
        "accelerator_utilization": utilization,
    }
    if not device_is_cpu:
        evidence["gpu_utilization_pct"] = _per_gpu_utilization(samples)
    waiting = [s for s in samples if (accelerator_busy(s) or 0.0) < COMPUTE_BOUND_RATIO]
    pressure = stage_pressures(waiting) if waiting else {}
    if utilization >= COMPUTE_BOUND_RATIO or not pressure:
        return _compute_verdict(samples, utilization, modifiers, evidence, device_is_cpu)
    stage_name = max(pressure, key=lambda k: pressure[k])
    if pressure[stage_name] < PRESSURE_RATIO:
        evidence["stage_pressure"] = pressure
        return Verdict(
            bottleneck=None,
            evidence=evidence,
            fix=None,
            modifiers=modifiers,
            utilization=utilization,
            device_is_cpu=device_is_cpu,
            summary=f"the {device} computed {utilization:.0%} of the time and no input stage was "
            "saturated: the job waited on something outside the machine's parts (network, "
            "locks, sleeps)",
            stage_pressure=pressure,
        )
    stage = Bottleneck(stage_name)
    evidence.update(_stage_evidence(stage, waiting))
    evidence["stage_pressure"] = pressure
    main_thread = stage is Bottleneck.CPU_PREPROCESSING and main_thread_bound(waiting)
    return Verdict(
        bottleneck=stage,
        evidence=evidence,
        fix=MAIN_THREAD_FIX if main_thread else FIXES[stage],
        modifiers=modifiers,
        utilization=utilization,
        device_is_cpu=device_is_cpu,
        summary=f"the {device} computed only {utilization:.0%} of the time; it waited on "
        f"{stage.value} ({pressure[stage_name]:.0%} of its capacity)",
        stage_pressure=pressure,
    )


def _per_gpu_utilization(samples: Sequence[Sample]) -> dict[str, float | None]:
    """Each GPU's mean NVML utilization over the run (None for one that never answered)."""
    values: dict[int, list[int]] = {}
    for s in samples:
        for g in s.gpus:
            known = values.setdefault(g.index, [])
            if not g.lost and g.utilization_gpu_pct is not None:
                known.append(g.utilization_gpu_pct)
    return {str(i): statistics.fmean(v) if v else None for i, v in sorted(values.items())}


def stage_pressures(samples: Sequence[Sample]) -> dict[str, float]:
    """Each input stage's mean load over these samples (the verdict passes those where the
    accelerator waited); {} without samples."""
    if not samples:
        return {}
    pressure = {
        Bottleneck.STORAGE.value: statistics.fmean(storage_pressure(s) for s in samples),
        Bottleneck.CPU_PREPROCESSING.value: statistics.fmean(cpu_saturation(s) for s in samples),
    }
    links = [r for s in samples for g in s.gpus if (r := pcie_ratio(g)) is not None]
    if links:
        pressure[Bottleneck.PCIE.value] = min(1.0, statistics.fmean(links))
    return pressure


def _stage_evidence(stage: Bottleneck, samples: Sequence[Sample]) -> dict[str, Any]:
    if stage is Bottleneck.STORAGE:
        names = [busiest_disk(s)[0] for s in samples]
        name = max(set(names), key=names.count)
        limits = [d.limit_read_mb_s for d in samples[-1].host.disks if d.name == name]
        return {
            "disk": name,
            "disk_load_ratio": statistics.fmean(busiest_disk(s)[1] for s in samples),
            "disk_measured_read_mb_s": limits[0] if limits else None,
            "disk_read_mb_s": statistics.fmean(busiest_disk(s)[2] for s in samples),
            "job_read_mb_s": statistics.fmean(s.job.read_mb_s for s in samples if s.job)
            if any(s.job for s in samples)
            else None,
            "job_read_share": statistics.fmean(job_read_share(s) for s in samples),
            "iowait_ratio": statistics.fmean(s.host.iowait_ratio for s in samples),
        }
    if stage is Bottleneck.CPU_PREPROCESSING:
        jobs = [s.job for s in samples if s.job is not None]
        return {
            "host_cpu_busy_ratio": statistics.fmean(s.host.cpu_busy_mean_ratio for s in samples),
            "cpus": samples[-1].host.cpu_count,
            "loader_workers": max((j.workers for j in jobs), default=0),
            "workers_cpu_cores": statistics.fmean(j.workers_cpu_cores for j in jobs)
            if jobs
            else None,
            "main_cpu_cores": statistics.fmean(j.main_cpu_cores for j in jobs) if jobs else None,
            "saturated_share": sum(cpu_saturation(s) >= SATURATED_RATIO for s in samples)
            / len(samples),
        }
    links = [r for s in samples for g in s.gpus if (r := pcie_ratio(g)) is not None]
    return {"pcie_link_ratio": statistics.fmean(links) if links else None}


def _compute_verdict(
    samples: Sequence[Sample],
    utilization: float,
    modifiers: tuple[Modifier, ...],
    evidence: dict[str, Any],
    device_is_cpu: bool,
) -> Verdict:
    if device_is_cpu:
        jobs = [s.job for s in samples if s.job is not None]
        evidence["main_cpu_cores"] = statistics.fmean(j.main_cpu_cores for j in jobs)
        return Verdict(
            bottleneck=Bottleneck.GPU_COMPUTE,
            evidence=evidence,
            fix="the device computing is the CPU: a GPU would run this step many times faster "
            "(GPU.1)",
            modifiers=modifiers,
            utilization=utilization,
            device_is_cpu=True,
            summary=f"compute-bound, and the device computing is the CPU (no GPU): the training "
            f"process computed {utilization:.0%} of the time while its input kept up",
        )
    memory = [
        g.utilization_memory_pct / 100
        for s in samples
        for g in s.gpus
        if not g.lost and g.utilization_memory_pct is not None
    ]
    memory_ratio = statistics.fmean(memory) if memory else None
    evidence["gpu_memory_utilization"] = memory_ratio
    stage = (
        Bottleneck.GPU_MEMORY_BANDWIDTH
        if memory_ratio is not None and memory_ratio >= MEMORY_BOUND_RATIO
        else Bottleneck.GPU_COMPUTE
    )
    fixes = [
        FIXES.get(stage, "bf16/fp16 on tensor cores (GPU.3) or a faster GPU: the input keeps up")
    ]
    fixes += [MODIFIER_FIXES[m] for m in modifiers]
    slowed = f", slowed by {', '.join(m.value for m in modifiers)}" if modifiers else ""
    return Verdict(
        bottleneck=stage,
        evidence=evidence,
        fix="; ".join(fixes),
        modifiers=modifiers,
        utilization=utilization,
        device_is_cpu=False,
        summary=f"the GPUs computed {utilization:.0%} of the time: {stage.value}{slowed}",
    )
