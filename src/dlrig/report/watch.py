"""`dlrig watch` output: the live table, plain status lines, the summary, the list of runs.

Renderers return strings or rich renderables and never write; the command prints them. The
summary renders from the typed `dlrig.watch.summary.WatchSummary`, so a run replayed from the
history with `--show` reads exactly like the run did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dlrig.health.checks import sensor_state
from dlrig.report.jsonout import dumps
from dlrig.units import GIB
from dlrig.watch.samples import HealthSample, Sample
from dlrig.watch.summary import WatchSummary

if TYPE_CHECKING:
    from rich.table import Table


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.0%}"


def _opt(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def health_line(health: HealthSample) -> str | None:
    """What a health sample has to say at once: new Xids, the BMC's parts in fault, a BMC that
    stopped answering (None when nothing)."""
    parts = []
    if health.xids:
        xids = ", ".join(
            f"Xid {x.xid} on GPU {x.gpu if x.gpu is not None else x.pci_bus_id}"
            for x in health.xids[:4]
        )
        parts.append(xids)
    if health.bmc is not None:
        faults = [s.name for s in health.bmc.sensors if s.present and sensor_state(s)]
        if faults:
            parts.append("BMC: " + ", ".join(faults[:4]) + (" ..." if len(faults) > 4 else ""))
    if health.bmc_error:
        parts.append(f"BMC not answering: {health.bmc_error}")
    return "; ".join(parts) or None


def plain_line(sample: Sample, health: HealthSample | None = None) -> str:
    """One line of status for a log (no terminal): time, CPUs, job, busiest disk, GPUs, and
    what `health` (the standing health, else the sample's own) has to say."""
    host = sample.host
    parts = [
        f"t={sample.t_s:7.1f}s",
        f"cpu {_pct(host.cpu_busy_mean_ratio)} iowait {_pct(host.iowait_ratio)}",
    ]
    if sample.job is not None:
        job = sample.job
        parts.append(
            f"job {job.cpu_cores:.1f} cores ({job.processes} proc) "
            f"rss {job.rss_bytes / GIB:.1f} GiB"
        )
    if host.disks:
        disk = max(host.disks, key=lambda d: d.busy_ratio)
        parts.append(f"{disk.name} {disk.read_mb_s:.0f} MB/s busy {_pct(disk.busy_ratio)}")
    for g in sample.gpus:
        if g.lost:
            parts.append(f"gpu{g.index} LOST")
            continue
        parts.append(
            f"gpu{g.index} {_opt(g.utilization_gpu_pct, '{}%')} {_opt(g.temperature_c, '{}C')} "
            f"{_opt(g.power_w, '{:.0f}W')} {_opt(g.clock_sm_mhz, '{}MHz')}"
        )
    standing = health if health is not None else sample.health
    said = None if standing is None else health_line(standing)
    if said:
        parts.append(f"health: {said}")
    return " | ".join(parts)


def live_table(sample: Sample, command: str, health: HealthSample | None = None) -> Table:
    """A rich table of the latest sample, redrawn in place on a terminal, with what `health`
    (the standing health, else the sample's own) has to say."""
    from rich.table import Table

    host = sample.host
    table = Table(title=f"dlrig watch: {command}  (t = {sample.t_s:.1f} s)", title_justify="left")
    for header in ("part", "use", "detail"):
        table.add_column(header, justify="left")
    cores = " ".join(f"{r:.0%}" for r in host.cpu_busy_ratio[:16])
    more = " ..." if host.cpu_count > 16 else ""
    table.add_row(
        f"CPU ({host.cpu_count})",
        _pct(host.cpu_busy_mean_ratio),
        f"iowait {_pct(host.iowait_ratio)}; per CPU {cores}{more}",
    )
    if sample.job is not None:
        job = sample.job
        table.add_row(
            "job",
            f"{job.cpu_cores:.1f} cores",
            f"{job.processes} processes, {job.threads} threads, RSS {job.rss_bytes / GIB:.2f} GiB, "
            f"reads {job.read_mb_s:.0f} MB/s; main {job.main_cpu_cores:.1f} cores, "
            f"workers {job.workers_cpu_cores:.1f}",
        )
    used_gb = (host.memory_total_bytes - host.memory_available_bytes) / GIB
    table.add_row(
        "RAM",
        _pct(used_gb * GIB / host.memory_total_bytes if host.memory_total_bytes else None),
        f"{used_gb:.1f} of {host.memory_total_bytes / GIB:.1f} GiB; swap "
        f"{host.swap_in_mb_s + host.swap_out_mb_s:.1f} MB/s",
    )
    for disk in sorted(host.disks, key=lambda d: -d.busy_ratio)[:4]:
        table.add_row(
            f"disk {disk.name}",
            _pct(disk.busy_ratio),
            f"read {disk.read_mb_s:.0f} MB/s, write {disk.write_mb_s:.0f} MB/s",
        )
    for g in sample.gpus:
        if g.lost:
            table.add_row(f"GPU {g.index}", "LOST", g.error or "")
            continue
        memory = (
            f"{(g.memory_used_bytes or 0) / GIB:.1f}/{g.memory_total_gb:.0f} GiB"
            if g.memory_total_gb
            else "-"
        )
        reasons = ",".join(n for n in g.event_reason_names if n != "gpu_idle") or "-"
        table.add_row(
            f"GPU {g.index}",
            _opt(g.utilization_gpu_pct, "{}%"),
            f"mem {memory}, {_opt(g.temperature_c, '{} C')}, {_opt(g.power_w, '{:.0f}')}/"
            f"{_opt(g.power_limit_w, '{:.0f} W')}, SM {_opt(g.clock_sm_mhz, '{} MHz')}, "
            f"PCIe Gen{_opt(g.pcie_gen_current)} x{_opt(g.pcie_width_current)}, "
            f"events {reasons}",
        )
    standing = health if health is not None else sample.health
    said = None if standing is None else health_line(standing)
    if said:
        table.add_row("health", "FAULT", said)
    return table


def summary_text(summary: WatchSummary) -> str:
    """The end-of-run summary for people: verdict, evidence, fix, utilization, alarms."""
    verdict = summary.verdict
    device = "the CPU (no GPU)" if verdict.device_is_cpu else "the GPU(s)"
    lines = [
        f"dlrig watch: {summary.command}",
        f"  exit code {_opt(summary.exit_code)}"
        + (" (interrupted)" if summary.interrupted else "")
        + f", {summary.duration_s:.1f} s, {summary.samples} samples"
        + (f", run {summary.run_id} in {summary.db}" if summary.run_id else ""),
        f"  bottleneck: {verdict.bottleneck or 'none found'}"
        + (f" (slowed by {', '.join(verdict.modifiers)})" if verdict.modifiers else ""),
        f"  device computing: {device}; utilization {_pct(verdict.utilization)} "
        "(share of the time it computed)",
    ]
    if verdict.summary:
        lines.append(f"  {verdict.summary}")
    evidence = {k: v for k, v in verdict.evidence.items() if k not in ("stage_pressure",)}
    if evidence:
        lines.append("  evidence: " + ", ".join(f"{k}={_short(v)}" for k, v in evidence.items()))
    if verdict.fix:
        lines.append(f"  fix: {verdict.fix}")
    if summary.alarms:
        lines.append(f"  alarms ({len(summary.alarms)}):")
        for a in summary.alarms:
            span = f"{a.start_s:.1f}-{a.end_s:.1f} s"
            lines.append(f"    [{a.severity}] {a.rule} {span}: {a.message}")
            if a.fix:
                lines.append(f"        fix: {a.fix}")
    for warning in summary.warnings:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def summary_json(summary: WatchSummary) -> str:
    """The summary as indented JSON, every key present (None as null)."""
    return dumps(summary.model_dump(mode="json"))


def runs_table(runs: Sequence[dict[str, Any]]) -> Table:
    """Past runs: id, start, command, exit code, duration, samples, bottleneck."""
    from rich.table import Table

    table = Table(title=f"watched runs ({len(runs)})")
    for header in ("id", "started", "command", "exit", "s", "samples", "bottleneck"):
        table.add_column(
            header,
            justify="right" if header in ("id", "exit", "s", "samples") else "left",
            no_wrap=header != "command",
            overflow="ellipsis",
        )
    for run in runs:
        duration = run.get("duration_s")
        table.add_row(
            str(run["run_id"]),
            str(run.get("started_at", ""))[:16].replace("T", " "),
            str(run.get("command", "")),
            _opt(run.get("exit_code")),
            "-" if duration is None else f"{duration:.1f}",
            str(run.get("samples", 0)),
            run.get("bottleneck") or ("(unfinished)" if duration is None else "-"),
        )
    return table
