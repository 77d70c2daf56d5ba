"""`dlrig check` output: a table of findings grouped by severity with a one-line verdict, or
design.md's JSON `{"build", "ok", "findings": [{"rule", "severity", "message", "evidence",
"fix"}]}`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlrig.enums import Severity
from dlrig.report.jsonout import dumps

if TYPE_CHECKING:
    from rich.console import Group

    from dlrig.catalog.loader import Catalog
    from dlrig.machine.model import Build
    from dlrig.rules import CheckResult

SEVERITY_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)
STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def verdict(result: CheckResult) -> str:
    """One line: does the build work, and how many findings of each severity."""
    n_err, n_warn, n_info = (len(result.of(s)) for s in SEVERITY_ORDER)
    counts = (
        f"{n_warn} warning{'s' if n_warn != 1 else ''}, {n_info} note{'s' if n_info != 1 else ''}"
    )
    if n_err:
        return f"FAIL: {n_err} error{'s' if n_err != 1 else ''} ({counts})"
    return f"OK: no errors ({counts})"


def check_document(
    build: Build, result: CheckResult, catalog: Catalog | None = None
) -> dict[str, Any]:
    """The JSON document of a check; "build" is the build file's content (with its name)."""
    from dlrig.machine.document import build_to_document

    return {
        "build": build_to_document(build, catalog),
        "ok": result.ok,
        "findings": [
            {
                "rule": f.rule,
                "severity": f.severity.value,
                "message": f.message,
                "evidence": f.evidence,
                "fix": f.fix,
            }
            for f in result.findings
        ],
    }


def check_json(build: Build, result: CheckResult, catalog: Catalog | None = None) -> str:
    """The check as indented JSON."""
    return dumps(check_document(build, result, catalog))


def check_renderable(build: Build, result: CheckResult, workload_name: str | None = None) -> Group:
    """A rich renderable: heading, findings table (errors, warnings, notes), verdict."""
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    gpus = ", ".join(f"{g.count}x {g.gpu.name}" for g in build.gpus) or "no GPUs"
    heading = Text.assemble(
        ("check ", "bold"),
        (build.name, "bold"),
        f"  ({gpus}" + (f"; workload {workload_name}" if workload_name else "") + ")",
    )
    table = Table(show_header=True, header_style="bold", expand=False, show_lines=False)
    table.add_column("severity", no_wrap=True)
    table.add_column("rule", no_wrap=True)
    table.add_column("finding", overflow="fold")
    for severity in SEVERITY_ORDER:
        for f in result.of(severity):
            text = Text(f.message)
            if f.fix:
                text.append(f"\nfix: {f.fix}", style="dim")
            table.add_row(Text(severity.value, style=STYLE[severity]), escape(f.rule), text)
    line = verdict(result)
    style = "bold green" if result.ok else "bold red"
    return Group(heading, table, Text(line, style=style))
