"""Workloads: what a training or inference job asks of the hardware (zoo presets, user files)."""

from __future__ import annotations

from dlrig.workloads.loader import (
    load_workload,
    parse_workload,
    resolve_workload,
    workload_document,
    zoo,
    zoo_documents,
)
from dlrig.workloads.model import Dataset, FinetuneMethod, Mode, Workload, WorkloadKind

__all__ = [
    "Dataset",
    "FinetuneMethod",
    "Mode",
    "Workload",
    "WorkloadKind",
    "load_workload",
    "parse_workload",
    "resolve_workload",
    "workload_document",
    "zoo",
    "zoo_documents",
]
