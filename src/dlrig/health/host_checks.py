"""Host checks (HEALTH.9-12): PCIe AER, EDAC, drives, thermal zones."""

from __future__ import annotations

from dlrig.enums import Severity
from dlrig.health.findings import (
    Context,
    Finding,
    check,
    grown,
    new_or_since_boot,
)
from dlrig.health.inputs import HealthInputs


@check("HEALTH.9", "pcie_aer")
def pcie_aer(inputs: HealthInputs, context: Context) -> list[Finding]:
    """PCIe Advanced Error Reporting: a fatal error took the link down, a non-fatal one lost a
    transaction; correctable ones were retried (the kernel's aer_stats ABI)."""
    found = []
    for aer in inputs.aer or ():
        what = "NVIDIA GPU" if aer.is_nvidia_gpu else "root port" if aer.is_root_port else "device"
        part = f"PCIe {what} {aer.device}"
        for name, severity in (("fatal", Severity.ERROR), ("nonfatal", Severity.WARNING)):
            count, since = new_or_since_boot(
                context, f"aer/{aer.device}/{name}", getattr(aer, name)
            )
            if count:
                found.append(
                    Finding(
                        "HEALTH.9",
                        f"pcie_aer_{name}",
                        severity,
                        part,
                        "sysfs",
                        f"{part}: {count:.0f} {name} AER error(s) {since}"
                        + (f" (root port {aer.root_port})" if aer.root_port else ""),
                        "reseat the card and its riser; a fatal error on a GPU's link goes with "
                        "Xid 79 (check the kernel log)",
                        {"count": count, "details": dict(aer.details), "root_port": aer.root_port},
                    )
                )
        new_cor = grown(context, f"aer/{aer.device}/correctable", aer.correctable)
        if new_cor:
            found.append(
                Finding(
                    "HEALTH.9",
                    "pcie_aer_correctable",
                    Severity.INFO,
                    part,
                    "sysfs",
                    f"{part}: {new_cor:.0f} correctable AER error(s) {context.since}",
                    None,
                    {"count": new_cor, "details": dict(aer.details)},
                )
            )
    return found


@check("HEALTH.10", "host_memory_edac")
def host_memory_edac(inputs: HealthInputs, context: Context) -> list[Finding]:
    """EDAC counts host memory errors per controller and DIMM: an uncorrected one crashed or
    poisoned something; corrected ones that keep growing mark a DIMM to replace (the kernel's
    EDAC documentation)."""
    found = []
    for mc in inputs.edac or ():
        part = f"DIMM {mc.label} ({mc.name})" if mc.label else f"memory controller {mc.name}"
        ue, since = new_or_since_boot(context, f"edac/{mc.name}/uncorrected", mc.uncorrected)
        if ue:
            found.append(
                Finding(
                    "HEALTH.10",
                    "host_memory_uncorrected",
                    Severity.ERROR,
                    part,
                    "sysfs",
                    f"{part}: {ue:.0f} uncorrected memory error(s) {since}",
                    "replace the DIMM the BMC's SEL or EDAC names; run a memory test",
                    {"uncorrected": mc.uncorrected},
                )
            )
        ce = grown(context, f"edac/{mc.name}/corrected", mc.corrected)
        if ce:
            found.append(
                Finding(
                    "HEALTH.10",
                    "host_memory_corrected",
                    Severity.WARNING,
                    part,
                    "sysfs",
                    f"{part}: {ce:.0f} corrected memory error(s) {context.since}",
                    "watch it; a DIMM whose corrected errors keep growing is failing",
                    {"corrected": mc.corrected, "new": ce},
                )
            )
    return found


@check("HEALTH.11", "drive_health")
def drive_health(inputs: HealthInputs, context: Context) -> list[Finding]:
    """SMART: a drive that fails its own self-assessment or sets an NVMe critical warning is
    failing; media errors and reallocated or pending sectors that grow mark it (smartctl)."""
    found = []
    for d in inputs.drives or ():
        part = f"drive {d.name}" + (f" ({d.model})" if d.model else "")
        evidence = {
            "passed": d.passed,
            "critical_warning": d.critical_warning,
            "media_errors": d.media_errors,
            "percentage_used": d.percentage_used,
            "reallocated_sectors": d.reallocated_sectors,
            "pending_sectors": d.pending_sectors,
        }
        if d.passed is False or d.critical_warning:
            reasons = ["fails its SMART self-assessment"] if d.passed is False else []
            if d.critical_warning:
                reasons.append(f"sets NVMe critical warning 0x{d.critical_warning:02x}")
            why = " and ".join(reasons)
            found.append(
                Finding(
                    "HEALTH.11",
                    "drive_failing",
                    Severity.ERROR,
                    part,
                    "smartctl",
                    f"{part} {why}",
                    "copy what it holds and replace it",
                    evidence,
                )
            )
        key = d.serial or d.name
        increases = {
            name: new
            for name in ("media_errors", "reallocated_sectors", "offline_uncorrectable")
            if (new := grown(context, f"drive/{key}/{name}", getattr(d, name)))
        }
        if d.pending_sectors:
            increases["pending_sectors"] = d.pending_sectors
        if increases:
            found.append(
                Finding(
                    "HEALTH.11",
                    "drive_errors",
                    Severity.WARNING,
                    part,
                    "smartctl",
                    f"{part}: "
                    + ", ".join(f"{k.replace('_', ' ')} {v:.0f}" for k, v in increases.items())
                    + f" ({context.since})",
                    "back it up; a count that keeps growing means a failing drive",
                    evidence,
                )
            )
        if d.percentage_used is not None and d.percentage_used >= 100:
            found.append(
                Finding(
                    "HEALTH.11",
                    "drive_worn",
                    Severity.WARNING,
                    part,
                    "smartctl",
                    f"{part} has used {d.percentage_used}% of its rated endurance",
                    "plan its replacement (DISK.4: datasets live on it)",
                    evidence,
                )
            )
    return found


@check("HEALTH.12", "thermal_zone")
def thermal_zone(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A thermal zone at its critical trip point is shut down by the kernel; at the hot or
    passive one it is being cooled by slowing it (the kernel's thermal sysfs ABI)."""
    found = []
    for z in inputs.thermal_zones or ():
        t = z.temperature_c
        if t is None:
            continue
        part = f"thermal zone {z.name} ({z.kind})" if z.kind else f"thermal zone {z.name}"
        evidence = {
            "temperature_c": t,
            "critical_c": z.critical_c,
            "hot_c": z.hot_c,
            "passive_c": z.passive_c,
        }
        if z.critical_c is not None and t >= z.critical_c:
            found.append(
                Finding(
                    "HEALTH.12",
                    "thermal_zone_critical",
                    Severity.ERROR,
                    part,
                    "sysfs",
                    f"{part} at {t:.0f} C, at its critical trip point {z.critical_c:.0f} C",
                    "check the CPU cooler and the chassis airflow",
                    evidence,
                )
            )
        else:
            limit = min((v for v in (z.hot_c, z.passive_c) if v is not None), default=None)
            if limit is not None and t >= limit:
                found.append(
                    Finding(
                        "HEALTH.12",
                        "thermal_zone_hot",
                        Severity.WARNING,
                        part,
                        "sysfs",
                        f"{part} at {t:.0f} C, over its {limit:.0f} C trip point (throttled)",
                        "check the CPU cooler and the chassis airflow",
                        evidence,
                    )
                )
    return found
