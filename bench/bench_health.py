"""Cost of `dlrig health`: NVML calls per GPU, judging time, a Redfish reading, end to end.

    .venv/bin/python bench/bench_health.py [--runs N] [--out FILE]

Targets (issue 37): a dead BMC address gives its one line within 15 s (the Redfish source's
5 s connect timeout bounds it); a health reading cheap enough for `dlrig watch` to take every
10 s beside its 1 s samples.

- NVML calls of one GPU's health reading, counted on the replayed 2x H100 SXM scenario
  (tests/fixtures/nvml/health_h100_healthy.json: 18 NVLinks each); each real NVML call is a
  driver round trip of some microseconds, so the count is the figure that carries over.
- Judging: `judge_health` on 8 such GPUs plus the faulted Redfish mockup's reading (CPU time,
  best of N).
- A Redfish reading of the faulted newer-resources mockup served over loopback: requests and
  wall time (best of N).
- `dlrig health --sources bmc --json` end to end against that mockup, and against a dead
  address (wall time, best of N).
Writes bench/results/health.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

from machine_info import machine, write_result

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from dlrig.hardware.bmc.redfish import RedfishOptions, RedfishSource  # noqa: E402
from dlrig.hardware.nvml.health import read_gpu_health  # noqa: E402
from dlrig.health import HealthInputs, judge_health  # noqa: E402
from support.nvml_fakes import replay_calls  # noqa: E402
from support.redfish_mockup import dead_address, serve_mockup  # noqa: E402

PASSWORD = "s3cret-Pa55"


def nvml_calls_per_gpu() -> int:
    calls = replay_calls("health_h100_healthy")
    calls.init()
    read_gpu_health(calls, 0)
    return sum(calls.counts.values())


def judge_ms(runs: int, bmc: object) -> float:
    calls = replay_calls("health_h100_healthy")
    calls.init()
    gpu = read_gpu_health(calls, 0)
    gpus = tuple(dataclasses.replace(gpu, index=i, uuid=f"GPU-{i}") for i in range(8))
    inputs = HealthInputs(taken_utc="2026-12-06T06:00:00+00:00", gpus=gpus, bmc=bmc)  # type: ignore[arg-type]
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        judge_health(inputs, host="bench", baseline=None)
        best = min(best, time.process_time() - start)
    return best * 1e3


def redfish(runs: int) -> tuple[object, int, float]:
    best, requests, reading = float("inf"), 0, None
    for _ in range(runs):
        with serve_mockup("faulted_subsystems", user="U", password=PASSWORD) as served:
            start = time.perf_counter()
            reading = RedfishSource(RedfishOptions(served.url, "U"), PASSWORD).read()
            best = min(best, time.perf_counter() - start)
            requests = len(served.requests)
    return reading, requests, best


def cli_s(runs: int, url_of: object) -> tuple[float, int]:
    env = {**os.environ, "DLRIG_BMC_PASSWORD": PASSWORD, "PYTHONPATH": str(REPO / "src")}
    best, code = float("inf"), -1
    for _ in range(runs):
        with serve_mockup("faulted_subsystems", user="U", password=PASSWORD) as served:
            url = served.url if url_of is None else url_of
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "dlrig", "health", "--bmc", str(url), "--bmc-user", "U",
                 "--sources", "bmc", "--json"],
                capture_output=True, env=env, check=False,
            )  # fmt: skip
            best = min(best, time.perf_counter() - start)
            code = done.returncode
    return best, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "health.md")
    args = parser.parse_args()
    calls = nvml_calls_per_gpu()
    reading, requests, redfish_s = redfish(args.runs)
    judged_ms = judge_ms(args.runs, reading)
    faulted_s, faulted_code = cli_s(args.runs, None)
    dead_s, dead_code = cli_s(args.runs, dead_address())
    lines = [
        "# dlrig health: cost",
        "",
        f"Command: `.venv/bin/python bench/bench_health.py --runs {args.runs}`  ",
        f"Machine: {machine()}  ",
        f"Date: {dt.date.today().isoformat()}",
        "",
        "| what | target | measured |",
        "|---|---|---|",
        f"| NVML calls of one H100 SXM's health reading (18 NVLinks; replayed) | - | {calls} |",
        f"| judging 8 GPUs and a BMC reading, CPU time, best of {args.runs} | - | "
        f"{judged_ms:.1f} ms |",
        f"| Redfish reading of the faulted newer-resources mockup over loopback, best of "
        f"{args.runs} | - | {redfish_s:.2f} s, {requests} requests |",
        f"| `dlrig health --sources bmc --json` against it, wall, best of {args.runs} (exit) | - | "
        f"{faulted_s:.2f} s ({faulted_code}) |",
        f"| the same against a dead address (exit) | < 15 s | {dead_s:.2f} s ({dead_code}) |",
        "",
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
