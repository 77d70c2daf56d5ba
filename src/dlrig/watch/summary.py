"""The summary of a watched run as plain JSON values: what `--json` prints, what the history
keeps, what `--show` replays. Keys per design.md: command, exit_code, duration_s, samples, db,
verdict {bottleneck, evidence, ...}, alarms [...]; more keys are added beside them."""

from __future__ import annotations

import shlex
from typing import Any

from dlrig.report.jsonout import to_jsonable
from dlrig.watch.detectors import Alarm
from dlrig.watch.runner import WatchResult
from dlrig.watch.verdict import Verdict


def verdict_dict(verdict: Verdict) -> dict[str, Any]:
    """The verdict block: bottleneck (a stage name or None) and evidence first."""
    return {
        "bottleneck": None if verdict.bottleneck is None else verdict.bottleneck.value,
        "evidence": to_jsonable(verdict.evidence),
        "fix": verdict.fix,
        "modifiers": [m.value for m in verdict.modifiers],
        "utilization": verdict.utilization,
        "compute_device": "cpu" if verdict.device_is_cpu else "gpu",
        "device_is_cpu": verdict.device_is_cpu,
        "summary": verdict.summary,
    }


def alarm_dict(alarm: Alarm) -> dict[str, Any]:
    """One alarm with its times, rule, and the fix."""
    return {
        "rule": alarm.rule,
        "name": alarm.name,
        "severity": alarm.severity.value,
        "start_s": alarm.start_s,
        "end_s": alarm.end_s,
        "gpu": alarm.gpu,
        "message": alarm.message,
        "modifier": None if alarm.modifier is None else alarm.modifier.value,
        "bottleneck": None if alarm.bottleneck is None else alarm.bottleneck.value,
        "fix": alarm.fix,
        "evidence": to_jsonable(alarm.evidence),
    }


def summary_dict(
    result: WatchResult, *, db: str | None, run_id: int | None, interval_s: float
) -> dict[str, Any]:
    """The run's summary; `db` is the history database's path (None when not recorded)."""
    return {
        "command": shlex.join(result.command),
        "argv": list(result.command),
        "exit_code": result.exit_code,
        "duration_s": result.duration_s,
        "samples": result.sample_count,
        "interval_s": interval_s,
        "db": db,
        "run_id": run_id,
        "interrupted": result.interrupted,
        "verdict": verdict_dict(result.verdict),
        "alarms": [alarm_dict(a) for a in result.alarms],
        "warnings": list(result.warnings),
    }
