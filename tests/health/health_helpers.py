"""Health inputs built from the test fixtures: an NVML health scenario (its GPUs, events,
kernel log and sysfs files) and, optionally, a BMC reading."""

from __future__ import annotations

from pathlib import Path

from dlrig.hardware.bmc import BmcReading
from dlrig.hardware.bmc.redfish import RedfishOptions, RedfishSource
from dlrig.hardware.kernel_log import KernelXids, parse_xid_lines
from dlrig.hardware.sysfs_health import read_aer, read_edac, read_thermal_zones
from dlrig.health import HealthInputs
from support.nvml_fakes import fixture_path, kernel_log_text, load_fixture, replay_nvml, write_sysfs
from support.redfish_mockup import serve_mockup

NOW = "2026-12-06T06:00:00+00:00"
"""The time the tests judge at: the fixtures' faults happened the evening before."""


def bmc_reading(mockup: str) -> BmcReading:
    """A Redfish mockup read through the real source."""
    with serve_mockup(mockup, user="monitor", password="pw") as served:
        return RedfishSource(RedfishOptions(served.url, "monitor"), "pw").read()


def inputs_from(
    scenario: str | None, tmp: Path, *, bmc: BmcReading | None = None, taken: str = NOW
) -> HealthInputs:
    """The readings of an NVML health scenario (None: a host without NVML), with its kernel
    log and sysfs files, and a BMC reading."""
    if scenario is None:
        return HealthInputs(taken_utc=taken, nvml_error="NVML Shared Library Not Found", bmc=bmc)
    fixture = load_fixture(fixture_path(scenario))
    nvml = replay_nvml(fixture)
    root = write_sysfs(fixture, tmp / scenario)
    events = parse_xid_lines(kernel_log_text(fixture))
    return HealthInputs(
        taken_utc=taken,
        gpus=nvml.read_health(),
        nvml_xids=nvml.xid_events(),
        kernel_log=KernelXids(events, True, source="fixture"),
        aer=read_aer(root),
        edac=read_edac(root),
        thermal_zones=read_thermal_zones(root),
        bmc=bmc,
    )
