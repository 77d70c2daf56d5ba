"""Partial inline specs (design.md: only `name` is required): each kind loads, the rules that
read a missing field say `unknown:`, and the model lists the defaults it used."""

from __future__ import annotations

from typing import Any

import pytest

from dlrig.catalog import load_catalog
from dlrig.enums import Severity
from dlrig.machine import resolve_build
from dlrig.machine.document import build_to_document
from dlrig.machine.partial import DEFAULTS
from dlrig.model.estimate import estimate
from dlrig.rules import check_build
from dlrig.workloads import load_workload

CATALOG = load_catalog()
# A complete desktop from the catalog; each test swaps one part for a partial inline one.
BASE: dict[str, Any] = {
    "name": "partial test",
    "gpus": [{"model": "GeForce RTX 4090", "count": 2}],
    "cpu": "AMD Ryzen Threadripper 7960X",
    "motherboard": "ASUS Pro WS TRX50-SAGE WIFI",
    "memory": {"size_gb": 128},
    "storage": ["Samsung 990 Pro 2TB"],
    "psu": {"watts": 1600, "efficiency": "platinum"},
    "case": "Fractal Design Define 7 XL",
}


def _unknown_rules(doc: dict[str, Any]) -> dict[str, str]:
    result = check_build(resolve_build(doc, "partial.yaml", CATALOG), load_workload("resnet50"))
    return {f.rule: f.message for f in result.findings if f.message.startswith("unknown: ")}


@pytest.mark.parametrize(
    ("key", "partial", "missing", "rule"),
    [
        # The example: a CPU known only by cores, lanes and TDP.
        (
            "cpu",
            {"name": "Threadripper 32-core", "cores": 32, "pcie_lanes": 128, "tdp_w": 280},
            {"threads", "socket", "base_ghz", "pcie_gen", "memory_type"},
            "COMPAT.socket",
        ),
        (
            "gpus",
            [{"name": "Mystery 24GB", "memory_gb": 24, "tdp_w": 350, "count": 2}],
            {"fp32_tflops", "memory_bandwidth_gb_s"},
            None,
        ),
        ("motherboard", {"name": "Some TRX50 board", "socket": "sTR5"}, {"x16_slots"}, "MB.1"),
        ("psu", {"name": "Big PSU", "watts": 1600}, {"efficiency"}, "PSU.3"),
        ("case", {"name": "Tower", "max_gpu_length_mm": 330}, {"expansion_slots"}, "COMPAT.slots"),
        ("storage", [{"name": "Old SSD", "capacity_tb": 2}], {"read_mb_s", "kind"}, "DISK.1"),
    ],
)
def test_a_partial_part_loads_and_checks(
    key: str, partial: Any, missing: set[str], rule: str | None
) -> None:
    doc = {**BASE, key: partial}
    build = resolve_build(doc, "partial.yaml", CATALOG)
    part = build.parts_of({"gpus": "gpu"}.get(key, key))[0]
    assert missing <= part.unknown_fields
    assert not part.unknown_fields & set(partial[0] if isinstance(partial, list) else partial)
    unknown = _unknown_rules(doc)
    if rule is not None:
        assert rule in unknown, unknown
        assert part.name in unknown[rule]
    # The same build with the catalog part judges that rule for real.
    if rule is not None:
        assert rule not in _unknown_rules(BASE)


def test_only_name_is_required() -> None:
    for kind in ("gpus", "cpu", "motherboard", "psu", "case", "storage"):
        entry: Any = {"name": f"bare {kind}"}
        build = resolve_build(
            {kind: [entry] if kind in ("gpus", "storage") else entry}, "b", CATALOG
        )
        (part,) = build.parts_of({"gpus": "gpu"}.get(kind, kind))
        assert part.unknown_fields == frozenset(DEFAULTS[type(part)])


def test_a_partial_gpu_drives_no_rule_on_its_defaults() -> None:
    """PSU.1 sizes the PSU from GPU watts: with the TDP unknown it must not pass or fail."""
    doc = {**BASE, "gpus": [{"name": "Unknown card", "memory_gb": 24}]}
    unknown = _unknown_rules(doc)
    assert "PSU.1" in unknown
    assert "gpu 'Unknown card' tdp_w" in unknown["PSU.1"]
    result = check_build(resolve_build(doc, "partial.yaml", CATALOG))
    assert all(f.severity is Severity.INFO for f in result.by_rule("PSU.1"))


def test_the_model_states_each_default_it_used() -> None:
    doc = {**BASE, "gpus": [{"name": "Mystery 24GB", "memory_gb": 24, "tdp_w": 350}]}
    est = estimate(resolve_build(doc, "partial.yaml", CATALOG), load_workload("resnet50"))
    said = [a for a in est.assumptions if a.startswith("gpu 'Mystery 24GB'")]
    assert said == [
        "gpu 'Mystery 24GB': fp32_tflops not given, 10.0 assumed",
        "gpu 'Mystery 24GB': memory_bandwidth_gb_s not given, 450.0 assumed",
    ]


def test_a_partial_part_stays_partial_when_saved() -> None:
    """build_to_document writes what the user gave, not the stated defaults as facts."""
    doc = {**BASE, "cpu": {"name": "Threadripper 32-core", "cores": 32, "tdp_w": 280}}
    build = resolve_build(doc, "partial.yaml", CATALOG)
    saved = build_to_document(build, CATALOG)
    assert saved["cpu"] == {"spec": {"name": "Threadripper 32-core", "cores": 32, "tdp_w": 280.0}}
    assert resolve_build(saved, "partial.yaml", CATALOG) == build


def test_threads_default_to_the_cores_given() -> None:
    """One thread per core (no SMT assumed), never fewer threads than the cores the user gave."""
    build = resolve_build({"cpu": {"name": "T", "cores": 32}}, "b", CATALOG)
    assert build.cpu is not None
    assert (build.cpu.threads, "threads" in build.cpu.unknown_fields) == (32, True)


def test_a_cpu_without_family_is_unknown_on_a_board_that_names_families() -> None:
    """COMPAT.socket: a board taking only some families (W790: Xeon W) cannot judge a CPU whose
    family the user did not give; a socket mismatch is still judged."""
    board = next(b for b in CATALOG.motherboards if b.cpu_families)
    doc = {"motherboard": board.name, "cpu": {"name": "C", "socket": board.socket}}
    (finding,) = check_build(resolve_build(doc, "b", CATALOG)).by_rule("COMPAT.socket")
    assert finding.severity is Severity.INFO
    assert finding.message.startswith("unknown: ")
    assert "family" in finding.message
    wrong = {**doc, "cpu": {"name": "C", "socket": "AM5" if board.socket != "AM5" else "LGA1700"}}
    (finding,) = check_build(resolve_build(wrong, "b", CATALOG)).by_rule("COMPAT.socket")
    assert finding.severity is Severity.ERROR


def test_an_explicit_null_reads_as_not_given() -> None:
    build = resolve_build({"psu": {"name": "P", "watts": 850, "efficiency": None}}, "b", CATALOG)
    assert build.psu is not None
    assert build.psu.unknown_fields == {"efficiency"}
