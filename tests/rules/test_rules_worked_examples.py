"""The guide's worked examples and the issue's named cases, each one test."""

from __future__ import annotations

from typing import Any

from rules_fixtures import build, check, desktop, gpu, rules_of

from dlrig.enums import Severity
from dlrig.model.power import size_psu


def test_psu1_worked_example_4x250w_gpus_150w_cpu_is_1250w_1375w_buy_1400w() -> None:
    """PSU.1: 4 x 250 W + 150 W + 100 W = 1250 W; +10% = 1375 W; buy a 1400 W PSU."""
    sizing = size_psu(4 * 250, 150)
    assert sizing.subtotal_w == 1250
    assert round(sizing.with_headroom_w, 6) == 1375
    assert sizing.recommended_w == 1400

    doc = desktop(psu={"watts": 1200, "efficiency": "gold", "pcie_8pin": 8})
    finding = check(doc).by_rule("PSU.1")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["subtotal_w"] == 1250
    assert finding.evidence["with_headroom_w"] == 1375
    assert finding.evidence["recommended_w"] == 1400
    assert "1375 W; buy >= 1400 W; the PSU gives 1200 W" in finding.message


def test_psu1_a_1400w_psu_carries_the_worked_example() -> None:
    doc = desktop(psu={"watts": 1400, "efficiency": "gold", "pcie_8pin": 8})
    assert check(doc).by_rule("PSU.1")[0].severity is Severity.INFO


def test_a_1300w_psu_under_the_10pct_margin_fails_psu1() -> None:
    """1300 W covers the 1250 W draw but not the guide's 10% margin (1375 W)."""
    doc = desktop(psu={"watts": 1300, "efficiency": "gold", "pcie_8pin": 8})
    assert check(doc).by_rule("PSU.1")[0].severity is Severity.ERROR


def test_good_4gpu_blower_workstation_passes_with_no_error() -> None:
    result = check(desktop())
    assert result.ok, [f.message for f in result.errors]
    assert rules_of(result, "warning") == set()


def test_the_same_workstation_with_open_air_cards_fails_cool3() -> None:
    doc = desktop(gpu_fields={"cooler": "open-air"})
    result = check(doc)
    assert rules_of(result, "error") == {"COOL.3"}
    finding = result.by_rule("COOL.3")[0]
    assert finding.evidence["expected_loss_pct"] == [10, 25]  # COOL.1: several GPUs, 10-25%
    assert "10-25%" in finding.message


def test_a_4gpu_build_on_a_20_lane_desktop_cpu_fails_pcie2() -> None:
    """PCIE.2: 4 GPUs want 8 lanes each; 20 lanes / 4 = 5, so each link is x4."""
    doc = desktop(cpu={"spec": {**_desktop_cpu(), "pcie_lanes": 20}}, motherboard=None)
    result = check(doc)
    finding = result.by_rule("PCIE.2")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["lanes_per_gpu"] == [4, 4, 4, 4]


def test_a_24gb_gpu_with_16gb_ram_fails_ram2() -> None:
    doc = desktop(n_gpus=1, memory={"size_gb": 16})
    finding = check(doc).by_rule("RAM.2")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence == {"ram_gb": 16, "largest_gpu_memory_gb": 24}


def test_a_4090_on_a_psu_with_too_few_connectors_fails_psu2() -> None:
    """The catalog's RTX 4090 has one 12V-2x6 (450 W: three 8-pins by adapter); a 1000 W PSU
    with two 8-pins and no 12V-2x6 has the watts but not the plugs."""
    doc = {
        "gpus": ["GeForce RTX 4090"],
        "cpu": {"spec": _desktop_cpu()},
        "memory": {"size_gb": 64},
        "psu": {"watts": 1000, "efficiency": "gold", "pcie_8pin": 2, "pcie_12v_2x6": 0},
    }
    result = check(doc)
    assert result.by_rule("PSU.1")[0].severity is Severity.INFO  # the watts suffice
    finding = result.by_rule("PSU.2")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["8pin_needed"] == 3
    assert finding.evidence["psu_8pin"] == 2


def test_the_4090_with_a_native_12v_2x6_passes_psu2() -> None:
    doc = {
        "gpus": ["GeForce RTX 4090"],
        "psu": {"watts": 1000, "efficiency": "gold", "pcie_8pin": 2, "pcie_12v_2x6": 1},
    }
    assert check(doc).by_rule("PSU.2")[0].severity is Severity.INFO


def test_psu2_counts_eps_inputs_as_two_pcie_8pins() -> None:
    """An EPS-powered card (RTX A6000) takes a dual 8-pin PCIe adapter: 4 cards need 8."""
    card = gpu(power_8pin=0, power_eps_8pin=1)
    few = desktop(gpu_fields=card, psu={"watts": 2000, "efficiency": "gold", "pcie_8pin": 6})
    enough = desktop(gpu_fields=card, psu={"watts": 2000, "efficiency": "gold", "pcie_8pin": 8})
    assert check(few).by_rule("PSU.2")[0].severity is Severity.ERROR
    assert check(enough).by_rule("PSU.2")[0].severity is Severity.INFO


def _desktop_cpu() -> dict[str, Any]:
    return {
        "name": "Test desktop CPU",
        "cores": 16,
        "threads": 32,
        "base_ghz": 4.0,
        "pcie_lanes": 24,
        "pcie_gen": 5,
        "memory_channels": 2,
        "memory_type": "DDR5",
        "tdp_w": 170,
        "socket": "AM5",
    }


def test_psu1_trusts_the_vendor_rating_of_a_system_sold_with_its_gpus() -> None:
    """A DGX-1 is sold with its 8 V100s and rated 3200 W by NVIDIA; the guide's DIY margin
    (8 x 300 W + 2 x 135 W + 240 W = 2910 W, +10% = 3201 W) is not a fault there."""
    result = check({"name": "DGX-1 as sold", "platform": "NVIDIA DGX-1"})
    finding = result.by_rule("PSU.1")[0]
    assert finding.severity is Severity.INFO
    assert finding.evidence["with_headroom_w"] == 3201
    assert "rated 3200 W by its vendor" in finding.message


def test_a_platform_sold_with_gpus_and_cpus_has_them_when_the_file_names_none() -> None:
    """platforms.toml: the DGX-1 comes with 8 x V100 SXM2 16GB and 2 x Xeon E5-2698 v4."""
    resolved = build({"name": "DGX-1 as sold", "platform": "NVIDIA DGX-1"})
    assert resolved.gpu_count == 8
    assert resolved.gpus[0].gpu.name == "Tesla V100 SXM2 16GB"
    assert resolved.cpu is not None and resolved.cpu.name == "Intel Xeon E5-2698 v4"
    assert resolved.cpu_count == 2
