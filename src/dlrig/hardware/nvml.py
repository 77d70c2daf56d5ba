"""NVIDIA GPUs through NVML: the only module of dlrig that imports `pynvml` (nvidia-ml-py).

The API (stable; `dlrig.watch` samples GPUs through it):

- `open_nvml() -> Nvml` opens the real library. It never raises: a host without the library,
  without a driver, or without GPUs gives a backend whose `system().available` is False (or whose
  `device_count()` is 0) with the reason in `system().error`.
- `replay_nvml(path_or_scenario) -> Nvml` replays a JSON fixture (tests/fixtures/nvml/*.json;
  `fixture_path(name)` finds one by scenario name). A fixture with `samples` is a time series:
  each `read_gpus()` call moves to the next sample and stays on the last one.
- `Nvml` (the one `NvmlBackend` implementation, over a calls layer that is either pynvml or the
  replay):
    - `system() -> NvmlSystem`: available, error, driver_version, cuda_driver_version, device_count.
    - `device_count() -> int` (0 when NVML is unavailable).
    - `read_gpu(index) -> GpuReading` and `read_gpus() -> tuple[GpuReading, ...]`.
    - `topology() -> tuple[GpuPair, ...]`: for each pair of GPUs, the nearest common PCIe
      ancestor (`TopologyLevel`) and the NVLink links joining them.
    - `close()`.
- `GpuReading` is a frozen dataclass; every measured field may be None, which means the driver
  does not support it (its name is then in `unsupported`) or the call failed (its name and error
  are in `failed`). A GPU that fell off the bus is an entry with `lost=True` and `error` set.
  Units are in the field names (bytes, W, C, MHz, KB/s as NVML reports PCIe throughput, percent).
- `ClockEventReason` names the bits of `nvmlDeviceGetCurrentClocksEventReasons` (the older
  `...ThrottleReasons` call returns the same bits and is used when the newer one is missing).

Fixture format (what `scripts/gpu-check` records and the replay reads): a JSON object with
`provenance` (how it was made), `scenario`, `description`, `system` (NVML system call name ->
value), `gpus` (one object per GPU: call key -> value), optional `topology` ("i,j" -> the
`nvmlDeviceGetTopologyCommonAncestor` level) and optional `samples` ([{"t_s", "gpus": [call key ->
value overrides per GPU]}]). A call key is the pynvml function name, followed by `:ARG` when the
call takes an argument (`nvmlDeviceGetClockInfo:SM`, `nvmlDeviceGetTemperatureThreshold:SLOWDOWN`,
`nvmlDeviceGetNvLinkState:0`). A value is what pynvml returns (structures as objects of their
field names, e.g. `{"total", "free", "used"}` in bytes) or `{"nvml_error": "NotSupported"}` for
an NVML error (the pynvml class name without `NVMLError_`). A key missing from a GPU is replayed
as NotSupported, which is what NVML answers for a query that a device or driver lacks.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dlrig.errors import HardwareError
from dlrig.units import bytes_to_gb

NVLINK_MAX_LINKS = 18
"""Links probed per GPU; an H100/H200 SXM has 18. Probing stops at the first link NVML rejects."""

_FIXTURE_DIR_PARTS = ("tests", "fixtures", "nvml")


class ClockEventReason(enum.IntFlag):
    """Why the clocks are below their maximum: NVML's `nvmlClocksEventReason*` bit values."""

    GPU_IDLE = 0x1
    APPLICATIONS_CLOCKS_SETTING = 0x2
    SW_POWER_CAP = 0x4
    HW_SLOWDOWN = 0x8
    SYNC_BOOST = 0x10
    SW_THERMAL_SLOWDOWN = 0x20
    HW_THERMAL_SLOWDOWN = 0x40
    HW_POWER_BRAKE_SLOWDOWN = 0x80
    DISPLAY_CLOCK_SETTING = 0x100


THERMAL_REASONS = ClockEventReason.SW_THERMAL_SLOWDOWN | ClockEventReason.HW_THERMAL_SLOWDOWN
POWER_REASONS = ClockEventReason.SW_POWER_CAP | ClockEventReason.HW_POWER_BRAKE_SLOWDOWN


class TopologyLevel(enum.StrEnum):
    """The nearest common ancestor of two GPUs on the PCIe tree (NVML_TOPOLOGY_*), near to far."""

    INTERNAL = "internal"  # the same board (a dual-GPU card)
    SINGLE = "single"  # one PCIe switch between them
    MULTIPLE = "multiple"  # several PCIe switches, no host bridge
    HOSTBRIDGE = "hostbridge"  # the same host bridge
    NODE = "node"  # the same NUMA node (CPU), different host bridges
    SYSTEM = "system"  # across the CPUs' interconnect (QPI/UPI/Infinity Fabric)


_TOPOLOGY_CODES = {
    0: TopologyLevel.INTERNAL,
    10: TopologyLevel.SINGLE,
    20: TopologyLevel.MULTIPLE,
    30: TopologyLevel.HOSTBRIDGE,
    40: TopologyLevel.NODE,
    50: TopologyLevel.SYSTEM,
}


class NvmlCallError(Exception):
    """One NVML call failed; `kind` is the pynvml error class name without `NVMLError_`."""

    def __init__(self, kind: str, message: str | None = None) -> None:
        super().__init__(message or kind)
        self.kind = kind
        self.message = message or kind


@dataclass(frozen=True)
class NvmlSystem:
    """The library and driver: whether NVML answered, and the versions it reports."""

    available: bool
    error: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    device_count: int


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one moment. None = unsupported or failed (see `unsupported` and `failed`)."""

    index: int
    lost: bool = False
    error: str | None = None
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_tx_kb_s: int | None = None
    pcie_rx_kb_s: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    clock_graphics_mhz: int | None = None
    clock_sm_mhz: int | None = None
    clock_memory_mhz: int | None = None
    clock_sm_max_mhz: int | None = None
    clock_memory_max_mhz: int | None = None
    clocks_event_reasons: int | None = None
    utilization_gpu_pct: int | None = None
    utilization_memory_pct: int | None = None
    fan_speed_pct: int | None = None
    ecc_enabled: bool | None = None
    nvlink_active: tuple[bool, ...] | None = None
    nvlink_remote_bus_ids: tuple[str | None, ...] | None = None
    unsupported: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = field(default=())

    @property
    def memory_total_gb(self) -> float | None:
        """Total device memory in GB (10^9 bytes)."""
        return None if self.memory_total_bytes is None else bytes_to_gb(self.memory_total_bytes)

    @property
    def event_reasons(self) -> ClockEventReason | None:
        """The clock event (throttle) reasons as flags, None when unknown."""
        if self.clocks_event_reasons is None:
            return None
        known = sum(int(r) for r in ClockEventReason)
        return ClockEventReason(self.clocks_event_reasons & known)

    @property
    def event_reason_names(self) -> tuple[str, ...]:
        """Lower-case names of the active reason bits (`hw_thermal_slowdown`, ...)."""
        reasons = self.event_reasons
        if reasons is None:
            return ()
        return tuple(str(r.name).lower() for r in ClockEventReason if r in reasons)

    @property
    def thermal_throttled(self) -> bool | None:
        """True when a software or hardware thermal slowdown bit is set."""
        reasons = self.event_reasons
        return None if reasons is None else bool(reasons & THERMAL_REASONS)

    @property
    def power_capped(self) -> bool | None:
        """True when the software power cap or the hardware power brake bit is set."""
        reasons = self.event_reasons
        return None if reasons is None else bool(reasons & POWER_REASONS)

    @property
    def nvlink_active_count(self) -> int | None:
        """Active NVLink links, None when the GPU has no NVLink (or NVML cannot tell)."""
        return None if self.nvlink_active is None else sum(self.nvlink_active)


@dataclass(frozen=True)
class GpuPair:
    """How two GPUs reach each other: the common PCIe ancestor and NVLink links between them."""

    a: int
    b: int
    level: TopologyLevel | None
    nvlinks: int


class NvmlBackend(Protocol):
    """What the probe and the monitor need from NVML; `Nvml` implements it."""

    def system(self) -> NvmlSystem: ...
    def device_count(self) -> int: ...
    def read_gpu(self, index: int) -> GpuReading: ...
    def read_gpus(self) -> tuple[GpuReading, ...]: ...
    def topology(self) -> tuple[GpuPair, ...]: ...
    def close(self) -> None: ...


class NvmlCalls(Protocol):
    """The calls layer below `Nvml`: pynvml itself, a replay of a fixture, or a recorder."""

    def init(self) -> None: ...
    def system(self, call: str) -> Any: ...
    def device(self, index: int, call: str, arg: str | None = None) -> Any: ...
    def pair(self, a: int, b: int, call: str) -> Any: ...
    def begin_sample(self) -> None: ...
    def shutdown(self) -> None: ...


# -- Reading assembly: shared by the real library and the replay ------------------------------


class _GpuLost(Exception):
    def __init__(self, error: NvmlCallError) -> None:
        super().__init__(error.message)
        self.error = error


_LOST_KINDS = frozenset({"GpuIsLost", "GpuNotFound", "ResetRequired"})
_UNSUPPORTED_KINDS = frozenset({"NotSupported", "FunctionNotFound"})


class _Collector:
    def __init__(self, calls: NvmlCalls, index: int) -> None:
        self.calls = calls
        self.index = index
        self.unsupported: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def get(self, label: str, call: str, arg: str | None = None) -> Any:
        try:
            return self.calls.device(self.index, call, arg)
        except NvmlCallError as exc:
            if exc.kind in _LOST_KINDS:
                raise _GpuLost(exc) from exc
            if exc.kind in _UNSUPPORTED_KINDS:
                self.unsupported.append(label)
            else:
                self.failed.append((label, exc.message))
            return None


def _field(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _milliwatts_to_w(value: Any) -> float | None:
    return None if value is None else int(value) / 1000.0


def _read_nvlinks(c: _Collector) -> tuple[tuple[bool, ...] | None, tuple[str | None, ...] | None]:
    states: list[bool] = []
    remotes: list[str | None] = []
    for link in range(NVLINK_MAX_LINKS):
        try:
            state = c.calls.device(c.index, "nvmlDeviceGetNvLinkState", str(link))
        except NvmlCallError as exc:
            if exc.kind in _LOST_KINDS:
                raise _GpuLost(exc) from exc
            break  # NotSupported / InvalidArgument: no such link (or no NVLink at all)
        states.append(bool(state))
        remote = None
        if state:
            try:
                info = c.calls.device(c.index, "nvmlDeviceGetNvLinkRemotePciInfo", str(link))
                remote = _text(_field(info, "busId"))
            except NvmlCallError as exc:
                if exc.kind in _LOST_KINDS:
                    raise _GpuLost(exc) from exc
        remotes.append(remote)
    if not states:
        c.unsupported.append("nvlink")
        return None, None
    return tuple(states), tuple(remotes)


def _event_reasons(c: _Collector) -> int | None:
    try:
        return int(c.calls.device(c.index, "nvmlDeviceGetCurrentClocksEventReasons"))
    except NvmlCallError as exc:
        if exc.kind in _LOST_KINDS:
            raise _GpuLost(exc) from exc
    # Drivers before 535 only have the older name; it returns the same bit mask.
    return _int(c.get("clocks_event_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons"))


def read_gpu(calls: NvmlCalls, index: int) -> GpuReading:
    """Read every field of GPU `index` through a calls layer; never raises for one field."""
    c = _Collector(calls, index)
    try:
        memory = c.get("memory", "nvmlDeviceGetMemoryInfo")
        utilization = c.get("utilization", "nvmlDeviceGetUtilizationRates")
        ecc = c.get("ecc_enabled", "nvmlDeviceGetEccMode")
        pci = c.get("pci_bus_id", "nvmlDeviceGetPciInfo")
        nvlink_active, nvlink_remote = _read_nvlinks(c)
        reading = GpuReading(
            index=index,
            name=_text(c.get("name", "nvmlDeviceGetName")),
            uuid=_text(c.get("uuid", "nvmlDeviceGetUUID")),
            pci_bus_id=_text(_field(pci, "busId")),
            memory_total_bytes=_int(_field(memory, "total")),
            memory_used_bytes=_int(_field(memory, "used")),
            pcie_gen_current=_int(c.get("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration")),
            pcie_gen_max=_int(c.get("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration")),
            pcie_width_current=_int(c.get("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth")),
            pcie_width_max=_int(c.get("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth")),
            pcie_tx_kb_s=_int(c.get("pcie_tx_kb_s", "nvmlDeviceGetPcieThroughput", "TX_BYTES")),
            pcie_rx_kb_s=_int(c.get("pcie_rx_kb_s", "nvmlDeviceGetPcieThroughput", "RX_BYTES")),
            power_w=_milliwatts_to_w(c.get("power_w", "nvmlDeviceGetPowerUsage")),
            power_limit_w=_milliwatts_to_w(
                c.get("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit")
            ),
            temperature_c=_int(c.get("temperature_c", "nvmlDeviceGetTemperature", "GPU")),
            temperature_slowdown_c=_int(
                c.get("temperature_slowdown_c", "nvmlDeviceGetTemperatureThreshold", "SLOWDOWN")
            ),
            temperature_shutdown_c=_int(
                c.get("temperature_shutdown_c", "nvmlDeviceGetTemperatureThreshold", "SHUTDOWN")
            ),
            clock_graphics_mhz=_int(
                c.get("clock_graphics_mhz", "nvmlDeviceGetClockInfo", "GRAPHICS")
            ),
            clock_sm_mhz=_int(c.get("clock_sm_mhz", "nvmlDeviceGetClockInfo", "SM")),
            clock_memory_mhz=_int(c.get("clock_memory_mhz", "nvmlDeviceGetClockInfo", "MEM")),
            clock_sm_max_mhz=_int(c.get("clock_sm_max_mhz", "nvmlDeviceGetMaxClockInfo", "SM")),
            clock_memory_max_mhz=_int(
                c.get("clock_memory_max_mhz", "nvmlDeviceGetMaxClockInfo", "MEM")
            ),
            clocks_event_reasons=_event_reasons(c),
            utilization_gpu_pct=_int(_field(utilization, "gpu")),
            utilization_memory_pct=_int(_field(utilization, "memory")),
            fan_speed_pct=_int(c.get("fan_speed_pct", "nvmlDeviceGetFanSpeed")),
            ecc_enabled=None if ecc is None else bool(ecc[0]),
            nvlink_active=nvlink_active,
            nvlink_remote_bus_ids=nvlink_remote,
            unsupported=tuple(c.unsupported),
            failed=tuple(c.failed),
        )
    except _GpuLost as lost:
        return GpuReading(index=index, lost=True, error=lost.error.message)
    return reading


class Nvml:
    """The NVML backend over a calls layer (`open_nvml()` or `replay_nvml()` build one)."""

    def __init__(self, calls: NvmlCalls) -> None:
        self._calls = calls
        self._system: NvmlSystem | None = None

    def system(self) -> NvmlSystem:
        """Library state, driver and CUDA versions, GPU count (read once, then cached)."""
        if self._system is None:
            self._system = self._read_system()
        return self._system

    def _read_system(self) -> NvmlSystem:
        try:
            self._calls.init()
        except NvmlCallError as exc:
            return NvmlSystem(False, exc.message, None, None, 0)
        driver = cuda = None
        try:
            driver = _text(self._calls.system("nvmlSystemGetDriverVersion"))
        except NvmlCallError:
            driver = None
        try:
            cuda = cuda_version_text(int(self._calls.system("nvmlSystemGetCudaDriverVersion")))
        except NvmlCallError:
            cuda = None
        try:
            count = int(self._calls.system("nvmlDeviceGetCount"))
        except NvmlCallError as exc:
            return NvmlSystem(True, exc.message, driver, cuda, 0)
        return NvmlSystem(True, None, driver, cuda, count)

    def device_count(self) -> int:
        """How many GPUs NVML sees; 0 without the library or a driver."""
        return self.system().device_count

    def read_gpu(self, index: int) -> GpuReading:
        """One GPU's reading (a lost GPU is an entry with `lost=True`)."""
        if not 0 <= index < self.device_count():
            raise HardwareError(f"no GPU {index}: NVML sees {self.device_count()}")
        return read_gpu(self._calls, index)

    def read_gpus(self) -> tuple[GpuReading, ...]:
        """Every GPU's reading; a replayed time series moves to its next sample first."""
        count = self.device_count()
        self._calls.begin_sample()
        return tuple(read_gpu(self._calls, i) for i in range(count))

    def topology(self) -> tuple[GpuPair, ...]:
        """Each pair of GPUs: common PCIe ancestor and the NVLink links joining them."""
        readings = [read_gpu(self._calls, i) for i in range(self.device_count())]
        by_bus = {r.pci_bus_id.lower(): r.index for r in readings if r.pci_bus_id}
        pairs = []
        for a in range(len(readings)):
            for b in range(a + 1, len(readings)):
                level: TopologyLevel | None
                try:
                    code = int(self._calls.pair(a, b, "nvmlDeviceGetTopologyCommonAncestor"))
                    level = _TOPOLOGY_CODES.get(code)
                except NvmlCallError:
                    level = None
                pairs.append(GpuPair(a, b, level, _nvlinks_between(readings[a], b, by_bus)))
        return tuple(pairs)

    def close(self) -> None:
        """Shut NVML down (a no-op when it never started)."""
        self._calls.shutdown()


def _nvlinks_between(reading: GpuReading, other: int, by_bus: dict[str, int]) -> int:
    if reading.nvlink_remote_bus_ids is None:
        return 0
    return sum(
        1 for bus in reading.nvlink_remote_bus_ids if bus and by_bus.get(bus.lower()) == other
    )


def cuda_version_text(version: int) -> str:
    """NVML's CUDA driver version integer as text: 12040 -> "12.4"."""
    return f"{version // 1000}.{(version % 1000) // 10}"


# -- The real library -------------------------------------------------------------------------

_ARG_CONSTANTS = {
    "GPU": "NVML_TEMPERATURE_GPU",
    "SLOWDOWN": "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN",
    "SHUTDOWN": "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN",
    "GRAPHICS": "NVML_CLOCK_GRAPHICS",
    "SM": "NVML_CLOCK_SM",
    "MEM": "NVML_CLOCK_MEM",
    "TX_BYTES": "NVML_PCIE_UTIL_TX_BYTES",
    "RX_BYTES": "NVML_PCIE_UTIL_RX_BYTES",
}


def _error_kind(exc: BaseException) -> str:
    name = type(exc).__name__
    return name.removeprefix("NVMLError_") if name.startswith("NVMLError_") else name


class PynvmlCalls:
    """The calls layer over the real pynvml module, imported on first use."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: dict[int, Any] = {}

    def init(self) -> None:
        """Import pynvml and initialise NVML; a missing library or driver is an NvmlCallError."""
        try:
            import pynvml
        except ImportError as exc:  # nvidia-ml-py is a dependency, but may be uninstalled
            raise NvmlCallError("LibraryNotFound", f"nvidia-ml-py not installed: {exc}") from exc
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlCallError(_error_kind(exc), f"NVML unavailable: {exc}") from exc
        except OSError as exc:
            raise NvmlCallError("LibraryNotFound", f"NVML unavailable: {exc}") from exc
        self._nvml = pynvml

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self._nvml.NVMLError as exc:
            raise NvmlCallError(_error_kind(exc), str(exc)) from exc
        except AttributeError as exc:  # an older nvidia-ml-py without this function
            raise NvmlCallError("FunctionNotFound", str(exc)) from exc

    def _function(self, call: str) -> Callable[..., Any]:
        fn = getattr(self._nvml, call, None)
        if fn is None:
            raise NvmlCallError("FunctionNotFound", f"{call} not in this nvidia-ml-py")
        return fn  # type: ignore[no-any-return]

    def system(self, call: str) -> Any:
        """Call a system-level pynvml function by name."""
        return self._call(self._function(call))

    def _handle(self, index: int) -> Any:
        if index not in self._handles:
            self._handles[index] = self._call(self._nvml.nvmlDeviceGetHandleByIndex, index)
        return self._handles[index]

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        """Call a device function by name on GPU `index`; `arg` is a constant name or a link."""
        handle = self._handle(index)
        fn = self._function(call)
        if arg is None:
            return self._call(fn, handle)
        value = getattr(self._nvml, _ARG_CONSTANTS[arg]) if arg in _ARG_CONSTANTS else int(arg)
        return self._call(fn, handle, value)

    def pair(self, a: int, b: int, call: str) -> Any:
        """Call a two-device function by name."""
        return self._call(self._function(call), self._handle(a), self._handle(b))

    def begin_sample(self) -> None:
        """Nothing to do: the real library always answers with the present."""

    def shutdown(self) -> None:
        """nvmlShutdown, when nvmlInit succeeded."""
        if self._nvml is not None:
            # Shutting down a library that is already gone is not worth reporting.
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()
            self._nvml = None
            self._handles = {}


def open_nvml() -> Nvml:
    """The real NVML backend; unavailability shows in `system()`, never as an exception."""
    return Nvml(PynvmlCalls())


# -- The replay of a fixture --------------------------------------------------------------------


def _key(call: str, arg: str | None) -> str:
    return call if arg is None else f"{call}:{arg}"


def _replayed(value: Any) -> Any:
    if isinstance(value, dict) and "nvml_error" in value:
        raise NvmlCallError(
            str(value["nvml_error"]), str(value.get("message", value["nvml_error"]))
        )
    return value


class ReplayCalls:
    """The calls layer replaying a fixture dict (see the module docstring for the format)."""

    def __init__(self, fixture: dict[str, Any]) -> None:
        self.fixture = fixture
        self._system: dict[str, Any] = dict(fixture.get("system", {}))
        self._gpus: list[dict[str, Any]] = [dict(g) for g in fixture.get("gpus", [])]
        self._topology: dict[str, Any] = dict(fixture.get("topology", {}))
        self._samples: list[dict[str, Any]] = list(fixture.get("samples", []))
        self._sample = -1

    @property
    def sample_index(self) -> int:
        """The sample being replayed (-1 before the first `read_gpus()`)."""
        return self._sample

    @property
    def sample_times_s(self) -> tuple[float, ...]:
        """The `t_s` of each sample of a time series (empty for a single reading)."""
        return tuple(float(s.get("t_s", i)) for i, s in enumerate(self._samples))

    def init(self) -> None:
        """Replay nvmlInit (a fixture of a host without the library fails here)."""
        _replayed(self._system.get("nvmlInit"))

    def system(self, call: str) -> Any:
        """Replay a system call; a missing key is NotSupported."""
        if call not in self._system:
            raise NvmlCallError("NotSupported")
        return _replayed(self._system[call])

    def _overrides(self, index: int) -> dict[str, Any]:
        if self._sample < 0 or not self._samples:
            return {}
        gpus = self._samples[self._sample].get("gpus", [])
        return dict(gpus[index]) if index < len(gpus) else {}

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        """Replay a device call: the current sample's value, else the base value."""
        if index >= len(self._gpus):
            raise NvmlCallError("InvalidArgument", f"no GPU {index} in the fixture")
        values = {**self._gpus[index], **self._overrides(index)}
        _replayed(values.get("nvmlDeviceGetHandleByIndex"))
        key = _key(call, arg)
        if key not in values:
            if call in ("nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkRemotePciInfo"):
                raise NvmlCallError("InvalidArgument", f"no NVLink {arg}")
            raise NvmlCallError("NotSupported")
        return _replayed(values[key])

    def pair(self, a: int, b: int, call: str) -> Any:
        """Replay a pair call (only the topology ancestor is recorded)."""
        key = f"{min(a, b)},{max(a, b)}"
        if call != "nvmlDeviceGetTopologyCommonAncestor" or key not in self._topology:
            raise NvmlCallError("NotSupported")
        return _replayed(self._topology[key])

    def begin_sample(self) -> None:
        """Move to the next sample of a time series, staying on the last one."""
        if self._samples:
            self._sample = min(self._sample + 1, len(self._samples) - 1)

    def shutdown(self) -> None:
        """Nothing to release."""


def fixture_dir() -> Path:
    """tests/fixtures/nvml of the source tree this module runs from."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.joinpath(*_FIXTURE_DIR_PARTS)
        if candidate.is_dir():
            return candidate
    raise HardwareError("NVML fixtures not found (they ship with the source tree, not the wheel)")


def fixture_path(scenario: str) -> Path:
    """The fixture file of a scenario name (`four_gpu_box`, `lost_gpu`, ...)."""
    path = fixture_dir() / f"{scenario}.json"
    if not path.is_file():
        known = sorted(p.stem for p in fixture_dir().glob("*.json"))
        raise HardwareError(f"no NVML scenario {scenario!r}", hint=f"known: {', '.join(known)}")
    return path


def load_fixture(path: Path) -> dict[str, Any]:
    """Read an NVML fixture file; a malformed one is a HardwareError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HardwareError(f"cannot read NVML fixture {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("gpus", []), list):
        raise HardwareError(f"NVML fixture {path}: expected an object with a list of gpus")
    return data


def replay_nvml(source: str | Path | dict[str, Any]) -> Nvml:
    """A backend replaying a fixture: a scenario name, a fixture path, or a fixture dict."""
    if isinstance(source, dict):
        return Nvml(ReplayCalls(source))
    path = Path(source)
    if not path.suffix:
        path = fixture_path(str(source))
    return Nvml(ReplayCalls(load_fixture(path)))


def _jsonable(value: Any) -> Any:
    """A pynvml return value as JSON: ctypes structures become objects of their fields."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {name: _jsonable(getattr(value, name)) for name, *_ in fields}
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def _recorded_error(exc: NvmlCallError) -> dict[str, str]:
    return {"nvml_error": exc.kind, "message": exc.message}


class RecordingCalls:
    """A calls layer that passes through to another and writes what it answered as a fixture.

    `scripts/gpu-check` wraps the real library in it; `fixture()` is then replayable by
    `replay_nvml`, because it holds exactly the calls `read_gpu` and `topology` made.
    """

    def __init__(self, inner: NvmlCalls) -> None:
        self._inner = inner
        self._system: dict[str, Any] = {}
        self._gpus: dict[int, dict[str, Any]] = {}
        self._topology: dict[str, Any] = {}

    def _record(self, table: dict[str, Any], key: str, thunk: Callable[[], Any]) -> Any:
        try:
            value = thunk()
        except NvmlCallError as exc:
            table[key] = _recorded_error(exc)
            raise
        table[key] = _jsonable(value)
        return value

    def init(self) -> None:
        """Record nvmlInit's outcome."""
        self._record(self._system, "nvmlInit", lambda: self._inner.init())

    def system(self, call: str) -> Any:
        """Record a system call."""
        return self._record(self._system, call, lambda: self._inner.system(call))

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        """Record a device call."""
        table = self._gpus.setdefault(index, {})
        try:
            return self._record(
                table, _key(call, arg), lambda: self._inner.device(index, call, arg)
            )
        except NvmlCallError as exc:
            if exc.kind in _LOST_KINDS:
                table["nvmlDeviceGetHandleByIndex"] = _recorded_error(exc)
            raise

    def pair(self, a: int, b: int, call: str) -> Any:
        """Record a pair call (the topology ancestor)."""
        return self._record(self._topology, f"{a},{b}", lambda: self._inner.pair(a, b, call))

    def begin_sample(self) -> None:
        """Pass through."""
        self._inner.begin_sample()

    def shutdown(self) -> None:
        """Pass through."""
        self._inner.shutdown()

    def fixture(self, scenario: str, provenance: str, description: str) -> dict[str, Any]:
        """What was recorded, in the fixture format (see the module docstring)."""
        return {
            "provenance": provenance,
            "scenario": scenario,
            "description": description,
            "system": dict(self._system),
            "gpus": [dict(self._gpus.get(i, {})) for i in range(max(self._gpus, default=-1) + 1)],
            "topology": dict(self._topology),
        }
