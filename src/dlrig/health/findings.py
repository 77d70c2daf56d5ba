"""The health checks' common ground: `Finding` (one judged condition), `Context` (the baseline,
the time, the expected GPU count, the Xid catalog), the `check` registry each check module adds
to, `run_checks`, and the growth helpers.

Severity is what the machine needs: `error` a fault that needs an action on the machine (a
reset, a reboot, a part replaced: `dlrig health` exits 1), `warning` something to look at or an
action on the job, `info` a fact without a fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dlrig.enums import Severity
from dlrig.hardware.nvml.health import GpuHealth
from dlrig.health.inputs import Baseline, HealthInputs
from dlrig.health.xid import XidCatalog, load_xid_catalog

SEL_WINDOW_H = 24.0
"""Without a baseline, BMC log entries of the last day are judged; older ones are history."""


@dataclass(frozen=True)
class Finding:
    """One health finding: the check, how severe, the part in the source's own words, what was
    seen, what to do, and the figures behind it."""

    check: str
    name: str
    severity: Severity
    part: str
    source: str
    message: str
    action: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    gpu: int | None = None


@dataclass(frozen=True)
class Context:
    """What the checks judge against: the earlier reading (None: none saved), the time now,
    the GPU count the last probe saw, and the Xid catalog."""

    baseline: Baseline | None
    now_utc: str
    expected_gpus: int | None = None
    catalog: XidCatalog = field(default_factory=load_xid_catalog)

    @property
    def since(self) -> str:
        """Words for the span a growth covers."""
        if self.baseline is None:
            return "since the driver loaded"
        if not self.baseline.taken_utc:
            return f"since the {self.baseline.source}"
        return f"since the last {self.baseline.source} ({self.baseline.taken_utc[:16]} UTC)"


Check = Callable[[HealthInputs, Context], list[Finding]]


@dataclass(frozen=True)
class RegisteredCheck:
    """A check with its id and name."""

    check_id: str
    name: str
    run: Check


CHECKS: list[RegisteredCheck] = []


def check(check_id: str, name: str) -> Callable[[Check], Check]:
    """Register a check under its id."""

    def register(fn: Check) -> Check:
        CHECKS.append(RegisteredCheck(check_id, name, fn))
        # In the order of their numbers, whichever check module was imported first.
        CHECKS.sort(key=lambda c: int(c.check_id.split(".")[1]))
        return fn

    return register


def run_checks(inputs: HealthInputs, context: Context) -> tuple[Finding, ...]:
    """Every registered check, findings most severe first (then in check order)."""
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    found = [f for c in CHECKS for f in c.run(inputs, context)]
    return tuple(sorted(found, key=lambda f: order[f.severity]))


def live_gpus(inputs: HealthInputs) -> Iterator[GpuHealth]:
    return (g for g in inputs.gpus or () if not g.lost)


def grown(context: Context, key: str, now: float | None) -> float | None:
    return None if context.baseline is None else context.baseline.growth(key, now)


def new_or_since_boot(context: Context, key: str, now: float | None) -> tuple[float | None, str]:
    """A counter's growth since the baseline, or (without one, or one that lacks this
    counter) its count since boot: for counters whose every count is a fault."""
    new = grown(context, key, now)
    if new is not None:
        return new, context.since
    return now, "since boot"
