"""The shipped Grafana alert rules (docs/grafana/dlrig-alerts.yaml) ask only for series that
`dlrig watch --prometheus` exports with health readings and a BMC, each rule in Grafana's
provisioning form: a Prometheus query and a threshold on it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from test_watch_grafana import series_names
from test_watch_health import _bmc, _gpus
from watch_helpers import idle_host

from dlrig.hardware.nvml.health import XidEvent
from dlrig.watch.prometheus import WatchCollector
from dlrig.watch.samples import HealthSample, Sample
from support.nvml_fakes import replay_nvml

ALERTS = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "dlrig-alerts.yaml"


def _exported() -> set[str]:
    """Every sample name a scrape gives with GPUs, health, an Xid, a lost GPU and a BMC."""
    collector = WatchCollector("node-a")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    readings = replay_nvml("lost_gpu").read_gpus()
    # A V100 beside the H100s: page retirement is reported before Ampere only.
    (v100,) = replay_nvml("health_v100_retired_pages").read_health()
    gpus = (*_gpus(), replace(v100, index=2))
    health = HealthSample(
        gpus=gpus, xids=(XidEvent(79, "nvml", gpu=0),), bmc=_bmc("faulted_legacy")
    )
    collector.update(Sample(t_s=1.0, host=idle_host(), job=None, gpus=readings, health=health))
    text = generate_latest(registry).decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def test_every_rule_queries_exported_series_with_a_threshold() -> None:
    document = yaml.safe_load(ALERTS.read_text())
    assert document["apiVersion"] == 1
    (group,) = document["groups"]
    exported = _exported()
    uids = set()
    for rule in group["rules"]:
        uids.add(rule["uid"])
        query, threshold = rule["data"]
        assert query["refId"] == "A" and threshold["datasourceUid"] == "__expr__"
        assert rule["condition"] == "B" and threshold["model"]["expression"] == "A"
        missing = series_names(query["model"]["expr"]) - exported
        assert not missing, (rule["uid"], missing)
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    # The alarms each have a rule.
    assert {
        "dlrig-gpu-xid",
        "dlrig-gpu-ecc-dbe",
        "dlrig-gpu-remap-pending",
        "dlrig-bmc-psu",
        "dlrig-bmc-fan",
        "dlrig-bmc-temperature",
    } <= uids
