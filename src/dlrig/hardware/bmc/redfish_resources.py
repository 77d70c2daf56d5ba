"""Redfish resources (DSP0268) as dlrig's BMC readings: a power supply, a fan, a Sensor, the
older Power and Thermal arrays' members, a redundancy group, a log entry. Pure conversions of
the JSON a BMC answered; `redfish.RedfishSource` fetches it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from dlrig.hardware.bmc.readings import (
    BmcHealth,
    BmcSensor,
    LogEntry,
    Redundancy,
    SensorKind,
    Thresholds,
)


def status_health(status: Any) -> BmcHealth | None:
    if not isinstance(status, dict):
        return None
    value = status.get("Health")
    try:
        return BmcHealth(value) if value else None
    except ValueError:
        return None


def status_state(status: Any) -> tuple[bool, bool]:
    """(present, enabled) from Redfish's Status.State."""
    state = status.get("State") if isinstance(status, dict) else None
    present = state != "Absent"
    enabled = state not in ("Absent", "Disabled", "UnavailableOffline", "StandbyOffline")
    return present, enabled


def _number(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("Reading")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _name(resource: dict[str, Any], fallback: str) -> str:
    for key in ("Name", "FanName", "MemberId", "Id"):
        if resource.get(key):
            return str(resource[key])
    return fallback


def power_supply(psu: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = status_state(psu.get("Status"))
    return BmcSensor(
        kind=SensorKind.POWER_SUPPLY,
        name=_name(psu, "power supply"),
        reading=_number(psu.get("LastPowerOutputWatts")),
        units="W",
        health=status_health(psu.get("Status")),
        present=present,
        enabled=enabled,
        chassis=chassis,
        source_id=psu.get("@odata.id"),
        capacity_w=_number(psu.get("PowerCapacityWatts")),
    )


def _members_ok(links: list[Any], parts: list[dict[str, Any]]) -> tuple[tuple[str, ...], int]:
    """The names of a redundancy group's members and how many are present and healthy."""
    by_id = {str(p.get("@odata.id")): p for p in parts}
    names, ok = [], 0
    for link in links:
        uri = link.get("@odata.id") if isinstance(link, dict) else None
        part = by_id.get(str(uri)) if uri else None
        if part is None:
            # A legacy set names array members as ".../Power#/PowerSupplies/0".
            index = str(uri).rsplit("/", 1)[-1] if uri else ""
            part = parts[int(index)] if index.isdigit() and int(index) < len(parts) else None
        if part is None:
            continue
        names.append(_name(part, "member"))
        present, enabled = status_state(part.get("Status"))
        if present and enabled and status_health(part.get("Status")) in (BmcHealth.OK, None):
            ok += 1
    return tuple(names), ok


_GROUP_NAMES = {
    SensorKind.POWER_SUPPLY: "power-supply redundancy",
    SensorKind.FAN: "fan redundancy",
}


def redundancy_group(
    group: dict[str, Any], kind: SensorKind, chassis: str, parts: list[dict[str, Any]]
) -> Redundancy:
    members, ok = _members_ok(list(group.get("RedundancyGroup") or []), parts)
    _, enabled = status_state(group.get("Status"))
    needed = group.get("MinNeededInGroup")
    return Redundancy(
        kind=kind,
        # The newer RedundantGroup has no name of its own: it is named by what it groups.
        name=str(group.get("Name") or _GROUP_NAMES[kind]),
        health=status_health(group.get("Status")),
        enabled=enabled,
        mode=group.get("RedundancyType"),
        members=members,
        members_ok=ok if members else None,
        min_needed=int(needed) if isinstance(needed, int) else None,
        chassis=chassis,
    )


def legacy_redundancy(
    group: dict[str, Any], kind: SensorKind, chassis: str, parts: list[dict[str, Any]]
) -> Redundancy:
    members, ok = _members_ok(list(group.get("RedundancySet") or []), parts)
    _, enabled = status_state(group.get("Status"))
    needed = group.get("MinNumNeeded")
    return Redundancy(
        kind=kind,
        name=_name(group, _GROUP_NAMES[kind]),
        health=status_health(group.get("Status")),
        enabled=enabled,
        mode=group.get("Mode"),
        members=members,
        members_ok=ok if members else None,
        min_needed=int(needed) if isinstance(needed, int) else None,
        chassis=chassis,
    )


def fan(fan: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = status_state(fan.get("Status"))
    raw_speed = fan.get("SpeedPercent")
    speed: dict[str, Any] = raw_speed if isinstance(raw_speed, dict) else {}
    rpm = _number(speed.get("SpeedRPM"))
    return BmcSensor(
        kind=SensorKind.FAN,
        name=_name(fan, "fan"),
        reading=rpm if rpm is not None else _number(speed.get("Reading")),
        units="RPM" if rpm is not None else "%",
        health=status_health(fan.get("Status")),
        present=present,
        enabled=enabled,
        chassis=chassis,
        source_id=fan.get("@odata.id"),
    )


def _legacy_thresholds(resource: dict[str, Any]) -> Thresholds:
    return Thresholds(
        upper_caution=_number(resource.get("UpperThresholdNonCritical")),
        upper_critical=_number(resource.get("UpperThresholdCritical")),
        upper_fatal=_number(resource.get("UpperThresholdFatal")),
        lower_caution=_number(resource.get("LowerThresholdNonCritical")),
        lower_critical=_number(resource.get("LowerThresholdCritical")),
        lower_fatal=_number(resource.get("LowerThresholdFatal")),
    )


def legacy_fan(fan: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = status_state(fan.get("Status"))
    units = fan.get("ReadingUnits")
    return BmcSensor(
        kind=SensorKind.FAN,
        name=_name(fan, "fan"),
        reading=_number(fan.get("Reading")),
        units="%" if units == "Percent" else "RPM",
        health=status_health(fan.get("Status")),
        present=present,
        enabled=enabled,
        thresholds=_legacy_thresholds(fan),
        chassis=chassis,
        source_id=fan.get("@odata.id"),
    )


def _legacy_reading(
    item: dict[str, Any], chassis: str, kind: SensorKind, reading_key: str, units: str
) -> BmcSensor:
    """A Thermal Temperatures[] or Power Voltages[] member: its reading under `reading_key`,
    its status, physical context and legacy thresholds."""
    present, enabled = status_state(item.get("Status"))
    return BmcSensor(
        kind=kind,
        name=_name(item, kind.value),
        reading=_number(item.get(reading_key)),
        units=units,
        health=status_health(item.get("Status")),
        present=present,
        enabled=enabled,
        context=item.get("PhysicalContext"),
        thresholds=_legacy_thresholds(item),
        chassis=chassis,
        source_id=item.get("@odata.id"),
    )


def legacy_temperature(temp: dict[str, Any], chassis: str) -> BmcSensor:
    return _legacy_reading(temp, chassis, SensorKind.TEMPERATURE, "ReadingCelsius", "C")


def legacy_voltage(volt: dict[str, Any], chassis: str) -> BmcSensor:
    return _legacy_reading(volt, chassis, SensorKind.VOLTAGE, "ReadingVolts", "V")


def power_control(control: dict[str, Any], chassis: str) -> BmcSensor:
    return BmcSensor(
        kind=SensorKind.POWER,
        name=_name(control, "power"),
        reading=_number(control.get("PowerConsumedWatts")),
        units="W",
        health=status_health(control.get("Status")),
        chassis=chassis,
        source_id=control.get("@odata.id"),
    )


_SENSOR_KINDS = {
    "Temperature": (SensorKind.TEMPERATURE, "C"),
    "Voltage": (SensorKind.VOLTAGE, "V"),
    "Power": (SensorKind.POWER, "W"),
}


def sensor(sensor: dict[str, Any], chassis: str, *, with_power: bool) -> BmcSensor | None:
    """A Sensor resource (temperature, voltage, power); fans and power supplies come from
    their own resources, so rotational and other sensors are left out here."""
    kind_units = _SENSOR_KINDS.get(str(sensor.get("ReadingType")))
    if kind_units is None or (kind_units[0] is SensorKind.POWER and not with_power):
        return None
    raw_limits = sensor.get("Thresholds")
    limits: dict[str, Any] = raw_limits if isinstance(raw_limits, dict) else {}
    present, enabled = status_state(sensor.get("Status"))
    return BmcSensor(
        kind=kind_units[0],
        name=_name(sensor, "sensor"),
        reading=_number(sensor.get("Reading")),
        units=kind_units[1],
        health=status_health(sensor.get("Status")),
        present=present,
        enabled=enabled,
        context=sensor.get("PhysicalContext"),
        thresholds=Thresholds(
            upper_caution=_number(limits.get("UpperCaution")),
            upper_critical=_number(limits.get("UpperCritical")),
            upper_fatal=_number(limits.get("UpperFatal")),
            lower_caution=_number(limits.get("LowerCaution")),
            lower_critical=_number(limits.get("LowerCritical")),
            lower_fatal=_number(limits.get("LowerFatal")),
        ),
        chassis=chassis,
        source_id=sensor.get("@odata.id"),
    )


def _utc(text: Any) -> str | None:
    """An ISO 8601 time with its offset, in UTC; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat()


def log_entry(entry: dict[str, Any], log: str) -> LogEntry:
    severity = entry.get("Severity")
    try:
        health = BmcHealth(severity) if severity else None
    except ValueError:
        health = None
    return LogEntry(
        entry_id=str(entry.get("Id") or entry.get("@odata.id") or ""),
        message=str(entry.get("Message") or entry.get("Name") or ""),
        severity=health,
        created_utc=_utc(entry.get("Created")),
        sensor=entry.get("SensorType"),
        log=log,
    )
