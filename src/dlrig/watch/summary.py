"""The summary of a watched run, typed: what `--json` prints, what the history keeps (with
`model_dump_json`), what `--show` replays. Keys per design.md: command, exit_code, duration_s,
samples, db, verdict {bottleneck, evidence, ...}, alarms [...]; more keys are added beside them.

A run that never finished (dlrig was killed) is judged here from its stored samples
(`judge_stored_run`): the history only stores and loads."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from dlrig.jsonable import to_jsonable
from dlrig.watch.detectors import Alarm, detect_all
from dlrig.watch.runner import WatchResult
from dlrig.watch.samples import Sample
from dlrig.watch.verdict import Verdict, judge

UNFINISHED_WARNING = "the run did not finish (dlrig was stopped): judged from its stored samples"


class VerdictSummary(BaseModel):
    """The verdict block: bottleneck (a stage name or None) and evidence first."""

    model_config = ConfigDict(frozen=True)

    bottleneck: str | None
    evidence: dict[str, Any]
    fix: str | None
    modifiers: tuple[str, ...]
    utilization: float | None
    compute_device: str
    device_is_cpu: bool
    summary: str


class AlarmSummary(BaseModel):
    """One alarm with its times, rule, and the fix."""

    model_config = ConfigDict(frozen=True)

    rule: str
    name: str
    severity: str
    start_s: float
    end_s: float
    gpu: int | None
    message: str
    modifier: str | None
    bottleneck: str | None
    fix: str | None
    evidence: dict[str, Any]


class WatchSummary(BaseModel):
    """A watched run: the command, its exit, the series' size, the verdict and the alarms;
    `db` is the history database's path (None when the run was not recorded)."""

    model_config = ConfigDict(frozen=True)

    command: str
    argv: tuple[str, ...]
    exit_code: int | None
    duration_s: float
    samples: int
    interval_s: float
    db: str | None
    run_id: int | None
    interrupted: bool
    verdict: VerdictSummary
    alarms: tuple[AlarmSummary, ...]
    warnings: tuple[str, ...]


def verdict_summary(verdict: Verdict) -> VerdictSummary:
    """The verdict as stored and printed."""
    return VerdictSummary(
        bottleneck=None if verdict.bottleneck is None else verdict.bottleneck.value,
        evidence=to_jsonable(verdict.evidence),
        fix=verdict.fix,
        modifiers=tuple(m.value for m in verdict.modifiers),
        utilization=verdict.utilization,
        compute_device="cpu" if verdict.device_is_cpu else "gpu",
        device_is_cpu=verdict.device_is_cpu,
        summary=verdict.summary,
    )


def alarm_summary(alarm: Alarm) -> AlarmSummary:
    """An alarm as stored and printed."""
    return AlarmSummary(
        rule=alarm.rule,
        name=alarm.name,
        severity=alarm.severity.value,
        start_s=alarm.start_s,
        end_s=alarm.end_s,
        gpu=alarm.gpu,
        message=alarm.message,
        modifier=None if alarm.modifier is None else alarm.modifier.value,
        bottleneck=None if alarm.bottleneck is None else alarm.bottleneck.value,
        fix=alarm.fix,
        evidence=to_jsonable(alarm.evidence),
    )


def watch_summary(
    result: WatchResult, *, db: str | None, run_id: int | None, interval_s: float
) -> WatchSummary:
    """The summary of a run that ended under dlrig."""
    return WatchSummary(
        command=shlex.join(result.command),
        argv=result.command,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        samples=result.sample_count,
        interval_s=interval_s,
        db=db,
        run_id=run_id,
        interrupted=result.interrupted,
        verdict=verdict_summary(result.verdict),
        alarms=tuple(alarm_summary(a) for a in result.alarms),
        warnings=result.warnings,
    )


def judge_stored_run(
    command: str,
    interval_s: float,
    samples: Sequence[Sample],
    *,
    db: str | None,
    run_id: int,
) -> WatchSummary:
    """The summary of a run whose dlrig was stopped before it could write one: the detectors
    and the verdict run again on the samples the history kept."""
    alarms = detect_all(samples)
    return WatchSummary(
        command=command,
        argv=tuple(shlex.split(command)),
        exit_code=None,
        duration_s=samples[-1].t_s if samples else 0.0,
        samples=len(samples),
        interval_s=interval_s,
        db=db,
        run_id=run_id,
        interrupted=True,
        verdict=verdict_summary(judge(samples, alarms)),
        alarms=tuple(alarm_summary(a) for a in alarms),
        warnings=(UNFINISHED_WARNING,),
    )
