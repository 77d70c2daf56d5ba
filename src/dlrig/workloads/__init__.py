"""Workloads: what a training or inference job asks of the hardware (zoo presets, user files).

The names below load on first use: a module that needs the `Workload` type alone (the rules)
does not import the loader and its schema with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlrig.workloads.loader import (
        load_workload,
        parse_workload,
        resolve_workload,
        workload_document,
        zoo,
        zoo_documents,
    )
    from dlrig.workloads.model import Dataset, FinetuneMethod, Mode, Workload, WorkloadKind

_LOADER = ("load_workload", "parse_workload", "resolve_workload", "workload_document", "zoo",
           "zoo_documents")  # fmt: skip
_MODEL = ("Dataset", "FinetuneMethod", "Mode", "Workload", "WorkloadKind")

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


def __getattr__(name: str) -> Any:
    if name in _LOADER:
        return getattr(importlib.import_module("dlrig.workloads.loader"), name)
    if name in _MODEL:
        return getattr(importlib.import_module("dlrig.workloads.model"), name)
    raise AttributeError(f"module 'dlrig.workloads' has no attribute {name!r}")
