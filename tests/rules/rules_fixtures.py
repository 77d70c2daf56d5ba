"""Builds for the rule tests: inline parts with round numbers, so each test states its figures."""

from __future__ import annotations

from typing import Any

from dlrig.machine import Build, resolve_build
from dlrig.rules import CheckResult, check_build


def gpu(**fields: Any) -> dict[str, Any]:
    """An inline GPU spec: a 250 W, 24 GB, 2-slot blower card unless told otherwise."""
    spec: dict[str, Any] = {
        "name": "Test GPU",
        "memory_gb": 24,
        "memory_bandwidth_gb_s": 900,
        "fp32_tflops": 30,
        "fp16_tensor_tflops": 120,
        "tdp_w": 250,
        "pcie_gen": 4,
        "slots": 2,
        "length_mm": 267,
        "cooler": "blower",
        "power_8pin": 1,
    }
    spec.update(fields)
    return spec


def cpu(**fields: Any) -> dict[str, Any]:
    """An inline CPU spec: 150 W, 24 cores, 64 lanes, socket sTR5, unless told otherwise."""
    spec: dict[str, Any] = {
        "name": "Test CPU",
        "family": "threadripper",
        "cores": 24,
        "threads": 48,
        "base_ghz": 3.5,
        "pcie_lanes": 64,
        "pcie_gen": 4,
        "memory_channels": 4,
        "memory_type": "DDR5",
        "tdp_w": 150,
        "socket": "sTR5",
    }
    spec.update(fields)
    return spec


def board(
    positions: tuple[int, ...] = (1, 3, 5, 7), lanes: int = 16, **fields: Any
) -> dict[str, Any]:
    """An inline motherboard spec with x16 slots at the given positions."""
    spec: dict[str, Any] = {
        "name": "Test board",
        "socket": "sTR5",
        "memory_type": "DDR5",
        "memory_slots": 8,
        "max_memory_gb": 1024,
        "x16_slots": [{"position": p, "lanes": lanes, "gen": 4} for p in positions],
    }
    spec.update(fields)
    return spec


def desktop(
    n_gpus: int = 4, gpu_fields: dict[str, Any] | None = None, **parts: Any
) -> dict[str, Any]:
    """A build document: n GPUs on the test CPU and board, 128 GB RAM, a 1600 W PSU with 8x
    8-pin, a roomy case. Keyword arguments replace whole parts (None removes one)."""
    doc: dict[str, Any] = {
        "name": "test desktop",
        "gpus": [{"spec": gpu(**(gpu_fields or {})), "count": n_gpus}],
        "cpu": {"spec": cpu()},
        "motherboard": {"spec": board()},
        "memory": {"size_gb": 128, "type": "DDR5"},
        "storage": [{"kind": "nvme", "capacity_tb": 4, "read_mb_s": 7000}],
        "psu": {"watts": 1600, "efficiency": "platinum", "pcie_8pin": 8, "pcie_12v_2x6": 0},
        "case": {"max_gpu_length_mm": 420, "expansion_slots": 8, "radiator_mounts_120mm": 6},
    }
    for key, value in parts.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def check(doc: dict[str, Any], workload: Any = None) -> CheckResult:
    """check_build on a build document."""
    return check_build(build(doc), workload)


def build(doc: dict[str, Any]) -> Build:
    return resolve_build(doc, "test.yaml")


def rules_of(result: CheckResult, severity: str) -> set[str]:
    """The ids of the findings of one severity."""
    return {f.rule for f in result.findings if f.severity.value == severity}
