"""What a BMC reports, as dlrig keeps it: sensors (power supplies, fans, temperatures,
voltages, power) with the BMC's own names, states and thresholds, redundancy groups, and
event-log entries. The same types whether Redfish or IPMI answered."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol


class SensorKind(enum.StrEnum):
    """What a sensor measures."""

    POWER_SUPPLY = "power_supply"
    FAN = "fan"
    TEMPERATURE = "temperature"
    VOLTAGE = "voltage"
    POWER = "power"
    CURRENT = "current"
    OTHER = "other"


class BmcHealth(enum.StrEnum):
    """Redfish's `Status.Health` (IPMI's sensor states map onto it: Nominal is OK)."""

    OK = "OK"
    WARNING = "Warning"
    CRITICAL = "Critical"


@dataclass(frozen=True)
class Thresholds:
    """The BMC's own limits for a reading (None: it gives none). Redfish's UpperCaution and
    IPMI's upper non-critical are `upper_caution`; IPMI's non-recoverable is `upper_fatal`."""

    upper_caution: float | None = None
    upper_critical: float | None = None
    upper_fatal: float | None = None
    lower_caution: float | None = None
    lower_critical: float | None = None
    lower_fatal: float | None = None


@dataclass(frozen=True)
class BmcSensor:
    """One sensor or part: `name` is the BMC's own (`PSU2`, `FAN3`, `Inlet Temp`).

    `present` is False for an empty bay (Redfish State Absent, IPMI "Device Absent");
    `enabled` False for a part the BMC switched off or that is in standby. `context` is
    Redfish's PhysicalContext (`Intake`, `Exhaust`, `CPU`, ...) when given. `events` holds the
    states a discrete IPMI sensor asserts (`Power Supply Failure detected`).
    """

    kind: SensorKind
    name: str
    reading: float | None = None
    units: str | None = None
    health: BmcHealth | None = None
    present: bool = True
    enabled: bool = True
    context: str | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    events: tuple[str, ...] = ()
    chassis: str | None = None
    source_id: str | None = None  # the Redfish URI or IPMI record id it was read from
    capacity_w: float | None = None  # a power supply's rating


@dataclass(frozen=True)
class Redundancy:
    """A redundancy group (power supplies or fans): whether the BMC says it still holds.

    `members_ok` / `min_needed`: the healthy members and how many the group needs, when the
    BMC says so (Redfish MinNumNeeded / MinNeededInGroup)."""

    kind: SensorKind
    name: str
    health: BmcHealth | None
    enabled: bool
    mode: str | None = None
    members: tuple[str, ...] = ()
    members_ok: int | None = None
    min_needed: int | None = None
    chassis: str | None = None


@dataclass(frozen=True)
class LogEntry:
    """One system event log (SEL) entry: the BMC's message text and severity."""

    entry_id: str
    message: str
    severity: BmcHealth | None = None
    created_utc: str | None = None  # ISO 8601, as the BMC stamped it
    sensor: str | None = None
    log: str | None = None  # the log service it came from


@dataclass(frozen=True)
class BmcReading:
    """One reading of a BMC: who answered, every sensor, the redundancy groups, log entries,
    and notes on what could not be read (a resource missing, a tool's error)."""

    source: str  # "redfish" | "freeipmi" | "ipmitool"
    address: str
    product: str | None = None  # the chassis' manufacturer and model, when given
    sensors: tuple[BmcSensor, ...] = ()
    redundancy: tuple[Redundancy, ...] = ()
    log_entries: tuple[LogEntry, ...] = ()
    notes: tuple[str, ...] = ()


class BmcSource(Protocol):
    """A BMC that can be read: Redfish or IPMI. `read()` raises `BmcError` when the BMC
    cannot be reached or refuses the credentials; a part it lacks is a note in the reading."""

    def read(self) -> BmcReading: ...
