"""Issue 39: a page carries every warning and figure that the terminal and `--json` carry.

Each command runs once through the real CLI with `--html`, so that the terminal's output and
the page come from one result (a plan's search time included). Every piece of the terminal's
output (each table cell, each line, split where rich pads columns) must be in the page's text
outside its charts (the SVGs do not count: a figure has to be readable on the page), and
every warning and error `--json` gives must be there word for word. The probe and watch pages
are checked the same way against the renderers the commands print, from typed results (no
hardware needed)."""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
SPACED = EXAMPLES / "2x-4090-spaced-workstation.yaml"
BLOWER = EXAMPLES / "4x-blower-workstation.yaml"
BUDGET = EXAMPLES / "budget-1gpu-3090.yaml"
OPEN_AIR = EXAMPLES / "4x-open-air-workstation.yaml"
BOX = "│┃┏┓┗┛┡┩┠┨╇┯┷━─┳┻╋┼└┘┌┐├┤┬┴═║╭╮╰╯"

pytestmark = pytest.mark.slow


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400"}  # wide: no cell wrapped, no text cut
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False, env=env
    )


def page_text(page: str) -> str:
    """What a reader reads on the page: no charts, no style, tags gone, spaces collapsed."""
    body = page.split("<body>", 1)[1]
    body = re.sub(r"<svg.*?</svg>", " ", body, flags=re.S)
    body = re.sub(r"<[^>]+>", " ", body)
    return " ".join(html_lib.unescape(body).split())


def pieces(terminal: str) -> list[str]:
    """The terminal's output cut into what must each be on the page: its lines, split at the
    box-drawing characters and at the runs of spaces rich pads columns with."""
    found = []
    for line in terminal.splitlines():
        for part in re.split(rf"[{BOX}]|\s{{2,}}", line):
            text = " ".join(part.split())
            if text:
                found.append(text)
    return found


def assert_carries(page: str, terminal: str) -> None:
    text = page_text(page)
    missing = [p for p in pieces(terminal) if p not in text]
    assert missing == [], f"on the terminal, not on the page: {missing[:5]}"


def run_with_page(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    page = tmp_path / "page.html"
    out = dlrig(*args, "--html", str(page))
    assert "Traceback" not in out.stderr, out.stderr
    return out, page.read_text()


CASES = {
    "estimate, training": (["estimate", str(SPACED), "--workload", "resnet50"], 0),
    # A batch that runs as accumulated micro-batches: GPU.4's warning opens the output.
    "estimate, micro-batches": (["estimate", str(BLOWER), "--workload", "llama-3-8b-lora"], 0),
    "estimate, serving": (
        ["estimate", str(SPACED), "--workload", "llama-3.1-8b-serve", "--set", "serve.users=16"],
        0,
    ),
    "estimate, does not fit": (["estimate", str(BUDGET), "--workload", "llama-3.1-405b-serve"], 1),
    "estimate --compare, refused values": (
        [
            "estimate",
            str(SPACED),
            "--workload",
            "resnet50",
            "--compare",
            "cpu=AMD Ryzen 9 7950X,AMD Ryzen Threadripper 7960X",
        ],
        0,
    ),
    "plan, with warnings": (
        ["plan", "--workload", "llama-3.1-70b-serve", "--budget", "20000"],
        0,
    ),
    "plan, two workloads": (
        ["plan", "--workload", "resnet50", "--workload", "bert-base-squad:0.5", "--budget", "6000"],
        0,
    ),
    "compare": (
        ["compare", str(SPACED), str(BUDGET), str(OPEN_AIR), "--workload", "resnet50"],
        0,
    ),
    "check": (["check", str(OPEN_AIR), "--workload", "resnet50"], 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_page_carries_everything_the_terminal_prints(case: str, tmp_path: Path) -> None:
    args, code = CASES[case]
    out, page = run_with_page(tmp_path, *args)
    assert out.returncode == code, out.stderr
    assert_carries(page, out.stdout)


def test_the_plan_page_carries_each_builds_warnings_that_json_gives(tmp_path: Path) -> None:
    """The issue's plan: PCIE.3/PSU.1-style warnings per build, dropped by the old page."""
    out, page = run_with_page(
        tmp_path, "plan", "--workload", "llama-3.1-70b-serve", "--budget", "20000", "--json"
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    warnings = [w for b in doc["builds"] for w in b["warnings"]]
    assert warnings, "the case must have warnings to carry"
    text = page_text(page)
    for w in warnings:
        assert f"{w['rule']}: {w['message']}" in text
    # One rate everywhere: the page's rates are the JSON's, in the terminal's rounding.
    from dlrig.plan.explain import rate

    for b in doc["builds"]:
        assert rate(b["samples_per_s"]) in text


def test_the_compare_page_names_each_warning_json_counts(tmp_path: Path) -> None:
    out, page = run_with_page(
        tmp_path, "compare", str(SPACED), str(OPEN_AIR), "--workload", "resnet50", "--json"
    )
    assert out.returncode == 0, out.stderr
    text = page_text(page)
    rows = json.loads(out.stdout)["builds"]
    named = [f for r in rows for f in (*r["errors"], *r["warnings"])]
    assert any(f["severity"] == "warning" for f in named)
    for f in named:
        assert f"{f['severity']} {f['rule']}: {f['message']}" in text


def test_the_serving_page_shows_the_serving_figures_json_gives(tmp_path: Path) -> None:
    """Time to first token, per-user speed, users that fit and the KV cache, as JSON has them
    (in the terminal's rounding), and the throughput is the output tokens/s in total."""
    out, page = run_with_page(
        tmp_path, "estimate", str(SPACED), "--workload", "llama-3.1-8b-serve",
        "--set", "serve.users=16", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    s = doc["serving"]
    from dlrig.report.estimate import ms

    text = page_text(page)
    assert f"time to first token {ms(s['ttft_s'])}" in text
    assert f"{s['tokens_per_s_per_user']:,.1f} tokens/s per user" in text
    assert f"users whose contexts fit at once: {s['max_users_fit']}" in text
    assert f"KV cache {s['memory']['kv_per_user_gb']:.2f} GiB per user" in text
    assert doc["throughput"]["samples_per_s"] == s["tokens_per_s_total"]
    assert f"{s['tokens_per_s_total']:,.0f} output tokens/s in total" in text


def _printed(renderable: RenderableType) -> str:
    console = Console(width=400, record=True, color_system=None, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def _probe_report() -> object:
    """A probe of a 4-GPU box (NVML scenario) with a measured disk and RAM bandwidth."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "probe"))
    from dataclasses import replace

    from probe_helpers import disk, scenario_result

    from dlrig.catalog import load_catalog
    from dlrig.probe.document import probe_build_document
    from dlrig.probe.judge import judge
    from dlrig.probe.measure_memory import MemoryBandwidth
    from dlrig.probe.report import probe_report

    stream = MemoryBandwidth(61.5, 66.0, 48, 512 * 2**20, 3, "STREAM-style, numpy")
    result = replace(
        scenario_result("four_gpu_box", disks=(disk(3100.0, "nvme0n1", False),)),
        memory_bandwidth=(stream,),
    )
    catalog = load_catalog()
    doc = probe_build_document(result, catalog)
    return probe_report(result, judge(result, catalog, doc["build"], feed=lambda d, c: None), doc)


def test_the_probe_page_carries_the_probe_summary() -> None:
    """CPU, RAM bandwidth, each disk's 4K IOPS: the page the issue found without them."""
    from dlrig.probe.report import ProbeReport
    from dlrig.report.html.pages import probe_page
    from dlrig.report.probe import probe_summary

    report = _probe_report()
    assert isinstance(report, ProbeReport)
    printed = _printed(probe_summary(report))
    assert "IOPS" in printed and "RAM bandwidth" in printed and "Threadripper" in printed
    assert_carries(probe_page(report), printed)


def test_the_watch_page_carries_the_summary_and_the_jobs_timelines() -> None:
    """A job computing on a host without GPU: one busy main process and two idle workers.
    The page carries the terminal's summary, the job's CPU, memory and process timelines,
    and says that its gpu_compute verdict ran on the CPU (design.md: the stage keeps its
    name, the report says what computed)."""
    from test_html_probe_watch import _host

    from dlrig.report.html.pages import watch_page
    from dlrig.report.watch import summary_text
    from dlrig.watch.samples import JobSample, Sample
    from dlrig.watch.summary import judge_stored_run

    job = JobSample(
        processes=3, cpu_cores=1.1, main_cpu_cores=1.0, main_busiest_thread_cores=1.0,
        workers=2, workers_cpu_cores=0.1, rss_bytes=3 * 10**9, threads=10, read_mb_s=0.0,
    )  # fmt: skip
    samples = [Sample(t_s=float(i + 1), host=_host(0.5), job=job) for i in range(10)]
    summary = judge_stored_run("python train.py", 1.0, samples, db=None, run_id=1)
    assert summary.verdict.bottleneck == "gpu_compute" and summary.verdict.device_is_cpu
    page = watch_page(summary, samples)
    assert_carries(page, summary_text(summary))
    for title in ("The job&#39;s CPU", "The job&#39;s memory (RSS)", "The job&#39;s processes"):
        assert title in page
    assert "gpu_compute (on the CPU)" in page_text(page)
    assert "the CPU (no GPU)" in page_text(page)
