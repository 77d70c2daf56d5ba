"""Speed of one `dlrig.model.estimate` call in-process (target: under 5 ms).

    .venv/bin/python bench/bench_estimate.py [--calls N] [--out FILE]

The planner calls estimate per candidate build, so the figure that matters is one call on an
already resolved build and workload: the mean and the 99th percentile over N calls, for a few
zoo workloads on a 4-GPU workstation. Writes bench/results/estimate.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from pathlib import Path

from machine_info import machine

from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.workloads import load_workload

REPO = Path(__file__).resolve().parents[1]
BUILD = {
    "name": "4x RTX 3090 workstation",
    "gpus": [{"model": "RTX 3090", "count": 4, "pcie": {"gen": 4, "lanes": 8}}],
    "memory": {"size_gb": 128},
    "storage": [{"kind": "nvme", "capacity_tb": 2, "read_mb_s": 7000}],
    "psu": {"watts": 1600, "efficiency": "platinum"},
}
WORKLOADS = ("resnet50", "bert-large-squad", "llama-3-8b-qlora", "llama-3-8b-inference")


def time_calls(calls: int) -> dict[str, tuple[float, float, float]]:
    """(mean, median, p99) microseconds per call, per workload."""
    build = resolve_build(BUILD, "bench")
    out = {}
    for name in WORKLOADS:
        job = load_workload(name)
        estimate(build, job)  # the first call parses the calibration file
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            estimate(build, job)
            samples.append((time.perf_counter() - start) * 1e6)
        samples.sort()
        p99 = samples[int(0.99 * (len(samples) - 1))]
        out[name] = (statistics.fmean(samples), statistics.median(samples), p99)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="speed of one estimate call")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "estimate.md")
    args = parser.parse_args()
    results = time_calls(args.calls)
    lines = [
        "# Speed of one `dlrig.model.estimate` call (target < 5 ms)",
        "",
        f"Command: `.venv/bin/python bench/bench_estimate.py --calls {args.calls}` "
        f"({dt.date.today().isoformat()}, {machine()}).",
        "",
        "On a resolved 4x RTX 3090 build; mean, median and 99th percentile over the calls. "
        f"Load average during the run: {os.getloadavg()[0]:.1f} (a shared machine: a p99 near "
        "4 ms is a scheduler time slice lost to another process, not the model).",
        "",
        "| workload | mean us | median us | p99 us |",
        "|---|---|---|---|",
    ]
    for name, (mean_us, median_us, p99_us) in results.items():
        lines.append(f"| {name} | {mean_us:.0f} | {median_us:.0f} | {p99_us:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
