"""NVML scenarios replayed through the same reading code the real library goes through.

The numbers asserted are the fixtures' own (tests/fixtures/nvml/*.json, each with its
provenance): e.g. the RTX 3090 dump's 24576 MiB, 42.41 W, 300 W limit, 95 C slowdown.
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dlrig.errors import HardwareError
from dlrig.hardware import nvml as nv
from support.nvml_fakes import RecordingCalls, ReplayCalls, replay_nvml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
SCENARIOS = sorted(p.stem for p in FIXTURES.glob("*.json"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_fixture_states_how_it_was_made(scenario: str) -> None:
    data = json.loads((FIXTURES / f"{scenario}.json").read_text())
    assert data["scenario"] == scenario
    # Either recorded on a real GPU (scripts/gpu-check writes "recorded by dlrig ...; driver
    # X, CUDA Y") or constructed by hand from a named source; never unexplained.
    provenance = data["provenance"]
    recorded = re.match(r"recorded by dlrig .+; driver \S+, CUDA \S+", provenance)
    constructed = re.match(r"constructed (by hand )?from .{20,}", provenance)
    assert recorded or constructed, provenance


def test_four_gpu_box_reads_four_idle_rtx_3090s_with_two_nvlink_bridges() -> None:
    backend = replay_nvml("four_gpu_box")
    system = backend.system()
    assert (system.available, system.device_count) == (True, 4)
    assert (system.driver_version, system.cuda_driver_version) == ("550.54.15", "12.4")
    gpus = backend.read_gpus()
    assert [g.name for g in gpus] == ["NVIDIA GeForce RTX 3090"] * 4
    g0 = gpus[0]
    assert g0.memory_total_bytes == 24576 * 2**20  # "24576 MiB" in the dump
    assert g0.power_w == pytest.approx(42.41)  # 42410 mW
    assert g0.power_limit_w == 300.0
    assert (g0.pcie_gen_current, g0.pcie_gen_max, g0.pcie_width_current) == (1, 4, 16)
    assert g0.temperature_slowdown_c == 95
    assert g0.event_reason_names == ("gpu_idle",)
    assert g0.thermal_throttled is False
    assert g0.ecc_enabled is None and "ecc_enabled" in g0.unsupported  # GeForce: ECC N/A
    pairs = {(p.a, p.b): p for p in backend.topology()}
    assert pairs[(0, 1)].nvlinks == 4 and pairs[(2, 3)].nvlinks == 4
    assert pairs[(0, 2)].nvlinks == 0
    assert pairs[(1, 3)].level is nv.TopologyLevel.NODE


def test_h200_recorded_at_rest_reads_as_nvml_gave_it() -> None:
    """Recorded by scripts/gpu-check on a lent H200 (driver 580.159.04): 143,771 MiB, a 700 W
    limit, a Gen5 x16 link, ECC on, no fan and no NVLink answer (a passive card alone in a
    VM), and the name the catalog's aliases take."""
    from dlrig.catalog import load_catalog
    from dlrig.probe.match import match_gpu

    backend = replay_nvml("h200_recorded_idle")
    system = backend.system()
    assert (system.driver_version, system.cuda_driver_version) == ("580.159.04", "13.0")
    (gpu,) = backend.read_gpus()
    assert gpu.name == "NVIDIA H200" and gpu.memory_total_bytes == 143771 * 2**20
    assert gpu.power_limit_w == 700.0 and (gpu.pcie_gen_max, gpu.pcie_width_max) == (5, 16)
    assert gpu.ecc_enabled is True and gpu.unsupported == ("fan_speed_pct", "nvlink")
    part = match_gpu(load_catalog(), gpu.name)
    assert part is not None and part.name == "H200 SXM 141GB"


def test_laptop_without_gpu_is_data_not_an_exception() -> None:
    backend = replay_nvml("laptop_without_gpu")
    system = backend.system()
    assert system.available is False
    assert system.error == "NVML Shared Library Not Found"
    assert backend.device_count() == 0
    assert backend.read_gpus() == ()
    assert backend.topology() == ()


def test_gpu_throttling_for_heat_sets_thermal_bits_at_83_c() -> None:
    (gpu,) = replay_nvml("gpu_throttling_for_heat").read_gpus()
    assert gpu.temperature_c == 83
    assert gpu.clocks_event_reasons == 0x68  # HW_SLOWDOWN | SW_THERMAL | HW_THERMAL
    assert gpu.thermal_throttled is True
    assert gpu.power_capped is False
    assert "hw_thermal_slowdown" in gpu.event_reason_names
    assert (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz) == (1395, 2100)


def test_link_trained_at_x4_shows_on_gpu_2_only() -> None:
    gpus = replay_nvml("link_trained_at_x4").read_gpus()
    links = [(g.pcie_gen_current, g.pcie_width_current) for g in gpus]
    assert links == [(4, 16), (4, 16), (3, 4), (4, 16)]
    assert all((g.pcie_gen_max, g.pcie_width_max) == (4, 16) for g in gpus)


def test_driver_lacking_a_call_falls_back_and_lists_unsupported_fields() -> None:
    (gpu,) = replay_nvml("driver_lacking_a_call").read_gpus()
    assert gpu.name == "NVIDIA GeForce GTX 1080 Ti"
    # nvmlDeviceGetCurrentClocksEventReasons is missing (FunctionNotFound): the older
    # ThrottleReasons call answers with the same bits.
    assert gpu.clocks_event_reasons == 0x1
    assert gpu.power_w is None and gpu.pcie_tx_kb_s is None
    assert {"power_w", "pcie_tx_kb_s", "pcie_rx_kb_s", "temperature_slowdown_c"} <= set(
        gpu.unsupported
    )
    assert gpu.power_limit_w == 250.0  # what the old driver does answer


def test_lost_gpu_is_an_entry_beside_a_healthy_nvlinked_gpu() -> None:
    backend = replay_nvml("lost_gpu")
    healthy, lost = backend.read_gpus()
    assert (lost.index, lost.lost, lost.error) == (1, True, "GPU is lost")
    assert lost.name is None
    assert healthy.lost is False
    assert healthy.nvlink_active_count == 12  # A100 SXM4: 12 NVLink links
    assert healthy.ecc_enabled is True
    (pair,) = backend.topology()
    assert pair.level is nv.TopologyLevel.MULTIPLE


def test_time_series_moves_one_sample_per_read_and_stays_on_the_last() -> None:
    backend = replay_nvml("gpu_heating_time_series")
    temps = [backend.read_gpus()[0].temperature_c for _ in range(12)]
    assert temps == [66, 70, 74, 77, 80, 82, 83, 83, 83, 83, 83, 83]
    assert backend.read_gpus()[0].thermal_throttled is True


def test_read_gpu_out_of_range_is_a_hardware_error() -> None:
    with pytest.raises(HardwareError, match="no GPU 4"):
        replay_nvml("four_gpu_box").read_gpu(4)


def test_unknown_scenario_names_the_known_ones() -> None:
    with pytest.raises(HardwareError) as info:
        replay_nvml("no_such_box")
    assert info.value.hint is not None and "four_gpu_box" in info.value.hint


def test_cuda_version_integer_as_text() -> None:
    assert nv.cuda_version_text(12040) == "12.4"  # NVML's encoding: 1000*major + 10*minor
    assert nv.cuda_version_text(11080) == "11.8"


def test_recorder_output_replays_to_the_same_readings() -> None:
    source = json.loads((FIXTURES / "four_gpu_box.json").read_text())
    recorder = RecordingCalls(ReplayCalls(source))
    backend = nv.Nvml(recorder)
    original = backend.read_gpus()
    original_pairs = backend.topology()
    fixture = recorder.fixture("copy", "test", "re-recorded")
    replayed = replay_nvml(fixture)
    assert replayed.read_gpus() == original
    assert replayed.topology() == original_pairs


def test_recorder_keeps_a_lost_gpu_lost() -> None:
    source = json.loads((FIXTURES / "lost_gpu.json").read_text())
    recorder = RecordingCalls(ReplayCalls(source))
    nv.Nvml(recorder).read_gpus()
    fixture = recorder.fixture("copy", "test", "")
    assert replay_nvml(fixture).read_gpus()[1].lost is True


# -- The real calls layer, over a stand-in pynvml module ---------------------------------------


def _fake_pynvml(tables: dict[str, Any]) -> types.ModuleType:
    """A pynvml stand-in with the real module's error classes, constants and call shapes; a
    table value "!Kind" raises that module's NVMLError_Kind, a callable gets the call's args."""
    module = types.ModuleType("pynvml")
    base = type("NVMLError", (Exception,), {})
    errors = {k: type(f"NVMLError_{k}", (base,), {}) for k in ("NotSupported", "GpuIsLost")}
    constants = {
        "NVML_TEMPERATURE_GPU": 0,
        "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN": 0,
        "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN": 1,
        "NVML_CLOCK_GRAPHICS": 0,
        "NVML_CLOCK_SM": 1,
        "NVML_CLOCK_MEM": 2,
        "NVML_PCIE_UTIL_TX_BYTES": 0,
        "NVML_PCIE_UTIL_RX_BYTES": 1,
    }
    for name, value in {"NVMLError": base, **constants}.items():
        setattr(module, name, value)
    for kind, cls in errors.items():
        setattr(module, f"NVMLError_{kind}", cls)
    calls: list[tuple[Any, ...]] = []
    module.calls = calls  # type: ignore[attr-defined]

    def fn(name: str) -> Any:
        def call(*args: Any) -> Any:
            calls.append((name, *args))
            value = tables.get(name)
            if isinstance(value, str) and value.startswith("!"):
                raise errors[value[1:]]()
            return value(*args) if callable(value) else value

        return call

    for name in ("nvmlInit", "nvmlShutdown", *tables):
        setattr(module, name, fn(name))
    return module


def test_pynvml_layer_maps_constants_errors_and_units(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_pynvml(
        {
            "nvmlSystemGetDriverVersion": "550.54.15",
            "nvmlSystemGetCudaDriverVersion": 12040,
            "nvmlDeviceGetCount": 1,
            "nvmlDeviceGetHandleByIndex": lambda i: f"handle{i}",
            "nvmlDeviceGetName": b"NVIDIA H200",  # old bindings return bytes
            "nvmlDeviceGetTemperatureThreshold": lambda h, which: {1: 87, 0: 92}[which],
            "nvmlDeviceGetPowerUsage": "!NotSupported",
            "nvmlDeviceGetClockInfo": lambda h, clock: {0: 1980, 1: 1980, 2: 3201}[clock],
        }
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    backend = nv.open_nvml()
    assert backend.system() == nv.NvmlSystem(True, None, "550.54.15", "12.4", 1)
    gpu = backend.read_gpu(0)
    assert gpu.name == "NVIDIA H200"
    assert (gpu.temperature_slowdown_c, gpu.temperature_shutdown_c) == (87, 92)
    assert gpu.clock_memory_mhz == 3201
    assert gpu.power_w is None and "power_w" in gpu.unsupported
    # A function this pynvml lacks (an older nvidia-ml-py) is FunctionNotFound: unsupported.
    assert "memory" in gpu.unsupported and gpu.memory_total_bytes is None
    backend.close()
    assert ("nvmlShutdown",) in fake.calls  # type: ignore[attr-defined]


def test_pynvml_layer_turns_gpu_is_lost_into_a_lost_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_pynvml({"nvmlDeviceGetCount": 2, "nvmlDeviceGetHandleByIndex": "!GpuIsLost"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gpus = nv.open_nvml().read_gpus()
    assert [(g.index, g.lost, g.error) for g in gpus] == [
        (0, True, "GpuIsLost"),
        (1, True, "GpuIsLost"),
    ]


def test_real_library_absent_on_this_machine_gives_unavailable() -> None:
    backend = nv.open_nvml()
    system = backend.system()
    if system.available:
        pytest.skip("this machine has NVML")
    assert system.device_count == 0
    assert "NVML" in (system.error or "") or "nvidia-ml-py" in (system.error or "")
    assert backend.read_gpus() == ()
