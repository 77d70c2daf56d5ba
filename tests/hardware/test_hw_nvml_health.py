"""NVML health counters replayed through the same reading code the real library goes through.

The figures asserted are the fixtures' own (tests/fixtures/nvml/health_*.json, each with its
provenance), e.g. the DBE scenario's 2 volatile uncorrectable ECC errors and 37 PCIe replays.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dlrig.hardware import sysfs_health
from dlrig.hardware.nvml import NvmlCallError, PynvmlCalls
from dlrig.hardware.nvml.health import read_gpu_health, xid_events
from support.nvml_fakes import (
    RecordingCalls,
    fixture_path,
    kernel_log_text,
    load_fixture,
    replay_calls,
    replay_nvml,
    write_sysfs,
)


def test_dbe_scenario_reads_ecc_remap_replays_and_nvlink_counters() -> None:
    gpus = replay_nvml("health_h100_dbe_pending_remap").read_health()
    assert len(gpus) == 2
    bad = gpus[1]
    assert bad.name == "NVIDIA H100 80GB HBM3"
    assert (bad.ecc_volatile_corrected, bad.ecc_volatile_uncorrected) == (14, 2)
    assert (bad.ecc_aggregate_corrected, bad.ecc_aggregate_uncorrected) == (1210, 2)
    assert (bad.remapped_rows_correctable, bad.remapped_rows_uncorrectable) == (0, 1)
    assert bad.remap_pending is True and bad.remap_failure is False
    assert bad.pcie_replay_count == 37
    assert bad.nvlink_errors is not None and len(bad.nvlink_errors) == 18  # H100 SXM: 18 links
    link3 = bad.nvlink_errors[3]
    assert (link3.crc_flit, link3.replay) == (112, 9)
    assert bad.nvlink_total("crc_flit") == 112
    # Ampere and later have no page retirement: NotSupported is recorded, not a failure.
    assert bad.retired_pages_dbe is None and "retired_pages_dbe" in bad.unsupported
    assert gpus[0].clocks_event_reasons == 0x8 | 0x4  # HW_SLOWDOWN | SW_POWER_CAP


def test_pre_ampere_gpu_counts_retired_pages_and_has_no_remapper() -> None:
    (gpu,) = replay_nvml("health_v100_retired_pages").read_health()
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe) == (3, 2)  # address lists counted
    assert gpu.retired_pages_pending is True
    assert gpu.remap_pending is None and "remapped_rows" in gpu.unsupported
    assert gpu.nvlink_errors is None  # no NVLink key in the fixture: no NVLink


def test_lost_gpu_is_an_entry_not_an_exception() -> None:
    gpus = replay_nvml("lost_gpu").read_health()
    assert [g.lost for g in gpus] == [False, True]
    assert gpus[1].error  # what NVML answered, kept for the finding


def test_xid_events_come_once_from_the_fixture() -> None:
    backend = replay_nvml("health_h100_dbe_pending_remap")
    first = backend.xid_events()
    assert [(e.xid, e.gpu, e.source) for e in first] == [(48, 1, "nvml")]
    assert backend.xid_events() == ()  # a real event set delivers each event once


def test_timeouts_are_not_events() -> None:
    assert replay_nvml("health_h100_healthy").xid_events() == ()
    records: list[dict[str, Any]] = [
        {"gpu": 0, "eventType": 8, "eventData": 79},
        {"gpu": 0, "eventType": 2, "eventData": 0},  # a double-bit ECC event, not an Xid
    ]
    assert [e.xid for e in xid_events(records)] == [79]


def test_recorder_keeps_health_calls_replayable() -> None:
    inner = replay_calls("health_h100_dbe_pending_remap")
    recorder = RecordingCalls(inner)
    inner.init()
    original = read_gpu_health(recorder, 1)
    recorder.events(0)
    fixture = recorder.fixture("x", "recorded by dlrig test; driver 1, CUDA 1", "copy")
    fixture["system"] = load_fixture(fixture_path("health_h100_dbe_pending_remap"))["system"]
    assert fixture["events"] == [{"gpu": 1, "eventType": 8, "eventData": 48}]
    key = "nvmlDeviceGetTotalEccErrors:NVML_MEMORY_ERROR_TYPE_UNCORRECTED,NVML_VOLATILE_ECC"
    assert fixture["gpus"][1][key] == 2
    replayed = read_gpu_health(replay_calls(fixture), 1)
    assert replayed == original


class _FakePynvml(types.ModuleType):
    """Enough of pynvml to see which arguments the calls layer passes."""

    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    NVML_NVLINK_ERROR_DL_REPLAY = 0
    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.seen: list[tuple[Any, ...]] = []

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"handle{index}"

    def nvmlDeviceGetTotalEccErrors(self, *args: Any) -> int:
        self.seen.append(args)
        return 7

    def nvmlDeviceGetNvLinkErrorCounter(self, *args: Any) -> int:
        self.seen.append(args)
        return 3


def test_real_calls_layer_resolves_constant_names_and_integers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _FakePynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    calls = PynvmlCalls()
    calls.init()
    arg = "NVML_MEMORY_ERROR_TYPE_UNCORRECTED,NVML_VOLATILE_ECC"
    assert calls.device(0, "nvmlDeviceGetTotalEccErrors", arg) == 7
    assert calls.device(2, "nvmlDeviceGetNvLinkErrorCounter", "5,NVML_NVLINK_ERROR_DL_REPLAY") == 3
    assert fake.seen == [("handle0", 1, 0), ("handle2", 5, 0)]
    with pytest.raises(NvmlCallError) as missing:
        calls.device(0, "nvmlDeviceGetTotalEccErrors", "NVML_NO_SUCH_CONSTANT,NVML_VOLATILE_ECC")
    assert missing.value.kind == "FunctionNotFound"  # an older pynvml: unsupported, not a crash


def test_recorder_format_of_scripts_gpu_health_record_replays(tmp_path: Path) -> None:
    # health_h200_idle.json is in the form scripts/gpu_health_record.py writes (events as
    # {"received": [...]}, kernel_log as {"nvrm_lines": [...]}, sysfs nested by kind): a real
    # recording in that form drops in.
    fixture = load_fixture(fixture_path("health_h200_idle"))
    backend = replay_nvml(fixture)
    (gpu,) = backend.read_health()
    assert gpu.name == "NVIDIA H200"  # from the real recording
    assert (gpu.ecc_volatile_uncorrected, gpu.remap_pending, gpu.pcie_replay_count) == (0, False, 0)
    assert backend.xid_events() == ()
    assert "NVRM: loading NVIDIA" in kernel_log_text(fixture)
    root = write_sysfs(fixture, tmp_path)
    (aer,) = sysfs_health.read_aer(root)
    assert (aer.device, aer.fatal, aer.nonfatal, aer.correctable) == ("0000:00:06.0", 0, 0, 0)
