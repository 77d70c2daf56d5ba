"""IPMI through FreeIPMI and ipmitool: their documented outputs (tests/fixtures/ipmi, written
by hand after the tools' manuals) parsed into the BMC reading, and the commands dlrig runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from dlrig.errors import SourceUnreachableError
from dlrig.hardware.bmc import BmcHealth, SensorKind
from dlrig.hardware.bmc.ipmi import (
    IpmiOptions,
    IpmiSource,
    parse_freeipmi_sel,
    parse_freeipmi_sensors,
    parse_ipmitool_sdr_elist,
    parse_ipmitool_sel,
    parse_ipmitool_sensor,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ipmi"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_freeipmi_sensors_keep_names_states_and_thresholds() -> None:
    sensors = {s.name: s for s in parse_freeipmi_sensors(_text("freeipmi_sensors_faulted.csv"))}
    inlet = sensors["Inlet Temp"]
    assert inlet.kind is SensorKind.TEMPERATURE and inlet.health is BmcHealth.CRITICAL
    assert (inlet.reading, inlet.thresholds.upper_critical, inlet.thresholds.upper_fatal) == (
        47.0,
        45.0,
        50.0,
    )
    assert sensors["FAN3"].reading == 0.0 and sensors["FAN3"].units == "RPM"
    psu2 = sensors["PS2 Status"]
    assert psu2.kind is SensorKind.POWER_SUPPLY and psu2.health is BmcHealth.CRITICAL
    assert psu2.events == ("Presence detected", "Power Supply Failure detected")
    assert sensors["PS3 Status"].present is False  # an empty bay is no fault
    assert sensors["12V"].health is BmcHealth.OK


def test_freeipmi_sel_keeps_severity_and_time() -> None:
    entries = parse_freeipmi_sel(_text("freeipmi_sel_faulted.csv"))
    assert len(entries) == 5
    assert entries[1].message == "PS2 Status Power Supply Failure detected"
    assert entries[1].severity is BmcHealth.CRITICAL
    assert entries[1].created_utc == "2026-12-05T21:40:12+00:00"
    assert entries[0].severity is BmcHealth.OK


def test_ipmitool_sensor_and_sdr_together() -> None:
    analog = parse_ipmitool_sensor(_text("ipmitool_sensor_faulted.txt"))
    names = {s.name for s in analog}
    assert "PS2 Status" not in names  # discrete rows come from sdr elist
    by_name = {s.name: s for s in analog}
    assert by_name["Inlet Temp"].units == "C" and by_name["Inlet Temp"].health is BmcHealth.CRITICAL
    assert by_name["FAN3"].health is BmcHealth.CRITICAL  # nr: non-recoverable
    assert by_name["12V"].thresholds.lower_critical == 10.41
    discrete = {
        s.name: s for s in parse_ipmitool_sdr_elist(_text("ipmitool_sdr_elist_faulted.txt"), names)
    }
    assert set(discrete) == {"PS1 Status", "PS2 Status", "PS Redundancy", "PS3 Status"}
    assert discrete["PS2 Status"].health is BmcHealth.CRITICAL
    assert discrete["PS1 Status"].health is BmcHealth.OK
    assert discrete["PS3 Status"].present is False


def test_ipmitool_sel_marks_asserted_faults_critical() -> None:
    entries = parse_ipmitool_sel(_text("ipmitool_sel_elist_faulted.txt"))
    severities = [e.severity for e in entries]
    # 2-5 asserted faults; 1 a log clear; 6 the fan's deassertion (recovery).
    assert severities == [None, *[BmcHealth.CRITICAL] * 4, None]
    assert entries[1].created_utc == "2026-12-05T21:40:12+00:00"


class _Recorded:
    """A runner replaying the fixtures, keeping each command and its environment."""

    def __init__(self, outputs: dict[str, str], status: int = 0, stderr: str = "") -> None:
        self.outputs = outputs
        self.status = status
        self.stderr = stderr
        self.calls: list[tuple[list[str], Mapping[str, str] | None]] = []

    def __call__(
        self, command: Sequence[str], env: Mapping[str, str] | None
    ) -> tuple[int, str, str]:
        self.calls.append((list(command), env))
        key = next(k for k in self.outputs if k in " ".join(command))
        return self.status, self.outputs[key], self.stderr


IPMITOOL = {
    " sensor": _text("ipmitool_sensor_faulted.txt"),
    "sdr elist": _text("ipmitool_sdr_elist_faulted.txt"),
    "sel elist": _text("ipmitool_sel_elist_faulted.txt"),
}


def test_remote_ipmitool_gets_the_password_from_its_environment_only() -> None:
    runner = _Recorded(IPMITOOL)
    source = IpmiSource(
        IpmiOptions("10.0.0.31", "monitor"),
        "s3cret-Pa55",
        runner=runner,
        which=lambda exe: f"/usr/bin/{exe}" if exe == "ipmitool" else None,
    )
    reading = source.read()
    assert reading.source == "ipmitool"
    assert {r.name for r in reading.redundancy} == {"PS Redundancy"}
    assert reading.redundancy[0].health is BmcHealth.CRITICAL
    for command, env in runner.calls:
        assert "s3cret-Pa55" not in " ".join(command)
        assert command[:8] == [
            "/usr/bin/ipmitool",
            "-I",
            "lanplus",
            "-H",
            "10.0.0.31",
            "-R",
            "1",
            "-N",
        ]
        assert "-E" in command and env == {"IPMI_PASSWORD": "s3cret-Pa55"}
    assert "s3cret-Pa55" not in repr(source)


def test_local_bmc_prefers_freeipmi() -> None:
    runner = _Recorded(
        {
            "ipmi-sensors": _text("freeipmi_sensors_faulted.csv"),
            "ipmi-sel": _text("freeipmi_sel_faulted.csv"),
        }
    )
    reading = IpmiSource(
        IpmiOptions(None), runner=runner, which=lambda exe: f"/usr/sbin/{exe}"
    ).read()
    assert reading.source == "freeipmi"
    assert len(reading.log_entries) == 5
    assert [c[0][0] for c in runner.calls] == ["/usr/sbin/ipmi-sensors", "/usr/sbin/ipmi-sel"]


def test_refused_session_is_one_line_and_missing_tool_says_what_to_install() -> None:
    runner = _Recorded(
        IPMITOOL, status=1, stderr="Error: Unable to establish IPMI v2 / RMCP+ session\n"
    )
    source = IpmiSource(IpmiOptions("10.0.0.31", "monitor"), "pw", runner=runner, which=lambda e: e)
    with pytest.raises(SourceUnreachableError, match="Unable to establish IPMI v2"):
        source.read()
    none = IpmiSource(
        IpmiOptions("10.0.0.31", "monitor"), "pw", runner=runner, which=lambda e: None
    )
    with pytest.raises(SourceUnreachableError, match="ipmitool is not installed"):
        none.read()
