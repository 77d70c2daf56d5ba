"""Record a GPU server's health readings as they are, for the replay fakes (scripts/gpu-check).

    python scripts/gpu_health_record.py --out h100_health_idle.json

Reads, through pynvml directly (not dlrig's backend, so that a reading dlrig does not make yet is
still kept), every NVML query a health check asks of each GPU: ECC counters (volatile and
aggregate, corrected and uncorrected, in total and by memory location), retired pages and their
pending state, remapped rows and the remapper histogram, PCIe replay counters, NVLink error
counters per link, clock-event (throttle) reasons, violation times, temperatures against their
thresholds, power, and the field values dcgm-exporter exports. Then one NVML event-set wait for
Xid, ECC and remapping events, the kernel log's `NVRM: Xid` lines, and the host's sysfs: PCIe AER
counters of each GPU and its upstream ports, EDAC memory-controller counts, thermal zones.

Format: tests/support/nvml_fakes.py's fixture format; a call with several constant arguments is
keyed `call:ARG1,ARG2`, each ARG the pynvml constant's name or a link number. Errors are kept as
`{"nvml_error": KIND}`. Top-level `events`, `kernel_log` and `sysfs` hold the rest as read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pynvml as nv

ERROR_TYPES = ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED")
COUNTERS = ("NVML_VOLATILE_ECC", "NVML_AGGREGATE_ECC")
LOCATIONS = (
    "NVML_MEMORY_LOCATION_L1_CACHE",
    "NVML_MEMORY_LOCATION_L2_CACHE",
    "NVML_MEMORY_LOCATION_DEVICE_MEMORY",
    "NVML_MEMORY_LOCATION_DRAM",
    "NVML_MEMORY_LOCATION_REGISTER_FILE",
    "NVML_MEMORY_LOCATION_TEXTURE_MEMORY",
    "NVML_MEMORY_LOCATION_TEXTURE_SHM",
    "NVML_MEMORY_LOCATION_CBU",
    "NVML_MEMORY_LOCATION_SRAM",
)
RETIREMENT_CAUSES = (
    "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",
    "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR",
)
NVLINK_COUNTERS = (
    "NVML_NVLINK_ERROR_DL_REPLAY",
    "NVML_NVLINK_ERROR_DL_RECOVERY",
    "NVML_NVLINK_ERROR_DL_CRC_FLIT",
    "NVML_NVLINK_ERROR_DL_CRC_DATA",
    "NVML_NVLINK_ERROR_DL_ECC_DATA",
)
POLICIES = (
    "NVML_PERF_POLICY_POWER",
    "NVML_PERF_POLICY_THERMAL",
    "NVML_PERF_POLICY_SYNC_BOOST",
    "NVML_PERF_POLICY_BOARD_LIMIT",
    "NVML_PERF_POLICY_LOW_UTILIZATION",
    "NVML_PERF_POLICY_RELIABILITY",
    "NVML_PERF_POLICY_TOTAL_APP_CLOCKS",
    "NVML_PERF_POLICY_TOTAL_BASE_CLOCKS",
)
THRESHOLDS = (
    "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN",
    "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN",
    "NVML_TEMPERATURE_THRESHOLD_MEM_MAX",
    "NVML_TEMPERATURE_THRESHOLD_GPU_MAX",
)
# The field values dcgm-exporter's default counters map to (DCGM_FI_DEV_* of the same names).
FIELDS = (
    "NVML_FI_DEV_ECC_CURRENT",
    "NVML_FI_DEV_ECC_PENDING",
    "NVML_FI_DEV_ECC_SBE_VOL_TOTAL",
    "NVML_FI_DEV_ECC_DBE_VOL_TOTAL",
    "NVML_FI_DEV_ECC_SBE_AGG_TOTAL",
    "NVML_FI_DEV_ECC_DBE_AGG_TOTAL",
    "NVML_FI_DEV_RETIRED_SBE",
    "NVML_FI_DEV_RETIRED_DBE",
    "NVML_FI_DEV_RETIRED_PENDING",
    "NVML_FI_DEV_REMAPPED_COR",
    "NVML_FI_DEV_REMAPPED_UNC",
    "NVML_FI_DEV_REMAPPED_PENDING",
    "NVML_FI_DEV_REMAPPED_FAILURE",
    "NVML_FI_DEV_PCIE_REPLAY_COUNTER",
    "NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER",
    "NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "NVML_FI_DEV_MEMORY_TEMP",
)
EVENTS = (
    "nvmlEventTypeXidCriticalError",
    "nvmlEventTypeDoubleBitEccError",
    "nvmlEventTypeSingleBitEccError",
    "nvmlEventTypeDramRetirementEvent",
    "nvmlEventTypeDramRetirementFailure",
    "nvmlEventTypeGpuUnavailableError",
)
NVLINK_MAX = 18


def jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {name: jsonable(getattr(value, name)) for name, *_ in fields}
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def error(exc: BaseException) -> dict[str, str]:
    kind = type(exc).__name__.removeprefix("NVMLError_")
    return {"nvml_error": kind, "message": str(exc)}


def recorded(table: dict[str, Any], key: str, fn: Any, *args: Any) -> Any:
    try:
        value = fn(*args)
    except nv.NVMLError as exc:
        table[key] = error(exc)
        return None
    except AttributeError as exc:  # an nvidia-ml-py without this function
        table[key] = {"nvml_error": "FunctionNotFound", "message": str(exc)}
        return None
    table[key] = jsonable(value)
    return value


def const(name: str) -> Any:
    return getattr(nv, name)


def field_values(handle: Any) -> dict[str, Any]:
    ids = [const(name) for name in FIELDS]
    try:
        values = nv.nvmlDeviceGetFieldValues(handle, ids)
    except nv.NVMLError as exc:
        return {"nvml_error": type(exc).__name__.removeprefix("NVMLError_")}
    out: dict[str, Any] = {}
    for name, value in zip(FIELDS, values, strict=True):
        if value.nvmlReturn != 0:
            out[name] = {"nvml_return": value.nvmlReturn}
            continue
        kind = value.valueType  # 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint
        member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}.get(
            kind, "ullVal"
        )
        out[name] = getattr(value.value, member)
    return out


def gpu(index: int) -> dict[str, Any]:
    table: dict[str, Any] = {}
    handle = recorded(table, "nvmlDeviceGetHandleByIndex", nv.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        return table
    for call in (
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetSerial",
        "nvmlDeviceGetPciInfo_v3",
        "nvmlDeviceGetInforomImageVersion",
        "nvmlDeviceGetEccMode",
        "nvmlDeviceGetRetiredPagesPendingStatus",
        "nvmlDeviceGetRemappedRows",
        "nvmlDeviceGetRowRemapperHistogram",
        "nvmlDeviceGetPcieReplayCounter",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetSupportedClocksEventReasons",
        "nvmlDeviceGetPerformanceState",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetSupportedEventTypes",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkWidth",
    ):
        recorded(table, call, lambda h, c=call: getattr(nv, c)(h), handle)
    recorded(
        table,
        "nvmlDeviceGetTemperature:NVML_TEMPERATURE_GPU",
        nv.nvmlDeviceGetTemperature,
        handle,
        nv.NVML_TEMPERATURE_GPU,
    )
    for name in THRESHOLDS:
        recorded(
            table,
            f"nvmlDeviceGetTemperatureThreshold:{name}",
            nv.nvmlDeviceGetTemperatureThreshold,
            handle,
            const(name),
        )
    for kind in ERROR_TYPES:
        for counter in COUNTERS:
            recorded(
                table,
                f"nvmlDeviceGetTotalEccErrors:{kind},{counter}",
                nv.nvmlDeviceGetTotalEccErrors,
                handle,
                const(kind),
                const(counter),
            )
            for location in LOCATIONS:
                recorded(
                    table,
                    f"nvmlDeviceGetMemoryErrorCounter:{kind},{counter},{location}",
                    nv.nvmlDeviceGetMemoryErrorCounter,
                    handle,
                    const(kind),
                    const(counter),
                    const(location),
                )
    for cause in RETIREMENT_CAUSES:
        recorded(
            table,
            f"nvmlDeviceGetRetiredPages:{cause}",
            nv.nvmlDeviceGetRetiredPages,
            handle,
            const(cause),
        )
    for policy in POLICIES:
        recorded(
            table,
            f"nvmlDeviceGetViolationStatus:{policy}",
            nv.nvmlDeviceGetViolationStatus,
            handle,
            const(policy),
        )
    for link in range(NVLINK_MAX):
        state = recorded(
            table, f"nvmlDeviceGetNvLinkState:{link}", nv.nvmlDeviceGetNvLinkState, handle, link
        )
        if state is None:
            continue
        for counter in NVLINK_COUNTERS:
            recorded(
                table,
                f"nvmlDeviceGetNvLinkErrorCounter:{link},{counter}",
                nv.nvmlDeviceGetNvLinkErrorCounter,
                handle,
                link,
                const(counter),
            )
    table["nvmlDeviceGetFieldValues"] = field_values(handle)
    return table


def wait_for_events(count: int, timeout_ms: int) -> dict[str, Any]:
    """Register each GPU for the health events it supports; wait once (healthy: Timeout)."""
    result: dict[str, Any] = {"timeout_ms": timeout_ms, "registered": {}, "received": []}
    try:
        event_set = nv.nvmlEventSetCreate()
    except nv.NVMLError as exc:
        result["nvmlEventSetCreate"] = error(exc)
        return result
    try:
        for index in range(count):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            supported = nv.nvmlDeviceGetSupportedEventTypes(handle)
            mask = 0
            names = []
            for name in EVENTS:
                bit = getattr(nv, name, 0)
                if supported & bit:
                    mask |= bit
                    names.append(name)
            try:
                nv.nvmlDeviceRegisterEvents(handle, mask, event_set)
                result["registered"][str(index)] = names
            except nv.NVMLError as exc:
                result["registered"][str(index)] = error(exc)
        while True:
            try:
                data = nv.nvmlEventSetWait_v2(event_set, timeout_ms)
            except nv.NVMLError as exc:
                result["wait"] = error(exc)
                break
            result["received"].append(
                {
                    "eventType": data.eventType,
                    "eventData": data.eventData,
                    "gpuInstanceId": data.gpuInstanceId,
                }
            )
            if len(result["received"]) > 100:
                break
    finally:
        nv.nvmlEventSetFree(event_set)
    return result


def kernel_log() -> dict[str, Any]:
    """`NVRM:` lines of the kernel log (dmesg, else journalctl -k); how it was read, or why not."""
    for command in (
        ["dmesg", "--time-format", "iso"],
        ["dmesg"],
        ["journalctl", "-k", "--no-pager", "-o", "short-iso"],
    ):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            last = f"{command[0]}: {exc}"
            continue
        if done.returncode != 0:
            last = f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()[:200]}"
            continue
        lines = done.stdout.splitlines()
        return {
            "source": " ".join(command),
            "lines_total": len(lines),
            "nvrm_lines": [line for line in lines if "NVRM" in line][-200:],
        }
    return {"source": None, "error": last}


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")[:4000]
    except OSError as exc:
        return f"<unreadable: {exc.strerror}>"


def sysfs(bus_ids: list[str]) -> dict[str, Any]:
    """AER counters of each GPU and of every port above it; EDAC; thermal zones."""
    out: dict[str, Any] = {"aer": {}, "edac": {}, "thermal": {}}
    for bus in bus_ids:
        address = bus.lower()[-12:]  # NVML: 00000000:19:00.0; sysfs: 0000:19:00.0
        device = Path("/sys/bus/pci/devices") / address
        if not device.exists():
            out["aer"][address] = "<absent from /sys/bus/pci/devices>"
            continue
        chain = {}
        real = device.resolve()
        for node in [real, *real.parents]:
            if not (node / "vendor").exists():
                continue
            files = {f.name: read_text(f) for f in sorted(node.glob("aer_*"))}
            files["current_link_speed"] = read_text(node / "current_link_speed")
            files["current_link_width"] = read_text(node / "current_link_width")
            chain[str(node)] = files
        out["aer"][address] = chain
    edac = Path("/sys/devices/system/edac/mc")
    if edac.exists():
        for mc in sorted(edac.glob("mc*")):
            out["edac"][mc.name] = {
                f: read_text(mc / f)
                for f in ("ce_count", "ue_count", "ce_noinfo_count", "ue_noinfo_count", "mc_name")
            }
    else:
        out["edac"] = "<no /sys/devices/system/edac/mc>"
    for zone in sorted(Path("/sys/class/thermal").glob("thermal_zone*")):
        out["thermal"][zone.name] = {
            "type": read_text(zone / "type"),
            "temp": read_text(zone / "temp"),
        }
    out["hwmon"] = {
        h.name: read_text(h / "name") for h in sorted(Path("/sys/class/hwmon").glob("hwmon*"))
    }
    out["ipmi_device"] = [str(p) for p in Path("/dev").glob("ipmi*")]
    out["tools"] = {
        t: any((Path(d) / t).exists() for d in os.environ.get("PATH", "").split(":"))
        for t in ("smartctl", "ipmitool", "ipmi-sensors", "nvidia-smi", "dcgmi")
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scenario", default="health_idle")
    parser.add_argument("--wait-ms", type=int, default=2000)
    args = parser.parse_args()
    stamp = f"{socket.gethostname()} at {dt.datetime.now(dt.UTC).isoformat()}"
    system: dict[str, Any] = {}
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:  # no driver here: that is the reading
        args.out.write_text(
            json.dumps(
                {
                    "provenance": f"recorded on {stamp}",
                    "system": {"nvmlInit": error(exc)},
                    "gpus": [],
                }
            )
            + "\n"
        )
        print(json.dumps({"gpus": 0, "error": str(exc)}))
        return
    system["nvmlInit"] = None
    for call in (
        "nvmlSystemGetDriverVersion",
        "nvmlSystemGetCudaDriverVersion",
        "nvmlSystemGetNVMLVersion",
        "nvmlDeviceGetCount",
    ):
        recorded(system, call, getattr(nv, call))
    count = nv.nvmlDeviceGetCount()
    gpus = [gpu(i) for i in range(count)]
    events = wait_for_events(count, args.wait_ms)
    bus_ids = [g.get("nvmlDeviceGetPciInfo_v3", {}).get("busId", "") for g in gpus]
    nv.nvmlShutdown()
    doc = {
        "provenance": f"recorded by dlrig scripts/gpu_health_record.py on {stamp}; driver "
        f"{system.get('nvmlSystemGetDriverVersion')}, "
        f"nvidia-ml-py {getattr(nv, '__version__', '?')}",
        "scenario": args.scenario,
        "description": "every health query of each GPU as NVML answered it, one event wait, the "
        "kernel log's NVRM lines and the host's AER/EDAC/thermal sysfs",
        "system": system,
        "gpus": gpus,
        "events": events,
        "kernel_log": kernel_log(),
        "sysfs": sysfs([b for b in bus_ids if b]),
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps({"gpus": count, "events": len(events["received"]), "out": str(args.out)}))


if __name__ == "__main__":
    main()
