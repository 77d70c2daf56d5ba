"""The planner's closed sets (kept apart so that the CLI can name them without loading more)."""

from __future__ import annotations

from enum import StrEnum


class BuildForm(StrEnum):
    """A workstation (board, case and PSU chosen separately) or a server platform."""

    WORKSTATION = "workstation"
    SERVER = "server"


class ObjectiveKind(StrEnum):
    """What the planner maximises (`--objective`)."""

    THROUGHPUT = "throughput"
    TIME_TO_TRAIN = "time-to-train"
    COST_PER_RUN = "cost-per-run"
    PERF_PER_DOLLAR = "perf-per-dollar"
    CHEAPEST = "cheapest"
