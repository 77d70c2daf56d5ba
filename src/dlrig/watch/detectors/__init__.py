"""Detectors: pure functions over a run's samples, each raising alarms with their times.

One detector per condition, registered with the guide rule it applies (or a WATCH.n id for the
monitor's own health checks, in the guide's form); the docstring says why. A detector sees the
whole series, so the same code serves the live run and `dlrig watch --show` on stored samples.

- `registry`: `Alarm`, the `detector` decorator, `detect_all`.
- `thresholds`: the figures the detectors and the verdict judge by.
- `series`: runs of a condition and each GPU's readings; `pressure`: the job's load on the
  host's input stages in one sample.
- `gpu` and `host`: the detectors themselves, registered on import (here).
- `health`: dlrig.health's checks over the run's health samples (HEALTH.1-18).
"""

from dlrig.watch.detectors import gpu, health, host
from dlrig.watch.detectors.registry import DETECTORS, Alarm, detect_all

__all__ = ["DETECTORS", "Alarm", "detect_all", "gpu", "health", "host"]
