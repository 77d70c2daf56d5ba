"""What `--rent` adds to a plan or an estimate (target: under 1 s of CPU).

    .venv/bin/python bench/bench_rent.py [--repeat N] [--out FILE]

`--rent` estimates the job on every offer of the price snapshot (up to four GPU counts each,
cloud/rent.py) and weighs the cheapest against the owned build (cloud/analysis.py: the payback
search and its sensitivity grid). Measured in-process on the 2x RTX 4090 example build: the CPU
seconds of one `load_prices` + `analyse`, the median of N repeats, per workload. Writes
bench/results/rent.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from pathlib import Path

from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.cloud.analysis import analyse, owned_from
from dlrig.cloud.loader import load_prices
from dlrig.machine import load_build
from dlrig.model import estimate
from dlrig.workloads import load_workload

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "examples" / "builds" / "2x-4090-spaced-workstation.yaml"
WORKLOADS = ("llama-3-8b-lora", "resnet50", "llama-3-70b-qlora", "bert-large-squad")


def time_rent(repeat: int) -> dict[str, tuple[float, int, int]]:
    """(median CPU seconds, offers priced, offers listed) per workload."""
    cat = load_catalog()
    build = load_build(BUILD, cat)
    out = {}
    for name in WORKLOADS:
        job = load_workload(name)
        est = estimate(build, job)
        owned = owned_from(build, est) if est.memory.fits else None
        samples = []
        for _ in range(repeat):
            start = time.process_time()
            result = analyse(load_prices(cat), job, owned, utilisation=0.5,
                             horizon_months=36, today=dt.date.today())  # fmt: skip
            samples.append(time.process_time() - start)
        out[name] = (statistics.median(samples), result.priced, len(result.offers))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="CPU time --rent adds")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "rent.md")
    args = parser.parse_args()
    results = time_rent(args.repeat)
    lines = [
        "# What `--rent` adds to a plan or an estimate (target < 1 s of CPU)",
        "",
        f"Command: `.venv/bin/python bench/bench_rent.py --repeat {args.repeat}` "
        f"({dt.date.today().isoformat()}, {machine()}; load average "
        f"{os.getloadavg()[0]:.1f}).",
        "",
        "One `load_prices` + `analyse` against the 2x RTX 4090 example build: every offer of the "
        "snapshot estimated at its smallest GPU count that holds the job, the payback and its "
        "sensitivity grid; median CPU seconds of the repeats.",
        "",
        "| workload | CPU s | offers priced | offers listed |",
        "|---|---|---|---|",
    ]
    for name, (seconds, priced, listed) in results.items():
        lines.append(f"| {name} | {seconds:.3f} | {priced} | {listed} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
