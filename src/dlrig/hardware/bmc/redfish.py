"""A BMC read over Redfish with DMTF's client library (`redfish`, python-redfish-library),
read-only and bounded.

- Authentication is HTTP Basic on every request (the library's `AuthMethod.BASIC`): no session
  is created, since a session login is a POST that takes one of the BMC's few session slots.
  Every request goes through `_BoundedAdapter`, which refuses any method but GET and HEAD, so no
  code path here can write to the BMC or act on the power.
- TLS is verified against requests' CA bundle (certifi), or a CA file given; only `insecure`
  turns verification off. The library verifies nothing unless handed a CA file, so one always is.
- Every response is read with a deadline and a size limit: a BMC that never answers, answers
  slowly or answers without end gives `SourceUnreachableError` within the reading's budget.
- The password lives in the client object only; no message, log record or reading carries it
  (the library's own logger is silenced; its debug log would redact it, but is never on).

Resources read (DSP0268): each Chassis' `PowerSubsystem` (power supplies and their
redundancy) or the older `Power` (power supplies, redundancy, voltages, power control),
`ThermalSubsystem` (fans and fan redundancy) or the older `Thermal` (temperatures, fans), the
`Sensors` collection (temperatures, voltages and power with their thresholds), and the log
entries of every System's and Manager's log services (the SEL).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dlrig.errors import SourceUnreachableError, ValidationError
from dlrig.hardware.bmc.readings import (
    BmcHealth,
    BmcReading,
    BmcSensor,
    LogEntry,
    Redundancy,
    SensorKind,
    Thresholds,
)

CONNECT_TIMEOUT_S = 5.0
"""A BMC that accepts no connection in this long is taken as unreachable."""
REQUEST_TIMEOUT_S = 10.0
"""One response, headers to last byte, must arrive within this (BMCs answer in 0.1-3 s)."""
READING_BUDGET_S = 60.0
"""A whole reading (tens of requests) must finish within this, whatever each request takes."""
MAX_RESPONSE_BYTES = 4 * 2**20
"""No Redfish resource dlrig reads is near this (a SEL page of 1,000 entries is ~0.5 MB)."""
MAX_MEMBERS = 256
"""Members read of one collection (sensors, power supplies, fans, chassis, log services)."""
MAX_LOG_ENTRIES = 64
"""The newest entries read of one log service."""

_READ_METHODS = frozenset({"GET", "HEAD"})
# A collection's members inline, one level deep, without following their Links.
_EXPAND_MEMBERS = "?$expand=.($levels=1)"
# A read timeout this close to the budget's end was the budget's, not the request's.
_BUDGET_SLACK_S = 0.1

# The library logs through "redfish.*" (an invalid-JSON error with the body, retries); dlrig
# says what went wrong in one line of its own instead.
logging.getLogger("redfish").addHandler(logging.NullHandler())
logging.getLogger("redfish").propagate = False


class _Refused(Exception):
    """Raised inside the adapter: the request or its response broke a bound."""


class _Budget:
    """The reading's deadline, shared by every request."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def left_s(self) -> float:
        return self.deadline - time.monotonic()


def _bounded_adapter(budget: _Budget, connect_s: float, request_s: float) -> Any:
    """A requests adapter that sends only GET/HEAD, with the connect and read timeouts the
    budget leaves, and reads the body in chunks up to MAX_RESPONSE_BYTES before the deadline."""
    from requests import PreparedRequest, Response
    from requests.adapters import HTTPAdapter

    class _BoundedAdapter(HTTPAdapter):
        def send(
            self,
            request: PreparedRequest,
            stream: bool = False,
            timeout: float | tuple[float | None, float | None] | None = None,
            verify: bool | str = True,
            cert: str | tuple[str, str] | None = None,
            proxies: dict[str, str] | None = None,
        ) -> Response:
            if request.method not in _READ_METHODS:
                raise _Refused(f"dlrig reads only; it refused a {request.method} request")
            left = budget.left_s()
            if left <= 0:
                raise _Refused(f"no full answer within the reading's {budget.seconds:g} s")
            response_deadline = time.monotonic() + min(request_s, left)
            response = super().send(
                request,
                stream=True,
                timeout=(min(connect_s, left), min(request_s, left)),
                verify=verify,
                cert=cert,
                proxies=proxies,
            )
            chunks, size = [], 0
            for chunk in response.raw.stream(64 * 1024, decode_content=True):
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    response.close()
                    raise _Refused(
                        f"{urlsplit(str(request.url)).path} answered more than "
                        f"{MAX_RESPONSE_BYTES // 2**20} MiB"
                    )
                if time.monotonic() > response_deadline:
                    response.close()
                    raise _Refused(f"{urlsplit(str(request.url)).path} took over {request_s:g} s")
                chunks.append(chunk)
            response._content = b"".join(chunks)
            response._content_consumed = True  # type: ignore[attr-defined]
            return response

    return _BoundedAdapter(max_retries=0)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bmc_url(url: str, *, insecure: bool) -> str:
    """The BMC's base URL (`https://host[:port]`), or a ValidationError naming the option.

    Credentials never go in the URL; plain http is taken for a loopback address (a local
    mockup, a tunnel) and otherwise only with `insecure`, since Basic credentials would cross
    the network readable."""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(
            "--bmc: expected https://HOST[:PORT] (the BMC's address)",
            hint="dlrig health --bmc https://10.0.0.21 --bmc-user admin",
            field="--bmc",
        )
    if parts.username or parts.password:
        raise ValidationError(
            "--bmc: the address holds credentials; give the user with --bmc-user and the "
            "password in DLRIG_BMC_PASSWORD (or at the prompt)",
            field="--bmc",
        )
    if parts.scheme == "http" and not _loopback(parts.hostname) and not insecure:
        raise ValidationError(
            f"--bmc http://{parts.hostname}: plain http would send the password readable",
            hint="use https://, or add --insecure to accept that",
            field="--bmc",
        )
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class RedfishOptions:
    """How to reach the BMC: its URL, the user, the TLS choice, and the time bounds."""

    url: str
    user: str
    insecure: bool = False
    ca_file: str | None = None
    budget_s: float = READING_BUDGET_S
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    request_timeout_s: float = REQUEST_TIMEOUT_S


def _cause(exc: BaseException) -> BaseException:
    """The innermost cause of a library exception (it wraps requests' errors)."""
    seen = exc
    while seen.__cause__ is not None:
        seen = seen.__cause__
    return seen


class RedfishSource:
    """A BMC's Redfish service, read-only. `read()` returns a `BmcReading` or raises
    `SourceUnreachableError` with one line naming the address (never the password)."""

    def __init__(self, options: RedfishOptions, password: str) -> None:
        self.options = options
        self._password = password
        self._budget = _Budget(options.budget_s)
        self._client: Any = None
        self._notes: list[str] = []
        self._expand = False

    def __repr__(self) -> str:  # never show the password, even in a traceback's locals
        return f"RedfishSource({self.options.url!r}, user={self.options.user!r})"

    def _fail(self, what: str) -> SourceUnreachableError:
        return SourceUnreachableError(
            f"BMC {self.options.url}: {what}",
            hint="check the address, that the BMC answers Redfish, and --bmc-user with "
            "DLRIG_BMC_PASSWORD",
        )

    def _explain(self, exc: BaseException) -> SourceUnreachableError:
        import requests
        from redfish.rest.v1 import JsonDecodingError, ServerDownOrUnreachableError
        from urllib3.exceptions import IncompleteRead, ProtocolError

        cause = _cause(exc)
        if isinstance(cause, _Refused):
            return self._fail(str(cause))
        if isinstance(cause, requests.exceptions.SSLError):
            return SourceUnreachableError(
                f"BMC {self.options.url}: its TLS certificate does not verify",
                hint="give the CA that signed it with --bmc-ca-file, or accept it unverified "
                "with --insecure",
            )
        if isinstance(cause, requests.exceptions.ConnectTimeout):
            return self._fail(f"no connection within {self.options.connect_timeout_s:g} s")
        if isinstance(cause, requests.exceptions.ReadTimeout):
            if self._budget.left_s() < _BUDGET_SLACK_S:
                return self._fail(f"no full answer within the reading's {self._budget.seconds:g} s")
            return self._fail(f"no answer within {self.options.request_timeout_s:g} s")
        if isinstance(
            cause, ProtocolError | IncompleteRead | requests.exceptions.ChunkedEncodingError
        ):
            return self._fail("its answer was cut short")
        if isinstance(cause, requests.exceptions.ConnectionError):
            return self._fail("connection refused or dropped")
        if isinstance(cause, JsonDecodingError | ValueError):
            return self._fail("answered something that is not Redfish JSON (cut short?)")
        if isinstance(cause, ServerDownOrUnreachableError):
            return self._fail("no Redfish service root at /redfish/v1/")
        return self._fail(type(cause).__name__)

    def _connect(self) -> Any:
        from redfish.rest.v1 import AuthMethod, HttpClient, InvalidCredentialsError
        from requests.utils import DEFAULT_CA_BUNDLE_PATH

        opts = self.options
        cafile = None if opts.insecure else (opts.ca_file or DEFAULT_CA_BUNDLE_PATH)
        client = HttpClient(
            base_url=opts.url,
            username=opts.user,
            password=self._password,
            cafile=cafile,
            max_retry=0,
            check_connectivity=False,
        )
        # No proxy, no ~/.netrc: the BMC is reached directly with exactly these credentials.
        client._session.trust_env = False
        adapter = _bounded_adapter(self._budget, opts.connect_timeout_s, opts.request_timeout_s)
        client._session.mount("https://", adapter)
        client._session.mount("http://", adapter)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                client.login(auth=AuthMethod.BASIC)
        except InvalidCredentialsError:
            raise SourceUnreachableError(
                f"BMC {opts.url}: user {opts.user!r} was refused (HTTP 401): wrong user or "
                "password",
                hint="check --bmc-user and DLRIG_BMC_PASSWORD",
            ) from None
        except Exception as exc:  # the library raises its own types around requests' errors
            raise self._explain(exc) from None
        return client

    def _get(self, path: str) -> dict[str, Any] | None:
        """A resource as a dict; None (with a note) when the BMC lacks it."""
        try:
            response = self._client.get(path)
        except Exception as exc:
            raise self._explain(exc) from None
        if response.status == 401:
            raise SourceUnreachableError(
                f"BMC {self.options.url}: user {self.options.user!r} was refused (HTTP 401)",
                hint="check --bmc-user and DLRIG_BMC_PASSWORD",
            )
        if response.status != 200:
            self._notes.append(f"{path}: HTTP {response.status}")
            return None
        try:
            data = response.dict
        except Exception as exc:
            raise self._explain(exc) from None
        if not isinstance(data, dict):
            raise self._fail(f"{path} is not a Redfish resource")
        return data

    def _members(self, collection: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
        """A collection's members, each fetched unless the BMC expanded it inline."""
        if collection is None:
            return
        members = collection.get("Members") or []
        if len(members) > MAX_MEMBERS:
            self._notes.append(f"{collection.get('@odata.id')}: first {MAX_MEMBERS} members read")
        for member in members[:MAX_MEMBERS]:
            if not isinstance(member, dict):
                continue
            if set(member) <= {"@odata.id"}:
                fetched = self._get(str(member.get("@odata.id")))
                if fetched is not None:
                    yield fetched
            else:
                yield member

    def _linked(
        self, resource: dict[str, Any], key: str, *, expand: bool = False
    ) -> dict[str, Any] | None:
        """The resource a link names; `expand`: a collection asked with its members inline
        where the service says it can ($expand, DSP0266), one request instead of one each."""
        link = resource.get(key)
        if isinstance(link, dict) and "@odata.id" in link:
            query = _EXPAND_MEMBERS if expand and self._expand else ""
            return self._get(str(link["@odata.id"]) + query)
        return None

    def read(self) -> BmcReading:
        """Every chassis' power, thermal and sensor resources and the log entries (each read
        with a budget of its own, so that a watch can read the BMC again and again)."""
        self._budget = _Budget(self.options.budget_s)
        self._notes = []
        self._client = self._connect()
        try:
            root: dict[str, Any] = dict(self._client.root or {})
            features = root.get("ProtocolFeaturesSupported") or {}
            expand = features.get("ExpandQuery") or {} if isinstance(features, dict) else {}
            self._expand = isinstance(expand, dict) and bool(
                expand.get("NoLinks") or expand.get("ExpandAll")
            )
            sensors: list[BmcSensor] = []
            groups: list[Redundancy] = []
            products = []
            for chassis in self._members(self._linked(root, "Chassis")):
                name = str(chassis.get("Name") or chassis.get("Id") or "chassis")
                product = " ".join(
                    str(chassis[k]) for k in ("Manufacturer", "Model") if chassis.get(k)
                )
                if product:
                    products.append(product)
                found, redundancy = self._chassis(chassis, name)
                sensors.extend(found)
                groups.extend(redundancy)
            entries = [
                entry
                for key in ("Systems", "Managers")
                for owner in self._members(self._linked(root, key))
                for entry in self._log_entries(owner)
            ]
        except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
            # A resource whose fields are not what DSP0268 says (a string for an object, a
            # number for a list): one line, not a traceback.
            raise self._fail(
                f"answered a resource that is not Redfish as dlrig reads it ({type(exc).__name__})"
            ) from None
        finally:
            self._client._session.close()
        return BmcReading(
            source="redfish",
            address=self.options.url,
            product=products[0] if products else None,
            sensors=tuple(sensors),
            redundancy=tuple(groups),
            log_entries=tuple(entries),
            notes=tuple(self._notes),
        )

    def _chassis(
        self, chassis: dict[str, Any], name: str
    ) -> tuple[list[BmcSensor], list[Redundancy]]:
        sensors: list[BmcSensor] = []
        groups: list[Redundancy] = []
        power_subsystem = self._linked(chassis, "PowerSubsystem")
        power = None if power_subsystem else self._linked(chassis, "Power")
        if power_subsystem is not None:
            psus = list(self._members(self._linked(power_subsystem, "PowerSupplies", expand=True)))
            sensors.extend(_power_supply(p, name) for p in psus)
            groups.extend(
                _redundancy_group(g, SensorKind.POWER_SUPPLY, name, psus)
                for g in power_subsystem.get("PowerSupplyRedundancy") or []
            )
        elif power is not None:
            psus = list(power.get("PowerSupplies") or [])
            sensors.extend(_power_supply(p, name) for p in psus)
            groups.extend(
                _legacy_redundancy(g, SensorKind.POWER_SUPPLY, name, psus)
                for g in power.get("Redundancy") or []
            )
            sensors.extend(_legacy_voltage(v, name) for v in power.get("Voltages") or [])
            sensors.extend(_power_control(c, name) for c in power.get("PowerControl") or [])
        thermal_subsystem = self._linked(chassis, "ThermalSubsystem")
        thermal = self._linked(chassis, "Thermal") if "Sensors" not in chassis else None
        if thermal_subsystem is not None:
            fans = list(self._members(self._linked(thermal_subsystem, "Fans", expand=True)))
            sensors.extend(_fan(f, name) for f in fans)
            groups.extend(
                _redundancy_group(g, SensorKind.FAN, name, fans)
                for g in thermal_subsystem.get("FanRedundancy") or []
            )
        elif "Thermal" in chassis:
            thermal = thermal or self._linked(chassis, "Thermal")
            if thermal is not None:
                fans = list(thermal.get("Fans") or [])
                sensors.extend(_legacy_fan(f, name) for f in fans)
                groups.extend(
                    _legacy_redundancy(g, SensorKind.FAN, name, fans)
                    for g in thermal.get("Redundancy") or []
                )
        if "Sensors" in chassis:
            for sensor in self._members(self._linked(chassis, "Sensors", expand=True)):
                converted = _sensor(sensor, name, with_power=power is None)
                if converted is not None:
                    sensors.append(converted)
        elif thermal is not None:
            sensors.extend(_legacy_temperature(t, name) for t in thermal.get("Temperatures") or [])
        return sensors, groups

    def _log_entries(self, owner: dict[str, Any]) -> Iterator[LogEntry]:
        for service in self._members(self._linked(owner, "LogServices")):
            entries = self._linked(service, "Entries", expand=True)
            if entries is None:
                continue
            members = list(entries.get("Members") or [])
            log_name = str(service.get("Name") or service.get("Id") or "log")
            for entry in self._members({"Members": members[-MAX_LOG_ENTRIES:]}):
                yield _log_entry(entry, log_name)


def _health(status: Any) -> BmcHealth | None:
    if not isinstance(status, dict):
        return None
    value = status.get("Health")
    try:
        return BmcHealth(value) if value else None
    except ValueError:
        return None


def _state(status: Any) -> tuple[bool, bool]:
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


def _power_supply(psu: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = _state(psu.get("Status"))
    return BmcSensor(
        kind=SensorKind.POWER_SUPPLY,
        name=_name(psu, "power supply"),
        reading=_number(psu.get("LastPowerOutputWatts")),
        units="W",
        health=_health(psu.get("Status")),
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
        present, enabled = _state(part.get("Status"))
        if present and enabled and _health(part.get("Status")) in (BmcHealth.OK, None):
            ok += 1
    return tuple(names), ok


_GROUP_NAMES = {
    SensorKind.POWER_SUPPLY: "power-supply redundancy",
    SensorKind.FAN: "fan redundancy",
}


def _redundancy_group(
    group: dict[str, Any], kind: SensorKind, chassis: str, parts: list[dict[str, Any]]
) -> Redundancy:
    members, ok = _members_ok(list(group.get("RedundancyGroup") or []), parts)
    _, enabled = _state(group.get("Status"))
    needed = group.get("MinNeededInGroup")
    return Redundancy(
        kind=kind,
        # The newer RedundantGroup has no name of its own: it is named by what it groups.
        name=str(group.get("Name") or _GROUP_NAMES[kind]),
        health=_health(group.get("Status")),
        enabled=enabled,
        mode=group.get("RedundancyType"),
        members=members,
        members_ok=ok if members else None,
        min_needed=int(needed) if isinstance(needed, int) else None,
        chassis=chassis,
    )


def _legacy_redundancy(
    group: dict[str, Any], kind: SensorKind, chassis: str, parts: list[dict[str, Any]]
) -> Redundancy:
    members, ok = _members_ok(list(group.get("RedundancySet") or []), parts)
    _, enabled = _state(group.get("Status"))
    needed = group.get("MinNumNeeded")
    return Redundancy(
        kind=kind,
        name=_name(group, _GROUP_NAMES[kind]),
        health=_health(group.get("Status")),
        enabled=enabled,
        mode=group.get("Mode"),
        members=members,
        members_ok=ok if members else None,
        min_needed=int(needed) if isinstance(needed, int) else None,
        chassis=chassis,
    )


def _fan(fan: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = _state(fan.get("Status"))
    raw_speed = fan.get("SpeedPercent")
    speed: dict[str, Any] = raw_speed if isinstance(raw_speed, dict) else {}
    rpm = _number(speed.get("SpeedRPM"))
    return BmcSensor(
        kind=SensorKind.FAN,
        name=_name(fan, "fan"),
        reading=rpm if rpm is not None else _number(speed.get("Reading")),
        units="RPM" if rpm is not None else "%",
        health=_health(fan.get("Status")),
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


def _legacy_fan(fan: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = _state(fan.get("Status"))
    units = fan.get("ReadingUnits")
    return BmcSensor(
        kind=SensorKind.FAN,
        name=_name(fan, "fan"),
        reading=_number(fan.get("Reading")),
        units="%" if units == "Percent" else "RPM",
        health=_health(fan.get("Status")),
        present=present,
        enabled=enabled,
        thresholds=_legacy_thresholds(fan),
        chassis=chassis,
        source_id=fan.get("@odata.id"),
    )


def _legacy_temperature(temp: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = _state(temp.get("Status"))
    return BmcSensor(
        kind=SensorKind.TEMPERATURE,
        name=_name(temp, "temperature"),
        reading=_number(temp.get("ReadingCelsius")),
        units="C",
        health=_health(temp.get("Status")),
        present=present,
        enabled=enabled,
        context=temp.get("PhysicalContext"),
        thresholds=_legacy_thresholds(temp),
        chassis=chassis,
        source_id=temp.get("@odata.id"),
    )


def _legacy_voltage(volt: dict[str, Any], chassis: str) -> BmcSensor:
    present, enabled = _state(volt.get("Status"))
    return BmcSensor(
        kind=SensorKind.VOLTAGE,
        name=_name(volt, "voltage"),
        reading=_number(volt.get("ReadingVolts")),
        units="V",
        health=_health(volt.get("Status")),
        present=present,
        enabled=enabled,
        context=volt.get("PhysicalContext"),
        thresholds=_legacy_thresholds(volt),
        chassis=chassis,
        source_id=volt.get("@odata.id"),
    )


def _power_control(control: dict[str, Any], chassis: str) -> BmcSensor:
    return BmcSensor(
        kind=SensorKind.POWER,
        name=_name(control, "power"),
        reading=_number(control.get("PowerConsumedWatts")),
        units="W",
        health=_health(control.get("Status")),
        chassis=chassis,
        source_id=control.get("@odata.id"),
    )


_SENSOR_KINDS = {
    "Temperature": (SensorKind.TEMPERATURE, "C"),
    "Voltage": (SensorKind.VOLTAGE, "V"),
    "Power": (SensorKind.POWER, "W"),
}


def _sensor(sensor: dict[str, Any], chassis: str, *, with_power: bool) -> BmcSensor | None:
    """A Sensor resource (temperature, voltage, power); fans and power supplies come from
    their own resources, so rotational and other sensors are left out here."""
    kind_units = _SENSOR_KINDS.get(str(sensor.get("ReadingType")))
    if kind_units is None or (kind_units[0] is SensorKind.POWER and not with_power):
        return None
    raw_limits = sensor.get("Thresholds")
    limits: dict[str, Any] = raw_limits if isinstance(raw_limits, dict) else {}
    present, enabled = _state(sensor.get("Status"))
    return BmcSensor(
        kind=kind_units[0],
        name=_name(sensor, "sensor"),
        reading=_number(sensor.get("Reading")),
        units=kind_units[1],
        health=_health(sensor.get("Status")),
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


def _log_entry(entry: dict[str, Any], log: str) -> LogEntry:
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
