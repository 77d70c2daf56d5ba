"""The one `NvmlBackend`: readings assembled from a calls layer (pynvml, or a test's fake)."""

from __future__ import annotations

from typing import Any

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


class _GpuLost(Exception):
    def __init__(self, error: NvmlCallError) -> None:
        super().__init__(error.message)
        self.error = error


LOST_KINDS = frozenset({"GpuIsLost", "GpuNotFound", "ResetRequired"})
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
            if exc.kind in LOST_KINDS:
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
        c.unsupported.append("nvlink")
        return None, None
    return tuple(states), tuple(remotes)


def _event_reasons(c: _Collector) -> int | None:
    try:
        return int(c.calls.device(c.index, "nvmlDeviceGetCurrentClocksEventReasons"))
    except NvmlCallError as exc:
        if exc.kind in LOST_KINDS:
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
                    level = TOPOLOGY_CODES.get(code)
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
