"""Each health check (HEALTH.1-18) from a fixture: the NVML health scenarios
(tests/fixtures/nvml/health_*.json), the Redfish mockups (tests/fixtures/redfish) and the IPMI
outputs (tests/fixtures/ipmi). Each expectation names where its figure comes from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from health_helpers import NOW, bmc_reading, inputs_from

from dlrig.enums import Severity
from dlrig.hardware.bmc import BmcReading
from dlrig.hardware.bmc.ipmi import (
    parse_freeipmi_sel,
    parse_freeipmi_sensors,
    redundancy_from_sensors,
)
from dlrig.hardware.kernel_log import KernelXids
from dlrig.hardware.nvml.health import XidEvent
from dlrig.hardware.smart import drive_from_json
from dlrig.hardware.sysfs_health import EdacCounters, ThermalZone
from dlrig.health import (
    CHECKS,
    Baseline,
    Context,
    HealthInputs,
    baseline_from,
    judge_health,
    load_xid_catalog,
    run_checks,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _findings(inputs: HealthInputs, baseline: Baseline | None = None, expected: int | None = None):
    return run_checks(inputs, Context(baseline, NOW, expected))


def _by(findings, name: str):
    return [f for f in findings if f.name == name]


def test_every_check_is_registered_once_with_a_reason() -> None:
    ids = [c.check_id for c in CHECKS]
    assert ids == [f"HEALTH.{n}" for n in range(1, 19)]
    assert all(len((c.run.__doc__ or "").split()) > 10 for c in CHECKS)


def test_healthy_h100s_have_nothing_to_say(tmp_path: Path) -> None:
    report = judge_health(inputs_from("health_h100_healthy", tmp_path), host="node", baseline=None)
    assert report.healthy and report.counts == {"error": 0, "warning": 0, "info": 0}
    assert report.verdict == "healthy: no fault needs an action"


def test_dbe_scenario_faults(tmp_path: Path) -> None:
    found = _findings(inputs_from("health_h100_dbe_pending_remap", tmp_path))
    # HEALTH.2: 2 volatile uncorrectable errors on GPU 1 (the fixture's figure).
    (ecc,) = _by(found, "gpu_ecc_uncorrected")
    assert ecc.severity is Severity.ERROR and ecc.gpu == 1
    assert "2 since the driver loaded" in ecc.message and "WORKFLOW_XID_48" in (ecc.action or "")
    # HEALTH.3: the remapper's pending flag ("a reset fixes it").
    (pending,) = _by(found, "gpu_row_remap_pending")
    assert pending.severity is Severity.ERROR and "reset" in (pending.action or "")
    # HEALTH.8: HW_SLOWDOWN (0x8) without the thermal bit on GPU 0.
    (slow,) = _by(found, "gpu_hw_slowdown")
    assert slow.gpu == 0 and slow.severity is Severity.ERROR
    # HEALTH.9: the fixture's 3 non-fatal completion timeouts on the GPU's link.
    (aer,) = _by(found, "pcie_aer_nonfatal")
    assert aer.severity is Severity.WARNING and "root port 0000:16:01.0" in aer.message
    # No baseline: replays and NVLink errors since the driver loaded are not judged as growth.
    assert not _by(found, "gpu_pcie_replay") and not _by(found, "gpu_nvlink_errors")


def test_xids_take_their_catalog_bucket(tmp_path: Path) -> None:
    found = _findings(inputs_from("health_h100_dbe_pending_remap", tmp_path))
    xids = {f.evidence["xid"]: f for f in _by(found, "gpu_xid")}
    # Xid 48 (WORKFLOW_XID_48): NVML's event and the kernel log's line are one Xid.
    dbe = xids[48]
    assert dbe.severity is Severity.ERROR and dbe.evidence["count"] == 1
    assert dbe.evidence["sources"] == ["kernel_log", "nvml"]
    assert dbe.part.startswith("GPU 1 (NVIDIA H100 80GB HBM3")
    # Xid 63 (row remapping event) is IGNORE, Xid 45 (preemptive cleanup) follows the other.
    assert xids[63].severity is Severity.INFO
    assert xids[45].severity is Severity.INFO
    assert dbe.evidence["catalog"].endswith("analyzing-xid-catalog.html")


@pytest.mark.parametrize(
    ("xid", "message", "severity", "words"),
    [
        (79, "GPU has fallen off the bus.", Severity.ERROR, "RESTART_BM"),  # catalog row 79
        (13, "Graphics SM Warp Exception", Severity.WARNING, "RESTART_APP"),
        (31, "MMU Fault", Severity.WARNING, "RESTART_APP"),
        (94, "Contained: SM (0x1)", Severity.WARNING, "RESTART_APP"),
        (95, "Uncontained: FBHUB", Severity.ERROR, "RESET_GPU"),
        (74, "NVLink: fatal error detected on link 3", Severity.ERROR, "WORKFLOW_NVLINK_ERR"),
        (92, "High single-bit ECC error rate", Severity.INFO, "IGNORE"),
        (
            154,
            "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
            Severity.ERROR,
            "Node Reboot Required",
        ),
        (154, "GPU recovery action changed from 0x2 (x) to 0x0 (None)", Severity.INFO, "None"),
        (9, "old code", Severity.ERROR, "CONTACT_SUPPORT"),  # "Unused" rows: CONTACT_SUPPORT
        (999, "a code from a future driver", Severity.WARNING, "not in NVIDIA's Xid catalog"),
    ],
)
def test_xid_resolution(xid: int, message: str, severity: Severity, words: str) -> None:
    event = XidEvent(xid=xid, source="kernel_log", pci_bus_id="0000:5a:00", message=message)
    inputs = HealthInputs(taken_utc=NOW, kernel_log=KernelXids((event,), True))
    (finding,) = _findings(inputs)
    assert finding.severity is severity
    assert words in (finding.action or "")


def test_catalog_is_dated_and_sourced() -> None:
    catalog = load_xid_catalog()
    assert catalog.source["url"] == (
        "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    )
    assert str(catalog.source["read"]) == "2026-12-06"
    assert catalog.entries[79].immediate == "RESTART_BM"
    assert catalog.entries[48].mnemonic == "ROBUST_CHANNEL_GPU_ECC_DBE"


def test_growth_since_the_baseline_is_what_is_judged(tmp_path: Path) -> None:
    before = inputs_from(
        "health_h100_dbe_pending_remap", tmp_path, taken="2026-12-05T20:00:00+00:00"
    )
    baseline = baseline_from(before, "probe")
    # The same counters an hour later: nothing grew.
    again = _findings(inputs_from("health_h100_dbe_pending_remap", tmp_path / "2"), baseline)
    assert not _by(again, "gpu_pcie_replay") and not _by(again, "gpu_nvlink_errors")
    # Then the link replays 13 more times and link 3 counts 40 more CRC errors.
    now = inputs_from("health_h100_dbe_pending_remap", tmp_path / "3")
    gpus = list(now.gpus or ())
    bad = gpus[1]
    links = list(bad.nvlink_errors or ())
    links[3] = dataclasses.replace(links[3], crc_flit=(links[3].crc_flit or 0) + 40)
    gpus[1] = dataclasses.replace(
        bad, pcie_replay_count=(bad.pcie_replay_count or 0) + 13, nvlink_errors=tuple(links)
    )
    grown = _findings(dataclasses.replace(now, gpus=tuple(gpus)), baseline)
    (replay,) = _by(grown, "gpu_pcie_replay")
    assert "replayed 13 transfer(s) since the last probe" in replay.message
    (nvlink,) = _by(grown, "gpu_nvlink_errors")
    assert "link 3 crc_flit +40" in nvlink.message


def test_a_counter_that_went_down_was_reset() -> None:
    baseline = Baseline(taken_utc=NOW, source="probe", counters={"k": 10})
    assert baseline.growth("k", 3) == 3  # a reboot reset it: all 3 are new
    assert baseline.growth("k", 12) == 2
    assert baseline.growth("other", 5) is None


def test_old_kernel_log_xids_are_not_judged_again(tmp_path: Path) -> None:
    line = "NVRM: Xid (PCI:0000:2a:00): 79, GPU has fallen off the bus."
    old = XidEvent(79, "kernel_log", pci_bus_id="0000:2a:00", message=line, seq=10, boot_id="b1")
    new = dataclasses.replace(old, seq=12)
    baseline = Baseline(NOW, "health reading", kernel_boot_id="b1", kernel_last_seq=11)
    inputs = HealthInputs(taken_utc=NOW, kernel_log=KernelXids((old, new), True))
    (finding,) = _findings(inputs, baseline)
    assert finding.evidence["count"] == 1  # seq 12 only
    other_boot = dataclasses.replace(old, boot_id="b2")
    inputs = HealthInputs(taken_utc=NOW, kernel_log=KernelXids((other_boot,), True))
    assert len(_findings(inputs, baseline)) == 1  # a new boot: everything in its log is new


def test_remap_failure_is_an_rma(tmp_path: Path) -> None:
    found = _findings(inputs_from("health_a100_remap_failure", tmp_path))
    (failure,) = _by(found, "gpu_row_remap_failure")
    assert failure.severity is Severity.ERROR and "RMA" in (failure.action or "")
    (xid64,) = _by(found, "gpu_xid")
    assert xid64.evidence["xid"] == 64 and "RESET_GPU" in (xid64.action or "")


def test_pre_ampere_retired_pages(tmp_path: Path) -> None:
    inputs = inputs_from("health_v100_retired_pages", tmp_path)
    (pending,) = _by(_findings(inputs), "gpu_retired_pages_pending")
    assert pending.severity is Severity.ERROR and "reload the driver" in (pending.action or "")
    baseline = dataclasses.replace(baseline_from(inputs, "probe"), counters={})
    key = f"gpu/{inputs.gpus[0].uuid}/retired_pages_dbe"  # type: ignore[index]
    grown = _findings(inputs, dataclasses.replace(baseline, counters={key: 1}))
    (retired,) = _by(grown, "gpu_retired_pages")
    assert "1 page(s) retired since the last probe" in retired.message
    assert retired.message.endswith("(5 in all)")  # the fixture's 3 + 2 addresses


def test_lost_and_missing_gpus(tmp_path: Path) -> None:
    found = _findings(inputs_from("lost_gpu", tmp_path))
    (lost,) = _by(found, "gpu_missing")
    assert lost.gpu == 1 and lost.severity is Severity.ERROR
    # The driver gone: NVML answers nothing where the last probe saw 8 GPUs.
    none = _findings(HealthInputs(taken_utc=NOW, nvml_error="Driver Not Loaded"), expected=8)
    (missing,) = _by(none, "gpu_missing")
    assert "0 GPU(s) answer where the last probe saw 8 (NVML: Driver Not Loaded)" in (
        missing.message
    )


def test_host_memory_drives_and_thermal_zones() -> None:
    mc = EdacCounters("mc0/dimm4", corrected=25, uncorrected=1, label="DIMM_B1")
    zone = ThermalZone("thermal_zone1", "x86_pkg_temp", 101.0, critical_c=100.0)
    drive = drive_from_json(
        "/dev/nvme0",
        __import__("json").loads((FIXTURES / "smart" / "nvme0_failing.json").read_text()),
        8,
    )
    baseline = Baseline(NOW, "probe", counters={"edac/mc0/dimm4/corrected": 5})
    inputs = HealthInputs(taken_utc=NOW, edac=(mc,), thermal_zones=(zone,), drives=(drive,))
    found = _findings(inputs, baseline)
    names = {f.name: f for f in found}
    assert names["host_memory_uncorrected"].severity is Severity.ERROR
    assert "20 corrected memory error(s)" in names["host_memory_corrected"].message
    assert names["thermal_zone_critical"].severity is Severity.ERROR
    assert "critical warning 0x04" in names["drive_failing"].message
    assert "104%" in names["drive_worn"].message


@pytest.mark.parametrize("mockup", ["faulted_legacy", "faulted_subsystems"])
def test_bmc_faults_are_named_as_the_bmc_names_them(mockup: str) -> None:
    found = _findings(HealthInputs(taken_utc=NOW, bmc=bmc_reading(mockup)))
    errors = {f.name: f.part for f in found if f.severity is Severity.ERROR}
    legacy = mockup == "faulted_legacy"
    assert errors["power_supply_failed"] == ("'PS2 Status'" if legacy else "'PSU2'")
    assert errors["fan_failed"] == ("'System Board Fan3A'" if legacy else "'FAN3'")
    assert errors["temperature_high"] == ("'System Board Inlet Temp'" if legacy else "'Inlet Temp'")
    assert "power_supply_redundancy_lost" in errors
    inlet = next(f for f in found if f.name == "temperature_high")
    limit = "42 C" if legacy else "45 C"  # each mockup's UpperThresholdCritical / UpperCritical
    assert f"at 47 C: over the BMC's upper critical threshold {limit}" in inlet.message
    # The SEL's four Critical entries of the evening before count (within a day of NOW); one
    # about a part whose present state is already a fault is a note, not a second fault.
    entries = [f for f in found if f.name == "bmc_log_entry"]
    assert len(entries) == 4
    inlet_entry = next(f for f in entries if "nlet" in f.message)
    assert inlet_entry.severity is Severity.INFO and inlet_entry.action is None


@pytest.mark.parametrize("mockup", ["healthy_legacy", "healthy_subsystems"])
def test_healthy_bmc_is_quiet(mockup: str) -> None:
    assert _findings(HealthInputs(taken_utc=NOW, bmc=bmc_reading(mockup))) == ()


def test_sel_entries_before_the_baseline_are_history() -> None:
    reading = bmc_reading("faulted_legacy")
    only_sel = dataclasses.replace(reading, sensors=(), redundancy=())
    baseline = Baseline("2026-12-05T23:00:00+00:00", "health reading")
    assert _findings(HealthInputs(taken_utc=NOW, bmc=only_sel), baseline) == ()


def test_ipmi_reading_gives_the_same_alarms() -> None:
    sensors = parse_freeipmi_sensors(
        (FIXTURES / "ipmi" / "freeipmi_sensors_faulted.csv").read_text()
    )
    entries = parse_freeipmi_sel((FIXTURES / "ipmi" / "freeipmi_sel_faulted.csv").read_text())

    reading = BmcReading(
        "freeipmi",
        "local",
        sensors=sensors,
        redundancy=redundancy_from_sensors(sensors),
        log_entries=entries,
    )
    found = _findings(HealthInputs(taken_utc=NOW, bmc=reading))
    parts = {(f.name, f.part) for f in found if f.severity is Severity.ERROR}
    assert ("power_supply_failed", "'PS2 Status'") in parts
    assert ("fan_failed", "'FAN3'") in parts
    assert ("temperature_high", "'Inlet Temp'") in parts
    assert ("power_supply_redundancy_lost", "'PS Redundancy'") in parts
    assert ("power_supply_failed", "'PS3 Status'") not in parts  # an empty bay


def test_report_verdict_names_the_failed_parts() -> None:
    report = judge_health(
        HealthInputs(taken_utc=NOW, bmc=bmc_reading("faulted_legacy")),
        host="node7",
        baseline=None,
        now_utc=NOW,
    )
    assert not report.healthy
    assert report.verdict.startswith(
        "7 faults need action: 'PS2 Status', 'System Board PS "
        "Redundancy', 'System Board Fan3A', 'System Board Inlet Temp'"
    )
    assert report.snapshot["taken_utc"] == NOW


def test_healthy_h200_from_its_real_recording_has_no_alarm(tmp_path: Path) -> None:
    report = judge_health(inputs_from("health_h200_idle", tmp_path), host="h200", baseline=None)
    assert report.healthy and report.counts["warning"] == 0 and report.counts["error"] == 0
