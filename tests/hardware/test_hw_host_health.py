"""The host's health readers on fixtures: the kernel log's Xid lines, sysfs (AER, EDAC, thermal
zones) laid out from the NVML health fixtures' `sysfs` key, and smartctl's JSON."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from dlrig.hardware import kernel_log, smart, sysfs_health
from support.nvml_fakes import fixture_path, kernel_log_text, load_fixture, write_sysfs

SMART = Path(__file__).resolve().parents[1] / "fixtures" / "smart"


def _fixture(name: str) -> dict[str, object]:
    return load_fixture(fixture_path(name))


def test_xid_lines_of_dmesg_iso_and_kern_log() -> None:
    text = kernel_log_text(_fixture("health_h100_dbe_pending_remap"))
    events = kernel_log.parse_xid_lines(text)
    assert [e.xid for e in events] == [48, 63, 45]
    assert events[0].pci_bus_id == "0000:2a:00"
    assert events[0].time_utc == "2026-12-05T21:12:03.418220+00:00"
    assert "double bit error" in events[0].message
    kern = kernel_log.parse_xid_lines(kernel_log_text(_fixture("health_a100_remap_failure")))
    assert [(e.xid, e.pci_bus_id, e.time_utc) for e in kern] == [(64, "0000:07:00", None)]


def test_catalog_examples_parse() -> None:
    # The two forms NVIDIA's Xid catalog quotes (Step 1: determine the Xid code).
    lines = (
        "[...] NVRM: Xid (0000:03:00): 14, Channel 00000001\n"
        "[...] NVRM: Xid (PCI:0000:5a:00): 79, GPU has fallen off the bus.\n"
    )
    assert [(e.xid, e.pci_bus_id) for e in kernel_log.parse_xid_lines(lines)] == [
        (14, "0000:03:00"),
        (79, "0000:5a:00"),
    ]


def test_kmsg_records_carry_their_sequence_and_boot(tmp_path: Path) -> None:
    # /dev/kmsg hands one record per read; a FIFO would block, so a regular file stands in:
    # it reads whole, and the reader takes the first record of each read.
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("4,1207,812345223344,-;NVRM: Xid (PCI:0000:07:00): 64, Row Remapper Error\n")
    boot = tmp_path / "boot_id"
    boot.write_text("6b8f0c6e-0d59-4e0e-9d2a-7d1f1c2b3a4d\n")
    found = kernel_log.read_kernel_xids(kmsg, boot)
    assert found.readable and found.last_seq == 1207
    (event,) = found.events
    assert (event.xid, event.seq, event.boot_id) == (
        64,
        1207,
        "6b8f0c6e-0d59-4e0e-9d2a-7d1f1c2b3a4d",
    )


def test_unreadable_kmsg_says_why(tmp_path: Path) -> None:
    found = kernel_log.read_kernel_xids(tmp_path / "missing", tmp_path / "boot_id")
    assert not found.readable and found.error and "missing" in found.error


def test_sysfs_aer_edac_and_thermal_from_the_fixture(tmp_path: Path) -> None:
    root = write_sysfs(_fixture("health_h100_dbe_pending_remap"), tmp_path)
    aer = {a.device: a for a in sysfs_health.read_aer(root)}
    gpu = aer["0000:18:00.0"]
    assert gpu.is_nvidia_gpu and gpu.root_port == "0000:16:01.0"
    assert (gpu.correctable, gpu.nonfatal, gpu.fatal) == (0, 3, 0)
    assert ("CmpltTO", 3) in gpu.details
    assert aer["0000:16:01.0"].is_root_port
    edac = {m.name: m for m in sysfs_health.read_edac(root)}
    assert edac["mc0"].corrected == 5
    assert edac["mc0/dimm4"].label == "CPU_SrcID#0_MC#0_Chan#2_DIMM#0"
    (zone,) = sysfs_health.read_thermal_zones(root)
    assert (zone.kind, zone.temperature_c, zone.passive_c) == ("x86_pkg_temp", 48.0, None)


def test_no_sysfs_is_no_reading(tmp_path: Path) -> None:
    assert sysfs_health.read_aer(tmp_path) == ()
    assert sysfs_health.read_edac(tmp_path) == ()
    assert sysfs_health.read_thermal_zones(tmp_path) == ()


def _smart_runner(command: Sequence[str]) -> tuple[int, str]:
    if "--scan-open" in command:
        return 0, (SMART / "scan.json").read_text()
    name = "nvme0_failing.json" if "/dev/nvme0" in command else "sda_pending.json"
    status = 8 if "nvme0" in name else 0
    return status, (SMART / name).read_text()


def test_smartctl_json_of_a_failing_nvme_and_a_sata_ssd() -> None:
    readings = smart.read_drives(_smart_runner, smartctl="/usr/sbin/smartctl")
    nvme, sata = readings.drives
    assert (nvme.passed, nvme.critical_warning, nvme.media_errors, nvme.percentage_used) == (
        False,
        4,
        12,
        104,
    )
    assert nvme.exit_status == 8
    assert (sata.passed, sata.reallocated_sectors, sata.pending_sectors) == (True, 8, 2)
    assert sata.protocol == "ATA"


def test_without_smartctl_it_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smart.shutil, "which", lambda _: None)
    readings = smart.read_drives()
    assert readings.drives == () and readings.note and "not installed" in readings.note


@pytest.mark.skipif(not os.path.exists("/dev/kmsg"), reason="no /dev/kmsg here")
def test_real_kmsg_reads_or_says_why() -> None:
    found = kernel_log.read_kernel_xids()
    assert found.readable or found.error
