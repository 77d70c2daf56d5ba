"""Add one scripts/gpu-check run from the lent H200 to bench/data/h200_gpu_check.json.

    .venv/bin/python scripts/add_gpu_check_run.py GPU_CHECK_DIR

GPU_CHECK_DIR is what scripts/gpu-check wrote (jobs.json, torch_cuda.json), or a folder with
only the jobs.json of `scripts/gpu_jobs.py --only ...` (then no rates are added). Each job
keeps its median step of every run in `median_step_s_runs` (oldest first) and the newest run's
record (profile, memory); a job the older runs lacked starts its list here. Each rate keeps one
reading per gpu-check run. The file's provenance lists every run's start time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "bench" / "data" / "h200_gpu_check.json"
PROVENANCE = (
    "recorded by dlrig scripts/gpu-check (scripts/gpu_jobs.py under `dlrig watch`, "
    "torch_cuda.measure_all) on a lent single-H200 virtual machine (Firecracker; driver "
    "580.159.04, CUDA 13.0, torch 2.11.0+cu130, transformers 5.17.0, peft 0.21.0); random "
    "weights, synthetic data made on the GPU; runs started {runs}"
)
RATE_DIGITS = 1


def merged(
    data: dict[str, Any], jobs: dict[str, Any], cuda: dict[str, Any] | None
) -> dict[str, Any]:
    """`data` with the run in `jobs` (gpu_jobs.py's output) and `cuda` (torch_cuda.json, None
    for a run of jobs alone)."""
    started = jobs["provenance"].rsplit(" at ", 1)[1]
    runs = [*data.get("runs_started_utc", []), started]
    out = {**data, "runs_started_utc": runs, "provenance": PROVENANCE.format(runs=", ".join(runs))}
    if cuda is not None:
        gpu = cuda["report"]["gpus"][0]
        for row in gpu["matmul"]:
            out["matmul_tflops"][row["precision"]].append(round(row["tflops"], RATE_DIGITS))
        out["device_memory_gb_s"].append(round(gpu["device_memory_gb_s"], RATE_DIGITS))
        out["h2d_pinned_gb_s"].append(round(gpu["h2d_pinned_gb_s"], RATE_DIGITS))
    out["jobs"] = dict(data["jobs"])
    for name, job in jobs["jobs"].items():
        if name in ("steptimer", "describe"):
            out[name] = job
            continue
        if "error" in job:
            continue
        before = data["jobs"].get(name, {})
        medians = before.get("median_step_s_runs", [])
        if "median_step_s" in job:
            medians = [*medians, job["median_step_s"]]
        out["jobs"][name] = {**job, "median_step_s_runs": medians} if medians else job
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gpu_check_dir", type=Path)
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    jobs = json.loads((args.gpu_check_dir / "jobs.json").read_text())
    rates = args.gpu_check_dir / "torch_cuda.json"
    cuda = json.loads(rates.read_text()) if rates.exists() else None
    DATA.write_text(json.dumps(merged(data, jobs, cuda), indent=2) + "\n")


if __name__ == "__main__":
    main()
