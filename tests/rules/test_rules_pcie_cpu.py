"""Lanes (PCIE.1-3), cores (CPU.1, CPU.4), sockets and memory fit (COMPAT.*)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from rules_fixtures import board, check, cpu, desktop, rules_of

from dlrig.enums import PreprocessingStrategy, Severity
from dlrig.workloads import load_workload


@given(n_gpus=st.integers(1, 3), lanes=st.sampled_from([1, 2, 4, 8, 16]))
def test_one_to_three_gpus_are_never_flagged_for_lanes(n_gpus: int, lanes: int) -> None:
    """PCIE.1/PCIE.2: with 2-3 GPUs ignore lanes; for one GPU don't pay for them."""
    doc = desktop(n_gpus=n_gpus)
    doc["gpus"][0]["pcie"] = {"lanes": lanes}
    result = check(doc)
    flagged = {f.rule for f in result.findings if f.severity is not Severity.INFO}
    assert not flagged & {"PCIE.1", "PCIE.2", "PCIE.3", "COMPAT.lanes"}


def test_four_gpus_at_x8_pass_and_at_x4_fail_pcie2() -> None:
    x8 = desktop()
    x8["gpus"][0]["pcie"] = {"lanes": 8}
    x4 = desktop()
    x4["gpus"][0]["pcie"] = {"lanes": 4}
    assert check(x8).by_rule("PCIE.2")[0].severity is Severity.INFO
    assert check(x4).by_rule("PCIE.2")[0].severity is Severity.ERROR


def test_slot_lanes_are_shared_when_the_board_wires_more_than_the_cpu_has() -> None:
    """4 x16 slots on a 48-lane CPU: 48 // 4 = 12 lanes each, so the links train at x8."""
    doc = desktop(cpu={"spec": cpu(pcie_lanes=48)})
    finding = check(doc).by_rule("PCIE.2")[0]
    assert finding.evidence["lanes_per_gpu"] == [8, 8, 8, 8]
    assert finding.severity is Severity.INFO


def test_pcie3_fails_when_the_cpu_cannot_give_each_gpu_x4() -> None:
    doc = desktop(n_gpus=3, cpu={"spec": cpu(pcie_lanes=8)})
    assert check(doc).by_rule("PCIE.3")[0].severity is Severity.ERROR


def test_cpu1_two_cores_per_gpu_for_online_one_for_offline() -> None:
    """CPU.1: online preprocessing >= 2 cores / 4 threads per GPU; offline >= 1 / 2."""
    doc = desktop(cpu={"spec": cpu(cores=6, threads=12)})  # 1.5 cores per GPU
    online = load_workload("resnet50")
    assert online.preprocessing_strategy is PreprocessingStrategy.ONLINE
    offline = dataclasses.replace(online, preprocessing_strategy=PreprocessingStrategy.OFFLINE)
    assert check(doc, online).by_rule("CPU.1")[0].severity is Severity.ERROR
    assert check(doc, offline).by_rule("CPU.1")[0].severity is Severity.INFO
    # No workload: enough only for offline preprocessing, said as a warning.
    assert check(doc).by_rule("CPU.1")[0].severity is Severity.WARNING


def test_cpu1_below_one_core_per_gpu_fails_whatever_the_strategy() -> None:
    doc = desktop(cpu={"spec": cpu(cores=2, threads=4)})
    assert check(doc).by_rule("CPU.1")[0].severity is Severity.ERROR


def test_cpu4_flags_a_64_core_cpu_for_one_gpu() -> None:
    """CPU.4: one GPU needs 2 cores; 64 is far past the 16-core line."""
    doc = desktop(n_gpus=1, cpu={"spec": cpu(cores=64, threads=128)})
    finding = check(doc).by_rule("CPU.4")[0]
    assert finding.severity is Severity.WARNING
    assert finding.evidence == {
        "cores": 64,
        "cores_needed": 2,
        "oversize_above": 16,
        "cpus_to_buy": 1,
    }
    assert check(desktop(n_gpus=4)).by_rule("CPU.4") == ()  # 24 cores for 4 GPUs is fine


def test_compat_socket_mismatch_is_an_error() -> None:
    doc = desktop(cpu={"spec": cpu(socket="AM5")})
    finding = check(doc).by_rule("COMPAT.socket")[0]
    assert finding.severity is Severity.ERROR
    assert "AM5" in finding.message and "sTR5" in finding.message


def test_compat_socket_accepts_spelling_variants() -> None:
    doc = desktop(cpu={"spec": cpu(socket="STR5")})
    assert check(doc).by_rule("COMPAT.socket") == ()


def test_compat_socket_checks_the_chipsets_cpu_families() -> None:
    doc = desktop(motherboard={"spec": board(cpu_families=["xeon-w"])})
    assert rules_of(check(doc), "error") == {"COMPAT.socket"}


def test_compat_memory_type_and_size() -> None:
    ddr4 = desktop(memory={"size_gb": 128, "type": "DDR4"})
    too_big = desktop(memory={"size_gb": 2048, "type": "DDR5"})
    assert rules_of(check(ddr4), "error") == {"COMPAT.memory"}
    finding = check(too_big).by_rule("COMPAT.memory")[0]
    assert finding.evidence == {"ram_gb": 2048, "max_gb": 1024}


def test_ram1_a_fast_kit_is_information() -> None:
    doc = desktop(memory={"size_gb": 128, "type": "DDR5", "speed_mt_s": 7200})
    finding = check(doc).by_rule("RAM.1")[0]
    assert finding.severity is Severity.INFO
    assert finding.evidence == {"speed_mt_s": 7200, "jedec_max_mt_s": 5600}
