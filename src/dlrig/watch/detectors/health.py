"""The health detector: dlrig.health's checks (HEALTH.1-18) over a run's health samples, so
that a new Xid, an uncorrectable ECC error, a pending remap, a lost power-supply redundancy, a
failed fan or an inlet over its threshold become alarms of the run.

The baseline is the run's first health sample: counters are judged by their growth during the
run, the Xids each health sample carries are the new ones, and BMC log entries already in the
first BMC reading are history. The BMC's newest reading stands until the next one arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from dlrig.hardware.bmc import BmcReading
from dlrig.health import Baseline, Context, Finding, HealthInputs, baseline_from, run_checks
from dlrig.watch.detectors.registry import Alarm, detector
from dlrig.watch.samples import Sample

RUN_START = "start of the run"


def health_series(samples: Sequence[Sample]) -> list[tuple[float, HealthInputs]]:
    """Each health sample as the checks' inputs, with the BMC reading that stood then (its log
    entries already there at the first BMC reading left out)."""
    out: list[tuple[float, HealthInputs]] = []
    bmc: BmcReading | None = None
    seen_entries: set[str] | None = None
    for s in samples:
        h = s.health
        if h is None:
            continue
        if h.bmc is not None:
            if seen_entries is None:
                seen_entries = {e.entry_id for e in h.bmc.log_entries}
            bmc = replace(
                h.bmc,
                log_entries=tuple(e for e in h.bmc.log_entries if e.entry_id not in seen_entries),
            )
        out.append(
            (
                s.t_s,
                HealthInputs(
                    taken_utc="",
                    gpus=h.gpus or None,
                    nvml_xids=h.xids,
                    bmc=bmc,
                ),
            )
        )
    return out


def run_findings(samples: Sequence[Sample]) -> list[tuple[float, tuple[Finding, ...]]]:
    """Each health sample's findings against the run's first health sample."""
    series = health_series(samples)
    if not series:
        return []
    first = series[0][1]
    baseline: Baseline = replace(baseline_from(first, RUN_START), taken_utc="")
    expected = len(first.gpus) if first.gpus else None
    context = Context(baseline, "", expected)
    return [(t, run_checks(inputs, context)) for t, inputs in series]


@detector("HEALTH", "health")
def health(samples: Sequence[Sample]) -> list[Alarm]:
    """The guide's server sheet promises "fault alarms" for every part (section 9): each health
    finding that is an error or a warning is an alarm for as long as it lasts."""
    alarms: dict[tuple[str, str, str], Alarm] = {}
    done: list[Alarm] = []
    for t, findings in run_findings(samples):
        current: dict[tuple[str, str, str], Alarm] = {}
        for f in findings:
            if f.severity.value == "info":
                continue
            key = (f.check, f.name, f.part)
            before = alarms.get(key)
            current[key] = Alarm(
                rule=f.check,
                name=f.name,
                severity=f.severity,
                start_s=before.start_s if before is not None else t,
                end_s=t,
                message=f.message,
                gpu=f.gpu,
                fix=f.action,
                evidence={**f.evidence, "part": f.part, "source": f.source},
            )
        done.extend(a for k, a in alarms.items() if k not in current)
        alarms = current
    return done + list(alarms.values())
