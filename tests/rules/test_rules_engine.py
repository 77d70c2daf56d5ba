"""The registry and the result types: ids, docstrings, purity, unknowns reported as info."""

from __future__ import annotations

import builtins
import io
import re
from pathlib import Path

import pytest
from rules_fixtures import build, check, desktop, gpu

from dlrig.enums import Severity
from dlrig.rules import RULES, CheckResult, Finding, check_build

# Every guide id a build can be judged by (docs/guide.md); MEM.1, GPU.1/.2, CPU.2, COOL.2/.5,
# PSU.4 and MON.1 state facts or preferences no build file decides.
GUIDE_RULES = {
    "DP.1", "DP.2", "GPU.3", "GPU.4", "GPU.5", "RAM.1", "RAM.2", "PCIE.1", "PCIE.2", "PCIE.3",
    "CPU.1", "CPU.3", "CPU.4", "DISK.1", "DISK.2", "DISK.3", "DISK.4", "PSU.1", "PSU.2",
    "PSU.3", "CO2.1", "COOL.1", "COOL.3", "COOL.4", "COOL.6", "MB.1", "CASE.1",
}  # fmt: skip
COMPAT_RULES = {
    "COMPAT.socket", "COMPAT.memory", "COMPAT.slots", "COMPAT.lanes", "COMPAT.length",
    "COMPAT.form", "COMPAT.platform", "COMPAT.case",
}  # fmt: skip
# Rules that extend a guide rule past its text (the guide id they extend in their docstring).
# New ids in the guide's form: DISK.job; PSU.5 (transients) and PSU.6 (the circuit at the wall);
# COOL.7 (a loop's radiators against its heat) and COOL.8 (the case's airflow), issue 35.
EXTENDING_RULES = {"DISK.job", "PSU.5", "PSU.6", "COOL.7", "COOL.8"}
# Issue 35: the expert builders' bar (Puget Systems, Stas Bekman, D2L, Answer.AI) and what runs
# on ROCm; `plan` refuses the warnings of the bar rules (engine.bar_rules).
EXPERT_BAR_RULES = {
    "RAM.total", "CPU.cores", "PCIE.cpu", "DISK.nvme", "GPU.offload", "SW.rccl", "SW.bnb",
}  # fmt: skip
SOFTWARE_RULES = {"SW.rocm", "SW.rccl", "SW.bnb", "SW.flash"}


FACT_IDS = {"MEM.1", "GPU.1", "GPU.2", "CPU.2", "COOL.2", "COOL.5", "PSU.4", "MON.1"}
GUIDE = Path(__file__).parents[2] / "docs" / "guide.md"


def test_the_guide_in_the_repository_defines_every_id_and_no_other() -> None:
    """docs/guide.md is the specification README points at: each id it defines in bold is a
    registered rule or one of the facts no build decides, and each guide rule is in it."""
    defined = set(re.findall(r"\*\*([A-Z0-9]+\.\d+) ", GUIDE.read_text(encoding="utf-8")))
    assert defined == GUIDE_RULES | FACT_IDS


def test_every_judgeable_guide_rule_and_the_compat_rules_are_registered() -> None:
    assert {r.id for r in RULES} == (
        GUIDE_RULES | COMPAT_RULES | EXTENDING_RULES | EXPERT_BAR_RULES | SOFTWARE_RULES
    )


def test_the_expert_bar_is_the_issue_35_rules() -> None:
    from dlrig.rules.engine import bar_rules

    assert bar_rules() == EXPERT_BAR_RULES


def test_rule_ids_are_unique_and_well_formed() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Z0-9]+\.[A-Za-z0-9]+", i) for i in ids)


def test_every_rule_quotes_its_reasoning_in_a_docstring() -> None:
    for r in RULES:
        assert r.check.__doc__ and len(r.check.__doc__.split()) >= 8, r.id
        assert r.title == r.check.__doc__.strip().splitlines()[0]


def test_findings_carry_rule_severity_message_evidence_and_fix() -> None:
    result = check(desktop(psu={"watts": 1000, "efficiency": "gold", "pcie_8pin": 8}))
    for f in result.findings:
        assert isinstance(f, Finding)
        assert f.rule in {r.id for r in RULES}
        assert isinstance(f.severity, Severity)
        assert f.message
        assert isinstance(f.evidence, dict)
    assert all(f.fix for f in result.errors)  # every error says what to do


def test_check_is_pure_same_build_same_findings() -> None:
    b = build(desktop(gpu_fields={"cooler": "open-air"}))
    assert check_build(b) == check_build(b)


def test_ok_and_errors() -> None:
    finding = Finding("PSU.1", Severity.ERROR, "x")
    result = CheckResult((finding, Finding("RAM.1", Severity.INFO, "y")))
    assert not result.ok
    assert result.errors == (finding,)
    assert CheckResult(()).ok


def test_missing_parts_are_reported_as_unknown_info_not_skipped() -> None:
    """A GPU alone: PSU, CPU, RAM, board and case checks say what they could not judge."""
    result = check({"gpus": [{"spec": gpu(), "count": 2}]})
    unknown = {f.rule for f in result.findings if f.message.startswith("unknown:")}
    assert {"PSU.1", "PSU.2", "CPU.1", "RAM.2", "MB.1", "COMPAT.length", "DISK.3"} <= unknown
    assert all(f.severity is Severity.INFO for f in result.findings if f.rule in unknown)
    assert result.ok


def test_an_empty_build_has_no_errors() -> None:
    assert check({}).ok


def test_check_build_reads_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner calls check_build per candidate (speed: bench/, not here): so a call must
    do no I/O. After one warm-up call (cached calibration), opening any file fails the test."""
    b = build(desktop())
    first = check_build(b)

    def no_io(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"check_build opened a file: {args[:1]}")

    monkeypatch.setattr(builtins, "open", no_io)
    monkeypatch.setattr(io, "open", no_io)
    assert check_build(b) == first


def test_declared_reads_name_real_fields() -> None:
    """A rule's `reads` (machine/partial.py's unknown fields) must name a part kind and a field
    of its catalog model, or the engine would never say `unknown:` for it."""
    from dlrig.catalog.schema import CPU, GPU, PSU, Case, Motherboard, Platform, Storage

    models = {"gpu": GPU, "cpu": CPU, "motherboard": Motherboard, "platform": Platform,
              "storage": Storage, "psu": PSU, "case": Case}  # fmt: skip
    for r in RULES:
        for read in r.reads:
            kind, _, field = read.partition(".")
            assert field in models[kind].model_fields, (r.id, read)
