"""`dlrig health` output: the terminal sheet (verdict, findings, GPUs, the BMC's parts, the
sources read) and the JSON. Renderers return strings or rich renderables and never write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlrig.hardware.nvml import ClockEventReason
from dlrig.health import HealthReport
from dlrig.report.jsonout import dumps

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table

_STYLE = {"error": "bold red", "warning": "yellow", "info": "blue"}
_HEADINGS = {"error": "FAULT", "warning": "warn", "info": "note"}


def health_json(report: HealthReport) -> str:
    """The report as indented JSON, every key present."""
    return dumps(report.model_dump(mode="json"))


def _opt(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def throttle_names(bits: int | None) -> str:
    """The active clock event reasons but idle, comma-separated ("-" when none or unknown)."""
    if bits is None:
        return "-"
    names = [
        str(r.name).lower()
        for r in ClockEventReason
        if bits & int(r) and r is not ClockEventReason.GPU_IDLE
    ]
    return ",".join(names) or "-"


def _findings_table(report: HealthReport) -> Table:
    from rich.table import Table

    table = Table(title=f"findings ({len(report.findings)})", title_justify="left")
    for header in ("", "check", "part", "what", "do"):
        table.add_column(header, overflow="fold")
    for f in report.findings:
        severity = str(f.get("severity"))
        part, message = str(f.get("part")), str(f.get("message"))
        # The part has its own column: the message without it, where it opens with it.
        message = message.removeprefix(f"{part}: ")
        table.add_row(
            f"[{_STYLE.get(severity, '')}]{_HEADINGS.get(severity, severity)}[/]",
            str(f.get("check")),
            part,
            message,
            str(f.get("action") or ""),
        )
    return table


def _gpu_table(report: HealthReport) -> Table:
    from rich.table import Table

    table = Table(title=f"GPUs ({len(report.gpus)})", title_justify="left")
    for header in (
        "#",
        "GPU",
        "ECC uncorr. vol/agg",
        "remapped rows c/u",
        "remap",
        "retired pages",
        "PCIe replays",
        "NVLink errors",
        "throttle",
    ):
        table.add_column(header, overflow="fold")
    for g in report.gpus:
        if g.get("lost"):
            table.add_row(str(g["index"]), "LOST", g.get("error") or "", "", "", "", "", "", "")
            continue
        links = g.get("nvlink_errors")
        nvlink = "-"
        if links:
            total = sum(
                (link.get(k) or 0)
                for link in links
                for k in ("replay", "recovery", "crc_flit", "crc_data")
            )
            nvlink = f"{total} on {len(links)} links"
        remap = (
            "FAILED"
            if g.get("remap_failure")
            else "pending"
            if g.get("remap_pending")
            else ("-" if g.get("remap_pending") is None else "ok")
        )
        retired = (
            "-"
            if g.get("retired_pages_sbe") is None and g.get("retired_pages_dbe") is None
            else f"{g.get('retired_pages_sbe') or 0}+{g.get('retired_pages_dbe') or 0}"
            + (" pending" if g.get("retired_pages_pending") else "")
        )
        table.add_row(
            str(g["index"]),
            str(g.get("name") or "?"),
            f"{_opt(g.get('ecc_volatile_uncorrected'))}/{_opt(g.get('ecc_aggregate_uncorrected'))}",
            f"{_opt(g.get('remapped_rows_correctable'))}/"
            f"{_opt(g.get('remapped_rows_uncorrectable'))}",
            remap,
            retired,
            _opt(g.get("pcie_replay_count")),
            nvlink,
            throttle_names(g.get("clocks_event_reasons")),
        )
    return table


def _bmc_table(bmc: dict[str, Any]) -> Table:
    from rich.table import Table

    title = f"BMC {bmc.get('address')} ({bmc.get('source')})"
    if bmc.get("product"):
        title += f": {bmc['product']}"
    table = Table(title=title, title_justify="left")
    for header in ("part", "name", "reading", "health", "limits"):
        table.add_column(header, overflow="fold")
    order = ("power_supply", "fan", "temperature", "voltage", "power")
    sensors = sorted(
        bmc.get("sensors") or (),
        key=lambda s: order.index(s["kind"]) if s["kind"] in order else len(order),
    )
    for s in sensors:
        if not s.get("present", True):
            continue
        limits = s.get("thresholds") or {}
        shown = ", ".join(
            f"{k.replace('_', ' ')} {v:g}" for k, v in limits.items() if v is not None
        )
        reading = "-" if s.get("reading") is None else f"{s['reading']:g} {s.get('units') or ''}"
        health = s.get("health") or "-"
        style = {"Critical": "bold red", "Warning": "yellow"}.get(health, "")
        table.add_row(
            str(s["kind"]).replace("_", " "),
            str(s["name"]),
            reading.strip(),
            f"[{style}]{health}[/]" if style else health,
            shown,
        )
    for r in bmc.get("redundancy") or ():
        health = r.get("health") or "-"
        style = {"Critical": "bold red", "Warning": "yellow"}.get(health, "")
        members = (
            f"{r.get('members_ok')}/{len(r.get('members') or ())} ok" if r.get("members") else ""
        )
        table.add_row(
            "redundancy",
            str(r["name"]),
            members,
            f"[{style}]{health}[/]" if style else health,
            f"needs {r['min_needed']}" if r.get("min_needed") is not None else "",
        )
    return table


def _sources_line(report: HealthReport) -> str:
    read = [s["name"] for s in report.sources if s["status"] == "read"]
    unread = [
        f"{s['name']} ({s['detail']})" if s.get("detail") else s["name"]
        for s in report.sources
        if s["status"] == "unavailable"
    ]
    skipped = [s["name"] for s in report.sources if s["status"] == "skipped"]
    line = "read: " + (", ".join(read) or "nothing")
    if unread:
        line += "; not readable: " + "; ".join(unread)
    if skipped:
        line += "; left out (--sources): " + ", ".join(skipped)
    return line


def health_sheet(report: HealthReport) -> Group:
    """The sheet for people: verdict first, then findings, GPUs, the BMC and the sources."""
    from rich.console import Group
    from rich.text import Text

    style = "bold green" if report.healthy else "bold red"
    against = (
        f"growth judged since the {report.baseline['source']} of {report.baseline['taken_utc']}"
        if report.baseline
        else "no earlier reading saved: counters since the driver loaded, logs of this boot "
        "(dlrig health --save or dlrig probe --save keeps one)"
    )
    parts: list[Any] = [
        Text(f"health of {report.host} at {report.taken_utc}"),
        Text(report.verdict, style=style),
        Text(against, style="dim"),
    ]
    if report.findings:
        parts.append(_findings_table(report))
    if report.gpus:
        parts.append(_gpu_table(report))
    if report.bmc:
        parts.append(_bmc_table(report.bmc))
    parts.append(Text(_sources_line(report), style="dim"))
    return Group(*parts)
