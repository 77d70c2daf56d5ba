"""BMC checks (HEALTH.13-18): power supplies, redundancy, fans, temperatures, voltages, log."""

from __future__ import annotations

import datetime as dt

from dlrig.enums import Severity
from dlrig.hardware.bmc import BmcHealth, BmcSensor, SensorKind
from dlrig.health.findings import (
    SEL_WINDOW_H,
    Context,
    Finding,
    check,
)
from dlrig.health.inputs import HealthInputs


def _bmc_part(sensor: BmcSensor) -> str:
    return f"'{sensor.name}'"


def _bmc_source(inputs: HealthInputs) -> str:
    return inputs.bmc.source if inputs.bmc is not None else "bmc"


@check("HEALTH.13", "bmc_power_supply")
def bmc_power_supply(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A power supply the BMC reports Critical has failed or lost its input; the guide's server
    sheet promises "fault alarms" for every component (section 9; PSU.1)."""
    found = []
    for s in inputs.bmc.sensors if inputs.bmc else ():
        if s.kind is not SensorKind.POWER_SUPPLY or not s.present:
            continue
        if s.health in (BmcHealth.CRITICAL, BmcHealth.WARNING):
            events = f" ({'; '.join(s.events)})" if s.events else ""
            found.append(
                Finding(
                    "HEALTH.13",
                    "power_supply_failed",
                    Severity.ERROR if s.health is BmcHealth.CRITICAL else Severity.WARNING,
                    _bmc_part(s),
                    _bmc_source(inputs),
                    f"power supply {_bmc_part(s)} reports {s.health.value}{events}",
                    "check its power cord and input feed; replace the supply (hot-swap)",
                    {
                        "health": s.health.value,
                        "reading_w": s.reading,
                        "capacity_w": s.capacity_w,
                        "chassis": s.chassis,
                    },
                )
            )
    return found


@check("HEALTH.14", "bmc_redundancy")
def bmc_redundancy(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A redundancy group that no longer holds runs on its last members: one more failure stops
    the server (Redfish Redundancy / RedundantGroup status, IPMI redundancy sensors)."""
    found = []
    for r in inputs.bmc.redundancy if inputs.bmc else ():
        short = (
            r.members_ok is not None and r.min_needed is not None and r.members_ok < r.min_needed
        )
        bad = r.health in (BmcHealth.CRITICAL, BmcHealth.WARNING)
        if not (bad or short):
            continue
        what = "power-supply" if r.kind is SensorKind.POWER_SUPPLY else "fan"
        counted = (
            f": {r.members_ok} of {len(r.members)} members healthy, {r.min_needed} needed"
            if r.members_ok is not None and r.min_needed is not None
            else ""
        )
        found.append(
            Finding(
                "HEALTH.14",
                f"{'power_supply' if what == 'power-supply' else 'fan'}_redundancy_lost",
                Severity.ERROR
                if what == "power-supply" or r.health is BmcHealth.CRITICAL
                else Severity.WARNING,
                f"'{r.name}'",
                _bmc_source(inputs),
                f"{what} redundancy '{r.name}' lost{counted}"
                + (f" (the BMC says {r.health.value})" if r.health else ""),
                "replace the failed member now: the next failure stops the server",
                {
                    "members": list(r.members),
                    "members_ok": r.members_ok,
                    "min_needed": r.min_needed,
                    "mode": r.mode,
                    "health": r.health.value if r.health else None,
                },
            )
        )
    return found


def _threshold_state(s: BmcSensor) -> tuple[Severity, str] | None:
    """Where a reading stands against the BMC's own thresholds (critical/fatal, then caution)."""
    t, v = s.thresholds, s.reading
    if v is None:
        return None
    units = f" {s.units}" if s.units else ""
    for limit, word in ((t.upper_fatal, "upper fatal"), (t.upper_critical, "upper critical")):
        if limit is not None and v >= limit:
            return Severity.ERROR, f"over the BMC's {word} threshold {limit:g}{units}"
    for limit, word in ((t.lower_fatal, "lower fatal"), (t.lower_critical, "lower critical")):
        if limit is not None and v <= limit:
            return Severity.ERROR, f"under the BMC's {word} threshold {limit:g}{units}"
    if t.upper_caution is not None and v >= t.upper_caution:
        return (
            Severity.WARNING,
            f"over the BMC's upper caution threshold {t.upper_caution:g}{units}",
        )
    if t.lower_caution is not None and v <= t.lower_caution:
        return (
            Severity.WARNING,
            f"under the BMC's lower caution threshold {t.lower_caution:g}{units}",
        )
    return None


def _health_state(s: BmcSensor) -> tuple[Severity, str] | None:
    if s.health is BmcHealth.CRITICAL:
        return Severity.ERROR, "the BMC reports it Critical"
    if s.health is BmcHealth.WARNING:
        return Severity.WARNING, "the BMC reports it Warning"
    return None


def sensor_state(s: BmcSensor) -> tuple[Severity, str] | None:
    """A BMC sensor's fault, if any: a stopped fan, a reading past the BMC's own thresholds,
    else the health the BMC reports; None when it is fine."""
    if s.kind is SensorKind.FAN and s.reading == 0 and s.enabled and s.units == "RPM":
        return Severity.ERROR, "stopped"
    return _threshold_state(s) or _health_state(s)


def _sensor_findings(
    inputs: HealthInputs, kind: SensorKind, check_id: str, name: str, fix: str
) -> list[Finding]:
    found = []
    for s in inputs.bmc.sensors if inputs.bmc else ():
        if s.kind is not kind or not s.present:
            continue
        state = sensor_state(s)
        if state is None:
            continue
        units = f" {s.units}" if s.units else ""
        reading = f" at {s.reading:g}{units}" if s.reading is not None else ""
        context = f" ({s.context.lower()})" if s.context else ""
        found.append(
            Finding(
                check_id,
                name,
                state[0],
                _bmc_part(s),
                _bmc_source(inputs),
                f"{kind.value.replace('_', ' ')} {_bmc_part(s)}{context}{reading}: {state[1]}",
                fix,
                {
                    "reading": s.reading,
                    "units": s.units,
                    "health": s.health.value if s.health else None,
                    "thresholds": {k: v for k, v in vars(s.thresholds).items() if v is not None},
                    "chassis": s.chassis,
                },
            )
        )
    return found


@check("HEALTH.15", "bmc_fan")
def bmc_fan(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A stopped fan or one under its lower critical speed no longer cools its zone (COOL.1:
    the GPUs throttle, then shut down; the BMC's own thresholds)."""
    return _sensor_findings(
        inputs,
        SensorKind.FAN,
        "HEALTH.15",
        "fan_failed",
        "replace the fan (most servers take it hot-swapped); until then the GPUs run hot",
    )


@check("HEALTH.16", "bmc_temperature")
def bmc_temperature(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A temperature over the BMC's upper critical threshold, the inlet above all, means the
    room or the airflow cannot cool the server (the sheet's "thermal design for high ambient")."""
    return _sensor_findings(
        inputs,
        SensorKind.TEMPERATURE,
        "HEALTH.16",
        "temperature_high",
        "check the room's cooling and the rack's airflow (blanking panels, hot-aisle leaks); "
        "an inlet over its limit throttles every GPU",
    )


@check("HEALTH.17", "bmc_voltage")
def bmc_voltage(inputs: HealthInputs, context: Context) -> list[Finding]:
    """A rail outside the BMC's critical thresholds is a failing regulator or supply."""
    return _sensor_findings(
        inputs,
        SensorKind.VOLTAGE,
        "HEALTH.17",
        "voltage_out_of_range",
        "check the power supplies; a rail out of range wants the vendor's support",
    )


def _parse_utc(text: str) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


@check("HEALTH.18", "bmc_event_log")
def bmc_event_log(inputs: HealthInputs, context: Context) -> list[Finding]:
    """The BMC's system event log records faults as they happen, with their own text; entries
    newer than the last reading (or, without one, than a day) are judged by their severity."""
    if inputs.bmc is None:
        return []
    now = _parse_utc(context.now_utc)
    since = (
        _parse_utc(context.baseline.taken_utc)
        if context.baseline is not None
        else (now - dt.timedelta(hours=SEL_WINDOW_H) if now else None)
    )
    # A part whose present state is already a fault (HEALTH.13-17) is judged there; its log
    # entries are the history of it.
    faulted = [s.name.lower() for s in inputs.bmc.sensors if s.present and sensor_state(s)]
    faulted += [r.name.lower() for r in inputs.bmc.redundancy if r.health is BmcHealth.CRITICAL]
    found = []
    for e in inputs.bmc.log_entries:
        if e.severity not in (BmcHealth.CRITICAL, BmcHealth.WARNING):
            continue
        created = _parse_utc(e.created_utc) if e.created_utc else None
        if since is not None and created is not None and created <= since:
            continue
        known = any(name in e.message.lower() for name in faulted)
        severity = Severity.ERROR if e.severity is BmcHealth.CRITICAL else Severity.WARNING
        found.append(
            Finding(
                "HEALTH.18",
                "bmc_log_entry",
                Severity.INFO if known else severity,
                f"{e.log or 'SEL'} entry {e.entry_id}" + (f" ({e.sensor})" if e.sensor else ""),
                _bmc_source(inputs),
                f"{e.log or 'SEL'} entry {e.entry_id} "
                f"({e.created_utc[:19] + ' UTC' if e.created_utc else 'no time'}, "
                f"{e.severity.value}): {e.message}"
                + (" (the part's present state is judged above)" if known else ""),
                None if known else "act on the part it names; clear the log once handled",
                {
                    "entry_id": e.entry_id,
                    "created_utc": e.created_utc,
                    "severity": e.severity.value,
                },
            )
        )
    return found
