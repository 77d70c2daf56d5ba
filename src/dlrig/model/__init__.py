"""The performance model: step-time stages, memory, power, energy. Pure functions.

`estimate(build, workload)` composes them; each sibling module computes one kind of quantity.
The names below load on first use, so that a module that needs one quantity (the rules read
`model.power`) does not import the whole model with it (`dlrig check` starts faster).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlrig.model.estimate import estimate, workload_memory_gb
    from dlrig.model.result import Estimate, MemoryEstimate, PowerEstimate, RunEstimate

_HOMES = {
    "estimate": "dlrig.model.estimate",
    "workload_memory_gb": "dlrig.model.estimate",
    "Estimate": "dlrig.model.result",
    "MemoryEstimate": "dlrig.model.result",
    "PowerEstimate": "dlrig.model.result",
    "RunEstimate": "dlrig.model.result",
}

__all__ = [
    "Estimate",
    "MemoryEstimate",
    "PowerEstimate",
    "RunEstimate",
    "estimate",
    "workload_memory_gb",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dlrig.model' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


class _Package(types.ModuleType):
    """The package whose function `estimate` shares its name with the submodule that defines
    it: when the submodule loads, the import system sets the package's attribute to it, which
    would hide the function; the exported names stay the functions and classes."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
