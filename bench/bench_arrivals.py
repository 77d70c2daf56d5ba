"""Cost of serving under Poisson arrivals (issue 36; target: well under 1 s per estimate).

    .venv/bin/python bench/bench_arrivals.py [--calls N] [--out FILE]

Times `dlrig.model.estimate` of a serving workload with `serve.arrival_rate` and MLPerf's
Server-scenario bounds (loadgen/mlperf.conf, 99th percentile: llama3_1-8b 2 s / 100 ms,
llama2-70b 2 s / 200 ms, llama3_1-405b 6 s / 175 ms) on one H100, 8x H100 (70B: four
copies of two GPUs each, as `serve.tensor_parallel` sets them) and 2x RTX 4090, with the
same estimate without the arrival fields beside it, so that the difference is the
simulation's (one run at the asked rate, the bisection's ten, three for the limit). Prints
the answers too. Writes bench/results/arrivals.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from dataclasses import replace
from pathlib import Path

from machine_info import machine, write_result

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.workloads import load_workload
from dlrig.workloads.serving import WeightFormat

REPO = Path(__file__).resolve().parents[1]
# (label, gpu, count, workload, serve changes: rate and MLPerf's bounds for the model size)
CASES = (
    ("Llama 3.1 8B bf16, 1x H100", "H100 SXM", 1, "llama-3.1-8b-serve",
     {"arrival_rate": 10.0, "ttft_target_s": 2.0, "tpot_target_s": 0.100}),
    ("Llama 3.1 70B fp8, 8x H100", "H100 SXM", 8, "llama-3.1-70b-serve",
     {"quantization": WeightFormat.FP8, "tensor_parallel": 2, "arrival_rate": 10.0,
      "ttft_target_s": 2.0,
      "tpot_target_s": 0.200}),
    ("Llama 3.1 405B fp8, 8x H100", "H100 SXM", 8, "llama-3.1-405b-serve",
     {"quantization": WeightFormat.FP8, "arrival_rate": 2.0, "ttft_target_s": 6.0,
      "tpot_target_s": 0.175}),
    ("Llama 3.1 70B int4, 2x RTX 4090", "RTX 4090", 2, "llama-3.1-70b-serve",
     {"quantization": WeightFormat.INT4, "users": 2, "arrival_rate": 0.1, "ttft_target_s": 2.0,
      "tpot_target_s": 0.200}),
)  # fmt: skip


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:.0f} ms (max {max(samples) * 1e3:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "arrivals.md")
    args = parser.parse_args()
    catalog = load_catalog(None)
    rows = []
    for label, gpu, count, name, changes in CASES:
        build = resolve_build({"name": label, "gpus": [{"model": gpu, "count": count}]},
                              "bench", catalog)  # fmt: skip
        base = load_workload(name)
        assert base.serve is not None
        fields = {
            k: v for k, v in changes.items() if k in ("quantization", "users", "tensor_parallel")
        }
        plain = replace(base, serve=replace(base.serve, **fields))  # type: ignore[arg-type]
        loaded = replace(base, serve=replace(base.serve, **changes))  # type: ignore[arg-type]
        estimate(build, plain)
        with_load, without = [], []
        est = None
        for _ in range(args.calls):
            t = time.perf_counter()
            estimate(build, plain)
            without.append(time.perf_counter() - t)
            t = time.perf_counter()
            est = estimate(build, loaded, arrivals=True)
            with_load.append(time.perf_counter() - t)
        assert est is not None and est.serving is not None and est.serving.load is not None
        load = est.serving.load
        x, m = load.at_rate, load.at_max
        at_rate = "-" if x is None or x.ttft_p99_s is None or x.tpot_p99_s is None else (
            f"{x.requests_per_s:g}/s: TTFT p99 {x.ttft_p99_s * 1e3:,.0f} ms, TPOT p99 "
            f"{x.tpot_p99_s * 1e3:.1f} ms, {x.utilisation:.0%} used"
        )  # fmt: skip
        at_max = "none" if m is None else f"{load.max_requests_per_s:,.3g}/s ({m.utilisation:.0%})"
        rows.append(
            f"| {label} | {load.ttft_target_s:g} s / {load.tpot_target_s * 1e3:g} ms | "
            f"{_ms(with_load)} | {_ms(without)} | {load.requests_simulated:,} | {at_rate} | "
            f"{at_max} | {load.limit.value if load.limit else '-'} |"
        )
    lines = [
        "## Serving under Poisson arrivals: cost of the simulation (issue 36)",
        "",
        f"Command: `.venv/bin/python bench/bench_arrivals.py --calls {args.calls}`; machine: "
        f"{machine()}; date: {dt.date.today().isoformat()}. Target: well under 1 s per "
        "estimate. One `estimate` call with `serve.arrival_rate` and MLPerf's Server bounds "
        "(99th percentile; loadgen/mlperf.conf) against the same call without them, median "
        f"(max) of {args.calls}; the answers beside (model figures, not measurements).",
        "",
        "| build | bounds (TTFT / TPOT) | estimate with arrivals | without | requests per run "
        "| at the asked rate | largest rate meeting the bounds | limit |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
