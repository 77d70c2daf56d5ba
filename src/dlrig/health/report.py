"""A health reading judged: `HealthReport` (pydantic, frozen), what `dlrig health --json` prints,
what the history keeps and `probe` carries; `judge_health` builds it from the readings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dlrig.enums import Severity
from dlrig.health.checks import Context, Finding, run_checks
from dlrig.health.inputs import Baseline, HealthInputs, baseline_from, baseline_to_dict
from dlrig.health.xid import load_xid_catalog
from dlrig.jsonable import to_jsonable


class HealthReport(BaseModel):
    """One judged health reading of one machine. `snapshot` is the baseline it leaves for the
    next reading (counters and where the kernel log stood); `baseline` the one it was judged
    against (None: no earlier reading was saved)."""

    model_config = ConfigDict(frozen=True)

    host: str
    taken_utc: str
    healthy: bool
    verdict: str
    counts: dict[str, int] = Field(default_factory=dict)
    sources: tuple[dict[str, Any], ...] = ()
    findings: tuple[dict[str, Any], ...] = ()
    gpus: tuple[dict[str, Any], ...] = ()
    xid_events: tuple[dict[str, Any], ...] = ()
    host_readings: dict[str, Any] = Field(default_factory=dict)
    bmc: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    snapshot: dict[str, Any] = Field(default_factory=dict)
    xid_catalog: dict[str, Any] = Field(default_factory=dict)

    @property
    def errors(self) -> tuple[dict[str, Any], ...]:
        """The findings that need an action on the machine."""
        return tuple(f for f in self.findings if f.get("severity") == Severity.ERROR.value)


def _sources(inputs: HealthInputs) -> list[dict[str, Any]]:
    def source(name: str, read: bool, detail: str | None) -> dict[str, Any]:
        return {"name": name, "status": "read" if read else "unavailable", "detail": detail}

    gpus = inputs.gpus
    log = inputs.kernel_log
    out = [
        source(
            "nvml",
            gpus is not None,
            f"{len(gpus)} GPU(s)" if gpus is not None else inputs.nvml_error,
        ),
        source(
            "kernel_log",
            log is not None and log.readable,
            None if log is None else log.error or f"{log.source}: {len(log.events)} Xid line(s)",
        ),
        source(
            "sysfs_aer",
            inputs.aer is not None,
            None if inputs.aer is None else f"{len(inputs.aer)} device(s)",
        ),
        source(
            "sysfs_edac", bool(inputs.edac), None if inputs.edac else "no EDAC memory controller"
        ),
        source(
            "sysfs_thermal",
            bool(inputs.thermal_zones),
            None if inputs.thermal_zones else "no thermal zone",
        ),
        source(
            "smartctl",
            inputs.drives is not None and bool(inputs.drives),
            None if inputs.drives is None else f"{len(inputs.drives)} drive(s)",
        ),
    ]
    if inputs.bmc is not None:
        bmc = inputs.bmc
        out.append(
            source(
                bmc.source,
                True,
                f"{bmc.address}: {len(bmc.sensors)} sensors, {len(bmc.log_entries)} log entries"
                + (f" ({bmc.product})" if bmc.product else ""),
            )
        )
    for note in inputs.notes:
        name = note.split(":", 1)[0]
        for entry in out:
            if entry["name"] == name and entry["status"] == "unavailable":
                entry["detail"] = note.split(":", 1)[1].strip()
    # A source left out on purpose is said so, not taken as unreadable.
    named = {"sysfs": ("sysfs_aer", "sysfs_edac", "sysfs_thermal"), "smart": ("smartctl",)}
    skipped = {n for s in inputs.skipped for n in named.get(s, (s,))}
    for entry in out:
        if entry["name"] in skipped:
            entry.update(status="skipped", detail="--sources")
    return out


def verdict_line(findings: tuple[Finding, ...]) -> str:
    """One line: healthy, or how many faults need an action and on which parts."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    warnings = sum(f.severity is Severity.WARNING for f in findings)
    also = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
    if not errors:
        return f"healthy: no fault needs an action{also}"
    parts = list(dict.fromkeys(f.part for f in errors))
    named = ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else "")
    return f"{len(errors)} fault{'s' if len(errors) != 1 else ''} need action: {named}{also}"


def _host_readings(inputs: HealthInputs) -> dict[str, Any]:
    aer = [
        a
        for a in inputs.aer or ()
        if a.is_nvidia_gpu or any(getattr(a, n) for n in ("correctable", "nonfatal", "fatal"))
    ]
    return {
        "pcie_aer": to_jsonable(aer),
        "edac": to_jsonable(inputs.edac or ()),
        "thermal_zones": to_jsonable(inputs.thermal_zones or ()),
        "drives": to_jsonable(inputs.drives or ()),
    }


def judge_health(
    inputs: HealthInputs,
    *,
    host: str,
    baseline: Baseline | None,
    expected_gpus: int | None = None,
    now_utc: str | None = None,
) -> HealthReport:
    """The report of a reading: every check's findings against the baseline, the verdict, and
    the readings themselves."""
    catalog = load_xid_catalog()
    context = Context(baseline, now_utc or inputs.taken_utc, expected_gpus, catalog)
    findings = run_checks(inputs, context)
    counts = {s.value: sum(f.severity is s for f in findings) for s in Severity}
    return HealthReport(
        host=host,
        taken_utc=inputs.taken_utc,
        healthy=counts[Severity.ERROR.value] == 0,
        verdict=verdict_line(findings),
        counts=counts,
        sources=tuple(_sources(inputs)),
        findings=tuple(to_jsonable(findings)),
        gpus=tuple(to_jsonable(inputs.gpus or ())),
        xid_events=tuple(to_jsonable(inputs.xids)),
        host_readings=_host_readings(inputs),
        bmc=None if inputs.bmc is None else to_jsonable(inputs.bmc),
        baseline=None
        if baseline is None
        else {"taken_utc": baseline.taken_utc, "source": baseline.source},
        snapshot=baseline_to_dict(baseline_from(inputs, "health")),
        xid_catalog={k: str(v) for k, v in catalog.source.items()},
    )


def health_summary(report: HealthReport) -> dict[str, Any]:
    """The short form `probe` and `check probe:latest` carry: the verdict, the counts, the
    findings that are errors or warnings, and the snapshot (the next reading's baseline)."""
    return {
        "taken_utc": report.taken_utc,
        "healthy": report.healthy,
        "verdict": report.verdict,
        "counts": dict(report.counts),
        "findings": [f for f in report.findings if f.get("severity") != Severity.INFO.value],
        "snapshot": dict(report.snapshot),
    }
