"""The one `NvmlBackend`: readings assembled from a calls layer (pynvml, or a test's fake)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from dlrig.errors import HardwareError
from dlrig.hardware.nvml.readings import (
    NVLINK_MAX_LINKS,
    TOPOLOGY_CODES,
    GpuPair,
    GpuReading,
    NvmlCallError,
    NvmlCalls,
    NvmlSystem,
    TopologyLevel,
)

if TYPE_CHECKING:
    from dlrig.hardware.nvml.health import GpuHealth, XidEvent

# How often the slow or unchanging parts of a reading are read again; everything else is read
# at every tick. Static fields (name, UUID, serial, max clocks, thresholds, power-limit range,
# PCIe max, ECC mode, which NVLinks exist) are read once per device.
NVLINK_REFRESH_S = 30.0
"""NVLink state: up to 36 calls per GPU (state and peer of 18 links on an H100 SXM), and a link
changes state only when it fails or the GPU is reset; 30 s late is still minutes early for a
verdict on a training run."""
PCIE_THROUGHPUT_REFRESH_S = 1.0
"""nvmlDeviceGetPcieThroughput counts bytes over a 20 ms window inside each call (NVML API
reference), so it is read at most once a second (every tick at 1 Hz, every 10th at 10 Hz), TX
and RX of all GPUs at once on threads (about 20 ms per refresh, not 2 x 20 ms per GPU); the
samples in between repeat the last window. Each figure was only ever a 20 ms window of the
interval, so the run's mean stays an unbiased estimate."""

SLOW_REFRESH_S = 1.0
"""Fields that change on a power-state change or an administrator's command, not from one
moment of a step to the next (enforced power limit, fan, current PCIe generation and width,
memory and graphics clocks; the SM clock stays at every tick): at most once a second, so that
10 Hz sampling asks for 6 fields per GPU at most ticks instead of 12."""

# label -> (call, arg) of the slow fields.
_SLOW_CALLS: dict[str, tuple[str, str | None]] = {
    "power_limit_w": ("nvmlDeviceGetEnforcedPowerLimit", None),
    "fan_speed_pct": ("nvmlDeviceGetFanSpeed", None),
    "pcie_gen_current": ("nvmlDeviceGetCurrPcieLinkGeneration", None),
    "pcie_width_current": ("nvmlDeviceGetCurrPcieLinkWidth", None),
    "clock_memory_mhz": ("nvmlDeviceGetClockInfo", "MEM"),
    "clock_graphics_mhz": ("nvmlDeviceGetClockInfo", "GRAPHICS"),
}

# 16 threads cover TX and RX of an 8-GPU box in one 20 ms window; a bigger box takes two.
MAX_PCIE_THREADS = 16

_PCIE_DIRECTIONS = (("pcie_tx_kb_s", "TX_BYTES"), ("pcie_rx_kb_s", "RX_BYTES"))

Outcome = Any
"""What one call gave: its value, or the NvmlCallError it raised (kept to replay it)."""


# A tick comes a few ms early or late; without this slack a 1 s refresh at 1 Hz would skip
# every tick that came 1 ms early after one that came late.
_REFRESH_SLACK_S = 0.05


def _due(read_at_s: float | None, now_s: float, refresh_s: float) -> bool:
    """Whether a field read at `read_at_s` (None: never) is to be read again at `now_s`."""
    return read_at_s is None or now_s - read_at_s >= refresh_s - _REFRESH_SLACK_S


class _GpuLost(Exception):
    def __init__(self, error: NvmlCallError) -> None:
        super().__init__(error.message)
        self.error = error


LOST_KINDS = frozenset({"GpuIsLost", "GpuNotFound", "ResetRequired"})
_UNSUPPORTED_KINDS = frozenset({"NotSupported", "FunctionNotFound"})


def _outcome(calls: NvmlCalls, index: int, call: str, arg: str | None = None) -> Outcome:
    try:
        return calls.device(index, call, arg)
    except NvmlCallError as exc:
        return exc


class _Collector:
    """One reading's calls: turns errors into `unsupported` and `failed` entries."""

    def __init__(self, calls: NvmlCalls, index: int) -> None:
        self.calls = calls
        self.index = index
        self.unsupported: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def resolve(self, label: str, outcome: Outcome) -> Any:
        """The value of an outcome; an error is noted under `label` (a lost GPU raises)."""
        if not isinstance(outcome, NvmlCallError):
            return outcome
        if outcome.kind in LOST_KINDS:
            raise _GpuLost(outcome)
        if outcome.kind in _UNSUPPORTED_KINDS:
            self.unsupported.append(label)
        else:
            self.failed.append((label, outcome.message))
        return None

    def get(self, label: str, call: str, arg: str | None = None) -> Any:
        return self.resolve(label, _outcome(self.calls, self.index, call, arg))


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


def _pair_mw_to_w(value: Any, position: int) -> float | None:
    if not isinstance(value, list | tuple) or len(value) <= position:
        return None
    return _milliwatts_to_w(value[position])


# label -> (call, arg) of the fields that never change while the driver is loaded.
_STATIC_CALLS: dict[str, tuple[str, str | None]] = {
    "name": ("nvmlDeviceGetName", None),
    "uuid": ("nvmlDeviceGetUUID", None),
    "serial": ("nvmlDeviceGetSerial", None),
    "pci_bus_id": ("nvmlDeviceGetPciInfo", None),
    "ecc_enabled": ("nvmlDeviceGetEccMode", None),  # a change waits for a reboot
    "pcie_gen_max": ("nvmlDeviceGetMaxPcieLinkGeneration", None),
    "pcie_width_max": ("nvmlDeviceGetMaxPcieLinkWidth", None),
    "temperature_slowdown_c": ("nvmlDeviceGetTemperatureThreshold", "SLOWDOWN"),
    "temperature_shutdown_c": ("nvmlDeviceGetTemperatureThreshold", "SHUTDOWN"),
    "clock_sm_max_mhz": ("nvmlDeviceGetMaxClockInfo", "SM"),
    "clock_memory_max_mhz": ("nvmlDeviceGetMaxClockInfo", "MEM"),
    "power_limit_range": ("nvmlDeviceGetPowerManagementLimitConstraints", None),
}


class _Device:
    """What is known of one GPU between ticks: its static fields, its NVLinks, the last PCIe
    throughput window, and which variant of a call its driver answers."""

    def __init__(self, index: int, nvlink_refresh_s: float, pcie_refresh_s: float) -> None:
        self.index = index
        self._nvlink_refresh_s = nvlink_refresh_s
        self._pcie_refresh_s = pcie_refresh_s
        self._static: dict[str, Outcome] = {}
        self._memory_v2: bool | None = None  # None: not tried yet
        self._older_reasons_call = False
        self._nvlink_links: int | None = None  # links that exist; None: not probed yet
        self._nvlink: tuple[tuple[bool, ...], tuple[str | None, ...]] | None = None
        self._nvlink_at: float | None = None
        self._pcie: dict[str, Outcome] = {}
        self._pcie_at: float | None = None
        self._slow: dict[str, Outcome] = {}
        self._slow_at: float | None = None

    def pcie_due(self, now_s: float) -> bool:
        """Whether the PCIe throughput window is to be read again at `now_s`."""
        return _due(self._pcie_at, now_s, self._pcie_refresh_s)

    def _static_value(self, c: _Collector, label: str) -> Any:
        if label not in self._static:
            call, arg = _STATIC_CALLS[label]
            outcome = _outcome(c.calls, self.index, call, arg)
            # A transient failure is tried again at the next tick; an answer or "not supported"
            # stands for the life of the driver.
            transient = isinstance(outcome, NvmlCallError) and (
                outcome.kind not in _UNSUPPORTED_KINDS
            )
            if transient:
                return c.resolve(label, outcome)
            self._static[label] = outcome
        return c.resolve(label, self._static[label])

    def _slow_values(self, c: _Collector, now_s: float) -> dict[str, Any]:
        if _due(self._slow_at, now_s, SLOW_REFRESH_S):
            self._slow = {
                label: _outcome(c.calls, self.index, call, arg)
                for label, (call, arg) in _SLOW_CALLS.items()
            }
            self._slow_at = now_s
        return {label: c.resolve(label, outcome) for label, outcome in self._slow.items()}

    def _memory(self, c: _Collector) -> Any:
        if self._memory_v2 is not False:
            try:
                value = c.calls.device(self.index, "nvmlDeviceGetMemoryInfo", "V2")
            except NvmlCallError as exc:
                if exc.kind in LOST_KINDS:
                    raise _GpuLost(exc) from exc
                if self._memory_v2 is None:  # this driver lacks v2: v1 from now on
                    self._memory_v2 = False
            else:
                self._memory_v2 = True
                return value
        return c.get("memory", "nvmlDeviceGetMemoryInfo")

    def _event_reasons(self, c: _Collector) -> int | None:
        if not self._older_reasons_call:
            try:
                return int(c.calls.device(self.index, "nvmlDeviceGetCurrentClocksEventReasons"))
            except NvmlCallError as exc:
                if exc.kind in LOST_KINDS:
                    raise _GpuLost(exc) from exc
                # Drivers before 535 only have the older name; it returns the same bit mask.
                self._older_reasons_call = exc.kind in _UNSUPPORTED_KINDS
        return _int(c.get("clocks_event_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons"))

    def _nvlinks(
        self, c: _Collector, now_s: float
    ) -> tuple[tuple[bool, ...] | None, tuple[str | None, ...] | None]:
        due = _due(self._nvlink_at, now_s, self._nvlink_refresh_s)
        if due and self._nvlink_links != 0:
            self._nvlink = _read_nvlinks(c, self._nvlink_links or NVLINK_MAX_LINKS)
            self._nvlink_links = 0 if self._nvlink is None else len(self._nvlink[0])
            self._nvlink_at = now_s
        if self._nvlink is None:
            c.unsupported.append("nvlink")
            return None, None
        return self._nvlink

    def _pcie_throughput(
        self, c: _Collector, now_s: float, prefetched: dict[str, Outcome] | None
    ) -> tuple[int | None, int | None]:
        if prefetched is not None:
            self._pcie, self._pcie_at = prefetched, now_s
        elif self.pcie_due(now_s):
            self._pcie = {
                label: _outcome(c.calls, self.index, "nvmlDeviceGetPcieThroughput", arg)
                for label, arg in _PCIE_DIRECTIONS
            }
            self._pcie_at = now_s
        tx, rx = (_int(c.resolve(label, self._pcie[label])) for label, _ in _PCIE_DIRECTIONS)
        return tx, rx

    def read(
        self, calls: NvmlCalls, now_s: float, pcie: dict[str, Outcome] | None = None
    ) -> GpuReading:
        """This GPU's reading at `now_s`; `pcie`: its throughput outcomes when read already."""
        c = _Collector(calls, self.index)
        try:
            return self._read(c, now_s, pcie)
        except _GpuLost as lost:
            return GpuReading(index=self.index, lost=True, error=lost.error.message)

    def _read(self, c: _Collector, now_s: float, pcie: dict[str, Outcome] | None) -> GpuReading:
        static = {label: self._static_value(c, label) for label in _STATIC_CALLS}
        slow = self._slow_values(c, now_s)
        memory = self._memory(c)
        utilization = c.get("utilization", "nvmlDeviceGetUtilizationRates")
        nvlink_active, nvlink_remote = self._nvlinks(c, now_s)
        pcie_tx, pcie_rx = self._pcie_throughput(c, now_s, pcie)
        ecc = static["ecc_enabled"]
        power_range = static["power_limit_range"]
        return GpuReading(
            index=self.index,
            name=_text(static["name"]),
            uuid=_text(static["uuid"]),
            serial=_text(static["serial"]),
            pci_bus_id=_text(_field(static["pci_bus_id"], "busId")),
            memory_total_bytes=_int(_field(memory, "total")),
            memory_used_bytes=_int(_field(memory, "used")),
            memory_reserved_bytes=_int(_field(memory, "reserved")),
            pcie_gen_current=_int(slow["pcie_gen_current"]),
            pcie_gen_max=_int(static["pcie_gen_max"]),
            pcie_width_current=_int(slow["pcie_width_current"]),
            pcie_width_max=_int(static["pcie_width_max"]),
            pcie_tx_kb_s=pcie_tx,
            pcie_rx_kb_s=pcie_rx,
            power_w=_milliwatts_to_w(c.get("power_w", "nvmlDeviceGetPowerUsage")),
            power_limit_w=_milliwatts_to_w(slow["power_limit_w"]),
            power_limit_min_w=_pair_mw_to_w(power_range, 0),
            power_limit_max_w=_pair_mw_to_w(power_range, 1),
            temperature_c=_int(c.get("temperature_c", "nvmlDeviceGetTemperature", "GPU")),
            temperature_slowdown_c=_int(static["temperature_slowdown_c"]),
            temperature_shutdown_c=_int(static["temperature_shutdown_c"]),
            clock_graphics_mhz=_int(slow["clock_graphics_mhz"]),
            clock_sm_mhz=_int(c.get("clock_sm_mhz", "nvmlDeviceGetClockInfo", "SM")),
            clock_memory_mhz=_int(slow["clock_memory_mhz"]),
            clock_sm_max_mhz=_int(static["clock_sm_max_mhz"]),
            clock_memory_max_mhz=_int(static["clock_memory_max_mhz"]),
            clocks_event_reasons=self._event_reasons(c),
            utilization_gpu_pct=_int(_field(utilization, "gpu")),
            utilization_memory_pct=_int(_field(utilization, "memory")),
            fan_speed_pct=_int(slow["fan_speed_pct"]),
            ecc_enabled=None if ecc is None else bool(ecc[0]),
            nvlink_active=nvlink_active,
            nvlink_remote_bus_ids=nvlink_remote,
            unsupported=tuple(c.unsupported),
            failed=tuple(c.failed),
        )


def _read_nvlinks(
    c: _Collector, max_links: int
) -> tuple[tuple[bool, ...], tuple[str | None, ...]] | None:
    """The state and peer of each link up to the first NVML rejects; None without NVLink."""
    states: list[bool] = []
    remotes: list[str | None] = []
    for link in range(max_links):
        try:
            state = c.calls.device(c.index, "nvmlDeviceGetNvLinkState", str(link))
        except NvmlCallError as exc:
            if exc.kind in LOST_KINDS:
                raise _GpuLost(exc) from exc
            break  # NotSupported / InvalidArgument: no such link (or no NVLink at all)
        states.append(bool(state))
        remote = None
        if state:
            try:
                info = c.calls.device(c.index, "nvmlDeviceGetNvLinkRemotePciInfo", str(link))
                remote = _text(_field(info, "busId"))
            except NvmlCallError as exc:
                if exc.kind in LOST_KINDS:
                    raise _GpuLost(exc) from exc
        remotes.append(remote)
    if not states:
        return None
    return tuple(states), tuple(remotes)


def read_gpu(calls: NvmlCalls, index: int) -> GpuReading:
    """Every field of GPU `index` read afresh through a calls layer (nothing cached, as
    `scripts/gpu-check` records it); never raises for one field."""
    return _Device(index, 0.0, 0.0).read(calls, 0.0)


class Nvml:
    """The NVML backend over a calls layer (`open_nvml()` or `replay_nvml()` build one)."""

    def __init__(
        self,
        calls: NvmlCalls,
        *,
        nvlink_refresh_s: float = NVLINK_REFRESH_S,
        pcie_throughput_refresh_s: float = PCIE_THROUGHPUT_REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._calls = calls
        self._system: NvmlSystem | None = None
        self._nvlink_refresh_s = nvlink_refresh_s
        self._pcie_refresh_s = pcie_throughput_refresh_s
        self._clock = clock
        self._devices: dict[int, _Device] = {}
        self._pool: ThreadPoolExecutor | None = None

    def _device(self, index: int) -> _Device:
        if index not in self._devices:
            self._devices[index] = _Device(index, self._nvlink_refresh_s, self._pcie_refresh_s)
        return self._devices[index]

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
        return self._device(index).read(self._calls, self._clock())

    def read_gpus(self) -> tuple[GpuReading, ...]:
        """Every GPU's reading; a replayed time series moves to its next sample first.

        Static fields come from the first reading of each GPU, NVLink state from the last
        refresh (`nvlink_refresh_s`), PCIe throughput from the last window
        (`pcie_throughput_refresh_s`; all GPUs' windows are read at once on threads)."""
        count = self.device_count()
        self._calls.begin_sample()
        now_s = self._clock()
        devices = [self._device(i) for i in range(count)]
        pcie = self._read_pcie_windows([d.index for d in devices if d.pcie_due(now_s)])
        return tuple(d.read(self._calls, now_s, pcie.get(d.index)) for d in devices)

    def _read_pcie_windows(self, indices: list[int]) -> dict[int, dict[str, Outcome]]:
        """TX and RX throughput of these GPUs, every 20 ms window at the same time (NVML is
        thread-safe, and pynvml's ctypes calls release the GIL while the driver waits)."""
        if len(indices) < 2:
            return {}  # one GPU reads its two windows itself
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=min(MAX_PCIE_THREADS, 2 * len(indices)),
                thread_name_prefix="dlrig-nvml-pcie",
            )
        futures = {
            (i, label): self._pool.submit(
                _outcome, self._calls, i, "nvmlDeviceGetPcieThroughput", arg
            )
            for i in indices
            for label, arg in _PCIE_DIRECTIONS
        }
        windows: dict[int, dict[str, Outcome]] = {}
        for (i, label), future in futures.items():
            windows.setdefault(i, {})[label] = future.result()
        return windows

    def read_health(self) -> tuple[GpuHealth, ...]:
        """Every GPU's health counters (ECC, remapped rows, retired pages, NVLink and PCIe
        error counters, clock event reasons), each read afresh; () without NVML."""
        from dlrig.hardware.nvml.health import read_gpu_health

        return tuple(read_gpu_health(self._calls, i) for i in range(self.device_count()))

    def xid_events(self, timeout_ms: int = 0) -> tuple[XidEvent, ...]:
        """The Xid events NVML delivered since the first call (which registers for them);
        () without NVML or where the driver delivers none."""
        if self.device_count() == 0:
            return ()
        from dlrig.hardware.nvml.health import read_xid_events

        return read_xid_events(self._calls, timeout_ms)

    def topology(self) -> tuple[GpuPair, ...]:
        """Each pair of GPUs: common PCIe ancestor and the NVLink links joining them."""
        readings = [self.read_gpu(i) for i in range(self.device_count())]
        by_bus = {r.pci_bus_id.lower(): r.index for r in readings if r.pci_bus_id}
        pairs = []
        for a in range(len(readings)):
            for b in range(a + 1, len(readings)):
                level: TopologyLevel | None
                try:
                    code = int(self._calls.pair(a, b, "nvmlDeviceGetTopologyCommonAncestor"))
                    level = TOPOLOGY_CODES.get(code)
                except NvmlCallError:
                    level = None
                pairs.append(GpuPair(a, b, level, _nvlinks_between(readings[a], b, by_bus)))
        return tuple(pairs)

    def close(self) -> None:
        """Shut NVML down (a no-op when it never started)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
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
