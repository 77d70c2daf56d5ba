"""The check report: severity groups, the verdict line, and JSON."""

from __future__ import annotations

import io
import json

from rich.console import Console
from rules_fixtures import build, check, desktop

from dlrig.report.check import check_json, check_renderable, verdict
from dlrig.rules import check_build


def render(doc: dict[str, object]) -> str:
    b = build(doc)
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(check_renderable(b, check_build(b)))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def test_verdict_counts_each_severity() -> None:
    failing = check(desktop(gpu_fields={"cooler": "open-air"}))
    assert verdict(failing).startswith("FAIL: 1 error (")
    assert verdict(check(desktop())).startswith("OK: no errors (0 warnings, ")


def test_table_lists_errors_before_warnings_before_notes() -> None:
    doc = desktop(
        gpu_fields={"cooler": "open-air"},
        cpu={"spec": {**desktop()["cpu"]["spec"], "cores": 6, "threads": 12}},
    )
    out = render(doc)
    assert out.index("COOL.3") < out.index("CPU.1") < out.index("PSU.1")  # error, warning, info
    assert "fix: blower-style cards" in out
    assert out.rstrip().splitlines()[-1].startswith("FAIL: 1 error")


def test_markup_in_a_build_name_is_printed_as_text() -> None:
    out = render({**desktop(), "name": "[bold]my[/bold] rig"})
    assert "[bold]my[/bold] rig" in out


def test_json_has_the_build_document_and_the_findings() -> None:
    b = build(desktop())
    doc = json.loads(check_json(b, check_build(b)))
    assert doc["build"]["name"] == "test desktop"
    assert doc["ok"] is True
    psu = next(f for f in doc["findings"] if f["rule"] == "PSU.1")
    assert psu["evidence"]["recommended_w"] == 1400
