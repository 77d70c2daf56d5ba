"""GPU checks (HEALTH.1-8): NVML's counters and Xids."""

from __future__ import annotations

from dlrig.enums import Severity
from dlrig.hardware.nvml import ClockEventReason
from dlrig.hardware.nvml.health import NVLINK_COUNTERS, GpuHealth, XidEvent
from dlrig.health.findings import (
    Context,
    Finding,
    check,
    grown,
    live_gpus,
)
from dlrig.health.inputs import HealthInputs, gpu_key


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
    for g in live_gpus(inputs):
        key = gpu_key(g)
        volatile = g.ecc_volatile_uncorrected or 0
        lifetime = g.ecc_aggregate_uncorrected
        new = grown(context, f"gpu/{key}/ecc_aggregate_uncorrected", lifetime)
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
        corrected = grown(context, f"gpu/{key}/ecc_volatile_corrected", g.ecc_volatile_corrected)
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
    for g in live_gpus(inputs):
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
        new = grown(
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
    for g in live_gpus(inputs):
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
            grown(context, f"gpu/{key}/{name}", getattr(g, name)) or 0
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
    for g in live_gpus(inputs):
        increases: dict[str, float] = {}
        for link in g.nvlink_errors or ():
            for name in NVLINK_COUNTERS:
                value = getattr(link, name)
                key = f"gpu/{gpu_key(g)}/nvlink{link.link}/{name}"
                new = grown(context, key, value)
                if new:
                    increases[f"link {link.link} {name}"] = new
        if increases:
            top = ", ".join(f"{k} +{v:.0f}" for k, v in sorted(increases.items())[:6])
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
                    {"grown": increases},
                    gpu=g.index,
                )
            )
    return found


@check("HEALTH.7", "gpu_pcie_replay")
def gpu_pcie_replay(inputs: HealthInputs, context: Context) -> list[Finding]:
    """The PCIe replay counter counts transfers the link had to resend: growth means a marginal
    link (a riser, a card not fully seated), the cause NVIDIA's catalog names for Xid 79."""
    found = []
    for g in live_gpus(inputs):
        new = grown(context, f"gpu/{gpu_key(g)}/pcie_replay_count", g.pcie_replay_count)
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
    for g in live_gpus(inputs):
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
