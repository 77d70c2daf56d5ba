"""COMPAT.socket on server platforms: the socket alone does not decide the CPU family."""

from __future__ import annotations

from rules_fixtures import check

from dlrig.enums import Severity


def _server(cpu: str) -> dict[str, object]:
    return {
        "name": "8x L40S PCIe server",
        "platform": "Supermicro SYS-421GE-TNRT",
        "gpus": [{"model": "NVIDIA L40S", "count": 8}],
        "cpu": {"model": cpu, "count": 2},
    }


def test_a_xeon_w_workstation_cpu_does_not_fit_a_dual_socket_lga4677_server() -> None:
    """Xeon W (W790) and Xeon Scalable (C741) share LGA4677; the SYS-421GE takes Scalable."""
    finding = check(_server("Intel Xeon w5-2465X")).by_rule("COMPAT.socket")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["families"] == ["xeon-scalable"]


def test_a_xeon_scalable_cpu_fits_the_same_server() -> None:
    findings = check(_server("Intel Xeon Platinum 8480+")).by_rule("COMPAT.socket")
    assert all(f.severity is not Severity.ERROR for f in findings)
