"""Alarms and the detector registry: each detector registered under the guide rule it applies,
`detect_all` runs them over a series."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlrig.enums import Bottleneck, Modifier, Severity
from dlrig.watch.samples import Sample


@dataclass(frozen=True)
class Alarm:
    """A condition seen from `start_s` to `end_s` (seconds since the job started)."""

    rule: str
    name: str
    severity: Severity
    start_s: float
    end_s: float
    message: str
    gpu: int | None = None
    modifier: Modifier | None = None
    bottleneck: Bottleneck | None = None
    fix: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


Detector = Callable[[Sequence[Sample]], list[Alarm]]


@dataclass(frozen=True)
class RegisteredDetector:
    """A detector with the rule id it applies."""

    rule: str
    name: str
    detect: Detector


DETECTORS: list[RegisteredDetector] = []


def detector(rule: str, name: str) -> Callable[[Detector], Detector]:
    """Register a detector under its guide rule id."""

    def register(fn: Detector) -> Detector:
        DETECTORS.append(RegisteredDetector(rule, name, fn))
        return fn

    return register


def detect_all(samples: Sequence[Sample]) -> tuple[Alarm, ...]:
    """Every registered detector over the series, alarms in time order."""
    alarms = [alarm for d in DETECTORS for alarm in d.detect(samples)]
    return tuple(sorted(alarms, key=lambda a: (a.start_s, a.rule, a.gpu or 0)))
