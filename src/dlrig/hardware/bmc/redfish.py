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

Resources read (DSP0268; `redfish_resources` turns each into a reading): each Chassis'
`PowerSubsystem` (power supplies and their redundancy) or the older `Power` (power supplies,
redundancy, voltages, power control), `ThermalSubsystem` (fans and fan redundancy) or the older
`Thermal` (temperatures, fans), the `Sensors` collection (temperatures, voltages and power with
their thresholds), and the log entries of every System's and Manager's log services (the SEL).
"""

from __future__ import annotations

import ipaddress
import logging
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dlrig.errors import SourceUnreachableError, ValidationError
from dlrig.hardware.bmc.readings import BmcReading, BmcSensor, LogEntry, Redundancy, SensorKind
from dlrig.hardware.bmc.redfish_resources import (
    fan,
    legacy_fan,
    legacy_redundancy,
    legacy_temperature,
    legacy_voltage,
    log_entry,
    power_control,
    power_supply,
    redundancy_group,
    sensor,
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
            sensors.extend(power_supply(p, name) for p in psus)
            groups.extend(
                redundancy_group(g, SensorKind.POWER_SUPPLY, name, psus)
                for g in power_subsystem.get("PowerSupplyRedundancy") or []
            )
        elif power is not None:
            psus = list(power.get("PowerSupplies") or [])
            sensors.extend(power_supply(p, name) for p in psus)
            groups.extend(
                legacy_redundancy(g, SensorKind.POWER_SUPPLY, name, psus)
                for g in power.get("Redundancy") or []
            )
            sensors.extend(legacy_voltage(v, name) for v in power.get("Voltages") or [])
            sensors.extend(power_control(c, name) for c in power.get("PowerControl") or [])
        thermal_subsystem = self._linked(chassis, "ThermalSubsystem")
        thermal = self._linked(chassis, "Thermal") if "Sensors" not in chassis else None
        if thermal_subsystem is not None:
            fans = list(self._members(self._linked(thermal_subsystem, "Fans", expand=True)))
            sensors.extend(fan(f, name) for f in fans)
            groups.extend(
                redundancy_group(g, SensorKind.FAN, name, fans)
                for g in thermal_subsystem.get("FanRedundancy") or []
            )
        elif "Thermal" in chassis:
            thermal = thermal or self._linked(chassis, "Thermal")
            if thermal is not None:
                fans = list(thermal.get("Fans") or [])
                sensors.extend(legacy_fan(f, name) for f in fans)
                groups.extend(
                    legacy_redundancy(g, SensorKind.FAN, name, fans)
                    for g in thermal.get("Redundancy") or []
                )
        if "Sensors" in chassis:
            for resource in self._members(self._linked(chassis, "Sensors", expand=True)):
                converted = sensor(resource, name, with_power=power is None)
                if converted is not None:
                    sensors.append(converted)
        elif thermal is not None:
            sensors.extend(legacy_temperature(t, name) for t in thermal.get("Temperatures") or [])
        return sensors, groups

    def _log_entries(self, owner: dict[str, Any]) -> Iterator[LogEntry]:
        for service in self._members(self._linked(owner, "LogServices")):
            entries = self._linked(service, "Entries", expand=True)
            if entries is None:
                continue
            members = list(entries.get("Members") or [])
            log_name = str(service.get("Name") or service.get("Id") or "log")
            for entry in self._members({"Members": members[-MAX_LOG_ENTRIES:]}):
                yield log_entry(entry, log_name)
