"""build_to_document: a Build back to a build file, and back again unchanged."""

from __future__ import annotations

from typing import Any

import yaml

from dlrig.catalog import Catalog, load_catalog
from dlrig.catalog.schema import CPU, PSU, Case, MemoryKit, Motherboard, PCIeSlot, Storage
from dlrig.machine import Build, resolve_build
from dlrig.machine.document import build_to_document

CPU_SPEC: dict[str, Any] = {
    "name": "Test 24-core",
    "cores": 24,
    "threads": 48,
    "base_ghz": 4.2,
    "pcie_lanes": 88,
    "pcie_gen": 5,
    "memory_channels": 4,
    "memory_type": "DDR5",
    "tdp_w": 350,
    "socket": "sTR5",
}
BOARD_SPEC: dict[str, Any] = {
    "name": "Test TRX50 board",
    "socket": "sTR5",
    "memory_type": "DDR5",
    "memory_slots": 4,
    "max_memory_gb": 1024,
    "x16_slots": [
        {"position": 1, "lanes": 16, "gen": 5},
        {"position": 3, "lanes": 16, "gen": 5},
        {"position": 5, "lanes": 16, "gen": 5, "from_cpu": False},
    ],
}


def _roundtrip(doc: dict[str, Any], catalog: Catalog | None = None) -> tuple[Build, Build]:
    build = resolve_build(doc, "test.yaml", catalog)
    again = resolve_build(build_to_document(build, catalog), "test.yaml", catalog)
    return build, again


def _no_none(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_no_none(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_none(v) for v in value)
    return value is not None


def test_catalog_gpu_is_written_by_name_with_its_settings() -> None:
    doc = {
        "name": "two 4090s",
        "gpus": [{"model": "rtx 4090", "count": 2, "pcie": {"lanes": 8}, "cooler": "water"}],
    }
    build, again = _roundtrip(doc)
    assert again == build
    written = build_to_document(build)
    assert written["gpus"] == [
        {"model": "GeForce RTX 4090", "count": 2, "pcie": {"lanes": 8}, "cooler": "water"}
    ]


def test_inline_specs_of_every_kind_round_trip() -> None:
    doc = {
        "name": "all inline",
        "gpus": [
            {
                "spec": {
                    "name": "My GPU",
                    "memory_gb": 24,
                    "memory_bandwidth_gb_s": 1008,
                    "fp32_tflops": 35,
                    "fp16_tensor_tflops": 165,
                    "tdp_w": 450,
                    "slots": 3,
                    "length_mm": 304,
                },
                "count": 3,
            }
        ],
        "cpu": {"spec": CPU_SPEC},
        "motherboard": {"spec": BOARD_SPEC},
        "memory": {"size_gb": 128, "type": "DDR5", "speed_mt_s": 5600},
        "storage": [
            {"kind": "nvme", "capacity_tb": 2, "read_mb_s": 7000},
            {"kind": "hdd", "capacity_tb": 8, "read_mb_s": 180, "holds_dataset": True},
        ],
        "psu": {"watts": 1600, "efficiency": "platinum", "pcie_8pin": 6, "count": 2},
        "case": {"max_gpu_length_mm": 400, "expansion_slots": 8},
        "nodes": 2,
        "network": {"kind": "infiniband", "gbit_s": 400},
        "prices": {"electricity_per_kwh": 0.3, "currency": "EUR"},
    }
    build, again = _roundtrip(doc)
    assert again == build
    written = build_to_document(build)
    assert written["gpus"][0]["spec"]["name"] == "My GPU"
    assert written["psu"]["count"] == 2
    assert _no_none(written)  # TOML has no null


def test_parts_from_a_users_catalog_are_written_by_name() -> None:
    base = load_catalog()
    cat = Catalog(
        {
            **base.parts,
            "cpus": (CPU.model_validate({**CPU_SPEC, "family": "threadripper"}),),
            "motherboards": (
                Motherboard.model_validate(
                    {**BOARD_SPEC, "x16_slots": [PCIeSlot(position=1, lanes=16, gen=5)]}
                ),
            ),
            "psus": (PSU(name="Test 1600", watts=1600, efficiency="platinum", pcie_8pin=8),),
            "cases": (Case(name="Test tower", max_gpu_length_mm=420, expansion_slots=8),),
            "storage": (Storage(name="Test NVMe", kind="nvme", capacity_tb=4, read_mb_s=7000),),
            "memory": (
                MemoryKit(name="Test 2x32", memory_type="DDR5", size_gb=64, speed_mt_s=6000),
            ),
        }
    )
    doc = {
        "name": "catalog parts",
        "gpus": ["RTX A6000"],
        "cpu": "Test 24-core",
        "motherboard": "Test TRX50 board",
        "memory": {"model": "Test 2x32", "count": 2},
        "storage": [{"model": "Test NVMe", "count": 2}],
        "psu": "Test 1600",
        "case": "Test tower",
    }
    build, again = _roundtrip(doc, cat)
    assert again == build
    written = build_to_document(build, cat)
    assert written["cpu"] == "Test 24-core"
    assert written["memory"] == {"model": "Test 2x32", "count": 2}
    assert written["storage"] == [{"model": "Test NVMe", "count": 2}]


def test_a_part_that_differs_from_the_catalog_is_written_as_a_spec() -> None:
    """The 4090 of a user's catalog (a new price) is not the built-in one: a spec keeps it."""
    cat = load_catalog().with_overrides(
        {"gpus": [{"name": "GeForce RTX 4090", "price_usd": 1}]}, "x"
    )
    build = resolve_build({"gpus": ["GeForce RTX 4090"]}, "t.yaml", cat)
    written = build_to_document(build)  # against the built-in catalog
    assert written["gpus"][0]["spec"]["price_usd"] == 1
    assert build_to_document(build, cat)["gpus"][0] == {"model": "GeForce RTX 4090", "count": 1}


def test_document_survives_yaml() -> None:
    build = resolve_build(
        {"gpus": [{"model": "RTX A6000", "count": 4}], "memory": {"size_gb": 256}}, "t.yaml"
    )
    text = yaml.safe_dump(build_to_document(build), sort_keys=False)
    assert resolve_build(yaml.safe_load(text), "t.yaml") == build


def test_memory_kit_with_a_changed_size_keeps_the_size() -> None:
    cat = Catalog(
        {**load_catalog().parts, "memory": (MemoryKit(name="K", memory_type="DDR4", size_gb=32),)}
    )
    build, again = _roundtrip({"memory": {"model": "K", "count": 2, "size_gb": 96}}, cat)
    assert again == build
    assert build.memory is not None and build.memory.size_gb == 96
