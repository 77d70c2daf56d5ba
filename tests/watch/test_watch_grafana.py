"""The shipped Grafana dashboard (docs/grafana/dlrig-cluster.json) asks only for series that
`dlrig watch --prometheus` exports, and every panel follows the Hostname variable."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from watch_helpers import idle_host, light_job, replayed_samples

from dlrig.watch.prometheus import exposition
from dlrig.watch.samples import DiskSample

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "dlrig-cluster.json"

# PromQL words that are not series names: functions, aggregations, modifiers, set operators.
PROMQL_WORDS = {
    "avg", "by", "count", "max", "min", "rate", "sum", "without", "on",
    "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
}  # fmt: skip


def _exported_names() -> set[str]:
    """Every sample name a scrape of a full sample gives: 8 GPUs, a disk, a job."""
    sample = replayed_samples("eight_gpu_box", 2)[-1]
    disk = DiskSample(name="nvme0n1", read_mb_s=1.0, write_mb_s=1.0, busy_ratio=0.1)
    sample = replace(sample, host=replace(idle_host(), disks=(disk,)), job=light_job())
    text = exposition(sample, hostname="node-a")
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def series_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects: identifiers outside label matchers,
    ranges, grouping clauses and strings that are neither functions nor PromQL words."""
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)
    names = {
        m.group()
        for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr)
        if not expr[m.end() :].lstrip().startswith("(")  # a function call
    }
    return names - PROMQL_WORDS


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def test_series_names_of_a_promql_expression() -> None:
    expr = 'max by (Hostname, gpu) (rate(DCGM_FI_DEV_PCIE_TX_THROUGHPUT_total{a=~"$b"}[1m])) == 1'
    assert series_names(expr) == {"DCGM_FI_DEV_PCIE_TX_THROUGHPUT_total"}
    assert series_names("node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes") == {
        "node_memory_MemTotal_bytes",
        "node_memory_MemAvailable_bytes",
    }


def test_every_series_a_panel_queries_is_one_the_collector_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exported = _exported_names()
    queried: set[str] = set()
    for panel in _panels(dashboard):
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = series_names(target["expr"])
            assert names, (panel["title"], target["expr"])
            assert names <= exported, (panel["title"], names - exported)
            queried |= names
    variable = next(v for v in dashboard["templating"]["list"] if v["name"] == "Hostname")
    # Grafana's label_values(SERIES, LABEL), not PromQL: the series must exist with the label.
    series, label = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"]).groups()
    assert series in exported and label == "Hostname"
    # The cluster view covers what the issue asks for: utilization, memory, power, PCIe,
    # throttle reasons, and dlrig's own bottleneck and stage figures.
    assert {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT_total",
        "dlrig_gpu_clock_event_reason",
        "dlrig_bottleneck",
        "dlrig_stage_pressure_ratio",
    } <= queried


@pytest.mark.parametrize("missing", ["DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "dlrig_no_such_metric"])
def test_a_name_the_collector_lacks_is_caught(missing: str) -> None:
    # dcgm-exporter's bare counter name is not what prometheus_client writes (it adds _total).
    assert not series_names(f'rate({missing}{{Hostname=~"$Hostname"}}[1m])') <= _exported_names()


def test_every_panel_follows_the_hostname_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    for panel in _panels(dashboard):
        for target in panel["targets"]:
            for selector in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*\{[^}]*\}", target["expr"]):
                assert 'Hostname=~"$Hostname"' in selector, (panel["title"], selector)
