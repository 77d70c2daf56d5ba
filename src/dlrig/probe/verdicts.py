"""Verdicts on a probe: measured figures against datasheet figures and against the guide. Pure.

The pass rule is that of NVIDIA DCGM's diagnostics: a measured figure below about 0.75 of its
reference is a fault, not noise (DCGM's targeted-stress and memory-bandwidth plugins fail a GPU
under a fraction of the expected rate). References are the catalog's datasheet figures; a
figure with no reference is reported, not judged. Each verdict names a rule: a guide id where
the guide gives the reasoning (COOL.1, DISK.3, CPU.1), a `PROBE.*` id for the probe's own
checks (a lost GPU, a degraded link, a figure under the pass rule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dlrig.catalog.schema import GPU, Storage
from dlrig.enums import Precision, Severity
from dlrig.hardware.nvml import GpuReading, NvmlSystem
from dlrig.hardware.torch_cuda import CudaStatus, MatmulResult
from dlrig.model.pcie import pcie_theoretical_gb_s
from dlrig.model.rates import measured_matmul

PASS_FRACTION = 0.75
"""DCGM's pass rule: below this fraction of the reference, a measured figure is a fault."""

LOADED_UTILIZATION_PCT = 50
"""A GPU at or above this utilisation is under load: its PCIe link should be fully trained."""


@dataclass(frozen=True)
class Verdict:
    """One judgement; the same fields as a check finding, so reports can share a renderer."""

    rule: str
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: str | None = None


def _pct(measured: float, reference: float) -> int:
    return round(100.0 * measured / reference)


def nvml_verdict(system: NvmlSystem, cuda: CudaStatus) -> Verdict | None:
    """No NVML or no GPU: reported as information, the probe goes on with the host."""
    if not system.available:
        return Verdict(
            "PROBE.NVML",
            Severity.INFO,
            f"no NVIDIA GPU readings: {system.error}",
            {"nvml_error": system.error, "torch_cuda": cuda.reason},
            "install the NVIDIA driver if this machine has an NVIDIA GPU",
        )
    if system.device_count == 0:
        return Verdict("PROBE.NVML", Severity.INFO, "NVML is present but sees no GPU", {})
    return None


def lost_gpu_verdict(reading: GpuReading) -> Verdict | None:
    """A GPU that fell off the bus is an error: its jobs die and it needs a reset or a reseat."""
    if not reading.lost:
        return None
    return Verdict(
        "PROBE.LOST",
        Severity.ERROR,
        f"GPU {reading.index} is lost ({reading.error}): it no longer answers the driver",
        {"gpu": reading.index, "error": reading.error},
        "see `dmesg` for Xid 79 (fallen off the bus); check its power cables and seating, "
        "then reset it (nvidia-smi -r) or reboot",
    )


def unsupported_verdict(reading: GpuReading) -> Verdict | None:
    """Fields the driver does not give are data: listed once, never fatal."""
    # GeForce cards have no NVLink (since the 40 series), no ECC, no serial; passive cards no fan.
    optional = ("nvlink", "ecc_enabled", "fan_speed_pct", "serial")
    names = [n for n in reading.unsupported if n not in optional]
    failed = [f"{n} ({why})" for n, why in reading.failed]
    if not names and not failed:
        return None
    parts = []
    if names:
        parts.append("not supported: " + ", ".join(names))
    if failed:
        parts.append("failed: " + ", ".join(failed))
    return Verdict(
        "PROBE.FIELDS",
        Severity.INFO,
        f"GPU {reading.index}: the driver does not report everything ({'; '.join(parts)})",
        {"gpu": reading.index, "unsupported": list(reading.unsupported), "failed": failed},
    )


def pcie_link_verdict(reading: GpuReading, loaded: bool) -> Verdict | None:
    """A link below its maximum generation or width, judged under load only.

    Idle GPUs train their links down to Gen1 to save power (NVML then reports the current
    generation as 1), so a slow idle link is no fault; under load it is a riser, a slot wired
    narrower than it looks, or a dirty contact (DCGM checks link width and generation the same
    way)."""
    gen, gen_max = reading.pcie_gen_current, reading.pcie_gen_max
    width, width_max = reading.pcie_width_current, reading.pcie_width_max
    if gen is None or gen_max is None or width is None or width_max is None:
        return None
    if gen >= gen_max and width >= width_max:
        return None
    evidence = {
        "gpu": reading.index,
        "gen": gen,
        "gen_max": gen_max,
        "width": width,
        "width_max": width_max,
        "under_load": loaded,
    }
    text = f"GPU {reading.index} PCIe link at Gen{gen} x{width} (max Gen{gen_max} x{width_max})"
    if not loaded:
        return Verdict(
            "PROBE.LINK",
            Severity.INFO,
            text + " at idle: links train down when idle; judge it under load",
            evidence,
            "run `dlrig probe` with torch installed (it loads each GPU) or read it during training",
        )
    return Verdict(
        "PROBE.LINK",
        Severity.WARNING,
        text + " under load",
        evidence,
        "reseat the card, move it to a slot wired x16, or replace the riser; check the BIOS's "
        "PCIe generation setting",
    )


def is_loaded(reading: GpuReading, measured_under_load: bool) -> bool:
    """Whether a reading was taken under load: by the probe's own load, or the utilisation."""
    util = reading.utilization_gpu_pct
    return measured_under_load or (util is not None and util >= LOADED_UTILIZATION_PCT)


def thermal_verdict(reading: GpuReading) -> Verdict | None:
    """COOL.1: GPUs raise clocks until a temperature limit, then slow down; a GPU with a thermal
    slowdown bit set is losing speed to heat (0-10% for one GPU, 10-25% when several heat each
    other)."""
    if not reading.thermal_throttled:
        return None
    temp = reading.temperature_c
    limit = reading.temperature_slowdown_c
    where = f" at {temp} C" if temp is not None else ""
    if limit is not None:
        where += f" (slowdown threshold {limit} C)"
    clocks = ""
    if reading.clock_sm_mhz is not None and reading.clock_sm_max_mhz:
        clocks = f": SM clock {reading.clock_sm_mhz} of {reading.clock_sm_max_mhz} MHz"
    return Verdict(
        "COOL.1",
        Severity.WARNING,
        f"GPU {reading.index} throttling for heat{where}{clocks}",
        {
            "gpu": reading.index,
            "temperature_c": temp,
            "slowdown_c": limit,
            "reasons": list(reading.event_reason_names),
            "clock_sm_mhz": reading.clock_sm_mhz,
            "clock_sm_max_mhz": reading.clock_sm_max_mhz,
        },
        "clear the air path, raise the fan curve, space the cards, or use blower or water "
        "cooling for several GPUs (COOL.3, COOL.4)",
    )


def power_cap_verdict(reading: GpuReading) -> Verdict | None:
    """The power cap holding clocks down under load: expected at full load, worth knowing when
    the enforced limit is below the card's rating."""
    if not reading.power_capped:
        return None
    return Verdict(
        "PROBE.POWER",
        Severity.INFO,
        f"GPU {reading.index} clocks held by its power limit"
        + (f" ({reading.power_limit_w:.0f} W)" if reading.power_limit_w else ""),
        {"gpu": reading.index, "power_w": reading.power_w, "limit_w": reading.power_limit_w},
    )


def power_limit_verdict(reading: GpuReading, part: GPU | None) -> Verdict | None:
    """An enforced power limit under the pass rule of the card's rated power (a lowered limit)."""
    if part is None or reading.power_limit_w is None:
        return None
    if reading.power_limit_w >= PASS_FRACTION * part.tdp_w:
        return None
    return Verdict(
        "PROBE.POWER",
        Severity.WARNING,
        f"GPU {reading.index} power limit {reading.power_limit_w:.0f} W is "
        f"{_pct(reading.power_limit_w, part.tdp_w)}% of its rated {part.tdp_w:.0f} W",
        {"gpu": reading.index, "limit_w": reading.power_limit_w, "tdp_w": part.tdp_w},
        "raise it with `nvidia-smi -pl` if the PSU and cooling allow (PSU.1)",
    )


_MATMUL_REFERENCE: dict[Precision, Callable[[GPU], float | None]] = {
    Precision.FP32: lambda g: g.fp32_tflops,
    Precision.TF32: lambda g: g.tf32_tensor_tflops,
    Precision.FP16: lambda g: g.fp16_tensor_tflops,
    Precision.BF16: lambda g: g.bf16_tensor_tflops,
    Precision.FP8: lambda g: g.fp8_tensor_tflops,
}


def matmul_reference(part: GPU, precision: Precision, datasheet: float) -> tuple[float, str]:
    """(TFLOPS a healthy card reaches, what that figure is): the datasheet's dense figure, or
    where real code measured less on this card (dlrig.model.rates.measured_matmul), that rate.
    A lent H200 ran 16-bit torch.mm at 740-800 TFLOPS of 989.5, held to its 700 W cap at
    1,440-1,500 MHz (tests/fixtures/nvml/h200_under_matmul_time_series.json): 75% of the
    datasheet is a healthy Hopper card, not a fault."""
    found = measured_matmul(part, precision)
    if found is not None and found.value < datasheet:
        return found.value, f"what real code reaches on this card ({found.provenance})"
    return datasheet, "datasheet"


def matmul_verdict(index: int, result: MatmulResult, part: GPU | None) -> Verdict | None:
    """Measured matmul TFLOPS against what a healthy card reaches (matmul_reference), by
    DCGM's pass rule."""
    if result.tflops is None or part is None:
        return None
    datasheet = _MATMUL_REFERENCE[result.precision](part)
    if datasheet is None:
        return None
    reference, basis = matmul_reference(part, result.precision, datasheet)
    share = _pct(result.tflops, datasheet)
    evidence = {
        "gpu": index,
        "precision": result.precision.value,
        "measured_tflops": round(result.tflops, 1),
        "datasheet_tflops": datasheet,
        "percent": share,
        "expected_tflops": round(reference, 1),
        "expected_basis": basis,
        "method": result.note,
    }
    if result.tflops >= PASS_FRACTION * reference:
        on_card = f"{_pct(result.tflops, reference)}% of the {reference:g} TFLOPS"
        against = "" if basis == "datasheet" else f", {on_card} real code reaches on this card"
        return Verdict(
            "PROBE.PERF",
            Severity.INFO,
            f"GPU {index} {result.precision.value} matmul at {share}% of datasheet{against}",
            evidence,
        )
    return Verdict(
        "PROBE.PERF",
        Severity.WARNING,
        f"GPU {index} matmul at {_pct(result.tflops, reference)}% of expected "
        f"({result.precision.value}: {result.tflops:.1f} of {reference:g} TFLOPS, {basis})",
        evidence,
        "look for thermal or power throttling (COOL.1), a lowered power limit, or clocks "
        "locked low; compare with another GPU of the same model",
    )


def bandwidth_verdict(
    index: int, what: str, measured_gb_s: float | None, reference_gb_s: float | None
) -> Verdict | None:
    """A measured bandwidth (device memory, host copies) against its reference, DCGM's rule."""
    if measured_gb_s is None or not reference_gb_s:
        return None
    if measured_gb_s >= PASS_FRACTION * reference_gb_s:
        return None
    return Verdict(
        "PROBE.PERF",
        Severity.WARNING,
        f"GPU {index} {what} at {measured_gb_s:.1f} GB/s, {_pct(measured_gb_s, reference_gb_s)}% "
        f"of the expected {reference_gb_s:.1f} GB/s",
        {
            "gpu": index,
            "what": what,
            "measured_gb_s": measured_gb_s,
            "reference_gb_s": reference_gb_s,
        },
        "check the link (PROBE.LINK), NUMA placement of the process, and other traffic",
    )


def h2d_reference_gb_s(reading: GpuReading) -> float | None:
    """Pinned host-to-device reference: the link's theoretical one-way rate at its maximum."""
    if reading.pcie_gen_max is None or reading.pcie_width_max is None:
        return None
    return pcie_theoretical_gb_s(reading.pcie_gen_max, reading.pcie_width_max)


DATASHEET_QUEUE_DEPTH = 8
"""The least queue depth of 1 MiB reads judged against a datasheet's sequential read. Vendors
rate sequential reads with many requests in flight; CrystalDiskMark 8's sequential test, the
one reviews hold datasheets to, reads 1 MiB blocks 8 at a time (SEQ1M Q8T1) and lists QD1
(SEQ1M Q1T1) apart because a healthy NVMe drive reads well under its rating there."""


def disk_datasheet_verdict(
    label: str, read_mb_s: float, part: Storage | None, queue_depth: int = DATASHEET_QUEUE_DEPTH
) -> Verdict | None:
    """A drive's measured sequential read against its datasheet, DCGM's rule, at a comparable
    queue depth only: a shallower figure is reported, never called a fault."""
    if part is None:
        return None
    if queue_depth < DATASHEET_QUEUE_DEPTH:
        return Verdict(
            "PROBE.PERF",
            Severity.INFO,
            f"disk {label} reads at {read_mb_s:.0f} MB/s at queue depth {queue_depth}: not judged "
            f"against the {part.name}'s {part.read_mb_s:.0f} MB/s, rated at a deep queue",
            {
                "disk": label,
                "read_mb_s": read_mb_s,
                "queue_depth": queue_depth,
                "datasheet_mb_s": part.read_mb_s,
            },
            "install fio (or let dlrig read with O_DIRECT threads) for a deep-queue figure",
        )
    if read_mb_s >= PASS_FRACTION * part.read_mb_s:
        return None
    return Verdict(
        "PROBE.PERF",
        Severity.WARNING,
        f"disk {label} reads at {read_mb_s:.0f} MB/s, {_pct(read_mb_s, part.read_mb_s)}% of the "
        f"{part.name}'s {part.read_mb_s:.0f} MB/s",
        {
            "disk": label,
            "read_mb_s": read_mb_s,
            "queue_depth": queue_depth,
            "datasheet_mb_s": part.read_mb_s,
        },
        "check the link (an NVMe drive in a chipset x1/x2 slot) and free space (full SSDs slow)",
    )


def disk_feed_verdict(
    label: str,
    read_mb_s: float,
    need_mb_s: float,
    job: str,
    model_assumptions: tuple[str, ...] = (),
) -> Verdict:
    """DISK.3: a 100-150 MB/s hard disk can be too slow to keep GPUs fed when inputs are large
    and do not compress; a disk slower than the job's read rate starves the GPUs."""
    evidence = {
        "disk": label,
        "read_mb_s": round(read_mb_s),
        "need_mb_s": round(need_mb_s),
        "job": job,
        "model_assumptions": list(model_assumptions),
    }
    if read_mb_s < need_mb_s:
        return Verdict(
            "DISK.3",
            Severity.WARNING,
            f"disk at {read_mb_s:.0f} MB/s: {job} will starve (DISK.3): it reads about "
            f"{need_mb_s:.0f} MB/s",
            evidence,
            "keep the dataset on an SSD (NVMe better), or in RAM if it fits",
        )
    return Verdict(
        "DISK.3",
        Severity.INFO,
        f"disk at {read_mb_s:.0f} MB/s keeps {job} fed (it reads about {need_mb_s:.0f} MB/s)",
        evidence,
    )
