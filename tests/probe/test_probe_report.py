"""The probe's terminal rendering and its feed-rate source, on scenarios without measuring."""

from __future__ import annotations

import io

from probe_helpers import disk, scenario_result
from rich.console import Console

from dlrig.catalog import load_catalog
from dlrig.probe.document import probe_build_document
from dlrig.probe.feed import feed_need
from dlrig.probe.judge import judge
from dlrig.probe.report import ProbeReport, probe_report
from dlrig.report.probe import distributed_summary, probe_summary
from dlrig.workloads import load_workload

CATALOG = load_catalog()


def _render(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(renderable)
    return out.getvalue()


def _data(scenario: str) -> ProbeReport:
    result = scenario_result(scenario, disks=(disk(95.0),))
    doc = probe_build_document(result, CATALOG)
    return probe_report(result, judge(result, CATALOG, doc["build"], feed=lambda d, c: None), doc)


def test_lost_gpu_renders_as_lost_with_its_error_verdict() -> None:
    text = _render(probe_summary(_data("lost_gpu")))
    assert "LOST (GPU is lost)" in text
    assert "PROBE.LOST" in text and "fix:" in text


def test_machine_without_gpu_renders_the_reason() -> None:
    text = _render(probe_summary(_data("laptop_without_gpu")))
    assert "none: NVML Shared Library Not Found" in text


def test_feed_need_is_the_model_rate_times_the_zoo_sample_size() -> None:
    need = feed_need({"name": "box", "gpus": [{"model": "GeForce RTX 3090", "count": 4}]}, CATALOG)
    assert need is not None and need.job == "a 4-GPU ResNet-50 job"
    dataset = load_workload("resnet50").dataset
    assert dataset is not None
    assert need.need_mb_s == need.samples_per_s * dataset.bytes_per_sample / 1e6


def test_feed_need_without_gpus_uses_the_guides_four_gpu_workstation() -> None:
    need = feed_need({"name": "box"}, CATALOG)
    assert need is not None and need.job == "a 4-GPU ResNet-50 job on GeForce RTX 4090s"


def test_distributed_summary_names_slow_ranks() -> None:
    data = {
        "backend": "gloo",
        "world_size": 2,
        "ranks": [
            {"rank": 0, "host": "a", "local_rank": 0, "compute_tflops": 1.0},
            {"rank": 1, "host": "b", "local_rank": 0, "compute_tflops": 0.5},
        ],
        "allreduce": [{"bytes": 1024, "time_s": 0.001, "algbw_gb_s": 0.001, "busbw_gb_s": 0.001}],
        "slow_ranks": [1],
        "method": "test",
    }
    text = _render(distributed_summary(data))
    assert "slow ranks: 1" in text and "1,024" in text
