"""The performance model: step-time stages, memory, power, energy. Pure functions.

`estimate(build, workload)` composes them; each sibling module computes one kind of quantity.
"""

from __future__ import annotations

from dlrig.model.estimate import estimate, workload_memory_gb
from dlrig.model.result import Estimate, MemoryEstimate, PowerEstimate, RunEstimate

__all__ = [
    "Estimate",
    "MemoryEstimate",
    "PowerEstimate",
    "RunEstimate",
    "estimate",
    "workload_memory_gb",
]
