"""A GPU's health counters as NVML reports them: ECC errors, retired pages (before Ampere),
remapped rows (Ampere on), NVLink error counters, the PCIe replay counter and the clock event
reasons; and the Xid events an NVML event set delivered.

Read through the same calls layer as `GpuReading` (pynvml, or a replayed fixture). A call with
several constant arguments has the key `call:ARG1,ARG2`, each ARG a pynvml constant's name
(`nvmlDeviceGetTotalEccErrors:NVML_MEMORY_ERROR_TYPE_UNCORRECTED,NVML_VOLATILE_ECC`). Every
counter may be None: the driver does not support it on this GPU (its name is then in
`unsupported`) or the call failed (in `failed`). Counters are what NVML reports: volatile ones
since the driver last loaded, aggregate ones over the GPU's life (its InfoROM).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dlrig.hardware.nvml.backend import LOST_KINDS
from dlrig.hardware.nvml.readings import NVLINK_MAX_LINKS, NvmlCallError, NvmlCalls

_UNSUPPORTED = frozenset({"NotSupported", "FunctionNotFound"})

NVLINK_COUNTERS = {
    "replay": "NVML_NVLINK_ERROR_DL_REPLAY",
    "recovery": "NVML_NVLINK_ERROR_DL_RECOVERY",
    "crc_flit": "NVML_NVLINK_ERROR_DL_CRC_FLIT",
    "crc_data": "NVML_NVLINK_ERROR_DL_CRC_DATA",
}
"""The data-link error counters of one NVLink (nvmlNvLinkErrorCounter_t), by dlrig's name."""

ECC_CALL = "nvmlDeviceGetTotalEccErrors"
ECC_COUNTERS = {
    "ecc_volatile_corrected": "NVML_MEMORY_ERROR_TYPE_CORRECTED,NVML_VOLATILE_ECC",
    "ecc_volatile_uncorrected": "NVML_MEMORY_ERROR_TYPE_UNCORRECTED,NVML_VOLATILE_ECC",
    "ecc_aggregate_corrected": "NVML_MEMORY_ERROR_TYPE_CORRECTED,NVML_AGGREGATE_ECC",
    "ecc_aggregate_uncorrected": "NVML_MEMORY_ERROR_TYPE_UNCORRECTED,NVML_AGGREGATE_ECC",
}
RETIRED_PAGES_CALL = "nvmlDeviceGetRetiredPages"
RETIRED_PAGES = {
    "retired_pages_sbe": "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",
    "retired_pages_dbe": "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR",
}
XID_EVENT_TYPE = 8
"""nvmlEventTypeXidCriticalError: the event's data is the Xid number."""


@dataclass(frozen=True)
class NvlinkErrors:
    """One NVLink's data-link error counters since the driver loaded (None: not reported)."""

    link: int
    replay: int | None = None
    recovery: int | None = None
    crc_flit: int | None = None
    crc_data: int | None = None


@dataclass(frozen=True)
class GpuHealth:
    """One GPU's health counters at one moment (None = unsupported or failed).

    `remap_pending`: a row is marked for remapping and a GPU reset will apply it;
    `remap_failure`: a remapping failed (the GPU ran out of spare rows): NVIDIA's RMA
    criterion. `retired_pages_pending`: a page retirement waits for the driver to reload.
    """

    index: int
    lost: bool = False
    error: str | None = None
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    ecc_enabled: bool | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    pcie_replay_count: int | None = None
    nvlink_errors: tuple[NvlinkErrors, ...] | None = None
    clocks_event_reasons: int | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    unsupported: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = field(default=())

    @property
    def label(self) -> str:
        """How a finding names the GPU: `GPU 3 (NVIDIA H100 80GB HBM3, 00000000:1B:00.0)`."""
        parts = [p for p in (self.name, self.pci_bus_id) if p]
        return f"GPU {self.index}" + (f" ({', '.join(parts)})" if parts else "")

    def nvlink_total(self, counter: str) -> int | None:
        """One NVLink counter summed over the links (None when no link reports it)."""
        if not self.nvlink_errors:
            return None
        values = [getattr(link, counter) for link in self.nvlink_errors]
        known = [v for v in values if v is not None]
        return sum(known) if known else None


@dataclass(frozen=True)
class XidEvent:
    """One Xid: from an NVML event set or an `NVRM: Xid` line of the kernel log.

    `gpu` is the NVML index when NVML said which GPU, `pci_bus_id` the bus address the kernel
    log names (`0000:5a:00`, as the driver prints it); `seq` and `boot_id` place a kernel-log
    record (its sequence number in this boot), `time_utc` when the record says when.
    """

    xid: int
    source: str  # "nvml" | "kernel_log"
    gpu: int | None = None
    pci_bus_id: str | None = None
    message: str = ""
    time_utc: str | None = None
    seq: int | None = None
    boot_id: str | None = None


class _GpuLost(Exception):
    def __init__(self, error: NvmlCallError) -> None:
        super().__init__(error.message)
        self.error = error


class _Reader:
    """The calls of one health reading: errors become `unsupported` / `failed` entries."""

    def __init__(self, calls: NvmlCalls, index: int) -> None:
        self.calls = calls
        self.index = index
        self.unsupported: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def get(self, label: str, call: str, arg: str | None = None) -> Any:
        try:
            return self.calls.device(self.index, call, arg)
        except NvmlCallError as exc:
            if exc.kind in LOST_KINDS:
                raise _GpuLost(exc) from exc
            if exc.kind in _UNSUPPORTED:
                self.unsupported.append(label)
            else:
                self.failed.append((label, exc.message))
            return None


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _bus_id(value: Any) -> str | None:
    if isinstance(value, dict):
        return _text(value.get("busId"))
    return _text(getattr(value, "busId", None))


def _count(value: Any) -> int | None:
    """A retired-page list (its addresses) or a count, as a count."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return len(value)
    return int(value)


def _nvlink_errors(r: _Reader) -> tuple[NvlinkErrors, ...] | None:
    """Each active NVLink's counters, probing links until NVML rejects one (None: no NVLink;
    empty: links that are all down, whose counters are not worth judging)."""
    links = []
    existing = 0
    for link in range(NVLINK_MAX_LINKS):
        try:
            state = r.calls.device(r.index, "nvmlDeviceGetNvLinkState", str(link))
        except NvmlCallError as exc:
            if exc.kind in LOST_KINDS:
                raise _GpuLost(exc) from exc
            break
        existing += 1
        if not state:
            continue
        counters = {
            name: _int(
                r.get(f"nvlink_{name}", "nvmlDeviceGetNvLinkErrorCounter", f"{link},{constant}")
            )
            for name, constant in NVLINK_COUNTERS.items()
        }
        links.append(NvlinkErrors(link=link, **counters))
    return tuple(links) if existing else None


def read_gpu_health(calls: NvmlCalls, index: int) -> GpuHealth:
    """GPU `index`'s health counters read afresh through a calls layer; never raises for one
    counter (a GPU that fell off the bus is an entry with `lost=True`)."""
    r = _Reader(calls, index)
    try:
        return _read(r)
    except _GpuLost as lost:
        return GpuHealth(index=index, lost=True, error=lost.error.message)


def _read(r: _Reader) -> GpuHealth:
    ecc_mode = r.get("ecc_enabled", "nvmlDeviceGetEccMode")
    ecc = {label: _int(r.get(label, ECC_CALL, arg)) for label, arg in ECC_COUNTERS.items()}
    retired = {
        label: _count(r.get(label, RETIRED_PAGES_CALL, arg)) for label, arg in RETIRED_PAGES.items()
    }
    pending = r.get("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus")
    remap = r.get("remapped_rows", "nvmlDeviceGetRemappedRows")
    rows: Sequence[Any] = remap if isinstance(remap, list | tuple) and len(remap) >= 4 else ()
    reasons = r.get("clocks_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons")
    return GpuHealth(
        index=r.index,
        name=_text(r.get("name", "nvmlDeviceGetName")),
        uuid=_text(r.get("uuid", "nvmlDeviceGetUUID")),
        serial=_text(r.get("serial", "nvmlDeviceGetSerial")),
        pci_bus_id=_bus_id(r.get("pci_bus_id", "nvmlDeviceGetPciInfo")),
        ecc_enabled=None if not ecc_mode else bool(ecc_mode[0]),
        ecc_volatile_corrected=ecc["ecc_volatile_corrected"],
        ecc_volatile_uncorrected=ecc["ecc_volatile_uncorrected"],
        ecc_aggregate_corrected=ecc["ecc_aggregate_corrected"],
        ecc_aggregate_uncorrected=ecc["ecc_aggregate_uncorrected"],
        retired_pages_sbe=retired["retired_pages_sbe"],
        retired_pages_dbe=retired["retired_pages_dbe"],
        retired_pages_pending=None if pending is None else bool(pending),
        remapped_rows_correctable=_int(rows[0]) if rows else None,
        remapped_rows_uncorrectable=_int(rows[1]) if rows else None,
        remap_pending=bool(rows[2]) if rows else None,
        remap_failure=bool(rows[3]) if rows else None,
        pcie_replay_count=_int(r.get("pcie_replay_count", "nvmlDeviceGetPcieReplayCounter")),
        nvlink_errors=_nvlink_errors(r),
        clocks_event_reasons=_int(reasons),
        temperature_c=_int(r.get("temperature_c", "nvmlDeviceGetTemperature", "GPU")),
        temperature_slowdown_c=_int(
            r.get("temperature_slowdown_c", "nvmlDeviceGetTemperatureThreshold", "SLOWDOWN")
        ),
        unsupported=tuple(r.unsupported),
        failed=tuple(r.failed),
    )


def xid_events(records: Sequence[dict[str, Any]]) -> tuple[XidEvent, ...]:
    """The Xid events among what an NVML event-set wait returned (`NvmlCalls.events`): the
    event type `nvmlEventTypeXidCriticalError`, its data the Xid number."""
    found = []
    for record in records:
        if not isinstance(record, dict) or int(record.get("eventType", 0)) != XID_EVENT_TYPE:
            continue
        gpu = record.get("gpu", record.get("index"))
        found.append(
            XidEvent(
                xid=int(record.get("eventData", 0)),
                source="nvml",
                gpu=gpu if isinstance(gpu, int) else None,
                message="NVML Xid event",
            )
        )
    return tuple(found)


def read_xid_events(calls: NvmlCalls, timeout_ms: int = 0) -> tuple[XidEvent, ...]:
    """The Xid events queued since the first call (that call registers for them); () when
    NVML cannot deliver events (no library, a driver without them)."""
    try:
        return xid_events(calls.events(timeout_ms))
    except NvmlCallError:
        return ()
