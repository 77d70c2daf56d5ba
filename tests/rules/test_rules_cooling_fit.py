"""Cooling (COOL.*, GPU.5), slots and spacing (MB.1), case fit (COMPAT.*, CASE.1), servers."""

from __future__ import annotations

from typing import Any

from rules_fixtures import board, check, desktop, rules_of

from dlrig.enums import Severity


def platform(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "Test 8-GPU server",
        "max_gpus": 8,
        "gpu_form": "pcie",
        "interconnect": "pcie",
        "cpu_socket": "sTR5",
        "cpu_sockets": 2,
        "memory_type": "DDR5",
        "memory_slots": 32,
        "max_memory_gb": 4096,
        "psu_watts": 6000,
    }
    spec.update(fields)
    return spec


def test_two_open_air_cards_in_adjacent_slots_warn_gpu5() -> None:
    """GPU.5: side by side, open-air cards run hot, about 30% slower."""
    doc = desktop(n_gpus=2, gpu_fields={"cooler": "open-air"}, motherboard={"spec": board((1, 3))})
    finding = check(doc).by_rule("GPU.5")[0]
    assert finding.severity is Severity.WARNING
    assert finding.evidence["adjacent_pairs"] == [(0, 1)]


def test_two_open_air_cards_with_a_free_slot_between_are_safe() -> None:
    """COOL.3: with space between GPUs (2 GPUs on a 3-4 slot board), air is safe."""
    doc = desktop(n_gpus=2, gpu_fields={"cooler": "open-air"}, motherboard={"spec": board((1, 4))})
    assert check(doc).by_rule("GPU.5")[0].severity is Severity.INFO
    assert check(doc).ok


def test_three_open_air_gpus_fail_cool3() -> None:
    result = check(desktop(n_gpus=3, gpu_fields={"cooler": "open-air"}))
    assert rules_of(result, "error") == {"COOL.3"}
    assert result.by_rule("GPU.5") == ()  # one finding per problem


def test_passive_datacenter_cards_in_a_desktop_fail_cool1() -> None:
    result = check(desktop(n_gpus=2, gpu_fields={"cooler": "passive"}))
    assert rules_of(result, "error") == {"COOL.1"}


def test_passive_cards_in_a_server_platform_are_fine() -> None:
    doc = desktop(
        n_gpus=8,
        gpu_fields={"cooler": "passive"},
        platform={"spec": platform()},
        motherboard=None,
        case=None,
        psu=None,
        cpu={"spec": {**_cpu(), "cores": 32, "threads": 64}, "count": 2},
        memory={"size_gb": 1024, "type": "DDR5"},
        circuit="2x-us-208v-30a",  # a rack's feeds: 8 cards draw more than a home circuit
    )
    result = check(doc)
    assert result.ok, [f.message for f in result.errors]
    assert not {r for r in rules_of(result, "error") | rules_of(result, "warning")} & {
        "COOL.1", "COOL.3", "MB.1", "GPU.5",
    }  # fmt: skip
    assert result.by_rule("PSU.1")[0].evidence["psu_w"] == 6000  # the platform's power


def test_a_platform_takes_at_most_its_gpu_count_and_form() -> None:
    nine = desktop(n_gpus=9, platform={"spec": platform()}, motherboard=None, case=None)
    assert "COMPAT.platform" in rules_of(check(nine), "error")
    sxm = desktop(n_gpus=8, gpu_fields={"form": "sxm"}, platform={"spec": platform()})
    assert "COMPAT.form" in rules_of(check(sxm), "error")


def test_sxm_modules_in_a_desktop_fail_compat_form() -> None:
    result = check(desktop(n_gpus=1, gpu_fields={"form": "sxm", "cooler": "passive"}))
    assert rules_of(result, "error") == {"COMPAT.form"}


def test_a_probed_sxm_module_without_a_platform_is_not_an_error() -> None:
    """`dlrig check` on the build a lent H200 VM's probe wrote (scripts/gpu-check): an H200 SXM,
    the CPU, RAM and disk, no platform (the probe cannot see one). COMPAT.form called the
    running module an error needing a baseboard; the probe saw it run, so it is information."""
    doc = {
        "name": "vm (probed)",
        "gpus": [{"model": "H200 SXM 141GB", "count": 1}],
        "cpu": {"spec": {"name": "Intel(R) Xeon(R) Processor", "cores": 16, "threads": 16}},
        "memory": {"size_gb": 256},
        "measured": {"taken": "2026-12-04T12:04:27+00:00", "source": "dlrig probe --quick on vm"},
    }
    result = check(doc)
    assert "COMPAT.form" not in rules_of(result, "error")
    (finding,) = result.by_rule("COMPAT.form")
    assert finding.severity is Severity.INFO and "the probe saw running" in finding.message
    del doc["measured"]  # the same parts as a plan: the baseboard must still be bought
    assert "COMPAT.form" in rules_of(check(doc), "error")


def test_mb1_three_slot_cards_on_two_slot_spacing_do_not_all_fit() -> None:
    """MB.1: slots at 1, 3, 5, 7 take four 2-slot cards but only two 3-slot cards."""
    result = check(desktop(gpu_fields={"slots": 3}))
    finding = result.by_rule("MB.1")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["seated_at"] == [1, 5]
    assert check(desktop()).by_rule("MB.1")[0].evidence["seated_at"] == [1, 3, 5, 7]


def test_mb1_too_few_slots() -> None:
    doc = desktop(motherboard={"spec": board((1, 3))})
    assert "MB.1" in rules_of(check(doc), "error")


def test_case_length_and_expansion_slots() -> None:
    long_card = desktop(gpu_fields={"length_mm": 430})
    assert rules_of(check(long_card), "error") == {"COMPAT.length"}
    short_case = desktop(case={"max_gpu_length_mm": 420, "expansion_slots": 7})
    finding = check(short_case).by_rule("COMPAT.slots")[0]  # lowest card covers slots 7-8
    assert finding.evidence == {"needed_slots": 8, "case_expansion_slots": 7}


def test_case1_water_cooling_needs_a_radiator_per_gpu() -> None:
    doc = desktop(
        gpu_fields={"cooler": "water"},
        case={"max_gpu_length_mm": 420, "expansion_slots": 8, "radiator_mounts_120mm": 3},
    )
    assert rules_of(check(doc), "error") == {"CASE.1"}


def test_dp2_reports_nvlink_on_an_nvlink_platform() -> None:
    doc = desktop(
        n_gpus=8,
        gpu_fields={"form": "sxm", "cooler": "passive", "nvlink_gb_s": 300},
        platform={"spec": platform(gpu_form="sxm", interconnect="nvlink")},
    )
    finding = check(doc).by_rule("DP.2")[0]
    assert finding.evidence == {"interconnect": "nvlink", "nvlink_gb_s": 300}


def _cpu() -> dict[str, Any]:
    return {
        "name": "Test server CPU",
        "cores": 32,
        "threads": 64,
        "base_ghz": 2.5,
        "pcie_lanes": 128,
        "pcie_gen": 5,
        "memory_channels": 12,
        "memory_type": "DDR5",
        "tdp_w": 300,
        "socket": "sTR5",
    }


def test_cool6_several_blower_cards_accept_a_10_to_15_pct_loss() -> None:
    finding = check(desktop()).by_rule("COOL.6")[0]
    assert finding.evidence["expected_loss_pct"] == [10, 15]
