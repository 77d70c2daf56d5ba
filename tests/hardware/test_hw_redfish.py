"""The Redfish source against mockups served over loopback (tests/fixtures/redfish, DMTF
Redfish-Mockup-Server layout): what it reads, that it only reads, and how a bad BMC fails."""

from __future__ import annotations

import time

import pytest

from dlrig.errors import SourceUnreachableError, ValidationError
from dlrig.hardware.bmc import BmcHealth, SensorKind
from dlrig.hardware.bmc.redfish import (
    MAX_RESPONSE_BYTES,
    RedfishOptions,
    RedfishSource,
    check_bmc_url,
)
from support.redfish_mockup import Misbehaviour, dead_address, serve_mockup

USER, PASSWORD = "monitor", "s3cret-Pa55"


def _read(name: str, **options: float) -> tuple[object, list[object]]:
    with serve_mockup(name, user=USER, password=PASSWORD) as mockup:
        reading = RedfishSource(RedfishOptions(mockup.url, USER, **options), PASSWORD).read()
    return reading, list(mockup.requests)


def test_legacy_power_and_thermal_name_each_part_as_the_bmc_does() -> None:
    reading, _ = _read("faulted_legacy")
    by_name = {s.name: s for s in reading.sensors}  # type: ignore[attr-defined]
    assert reading.product == "Dell Inc. PowerEdge XE8640"  # type: ignore[attr-defined]
    assert by_name["PS2 Status"].kind is SensorKind.POWER_SUPPLY
    assert by_name["PS2 Status"].health is BmcHealth.CRITICAL
    assert by_name["System Board Fan3A"].reading == 0.0
    inlet = by_name["System Board Inlet Temp"]
    assert (inlet.reading, inlet.thresholds.upper_critical, inlet.context) == (47.0, 42.0, "Intake")
    (psu_group, fan_group) = reading.redundancy  # type: ignore[attr-defined]
    assert psu_group.name == "System Board PS Redundancy"
    assert (psu_group.members_ok, psu_group.min_needed) == (1, 2)
    assert fan_group.health is BmcHealth.OK
    assert [e.severity for e in reading.log_entries].count(BmcHealth.CRITICAL) == 4  # type: ignore[attr-defined]


def test_newer_subsystems_and_sensors_are_read_with_their_thresholds() -> None:
    reading, requests = _read("faulted_subsystems")
    sensors = reading.sensors  # type: ignore[attr-defined]
    assert [s.name for s in sensors if s.kind is SensorKind.POWER_SUPPLY] == [
        f"PSU{i}" for i in range(1, 7)
    ]
    fan3 = next(s for s in sensors if s.name == "FAN3")
    assert (fan3.reading, fan3.units) == (0.0, "RPM")
    inlet = next(s for s in sensors if s.name == "Inlet Temp")
    assert (inlet.reading, inlet.thresholds.upper_critical) == (47.0, 45.0)
    # Rotational sensors come from the fans' own resources, not twice.
    assert sum(s.kind is SensorKind.FAN for s in sensors) == 6
    psu_group = reading.redundancy[0]  # type: ignore[attr-defined]
    assert psu_group.name == "power-supply redundancy"
    assert (psu_group.members_ok, psu_group.min_needed) == (5, 6)
    assert {r.method for r in requests} == {"GET"}  # type: ignore[attr-defined]


def test_only_the_service_root_is_read_without_credentials() -> None:
    _, requests = _read("healthy_subsystems")
    anonymous = [r.path for r in requests if not r.authorized]  # type: ignore[attr-defined]
    assert anonymous == ["/redfish/v1/"]
    assert all(r.method == "GET" for r in requests)  # type: ignore[attr-defined]


def _fails(
    name: str, password: str = PASSWORD, mis: Misbehaviour | None = None, **opts: float
) -> str:
    with (
        serve_mockup(name, user=USER, password=PASSWORD, misbehaviour=mis) as mockup,
        pytest.raises(SourceUnreachableError) as caught,
    ):
        RedfishSource(RedfishOptions(mockup.url, USER, **opts), password).read()
    message = str(caught.value)
    assert "\n" not in message and password not in message and PASSWORD not in message
    return message


def test_wrong_password_is_one_line_naming_the_user() -> None:
    assert "user 'monitor' was refused (HTTP 401)" in _fails(
        "healthy_legacy", password="Wr0ng-guess-7"
    )


def test_dead_address_fails_at_once() -> None:
    start = time.monotonic()
    with pytest.raises(SourceUnreachableError, match="connection refused"):
        RedfishSource(RedfishOptions(dead_address(), USER), PASSWORD).read()
    assert time.monotonic() - start < 15  # the bound for a dead address


def test_slow_bmc_is_cut_at_the_request_timeout() -> None:
    start = time.monotonic()
    message = _fails("healthy_legacy", mis=Misbehaviour(delay_s=3.0), request_timeout_s=1.0)
    assert "no answer within 1 s" in message
    assert time.monotonic() - start < 3.0


def test_truncated_answer_is_said() -> None:
    assert "cut short" in _fails("healthy_legacy", mis=Misbehaviour(truncate=True))


def test_huge_answer_stops_at_the_size_limit() -> None:
    huge = Misbehaviour(huge_bytes=MAX_RESPONSE_BYTES * 4)
    assert "answered more than 4 MiB" in _fails("healthy_legacy", mis=huge)


def test_html_instead_of_json_is_said() -> None:
    assert "not Redfish JSON" in _fails("healthy_legacy", mis=Misbehaviour(not_json=True))


def test_fields_of_the_wrong_type_are_one_line() -> None:
    message = _fails("healthy_legacy", mis=Misbehaviour(wrong_types=True), budget_s=5.0)
    assert "answered a resource that is not Redfish as dlrig reads it" in message


def test_whole_reading_has_a_budget() -> None:
    slow = Misbehaviour(delay_s=0.3)
    message = _fails("healthy_subsystems", mis=slow, budget_s=1.0, request_timeout_s=5.0)
    assert "no full answer within the reading's 1 s" in message


def test_url_rules() -> None:
    assert check_bmc_url("10.0.0.21", insecure=False) == "https://10.0.0.21"
    assert check_bmc_url("http://127.0.0.1:8000/redfish/v1", insecure=False) == (
        "http://127.0.0.1:8000"
    )
    with pytest.raises(ValidationError, match="plain http would send the password"):
        check_bmc_url("http://10.0.0.21", insecure=False)
    assert check_bmc_url("http://10.0.0.21", insecure=True) == "http://10.0.0.21"
    with pytest.raises(ValidationError, match="holds credentials") as caught:
        check_bmc_url("https://admin:hunter2@10.0.0.21", insecure=False)
    assert "hunter2" not in str(caught.value)


def test_the_source_never_shows_its_password() -> None:
    source = RedfishSource(RedfishOptions("https://10.0.0.21", USER), PASSWORD)
    assert PASSWORD not in repr(source) and PASSWORD not in str(vars(source.options))


def test_collections_are_expanded_where_the_service_offers_it() -> None:
    # healthy_subsystems' service root says ExpandQuery NoLinks (DSP0266's $expand=.); the
    # mockup ignores the query, so the members are then fetched one by one all the same.
    reading, requests = _read("healthy_subsystems")
    expanded = [r.path for r in requests if "$expand" in r.path]  # type: ignore[attr-defined]
    assert "/redfish/v1/Chassis/1/Sensors?$expand=.($levels=1)" in expanded
    assert len(reading.sensors) == 17  # type: ignore[attr-defined]
    _, legacy = _read("healthy_legacy")  # no ExpandQuery in its root: no $expand asked
    assert not [r for r in legacy if "$expand" in r.path]  # type: ignore[attr-defined]
