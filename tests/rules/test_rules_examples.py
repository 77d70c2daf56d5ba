"""Every build in examples/builds checked against its expected findings (error and warning
rule ids; infos are notes and may grow)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dlrig.machine import load_build
from dlrig.mains import find_mains
from dlrig.rules import check_build

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "builds"

# file -> (error rule ids, warning rule ids)
EXPECTED: dict[str, tuple[set[str], set[str]]] = {
    "budget-1gpu-3090.yaml": (set(), set()),
    # 24 cores for 2 GPUs is more than the guide's 2 per GPU needs (CPU.4).
    "2x-4090-spaced-workstation.yaml": (set(), {"CPU.4"}),
    "4x-blower-workstation.yaml": (set(), set()),
    # 4 open-air cards (COOL.3), 1,444 W at the wall on the default 15 A circuit (PSU.6).
    "4x-open-air-workstation.yaml": ({"COOL.3", "PSU.6"}, set()),
    # 3 slots for 4 cards (MB.1); the third card's slot is x4 from the chipset (PCIE.2, and
    # PCIE.cpu: 3+ GPUs want the CPU's own lanes, Puget Systems).
    "4x-on-desktop-cpu.yaml": ({"MB.1", "PCIE.2"}, {"PCIE.cpu"}),
    "2x-rtx6000-ada-xeon.toml": (set(), set()),
    "8x-l40s-pcie-server.yaml": (set(), set()),
    "8x-h100-hgx-server.yaml": (set(), set()),
    # Its job drive is a SATA SSD (DISK.nvme: Puget stages jobs on NVMe).
    "8x-v100-nvlink-server.yaml": (set(), {"DISK.nvme"}),
    # Its host server powers and cools the cards; no CPU, board or drive is the VM's to give.
    "4x-a6000-cloud-vm.yaml": (set(), set()),
}


def test_every_example_has_an_expectation() -> None:
    assert {p.name for p in EXAMPLES.iterdir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_build_has_its_expected_findings(name: str) -> None:
    errors, warnings = EXPECTED[name]
    result = check_build(load_build(EXAMPLES / name))
    assert {f.rule for f in result.errors} == errors
    assert {f.rule for f in result.warnings} == warnings
    assert result.ok == (not errors)


def test_the_make_run_build_passes_with_no_error() -> None:
    """`make run` checks 4x-blower-workstation.yaml: it must exit 0."""
    result = check_build(load_build(EXAMPLES / "4x-blower-workstation.yaml"))
    assert result.ok
    psu = result.by_rule("PSU.1")[0].evidence
    assert (psu["subtotal_w"], psu["recommended_w"], psu["psu_w"]) == (1362, 1500, 1600)


def test_the_open_air_mistake_differs_from_the_blower_build_by_cooling_only() -> None:
    # On a 20 A circuit: on 15 A its 1,444 W at the wall fail PSU.6 as well.
    build = load_build(EXAMPLES / "4x-open-air-workstation.yaml")
    mains = find_mains("us-20a", where="test", origin="test")
    result = check_build(dataclasses.replace(build, mains=mains))
    assert [f.rule for f in result.errors] == ["COOL.3"]


def test_the_seeds_8x_v100_server_exchanges_gradients_over_nvlink() -> None:
    """Guide section 9 and DP.2: NVLink 2.0, 300 GB/s per V100 SXM2 (6 links x 50 GB/s)."""
    result = check_build(load_build(EXAMPLES / "8x-v100-nvlink-server.yaml"))
    assert result.by_rule("DP.2")[0].evidence == {"interconnect": "nvlink", "nvlink_gb_s": 300}
    assert result.by_rule("PSU.1")[0].evidence["psu_w"] == 4400  # the chassis' power
    assert result.by_rule("COOL.1") == ()  # passive modules in a server chassis


def test_the_pcie_server_is_judged_by_its_platform() -> None:
    result = check_build(load_build(EXAMPLES / "8x-l40s-pcie-server.yaml"))
    assert result.by_rule("PCIE.2")[0].evidence["lanes_per_gpu"] == [16] * 8
    assert result.by_rule("MB.1") == () and result.by_rule("COOL.1") == ()


def test_a_udimm_kit_on_an_rdimm_board_fails_compat_memory() -> None:
    from dlrig.machine import resolve_build

    doc = {
        "gpus": ["NVIDIA RTX A5000"],
        "cpu": "AMD Ryzen Threadripper 7960X",
        "motherboard": "ASUS Pro WS TRX50-SAGE WIFI",
        "memory": "Crucial 128GB (2x64GB) DDR5-5600",
    }
    result = check_build(resolve_build(doc, "t.yaml"))
    assert {f.rule for f in result.errors} == {"COMPAT.memory"}
    assert "registered" in result.errors[0].message
