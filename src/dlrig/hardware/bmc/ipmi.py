"""A BMC read over IPMI by running FreeIPMI's or ipmitool's commands and parsing their output:
read-only commands only (sensor and SEL listings), each bounded in time and output size.

- In-band (`host` None: the local BMC through /dev/ipmi0, as root): FreeIPMI's `ipmi-sensors
  --output-sensor-state --output-sensor-thresholds --comma-separated-output` and `ipmi-sel
  --output-event-state --comma-separated-output` when installed, else ipmitool's `sensor`,
  `sdr elist` and `sel elist`.
- Remote (`host` given): ipmitool over lanplus with `-E`, which reads the password from the
  IPMI_PASSWORD variable of the child's environment: FreeIPMI takes a remote password only on its
  command line (`-p`), where every user of the machine could read it in the process list.

The output formats are those the tools document (FreeIPMI's ipmi-sensors(8) and ipmi-sel(8)
with their comma-separated output and header line; ipmitool(1)'s `sensor` table of ten
`|`-separated columns, `sdr elist` and `sel elist`).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlrig.errors import SourceUnreachableError
from dlrig.hardware.bmc.readings import (
    BmcHealth,
    BmcReading,
    BmcSensor,
    LogEntry,
    Redundancy,
    SensorKind,
    Thresholds,
)

TIMEOUT_S = 20.0
"""One tool run (a slow BMC's SDR walk takes seconds; ipmitool retries once, -R 1 -N 3)."""
MAX_OUTPUT_BYTES = 4 * 2**20
MAX_SEL_ENTRIES = 64

Runner = Callable[[Sequence[str], Mapping[str, str] | None], tuple[int, str, str]]
"""Runs a command with extra environment; returns (status, stdout, stderr). Tests replay."""


def run_command(command: Sequence[str], env: Mapping[str, str] | None) -> tuple[int, str, str]:
    """The real runner: no shell, no standard input, bounded time and output."""
    done = subprocess.run(
        list(command),
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
        env=None if env is None else {**os.environ, **env},
    )
    return (
        done.returncode,
        done.stdout[:MAX_OUTPUT_BYTES].decode("utf-8", "replace"),
        done.stderr[:4096].decode("utf-8", "replace"),
    )


_KINDS = {
    "temperature": SensorKind.TEMPERATURE,
    "fan": SensorKind.FAN,
    "voltage": SensorKind.VOLTAGE,
    "power supply": SensorKind.POWER_SUPPLY,
    "power unit": SensorKind.POWER_SUPPLY,
    "current": SensorKind.CURRENT,
}
_UNIT_KINDS = {
    "C": SensorKind.TEMPERATURE,
    "degrees C": SensorKind.TEMPERATURE,
    "RPM": SensorKind.FAN,
    "V": SensorKind.VOLTAGE,
    "Volts": SensorKind.VOLTAGE,
    "W": SensorKind.POWER,
    "Watts": SensorKind.POWER,
    "A": SensorKind.CURRENT,
    "Amps": SensorKind.CURRENT,
}
_STATES = {"Nominal": BmcHealth.OK, "Warning": BmcHealth.WARNING, "Critical": BmcHealth.CRITICAL}
# Discrete events that mean a part has failed or lost its redundancy (IPMI 2.0 Table 42-3's
# sensor-specific offsets, as both tools print them).
_FAULT_EVENTS = (
    "failure detected",
    "predictive failure",
    "power supply input lost",
    "redundancy lost",
    "non-redundant",
    "transition to critical",
    "transition to non-recoverable",
    "config error",
)
_ABSENT_EVENTS = ("device absent", "entity absent")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _kind(type_name: str, units: str) -> SensorKind:
    kind = _KINDS.get(type_name.strip().lower())
    if kind is not None:
        return kind
    return _UNIT_KINDS.get(units.strip(), SensorKind.OTHER)


def _events(text: str) -> tuple[str, ...]:
    """FreeIPMI's `'Presence detected' 'Power Supply Failure detected'` or ipmitool's
    `Presence detected, Failure detected` as a tuple of states."""
    text = text.strip()
    if "'" in text:
        return tuple(part for part in text.split("'") if part.strip())
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _discrete_health(events: tuple[str, ...]) -> BmcHealth | None:
    lowered = " ".join(events).lower()
    if any(fault in lowered for fault in _FAULT_EVENTS) and "fully redundant" not in lowered:
        return BmcHealth.CRITICAL
    return None


def _csv(text: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",", len(header) - 1)]
        if len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows


def parse_freeipmi_sensors(text: str) -> tuple[BmcSensor, ...]:
    """`ipmi-sensors --output-sensor-state --output-sensor-thresholds
    --comma-separated-output` (with its header line)."""
    sensors = []
    for row in _csv(text):
        units = row.get("Units", "N/A")
        events = _events(row.get("Event", ""))
        absent = any(e.lower() in _ABSENT_EVENTS for e in events)
        health = _STATES.get(row.get("State", "")) or _discrete_health(events)
        sensors.append(
            BmcSensor(
                kind=_kind(row.get("Type", ""), units),
                name=row.get("Name", "?"),
                reading=_number(row.get("Reading", "N/A")),
                units=None if units == "N/A" else units,
                health=None if absent else health,
                present=not absent,
                thresholds=Thresholds(
                    lower_fatal=_number(row.get("Lower NR", "N/A")),
                    lower_critical=_number(row.get("Lower C", "N/A")),
                    lower_caution=_number(row.get("Lower NC", "N/A")),
                    upper_caution=_number(row.get("Upper NC", "N/A")),
                    upper_critical=_number(row.get("Upper C", "N/A")),
                    upper_fatal=_number(row.get("Upper NR", "N/A")),
                ),
                events=events,
                source_id=row.get("ID"),
            )
        )
    return tuple(sensors)


def _utc(date: str, clock: str, formats: tuple[str, ...]) -> str | None:
    """A SEL entry's date and time (the BMC's clock, taken as UTC) in ISO 8601."""
    for fmt in formats:
        try:
            when = dt.datetime.strptime(f"{date} {clock}", fmt)
        except ValueError:
            continue
        return when.replace(tzinfo=dt.UTC).isoformat()
    return None


def parse_freeipmi_sel(text: str) -> tuple[LogEntry, ...]:
    """`ipmi-sel --output-event-state --comma-separated-output` (with its header line)."""
    entries = []
    for row in _csv(text)[-MAX_SEL_ENTRIES:]:
        name, event = row.get("Name", ""), row.get("Event", "")
        entries.append(
            LogEntry(
                entry_id=row.get("ID", ""),
                message=f"{name} {event}".strip(),
                severity=_STATES.get(row.get("State", "")),
                created_utc=_utc(row.get("Date", ""), row.get("Time", ""), ("%b-%d-%Y %H:%M:%S",)),
                sensor=row.get("Type"),
                log="SEL",
            )
        )
    return tuple(entries)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("|")]


# ipmitool `sensor` status column: ok, nc (non-critical), cr (critical), nr (non-recoverable),
# ns (not available), na.
_IPMITOOL_STATUS = {
    "ok": BmcHealth.OK,
    "nc": BmcHealth.WARNING,
    "cr": BmcHealth.CRITICAL,
    "nr": BmcHealth.CRITICAL,
}


def parse_ipmitool_sensor(text: str) -> tuple[BmcSensor, ...]:
    """`ipmitool sensor`: name | value | units | status | LNR | LCR | LNC | UNC | UCR | UNR;
    analog sensors only (a discrete one's state comes from `sdr elist`)."""
    sensors = []
    for line in text.splitlines():
        cells = _cells(line)
        if len(cells) < 10 or cells[2] == "discrete":
            continue
        units = cells[2]
        value = _number(cells[1])
        sensors.append(
            BmcSensor(
                kind=_kind("", units),
                name=cells[0],
                reading=value,
                units={"degrees C": "C", "Volts": "V", "Watts": "W", "Amps": "A"}.get(units, units),
                health=_IPMITOOL_STATUS.get(cells[3]),
                present=cells[3] != "ns",
                thresholds=Thresholds(
                    lower_fatal=_number(cells[4]),
                    lower_critical=_number(cells[5]),
                    lower_caution=_number(cells[6]),
                    upper_caution=_number(cells[7]),
                    upper_critical=_number(cells[8]),
                    upper_fatal=_number(cells[9]),
                ),
            )
        )
    return tuple(sensors)


def parse_ipmitool_sdr_elist(text: str, analog: set[str]) -> tuple[BmcSensor, ...]:
    """`ipmitool sdr elist`: name | id | status | entity | description; the discrete sensors
    (those `sensor` did not list as analog), judged by the states their description names."""
    sensors = []
    for line in text.splitlines():
        cells = _cells(line)
        if len(cells) < 5 or cells[0] in analog:
            continue
        events = _events(cells[4])
        lowered = cells[0].lower()
        kind = (
            SensorKind.POWER_SUPPLY
            if lowered.startswith(("ps", "psu", "power supply"))
            or any("power supply" in e.lower() for e in events)
            else SensorKind.FAN
            if lowered.startswith("fan")
            else SensorKind.OTHER
        )
        absent = cells[2] == "ns" or any(e.lower() in _ABSENT_EVENTS for e in events)
        sensors.append(
            BmcSensor(
                kind=kind,
                name=cells[0],
                health=None if absent else _discrete_health(events) or BmcHealth.OK,
                present=not absent,
                events=events,
                source_id=cells[1],
            )
        )
    return tuple(sensors)


def parse_ipmitool_sel(text: str) -> tuple[LogEntry, ...]:
    """`ipmitool sel elist`: id | date | time | sensor | event | direction. ipmitool prints no
    severity; an asserted failure, lost redundancy or critical crossing is taken as Critical."""
    entries = []
    for line in text.splitlines()[-MAX_SEL_ENTRIES:]:
        cells = _cells(line)
        if len(cells) < 5:
            continue
        event = " ".join(c for c in cells[4:] if c)
        lowered = event.lower()
        asserted = "deasserted" not in lowered
        critical = asserted and (
            any(f in lowered for f in _FAULT_EVENTS)
            or "critical going" in lowered
            or "non-recoverable going" in lowered
        )
        entries.append(
            LogEntry(
                entry_id=cells[0],
                message=f"{cells[3]}: {event}",
                severity=BmcHealth.CRITICAL if critical else None,
                created_utc=_utc(cells[1], cells[2], ("%m/%d/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S")),
                sensor=cells[3],
                log="SEL",
            )
        )
    return tuple(entries)


def redundancy_from_sensors(sensors: tuple[BmcSensor, ...]) -> tuple[Redundancy, ...]:
    """IPMI reports redundancy as a discrete sensor (`PS Redundancy`: Fully Redundant /
    Redundancy Lost); each becomes a group."""
    groups = []
    for s in sensors:
        if "redundan" not in s.name.lower() or not s.events:
            continue
        lowered = " ".join(s.events).lower()
        lost = any(f in lowered for f in ("redundancy lost", "non-redundant", "degraded"))
        groups.append(
            Redundancy(
                kind=SensorKind.FAN if "fan" in s.name.lower() else SensorKind.POWER_SUPPLY,
                name=s.name,
                health=BmcHealth.CRITICAL if lost else BmcHealth.OK,
                enabled=True,
                mode=None,
            )
        )
    return tuple(groups)


@dataclass(frozen=True)
class IpmiOptions:
    """Which BMC: `host` None for the local one (in-band), else its address and the user."""

    host: str | None
    user: str | None = None


class IpmiSource:
    """A BMC through FreeIPMI or ipmitool; `read()` raises SourceUnreachableError naming the
    address when the tool is missing, the BMC does not answer or refuses the user."""

    def __init__(
        self,
        options: IpmiOptions,
        password: str | None = None,
        runner: Runner | None = None,
        which: Callable[[str], str | None] = shutil.which,
    ) -> None:
        self.options = options
        self._password = password
        self._run = runner or run_command
        self._which = which

    def __repr__(self) -> str:
        return f"IpmiSource({self.options.host or 'local'!r}, user={self.options.user!r})"

    @property
    def _where(self) -> str:
        return f"IPMI {self.options.host}" if self.options.host else "the local BMC (IPMI)"

    def _call(self, command: list[str], env: Mapping[str, str] | None = None) -> str:
        try:
            status, out, err = self._run(command, env)
        except subprocess.TimeoutExpired:
            raise SourceUnreachableError(
                f"{self._where}: {command[0]} gave no answer within {TIMEOUT_S:g} s"
            ) from None
        except OSError as exc:
            raise SourceUnreachableError(f"{self._where}: cannot run {command[0]}: {exc}") from None
        if status != 0:
            first = (err.strip().splitlines() or [f"exit status {status}"])[0][:200]
            raise SourceUnreachableError(
                f"{self._where}: {os.path.basename(command[0])} failed: {first}",
                hint="check the address, --bmc-user and DLRIG_BMC_PASSWORD"
                if self.options.host
                else "in-band IPMI needs root and the ipmi_devintf module",
            )
        return out

    def read(self) -> BmcReading:
        """Sensors, redundancy and SEL entries."""
        freeipmi = self._which("ipmi-sensors")
        ipmitool = self._which("ipmitool")
        if self.options.host is None and freeipmi:
            return self._read_freeipmi(freeipmi, self._which("ipmi-sel"))
        if ipmitool:
            return self._read_ipmitool(ipmitool)
        needed = "ipmitool" if self.options.host else "FreeIPMI (ipmi-sensors) or ipmitool"
        raise SourceUnreachableError(
            f"{self._where}: {needed} is not installed",
            hint="apt install ipmitool (or freeipmi-tools for the local BMC)",
        )

    def _read_freeipmi(self, sensors_exe: str, sel_exe: str | None) -> BmcReading:
        sensors = parse_freeipmi_sensors(
            self._call(
                [
                    sensors_exe,
                    "--output-sensor-state",
                    "--output-sensor-thresholds",
                    "--comma-separated-output",
                    "--ignore-not-available-sensors",
                ]
            )
        )
        entries: tuple[LogEntry, ...] = ()
        notes: list[str] = []
        if sel_exe:
            entries = parse_freeipmi_sel(
                self._call([sel_exe, "--output-event-state", "--comma-separated-output"])
            )
        else:
            notes.append("ipmi-sel not installed: the SEL was not read")
        return BmcReading(
            source="freeipmi",
            address="local",
            sensors=sensors,
            redundancy=redundancy_from_sensors(sensors),
            log_entries=entries,
            notes=tuple(notes),
        )

    def _read_ipmitool(self, exe: str) -> BmcReading:
        base = [exe]
        env: dict[str, Any] | None = None
        if self.options.host:
            base += ["-I", "lanplus", "-H", self.options.host, "-R", "1", "-N", "3"]
            if self.options.user:
                base += ["-U", self.options.user]
            if self._password is not None:
                base.append("-E")  # the password from IPMI_PASSWORD, not the command line
                env = {"IPMI_PASSWORD": self._password}
        analog = parse_ipmitool_sensor(self._call([*base, "sensor"], env))
        discrete = parse_ipmitool_sdr_elist(
            self._call([*base, "sdr", "elist"], env), {s.name for s in analog}
        )
        entries = parse_ipmitool_sel(self._call([*base, "sel", "elist"], env))
        sensors = analog + discrete
        return BmcReading(
            source="ipmitool",
            address=self.options.host or "local",
            sensors=sensors,
            redundancy=redundancy_from_sensors(sensors),
            log_entries=entries,
        )
