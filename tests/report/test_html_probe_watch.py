"""The probe and watch pages from typed results (ProbeReport, WatchSummary and the samples),
opened in headless Chromium: charts drew, alarms are marked, nothing is requested."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import console_errors, needs_chromium, render

from dlrig.probe.report import ProbeReport
from dlrig.report.html.pages import probe_page, watch_page
from dlrig.watch.host import NvmlGpuSampler
from dlrig.watch.samples import HostSample, Sample
from dlrig.watch.summary import judge_stored_run
from support.nvml_fakes import replay_nvml


def _host(busy: float) -> HostSample:
    return HostSample(
        cpu_busy_ratio=(busy,) * 8,
        iowait_ratio=0.02,
        memory_total_bytes=64 * 10**9,
        memory_available_bytes=40 * 10**9,
        swap_used_bytes=0,
        swap_in_mb_s=0.0,
        swap_out_mb_s=0.0,
    )


def _heating_run() -> tuple[list[Sample], str]:
    """The recorded-scenario GPU that heats to its slowdown point (NVML fixture)."""
    sampler = NvmlGpuSampler(replay_nvml("gpu_heating_time_series"))
    samples = [
        Sample(t_s=float(i + 1), host=_host(0.1 + 0.01 * i), job=None, gpus=sampler.sample())
        for i in range(20)
    ]
    return samples, "python train.py --epochs 3"


def _save(tmp: Path, name: str, html: str) -> Path:
    page = tmp / f"{name}.html"
    page.write_text(html)
    return page


@pytest.mark.slow
@needs_chromium
def test_watch_page_shows_timelines_with_alarms_and_the_verdict(tmp_path: Path) -> None:
    samples, command = _heating_run()
    summary = judge_stored_run(command, 1.0, samples, db=None, run_id=1)
    page = _save(tmp_path, "watch", watch_page(summary, samples))
    shot = render(page, tmp_path / "watch.png", height=2200)
    assert console_errors(shot.log) == []
    assert len(re.findall(r'<polyline class="line', shot.dom)) >= 6  # 5 GPU charts + host
    assert len(re.findall(r'class="alarm"', shot.dom)) >= len(summary.alarms) * 5
    assert summary.verdict.summary.split()[0] in shot.dom
    assert shot.screenshot.stat().st_size > 10_000


@pytest.mark.slow
@needs_chromium
def test_probe_page_draws_measured_against_datasheet_with_the_fault_line(tmp_path: Path) -> None:
    report = ProbeReport(
        host="testbox <b>",
        time_utc="2026-12-03T07:00:00+00:00",
        quick=True,
        elapsed_s=6.0,
        disks=(
            {"mountpoint": "/data", "speed": {"cold_mb_s": 3100.0, "warm_mb_s": 9800.0}},
        ),
        loader={"points": [{"workers": w, "samples_per_s": 900.0 * w} for w in (1, 2, 4)]},
        verdicts=(
            {
                "rule": "PROBE.PERF", "severity": "warning",
                "message": "GPU 0 matmul at 61% of expected",
                "evidence": {"gpu": 0, "precision": "fp16", "measured_tflops": 101.0,
                             "datasheet_tflops": 165.2},
                "fix": "look for throttling",
            },
            {
                "rule": "PROBE.PERF", "severity": "warning",
                "message": "disk nvme0n1 reads at 900 MB/s",
                "evidence": {"disk": "nvme0n1", "read_mb_s": 900.0, "datasheet_mb_s": 7000.0},
                "fix": None,
            },
        ),
    )  # fmt: skip
    page = _save(tmp_path, "probe", probe_page(report))
    html = page.read_text()
    assert "testbox &lt;b&gt;" in html
    shot = render(page, tmp_path / "probe.png")
    assert console_errors(shot.log) == []
    assert "fault line 75%" in shot.dom  # DCGM's 0.75 rule (probe.verdicts.PASS_FRACTION)
    assert len(re.findall(r"<svg class=\"chart\"", shot.dom)) == 3
