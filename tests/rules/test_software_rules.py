"""Issue 35, software: what a GPU can run for the job (catalog/data/software.toml, each status
with its source and date). AMD's ROCm table lists the RX 7900 XTX (gfx1100, since 2023-11-03);
ROCm's Radeon multi-GPU support needs CPU-attached slots of one width and RCCL's collectives
fail in a chipset slot (hipErrorIllegalState, ROCm#6520); bitsandbytes' ROCm backend was an
alpha for gfx1100 from 2024-09-27 and supports RDNA and CDNA fully from 2025-12-11; a job that
cannot run on a stack is not planned on it."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator

import pytest

from dlrig.catalog import software
from dlrig.catalog.software import software_table
from dlrig.enums import Severity
from dlrig.machine import resolve_build
from dlrig.plan.evaluate import ModelEvaluator
from dlrig.rules import check_build
from dlrig.workloads import load_workload


def two_xtx(board: str, cpu: str, memory: dict[str, object]) -> object:
    return resolve_build(
        {
            "name": "2x RX 7900 XTX",
            "gpus": [{"model": "AMD Radeon RX 7900 XTX", "count": 2}],
            "cpu": cpu,
            "motherboard": board,
            "memory": memory,
            "storage": ["Samsung 990 Pro 2TB"],
        },
        "test",
    )


ON_EPYC = ("Supermicro H12SSL-i", "AMD EPYC 7313", {"size_gb": 256, "type": "DDR4"})
# ProArt X670E: x8/x8 from the CPU at positions 1 and 3, x2 from the chipset at 5; a 3-slot
# card at 1 covers 3, so the second card sits in the chipset slot.
ON_X670E = ("ASUS ProArt X670E-CREATOR WIFI", "AMD Ryzen 9 7950X", {"size_gb": 128})


def test_the_table_reads_as_its_sources_say() -> None:
    table = software_table()
    xtx = table.rocm("AMD Radeon RX 7900 XTX")
    assert xtx is not None
    assert (xtx.llvm_target, xtx.rocm_linux, xtx.listed_since) == (
        "gfx1100", "supported", dt.date(2023, 11, 3)
    )  # fmt: skip
    bnb = table.library("bitsandbytes")
    assert bnb.first("gfx1100").level == "alpha"  # type: ignore[union-attr]
    assert bnb.supported_since("gfx1100") == dt.date(2025, 12, 11)
    assert bnb.status("gfx1100", dt.date(2025, 6, 1)).level == "alpha"  # type: ignore[union-attr]
    assert bnb.status("gfx908", table.read) is None  # MI100: not among its ROCm targets
    fa = table.library("FlashAttention-2")
    assert fa.supported_since("gfx942") == dt.date(2024, 7, 23)  # MI300X: CK backend
    assert fa.supported_since("gfx1100") == dt.date(2026, 1, 28)  # RDNA 3: Triton backend


def test_radeon_cards_in_a_chipset_slot_fail_rccl() -> None:
    result = check_build(two_xtx(*ON_X670E))
    (finding,) = result.by_rule("SW.rccl")
    assert finding.severity is Severity.ERROR
    assert "hipErrorIllegalState" in finding.message
    ok = check_build(two_xtx(*ON_EPYC))
    (finding,) = ok.by_rule("SW.rccl")
    assert finding.severity is Severity.INFO
    assert {f.rule for f in ok.by_rule("SW.rocm")} == {"SW.rocm"}
    assert "runs on ROCm" in ok.by_rule("SW.rocm")[0].message


def test_qlora_on_the_7900_xtx_names_bitsandbytes_support_by_date() -> None:
    result = check_build(two_xtx(*ON_EPYC), load_workload("llama-3-70b-qlora"))
    (finding,) = result.by_rule("SW.bnb")
    assert finding.severity is Severity.INFO
    assert "since 2025-12-11" in finding.message and "alpha from 2024-09-27" in finding.message


@pytest.fixture
def table_read_mid_2025(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The table as if read on 2025-06-01, when bitsandbytes' ROCm backend was an alpha."""
    earlier = dataclasses.replace(software_table(), read=dt.date(2025, 6, 1))
    monkeypatch.setattr(software, "software_table", lambda: earlier)
    import dlrig.rules.software as rules_software

    monkeypatch.setattr(rules_software, "software_table", lambda: earlier)
    yield


@pytest.mark.usefixtures("table_read_mid_2025")
def test_a_job_the_stack_did_not_support_at_the_tables_date_is_not_planned_on_it() -> None:
    build = two_xtx(*ON_EPYC)
    job = load_workload("llama-3-70b-qlora")
    result = check_build(build, job)
    (finding,) = result.by_rule("SW.bnb")
    assert finding.severity is Severity.WARNING and "alpha" in finding.message
    assert result.ok  # check: it may run, with an alpha library
    # ... and the planner's evaluator refuses it (the expert bar)
    refused = ModelEvaluator().errors("key", build, job)
    assert "SW.bnb" in {f.rule for f in refused}
    assert not ModelEvaluator(expert_bar=False).errors("key2", build, job)
