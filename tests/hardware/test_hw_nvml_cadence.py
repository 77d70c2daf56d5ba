"""What the NVML backend reads at each tick: static fields once per GPU, NVLink state every
`NVLINK_REFRESH_S`, PCIe throughput (a 20 ms window per call) every `PCIE_THROUGHPUT_REFRESH_S`,
memory through nvmlDeviceGetMemoryInfo v2 where the driver has it.

Call counts, never times: the replay counts each call key (`ReplayCalls.counts`) and a fake
clock stands for the monotonic one. The 8-GPU box is `eight_gpu_box.json` (synthesised from
the A100 datasheet fixture, 12 NVLinks per GPU; its provenance says so).
"""

from __future__ import annotations

from typing import Any

import pytest

from dlrig.hardware.nvml import Nvml
from dlrig.hardware.nvml.backend import (
    NVLINK_REFRESH_S,
    PCIE_THROUGHPUT_REFRESH_S,
    SLOW_REFRESH_S,
)
from support.nvml_fakes import ReplayCalls, fixture_path, load_fixture, replay_calls

GPUS = 8
LINKS = 12  # eight_gpu_box: an A100 SXM4 has 12 NVLinks (datasheet), all active


class FakeClock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def _box(source: str | dict[str, Any] = "eight_gpu_box") -> tuple[Nvml, ReplayCalls, FakeClock]:
    calls = replay_calls(source)
    clock = FakeClock()
    return Nvml(calls, clock=clock), calls, clock


def _ticks(nvml: Nvml, clock: FakeClock, count: int, interval_s: float) -> None:
    for tick in range(count):
        clock.now_s = tick * interval_s
        nvml.read_gpus()


def test_static_fields_are_read_once_per_gpu_over_ten_ticks() -> None:
    nvml, calls, clock = _box()
    _ticks(nvml, clock, 10, 1.0)
    for key in (
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetSerial",
        "nvmlDeviceGetPciInfo",
        "nvmlDeviceGetEccMode",
        "nvmlDeviceGetMaxClockInfo:SM",
        "nvmlDeviceGetMaxClockInfo:MEM",
        "nvmlDeviceGetTemperatureThreshold:SLOWDOWN",
        "nvmlDeviceGetTemperatureThreshold:SHUTDOWN",
        "nvmlDeviceGetPowerManagementLimitConstraints",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkWidth",
    ):
        assert calls.counts[key] == GPUS, key
    # What changes is read at every tick.
    for key in (
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetTemperature:GPU",
        "nvmlDeviceGetClockInfo:SM",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetMemoryInfo:V2",
    ):
        assert calls.counts[key] == 10 * GPUS, key


def test_static_fields_stay_in_every_reading() -> None:
    nvml, _, clock = _box()
    _ticks(nvml, clock, 3, 1.0)
    gpu = nvml.read_gpus()[7]
    # The fixture's own values: the A100 SXM4 80GB's 1410 MHz and 89 C slowdown (datasheet
    # fixture), the serial and the 100-400 W range set by hand there.
    assert gpu.name == "NVIDIA A100-SXM4-80GB"
    assert gpu.clock_sm_max_mhz == 1410
    assert gpu.temperature_slowdown_c == 89
    assert gpu.serial == "1323220000007"
    assert (gpu.power_limit_min_w, gpu.power_limit_max_w) == (100.0, 400.0)
    assert gpu.pci_bus_id == "00000000:BD:00.0"


def test_nvlink_state_is_read_every_thirty_seconds_not_every_tick() -> None:
    assert NVLINK_REFRESH_S == 30.0
    nvml, calls, clock = _box()
    _ticks(nvml, clock, 61, 1.0)  # t = 0 .. 60 s: refreshed at 0, 30 and 60
    refreshes = 3
    assert calls.counts["nvmlDeviceGetNvLinkState:0"] == refreshes * GPUS
    assert calls.counts["nvmlDeviceGetNvLinkRemotePciInfo:11"] == refreshes * GPUS
    # Link 12 does not exist on an A100: asked once per GPU, when the links were first counted.
    assert calls.counts["nvmlDeviceGetNvLinkState:12"] == GPUS
    assert nvml.read_gpus()[0].nvlink_active_count == LINKS


def test_a_link_that_goes_down_shows_at_the_next_refresh() -> None:
    data = load_fixture(fixture_path("eight_gpu_box"))
    down = {"nvmlDeviceGetNvLinkState:3": 0}
    data["samples"] = [{"t_s": float(t), "gpus": [down if t >= 5 else {}]} for t in range(40)]
    nvml, _, clock = _box(data)
    counts = []
    for tick in range(40):
        clock.now_s = float(tick)
        counts.append(nvml.read_gpus()[0].nvlink_active_count)
    assert counts[:30] == [LINKS] * 30  # down from t = 5 s, not read again until t = 30 s
    assert counts[30:] == [LINKS - 1] * 10


def test_a_gpu_without_nvlink_is_asked_once() -> None:
    nvml, calls, clock = _box("gpu_throttling_for_heat")
    _ticks(nvml, clock, 100, 1.0)
    assert calls.counts["nvmlDeviceGetNvLinkState:0"] == 1
    assert nvml.read_gpus()[0].nvlink_active is None
    assert "nvlink" in nvml.read_gpus()[0].unsupported


@pytest.mark.parametrize(("interval_s", "ticks", "windows"), [(1.0, 10, 10), (0.1, 20, 2)])
def test_pcie_throughput_windows_at_most_once_a_second(
    interval_s: float, ticks: int, windows: int
) -> None:
    # nvmlDeviceGetPcieThroughput counts over 20 ms per call (NVML API reference): 1 Hz reads
    # it at every tick, 10 Hz at every 10th (t = 0 and 1.0 s of 0 .. 1.9 s).
    assert PCIE_THROUGHPUT_REFRESH_S == 1.0
    nvml, calls, clock = _box()
    for tick in range(ticks):
        clock.now_s = tick / round(1 / interval_s)
        nvml.read_gpus()
    assert calls.counts["nvmlDeviceGetPcieThroughput:TX_BYTES"] == windows * GPUS
    assert calls.counts["nvmlDeviceGetPcieThroughput:RX_BYTES"] == windows * GPUS


def test_pcie_windows_read_on_threads_land_on_their_own_gpu() -> None:
    data = load_fixture(fixture_path("eight_gpu_box"))
    for i, gpu in enumerate(data["gpus"]):
        gpu["nvmlDeviceGetPcieThroughput:TX_BYTES"] = 1000 * i
        gpu["nvmlDeviceGetPcieThroughput:RX_BYTES"] = 1000 * i + 1
    nvml, _, clock = _box(data)
    gpus = nvml.read_gpus()
    assert [g.pcie_tx_kb_s for g in gpus] == [1000 * i for i in range(GPUS)]
    assert [g.pcie_rx_kb_s for g in gpus] == [1000 * i + 1 for i in range(GPUS)]
    clock.now_s = 0.5  # between windows: the last window is repeated
    assert nvml.read_gpus()[3].pcie_tx_kb_s == 3000
    nvml.close()


def test_memory_info_v2_used_leaves_out_reserved_memory() -> None:
    nvml, calls, _ = _box()
    gpu = nvml.read_gpus()[0]
    # eight_gpu_box: v1 says 925892608 B used; v2 gives 512 MiB of it as reserved.
    assert gpu.memory_reserved_bytes == 536870912
    assert gpu.memory_used_bytes == 925892608 - 536870912
    assert gpu.memory_total_bytes == 85899345920
    assert calls.counts["nvmlDeviceGetMemoryInfo"] == 0  # v1 not needed


def test_a_driver_without_memory_info_v2_falls_back_to_v1_after_one_try() -> None:
    nvml, calls, clock = _box("four_gpu_box")  # recorded dump of driver 550: no v2 key
    _ticks(nvml, clock, 10, 1.0)
    gpu = nvml.read_gpus()[0]
    assert calls.counts["nvmlDeviceGetMemoryInfo:V2"] == 4  # once per GPU
    assert gpu.memory_used_bytes == 340787200  # v1's used (the dump's 325 MiB)
    assert gpu.memory_reserved_bytes is None
    assert "memory" not in gpu.unsupported


def test_a_static_field_that_failed_is_asked_again() -> None:
    data = load_fixture(fixture_path("gpu_throttling_for_heat"))
    data["gpus"][0]["nvmlDeviceGetName"] = {"nvml_error": "Unknown", "message": "Unknown Error"}
    nvml, calls, clock = _box(data)
    _ticks(nvml, clock, 5, 1.0)
    assert calls.counts["nvmlDeviceGetName"] == 5
    assert nvml.read_gpus()[0].failed == (("name", "Unknown Error"),)


def test_unsupported_static_fields_are_listed_at_every_tick_but_asked_once() -> None:
    nvml, calls, clock = _box("four_gpu_box")  # GeForce: no ECC
    _ticks(nvml, clock, 5, 1.0)
    assert calls.counts["nvmlDeviceGetEccMode"] == 4
    assert "ecc_enabled" in nvml.read_gpus()[2].unsupported


def test_slow_fields_at_ten_hertz_are_read_once_a_second() -> None:
    # Power limit, fan, current PCIe link and the memory/graphics clocks change with a power
    # state or a command (SLOW_REFRESH_S = 1 s); utilization, power, temperature, the SM clock
    # and the event reasons are read at every tick.
    assert SLOW_REFRESH_S == 1.0
    nvml, calls, clock = _box()
    for tick in range(20):  # 10 Hz for 2 s: slow reads at t = 0 and 1.0 s
        clock.now_s = tick / 10
        nvml.read_gpus()
    for key in (
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetClockInfo:MEM",
        "nvmlDeviceGetClockInfo:GRAPHICS",
    ):
        assert calls.counts[key] == 2 * GPUS, key
    for key in (
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetTemperature:GPU",
        "nvmlDeviceGetClockInfo:SM",
        "nvmlDeviceGetCurrentClocksEventReasons",
    ):
        assert calls.counts[key] == 20 * GPUS, key


def test_a_tick_a_few_ms_early_still_refreshes_at_one_hertz() -> None:
    # Ticks jitter: 1.02 s then 1.999 s (0.979 s later) must both read the once-a-second fields.
    nvml, calls, clock = _box()
    for now_s in (0.0, 1.02, 1.999, 3.0):
        clock.now_s = now_s
        nvml.read_gpus()
    assert calls.counts["nvmlDeviceGetEnforcedPowerLimit"] == 4 * GPUS
    assert calls.counts["nvmlDeviceGetPcieThroughput:TX_BYTES"] == 4 * GPUS
