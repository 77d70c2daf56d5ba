"""The health checks: one small function per condition, registered with its id (HEALTH.n) and
a docstring quoting the source of its reasoning. Each takes the readings and the context (the
baseline to judge growth against, the time, the Xid catalog) and returns findings.

Severity is what the machine needs: `error` a fault that needs an action on the machine (a
reset, a reboot, a part replaced: `dlrig health` exits 1), `warning` something to look at or an
action on the job, `info` a fact without a fault. The guide's server sheet (section 9) promises
"health monitoring of every component ... fault alarms"; these are those alarms.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dlrig.enums import Severity
from dlrig.hardware.bmc import BmcHealth, BmcSensor, SensorKind
from dlrig.hardware.nvml import ClockEventReason
from dlrig.hardware.nvml.health import NVLINK_COUNTERS, GpuHealth, XidEvent
from dlrig.health.inputs import Baseline, HealthInputs, gpu_key
from dlrig.health.xid import XidCatalog, load_xid_catalog

SEL_WINDOW_H = 24.0
"""Without a baseline, BMC log entries of the last day are judged; older ones are history."""


@dataclass(frozen=True)
class Finding:
    """One health finding: the check, how severe, the part in the source's own words, what was
    seen, what to do, and the figures behind it."""

    check: str
    name: str
    severity: Severity
    part: str
    source: str
    message: str
    action: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    gpu: int | None = None


@dataclass(frozen=True)
class Context:
    """What the checks judge against: the earlier reading (None: none saved), the time now,
    the GPU count the last probe saw, and the Xid catalog."""

    baseline: Baseline | None
    now_utc: str
    expected_gpus: int | None = None
    catalog: XidCatalog = field(default_factory=load_xid_catalog)

    @property
    def since(self) -> str:
        """Words for the span a growth covers."""
        if self.baseline is None:
            return "since the driver loaded"
        if not self.baseline.taken_utc:
            return f"since the {self.baseline.source}"
        return f"since the last {self.baseline.source} ({self.baseline.taken_utc[:16]} UTC)"


Check = Callable[[HealthInputs, Context], list[Finding]]


@dataclass(frozen=True)
class RegisteredCheck:
    """A check with its id and name."""

    check_id: str
    name: str
    run: Check


CHECKS: list[RegisteredCheck] = []


def check(check_id: str, name: str) -> Callable[[Check], Check]:
    """Register a check under its id."""

    def register(fn: Check) -> Check:
        CHECKS.append(RegisteredCheck(check_id, name, fn))
        return fn

    return register


def run_checks(inputs: HealthInputs, context: Context) -> tuple[Finding, ...]:
    """Every registered check, findings most severe first (then in check order)."""
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    found = [f for c in CHECKS for f in c.run(inputs, context)]
    return tuple(sorted(found, key=lambda f: order[f.severity]))


def _live(inputs: HealthInputs) -> Iterator[GpuHealth]:
    return (g for g in inputs.gpus or () if not g.lost)


def _grown(context: Context, key: str, now: float | None) -> float | None:
    return None if context.baseline is None else context.baseline.growth(key, now)


def _new_or_since_boot(context: Context, key: str, now: float | None) -> tuple[float | None, str]:
    """A counter's growth since the baseline, or (without one, or one that lacks this
    counter) its count since boot: for counters whose every count is a fault."""
    grown = _grown(context, key, now)
    if grown is not None:
        return grown, context.since
    return now, "since boot"


@check("HEALTH.1", "gpu_missing")
def gpu_missing(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A GPU that fell off the bus stops answering NVML (Xid 79, NVIDIA's catalog: RESTART_BM);
    one that did not come back after a reboot is missing from the count the last probe saw."""
    found = [
        Finding(
            "HEALTH.1",
            "gpu_missing",
            Severity.ERROR,
            f"GPU {g.index}",
            "nvml",
            f"GPU {g.index} stopped answering NVML: {g.error or 'lost'}",
            "reboot the machine; if it stays lost, reseat the card and its power cables and "
            "check the PSU (PSU.1, PSU.2)",
            {"error": g.error},
            gpu=g.index,
        )
        for g in inputs.gpus or ()
        if g.lost
    ]
    expected = context.expected_gpus
    if expected is None and context.baseline is not None:
        expected = context.baseline.gpu_count
    seen = 0 if inputs.gpus is None else len(inputs.gpus)
    if expected and seen < expected:
        why = f" (NVML: {inputs.nvml_error})" if inputs.gpus is None and inputs.nvml_error else ""
        uuids = {g.uuid for g in inputs.gpus or () if g.uuid}
        gone = [
            u for u in (context.baseline.gpu_uuids if context.baseline else ()) if u not in uuids
        ]
        found.append(
            Finding(
                "HEALTH.1",
                "gpu_missing",
                Severity.ERROR,
                "GPUs",
                "nvml",
                f"{seen} GPU(s) answer where the last probe saw {expected}{why}",
                "check `lspci -d 10de:` and the kernel log for Xid 79; reseat the missing card, "
                "its riser and power cables",
                {"gpus_seen": seen, "gpus_expected": expected, "missing_uuids": gone},
            )
        )
    return found


@check("HEALTH.2", "gpu_ecc")
def gpu_ecc(inputs: HealthInputs, context: Context) -> list[Finding]:
    """An uncorrectable ECC error (Xid 48, a DBE) is "reported back to the user application. A
    GPU reset or node reboot is needed to clear this error" (NVIDIA's Xid catalog)."""
    found = []
    for g in _live(inputs):
        key = gpu_key(g)
        volatile = g.ecc_volatile_uncorrected or 0
        lifetime = g.ecc_aggregate_uncorrected
        new = _grown(context, f"gpu/{key}/ecc_aggregate_uncorrected", lifetime)
        evidence = {
            "ecc_volatile_uncorrected": g.ecc_volatile_uncorrected,
            "ecc_aggregate_uncorrected": lifetime,
            "ecc_volatile_corrected": g.ecc_volatile_corrected,
            "new_uncorrected": new,
        }
        if volatile > 0 or (new or 0) > 0:
            count = f"{volatile} since the driver loaded" if volatile else f"{new:.0f} new"
            found.append(
                Finding(
                    "HEALTH.2",
                    "gpu_ecc_uncorrected",
                    Severity.ERROR,
                    g.label,
                    "nvml",
                    f"{g.label}: uncorrectable ECC errors ({count}; {lifetime} in its life)",
                    "stop its jobs and reset the GPU (nvidia-smi -r) or reboot; if they recur, "
                    "run DCGM diagnostics and contact support (NVIDIA: WORKFLOW_XID_48)",
                    evidence,
                    gpu=g.index,
                )
            )
        elif lifetime:
            found.append(
                Finding(
                    "HEALTH.2",
                    "gpu_ecc_uncorrected",
                    Severity.INFO,
                    g.label,
                    "nvml",
                    f"{g.label}: {lifetime} uncorrectable ECC error(s) in its life, none new "
                    f"{context.since}",
                    None,
                    evidence,
                    gpu=g.index,
                )
            )
        corrected = _grown(context, f"gpu/{key}/ecc_volatile_corrected", g.ecc_volatile_corrected)
        if corrected:
            found.append(
                Finding(
                    "HEALTH.2",
                    "gpu_ecc_corrected",
                    Severity.INFO,
                    g.label,
                    "nvml",
                    f"{g.label}: {corrected:.0f} corrected ECC error(s) {context.since}",
                    None,
                    {"new_corrected": corrected},
                    gpu=g.index,
                )
            )
    return found


@check("HEALTH.3", "gpu_row_remap")
def gpu_row_remap(inputs: HealthInputs, context: Context) -> list[Finding]:
    """Ampere and later remap a failing memory row: "A reset will be required to actually remap
    the row", and a remapping failure is NVIDIA's RMA criterion (NVML API; A100 GPU memory error
    management, RMA policy thresholds for row remapping)."""
    found = []
    for g in _live(inputs):
        evidence = {
            "remapped_rows_correctable": g.remapped_rows_correctable,
            "remapped_rows_uncorrectable": g.remapped_rows_uncorrectable,
            "remap_pending": g.remap_pending,
            "remap_failure": g.remap_failure,
        }
        if g.remap_failure:
            found.append(
                Finding(
                    "HEALTH.3",
                    "gpu_row_remap_failure",
                    Severity.ERROR,
                    g.label,
                    "nvml",
                    f"{g.label}: a row remapping failed (no spare row left in a bank)",
                    "the GPU meets NVIDIA's RMA criterion: contact support for a replacement",
                    evidence,
                    gpu=g.index,
                )
            )
        if g.remap_pending:
            found.append(
                Finding(
                    "HEALTH.3",
                    "gpu_row_remap_pending",
                    Severity.ERROR,
                    g.label,
                    "nvml",
                    f"{g.label}: a row remapping is pending "
                    f"({g.remapped_rows_uncorrectable or 0} rows remapped for uncorrectable "
                    f"errors, {g.remapped_rows_correctable or 0} for correctable ones)",
                    "reset the GPU (nvidia-smi -r) when its jobs allow: the reset applies the "
                    "remap; running jobs are unaffected until then",
                    evidence,
                    gpu=g.index,
                )
            )
        new = _grown(
            context, f"gpu/{gpu_key(g)}/remapped_rows_uncorrectable", g.remapped_rows_uncorrectable
        )
        if new and not g.remap_pending:
            found.append(
                Finding(
                    "HEALTH.3",
                    "gpu_row_remapped",
                    Severity.WARNING,
                    g.label,
                    "nvml",
                    f"{g.label}: {new:.0f} row(s) remapped for uncorrectable errors "
                    f"{context.since}",
                    "nothing now; rows that keep failing lead to a remapping failure (RMA)",
                    evidence,
                    gpu=g.index,
                )
            )
    return found


@check("HEALTH.4", "gpu_retired_pages")
def gpu_retired_pages(inputs: HealthInputs, context: Context) -> list[Finding]:
    """Before Ampere the driver retires a page with errors: Xid 63 "New retired page, reload
    the driver to activate" (NVIDIA, dynamic page retirement)."""
    found = []
    for g in _live(inputs):
        evidence = {
            "retired_pages_sbe": g.retired_pages_sbe,
            "retired_pages_dbe": g.retired_pages_dbe,
            "retired_pages_pending": g.retired_pages_pending,
        }
        if g.retired_pages_pending:
            found.append(
                Finding(
                    "HEALTH.4",
                    "gpu_retired_pages_pending",
                    Severity.ERROR,
                    g.label,
                    "nvml",
                    f"{g.label}: a page retirement is pending",
                    "reload the driver (or reset the GPU / reboot) to retire the page",
                    evidence,
                    gpu=g.index,
                )
            )
        total = (g.retired_pages_sbe or 0) + (g.retired_pages_dbe or 0)
        key = gpu_key(g)
        new = sum(
            _grown(context, f"gpu/{key}/{name}", getattr(g, name)) or 0
            for name in ("retired_pages_sbe", "retired_pages_dbe")
        )
        if new:
            found.append(
                Finding(
                    "HEALTH.4",
                    "gpu_retired_pages",
                    Severity.WARNING,
                    g.label,
                    "nvml",
                    f"{g.label}: {new:.0f} page(s) retired {context.since} ({total} in all)",
                    "watch the count: pages that keep being retired mean failing memory; contact "
                    "support under NVIDIA's page-retirement RMA policy",
                    evidence,
                    gpu=g.index,
                )
            )
    return found


def _xid_gpu(event: XidEvent, inputs: HealthInputs) -> GpuHealth | None:
    """The GPU of an Xid: NVML's index, or the kernel log's bus address (`0000:1b:00`)."""
    for g in inputs.gpus or ():
        if event.gpu is not None and g.index == event.gpu:
            return g
        if event.pci_bus_id and g.pci_bus_id:
            ours = g.pci_bus_id.lower().split(":", 1)[-1]  # drop NVML's 8-digit domain
            theirs = event.pci_bus_id.lower().split(":", 1)[-1]
            if ours.startswith(theirs) or theirs.startswith(ours):
                return g
    return None


def _new_xid(event: XidEvent, context: Context) -> bool:
    base = context.baseline
    if base is None:
        return True
    if event.seq is not None and event.boot_id and base.kernel_boot_id:
        if event.boot_id != base.kernel_boot_id:
            return True
        return base.kernel_last_seq is None or event.seq > base.kernel_last_seq
    if event.time_utc:
        return event.time_utc > base.taken_utc
    return event.source == "nvml"  # delivered during this reading


@check("HEALTH.5", "gpu_xid")
def gpu_xid(inputs: HealthInputs, context: Context) -> list[Finding]:
    """Each Xid takes the action of its immediate resolution bucket in NVIDIA's Xid catalog
    ("an immediate action that should be performed to recover a system after an Xid")."""
    groups: dict[tuple[str, int], list[XidEvent]] = {}
    for event in inputs.xids:
        if not _new_xid(event, context):
            continue
        gpu = _xid_gpu(event, inputs)
        if gpu is not None:
            where = gpu.label
        elif event.pci_bus_id:
            where = f"GPU at {event.pci_bus_id}"
        else:
            where = f"GPU {event.gpu}" if event.gpu is not None else "a GPU NVML did not name"
        groups.setdefault((where, event.xid), []).append(event)
    found = []
    for (where, code), events in groups.items():
        # NVML's event and the kernel log's line are the same Xid seen twice: count the source
        # that saw more of them.
        sources = sorted({e.source for e in events})
        count = max(sum(e.source == s for e in events) for s in sources)
        logged = [e for e in events if e.source == "kernel_log"]
        last = (logged or events)[-1]
        info, action = context.catalog.resolve(code, last.message)
        gpu = _xid_gpu(last, inputs)
        what = info.description if info else "not in NVIDIA's catalog"
        times = f"{count} times, last" if count > 1 else "at"
        when = f", {times} {last.time_utc[:19].replace('T', ' ')} UTC" if last.time_utc else ""
        found.append(
            Finding(
                "HEALTH.5",
                "gpu_xid",
                action.severity,
                where,
                "+".join(sources),
                f"{where}: Xid {code} ({what}{when})",
                action.action,
                {
                    "xid": code,
                    "mnemonic": info.mnemonic if info else None,
                    "log_text": last.message,
                    "count": count,
                    "sources": sources,
                    "immediate": info.immediate if info else None,
                    "investigatory": info.investigatory if info else None,
                    "last_time_utc": last.time_utc,
                    "catalog": context.catalog.source.get("url"),
                },
                gpu=gpu.index if gpu else last.gpu,
            )
        )
    return found


@check("HEALTH.6", "gpu_nvlink_errors")
def gpu_nvlink_errors(inputs: HealthInputs, context: Context) -> list[Finding]:
    """NVLink data-link errors that keep growing (CRC errors, replays, recoveries) point to a
    failing link or the device at its far end (NVIDIA's Xid catalog, Xid 74)."""
    found = []
    for g in _live(inputs):
        grown: dict[str, float] = {}
        for link in g.nvlink_errors or ():
            for name in NVLINK_COUNTERS:
                value = getattr(link, name)
                key = f"gpu/{gpu_key(g)}/nvlink{link.link}/{name}"
                new = _grown(context, key, value)
                if new:
                    grown[f"link {link.link} {name}"] = new
        if grown:
            top = ", ".join(f"{k} +{v:.0f}" for k, v in sorted(grown.items())[:6])
            found.append(
                Finding(
                    "HEALTH.6",
                    "gpu_nvlink_errors",
                    Severity.WARNING,
                    g.label,
                    "nvml",
                    f"{g.label}: NVLink errors grew {context.since}: {top}",
                    "watch `nvidia-smi nvlink -e`; errors that keep growing on one link want a "
                    "reseat or the vendor's field diagnostics",
                    {"grown": grown},
                    gpu=g.index,
                )
            )
    return found


@check("HEALTH.7", "gpu_pcie_replay")
def gpu_pcie_replay(inputs: HealthInputs, context: Context) -> list[Finding]:
    """The PCIe replay counter counts transfers the link had to resend: growth means a marginal
    link (a riser, a card not fully seated), the cause NVIDIA's catalog names for Xid 79."""
    found = []
    for g in _live(inputs):
        new = _grown(context, f"gpu/{gpu_key(g)}/pcie_replay_count", g.pcie_replay_count)
        if new:
            found.append(
                Finding(
                    "HEALTH.7",
                    "gpu_pcie_replay",
                    Severity.WARNING,
                    g.label,
                    "nvml",
                    f"{g.label}: the PCIe link replayed {new:.0f} transfer(s) {context.since} "
                    f"({g.pcie_replay_count} since the driver loaded)",
                    "reseat the card, avoid riser cables, check the slot's PCIe generation "
                    "setting in the BIOS (PCIE.3)",
                    {"new_replays": new, "pcie_replay_count": g.pcie_replay_count},
                    gpu=g.index,
                )
            )
    return found


@check("HEALTH.8", "gpu_throttle")
def gpu_throttle(inputs: HealthInputs, context: Context) -> list[Finding]:
    """NVML's clock event reasons: the hardware slowdown and power-brake bits are the board or
    the system protecting itself (a fault); thermal slowdown is COOL.1's throttling."""
    found = []
    for g in _live(inputs):
        if g.clocks_event_reasons is None:
            continue
        bits = ClockEventReason(g.clocks_event_reasons & sum(int(r) for r in ClockEventReason))
        evidence = {
            "clocks_event_reasons": g.clocks_event_reasons,
            "temperature_c": g.temperature_c,
        }
        if ClockEventReason.HW_POWER_BRAKE_SLOWDOWN in bits:
            found.append(
                Finding(
                    "HEALTH.8",
                    "gpu_power_brake",
                    Severity.ERROR,
                    g.label,
                    "nvml",
                    f"{g.label}: hardware power brake engaged (the system's supply cannot deliver)",
                    "check the PSUs and their redundancy, and each GPU's power cables (PSU.1, "
                    "PSU.2)",
                    evidence,
                    gpu=g.index,
                )
            )
        elif (
            ClockEventReason.HW_SLOWDOWN in bits
            and ClockEventReason.HW_THERMAL_SLOWDOWN not in bits
        ):
            found.append(
                Finding(
                    "HEALTH.8",
                    "gpu_hw_slowdown",
                    Severity.ERROR,
                    g.label,
                    "nvml",
                    f"{g.label}: hardware slowdown without a thermal cause",
                    "check the card's power cables and the chassis fans; reseat the card",
                    evidence,
                    gpu=g.index,
                )
            )
        elif bits & (ClockEventReason.HW_THERMAL_SLOWDOWN | ClockEventReason.SW_THERMAL_SLOWDOWN):
            found.append(
                Finding(
                    "HEALTH.8",
                    "gpu_thermal_slowdown",
                    Severity.WARNING,
                    g.label,
                    "nvml",
                    f"{g.label}: slowed for heat at {g.temperature_c} C (slowdown at "
                    f"{g.temperature_slowdown_c} C)",
                    "check the inlet temperature and the fans; COOL.1, COOL.3",
                    evidence,
                    gpu=g.index,
                )
            )
    return found


@check("HEALTH.9", "pcie_aer")
def pcie_aer(inputs: HealthInputs, context: Context) -> list[Finding]:
    """PCIe Advanced Error Reporting: a fatal error took the link down, a non-fatal one lost a
    transaction; correctable ones were retried (the kernel's aer_stats ABI)."""
    found = []
    for aer in inputs.aer or ():
        what = "NVIDIA GPU" if aer.is_nvidia_gpu else "root port" if aer.is_root_port else "device"
        part = f"PCIe {what} {aer.device}"
        for name, severity in (("fatal", Severity.ERROR), ("nonfatal", Severity.WARNING)):
            count, since = _new_or_since_boot(
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
        new_cor = _grown(context, f"aer/{aer.device}/correctable", aer.correctable)
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
        ue, since = _new_or_since_boot(context, f"edac/{mc.name}/uncorrected", mc.uncorrected)
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
        ce = _grown(context, f"edac/{mc.name}/corrected", mc.corrected)
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
        grown = {
            name: new
            for name in ("media_errors", "reallocated_sectors", "offline_uncorrectable")
            if (new := _grown(context, f"drive/{key}/{name}", getattr(d, name)))
        }
        if d.pending_sectors:
            grown["pending_sectors"] = d.pending_sectors
        if grown:
            found.append(
                Finding(
                    "HEALTH.11",
                    "drive_errors",
                    Severity.WARNING,
                    part,
                    "smartctl",
                    f"{part}: "
                    + ", ".join(f"{k.replace('_', ' ')} {v:.0f}" for k, v in grown.items())
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


def _bmc_part(sensor: BmcSensor) -> str:
    return f"'{sensor.name}'"


def _bmc_source(inputs: HealthInputs) -> str:
    return inputs.bmc.source if inputs.bmc is not None else "bmc"


@check("HEALTH.13", "bmc_power_supply")
def bmc_power_supply(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A power supply the BMC reports Critical has failed or lost its input; the guide's server
    sheet promises "fault alarms" for every component (section 9; PSU.1)."""
    found = []
    for s in inputs.bmc.sensors if inputs.bmc else ():
        if s.kind is not SensorKind.POWER_SUPPLY or not s.present:
            continue
        if s.health in (BmcHealth.CRITICAL, BmcHealth.WARNING):
            events = f" ({'; '.join(s.events)})" if s.events else ""
            found.append(
                Finding(
                    "HEALTH.13",
                    "power_supply_failed",
                    Severity.ERROR if s.health is BmcHealth.CRITICAL else Severity.WARNING,
                    _bmc_part(s),
                    _bmc_source(inputs),
                    f"power supply {_bmc_part(s)} reports {s.health.value}{events}",
                    "check its power cord and input feed; replace the supply (hot-swap)",
                    {
                        "health": s.health.value,
                        "reading_w": s.reading,
                        "capacity_w": s.capacity_w,
                        "chassis": s.chassis,
                    },
                )
            )
    return found


@check("HEALTH.14", "bmc_redundancy")
def bmc_redundancy(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A redundancy group that no longer holds runs on its last members: one more failure stops
    the server (Redfish Redundancy / RedundantGroup status, IPMI redundancy sensors)."""
    found = []
    for r in inputs.bmc.redundancy if inputs.bmc else ():
        short = (
            r.members_ok is not None and r.min_needed is not None and r.members_ok < r.min_needed
        )
        bad = r.health in (BmcHealth.CRITICAL, BmcHealth.WARNING)
        if not (bad or short):
            continue
        what = "power-supply" if r.kind is SensorKind.POWER_SUPPLY else "fan"
        counted = (
            f": {r.members_ok} of {len(r.members)} members healthy, {r.min_needed} needed"
            if r.members_ok is not None and r.min_needed is not None
            else ""
        )
        found.append(
            Finding(
                "HEALTH.14",
                f"{'power_supply' if what == 'power-supply' else 'fan'}_redundancy_lost",
                Severity.ERROR
                if what == "power-supply" or r.health is BmcHealth.CRITICAL
                else Severity.WARNING,
                f"'{r.name}'",
                _bmc_source(inputs),
                f"{what} redundancy '{r.name}' lost{counted}"
                + (f" (the BMC says {r.health.value})" if r.health else ""),
                "replace the failed member now: the next failure stops the server",
                {
                    "members": list(r.members),
                    "members_ok": r.members_ok,
                    "min_needed": r.min_needed,
                    "mode": r.mode,
                    "health": r.health.value if r.health else None,
                },
            )
        )
    return found


def _threshold_state(s: BmcSensor) -> tuple[Severity, str] | None:
    """Where a reading stands against the BMC's own thresholds (critical/fatal, then caution)."""
    t, v = s.thresholds, s.reading
    if v is None:
        return None
    units = f" {s.units}" if s.units else ""
    for limit, word in ((t.upper_fatal, "upper fatal"), (t.upper_critical, "upper critical")):
        if limit is not None and v >= limit:
            return Severity.ERROR, f"over the BMC's {word} threshold {limit:g}{units}"
    for limit, word in ((t.lower_fatal, "lower fatal"), (t.lower_critical, "lower critical")):
        if limit is not None and v <= limit:
            return Severity.ERROR, f"under the BMC's {word} threshold {limit:g}{units}"
    if t.upper_caution is not None and v >= t.upper_caution:
        return (
            Severity.WARNING,
            f"over the BMC's upper caution threshold {t.upper_caution:g}{units}",
        )
    if t.lower_caution is not None and v <= t.lower_caution:
        return (
            Severity.WARNING,
            f"under the BMC's lower caution threshold {t.lower_caution:g}{units}",
        )
    return None


def _health_state(s: BmcSensor) -> tuple[Severity, str] | None:
    if s.health is BmcHealth.CRITICAL:
        return Severity.ERROR, "the BMC reports it Critical"
    if s.health is BmcHealth.WARNING:
        return Severity.WARNING, "the BMC reports it Warning"
    return None


def sensor_state(s: BmcSensor) -> tuple[Severity, str] | None:
    """A BMC sensor's fault, if any: a stopped fan, a reading past the BMC's own thresholds,
    else the health the BMC reports; None when it is fine."""
    if s.kind is SensorKind.FAN and s.reading == 0 and s.enabled and s.units == "RPM":
        return Severity.ERROR, "stopped"
    return _threshold_state(s) or _health_state(s)


def _sensor_findings(
    inputs: HealthInputs, kind: SensorKind, check_id: str, name: str, fix: str
) -> list[Finding]:
    found = []
    for s in inputs.bmc.sensors if inputs.bmc else ():
        if s.kind is not kind or not s.present:
            continue
        state = sensor_state(s)
        if state is None:
            continue
        units = f" {s.units}" if s.units else ""
        reading = f" at {s.reading:g}{units}" if s.reading is not None else ""
        context = f" ({s.context.lower()})" if s.context else ""
        found.append(
            Finding(
                check_id,
                name,
                state[0],
                _bmc_part(s),
                _bmc_source(inputs),
                f"{kind.value.replace('_', ' ')} {_bmc_part(s)}{context}{reading}: {state[1]}",
                fix,
                {
                    "reading": s.reading,
                    "units": s.units,
                    "health": s.health.value if s.health else None,
                    "thresholds": {k: v for k, v in vars(s.thresholds).items() if v is not None},
                    "chassis": s.chassis,
                },
            )
        )
    return found


@check("HEALTH.15", "bmc_fan")
def bmc_fan(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A stopped fan or one under its lower critical speed no longer cools its zone (COOL.1:
    the GPUs throttle, then shut down; the BMC's own thresholds)."""
    return _sensor_findings(
        inputs,
        SensorKind.FAN,
        "HEALTH.15",
        "fan_failed",
        "replace the fan (most servers take it hot-swapped); until then the GPUs run hot",
    )


@check("HEALTH.16", "bmc_temperature")
def bmc_temperature(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A temperature over the BMC's upper critical threshold, the inlet above all, means the
    room or the airflow cannot cool the server (the sheet's "thermal design for high ambient")."""
    return _sensor_findings(
        inputs,
        SensorKind.TEMPERATURE,
        "HEALTH.16",
        "temperature_high",
        "check the room's cooling and the rack's airflow (blanking panels, hot-aisle leaks); "
        "an inlet over its limit throttles every GPU",
    )


@check("HEALTH.17", "bmc_voltage")
def bmc_voltage(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A rail outside the BMC's critical thresholds is a failing regulator or supply."""
    return _sensor_findings(
        inputs,
        SensorKind.VOLTAGE,
        "HEALTH.17",
        "voltage_out_of_range",
        "check the power supplies; a rail out of range wants the vendor's support",
    )


def _parse_utc(text: str) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


@check("HEALTH.18", "bmc_event_log")
def bmc_event_log(inputs: HealthInputs, context: Context) -> list[Finding]:
    """The BMC's system event log records faults as they happen, with their own text; entries
    newer than the last reading (or, without one, than a day) are judged by their severity."""
    if inputs.bmc is None:
        return []
    now = _parse_utc(context.now_utc)
    since = (
        _parse_utc(context.baseline.taken_utc)
        if context.baseline is not None
        else (now - dt.timedelta(hours=SEL_WINDOW_H) if now else None)
    )
    # A part whose present state is already a fault (HEALTH.13-17) is judged there; its log
    # entries are the history of it.
    faulted = [s.name.lower() for s in inputs.bmc.sensors if s.present and sensor_state(s)]
    faulted += [r.name.lower() for r in inputs.bmc.redundancy if r.health is BmcHealth.CRITICAL]
    found = []
    for e in inputs.bmc.log_entries:
        if e.severity not in (BmcHealth.CRITICAL, BmcHealth.WARNING):
            continue
        created = _parse_utc(e.created_utc) if e.created_utc else None
        if since is not None and created is not None and created <= since:
            continue
        known = any(name in e.message.lower() for name in faulted)
        severity = Severity.ERROR if e.severity is BmcHealth.CRITICAL else Severity.WARNING
        found.append(
            Finding(
                "HEALTH.18",
                "bmc_log_entry",
                Severity.INFO if known else severity,
                f"{e.log or 'SEL'} entry {e.entry_id}" + (f" ({e.sensor})" if e.sensor else ""),
                _bmc_source(inputs),
                f"{e.log or 'SEL'} entry {e.entry_id} "
                f"({e.created_utc[:19] + ' UTC' if e.created_utc else 'no time'}, "
                f"{e.severity.value}): {e.message}"
                + (" (the part's present state is judged above)" if known else ""),
                None if known else "act on the part it names; clear the log once handled",
                {
                    "entry_id": e.entry_id,
                    "created_utc": e.created_utc,
                    "severity": e.severity.value,
                },
            )
        )
    return found
