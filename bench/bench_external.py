"""Accuracy of `dlrig.model.estimate` on published training throughput the model was never
fitted on.

    .venv/bin/python bench/bench_external.py [--out FILE]

Rows: bench/data/external_training.csv, NVIDIA's own single-GPU "Training performance results"
tables of the PyTorch Deep Learning Examples (DGX A100 and DGX-1 V100 runs in the NGC container
each row names; URL and date per row). scripts/calibrate.py fits on Lambda's rows only
(shared/calibration/), so every prediction here is the shipped calibration's, out of sample:
other software versions, other batch sizes, another benchmark team. Writes
bench/results/external.md: each row measured against predicted, and the median and 90th
percentile of |predicted / measured - 1|.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from calibration_data import LAMBDA_MODELS, REPO, lambda_precision
from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import estimate
from dlrig.workloads import resolve_workload

DATA = REPO / "bench" / "data" / "external_training.csv"
OUT = REPO / "bench" / "results" / "external.md"
# DLE Transformer-XL large trains at tgt_len 384 (its run_wt103_large.sh), the zoo preset, where
# Lambda's runs override it to 256: its throughput unit is target tokens, 384 per sample.
UNITS_PER_SAMPLE = {"transformerxllarge": 384.0}


@dataclass(frozen=True)
class Row:
    model: str
    gpu: str
    precision: str
    batch: int
    measured: float
    unit: str
    container: str
    source: str
    date: str


def read_rows(path: Path) -> list[Row]:
    with path.open() as fh:
        return [
            Row(
                r["model"],
                r["gpu"],
                r["precision"],
                int(r["batch_size_per_gpu"]),
                float(r["throughput"]),
                r["unit"],
                r["container"],
                r["source"],
                r["source_date"],
            )
            for r in csv.DictReader(fh)
        ]


def predict(row: Row) -> float:
    """dlrig's throughput for the row, in the row's unit, with the shipped calibration."""
    zoo_name, units, extra = LAMBDA_MODELS[row.model]
    units = UNITS_PER_SAMPLE.get(row.model, units)
    if row.model in UNITS_PER_SAMPLE:
        extra = {}
    precision = lambda_precision(row.model, row.precision)
    doc = {
        "name": f"{zoo_name} (DLE)",
        "model": zoo_name,
        "batch_size": row.batch,
        "precision": precision.value,
        "dataset": "synthetic",
        **extra,
    }
    workload = resolve_workload(doc, "external")
    gpu = load_catalog().find(GPU, row.gpu)
    build = Build(name=f"1x {gpu.name}", gpus=(GPUGroup(gpu, 1),))
    return estimate(build, workload).samples_per_s * units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = read_rows(DATA)
    lines = [
        "# Accuracy of `dlrig estimate` on NVIDIA's Deep Learning Examples training tables",
        "",
        f"Command: `.venv/bin/python bench/bench_external.py` ({dt.date.today()}, {machine()}).",
        "",
        f"{len(rows)} single-GPU rows from `bench/data/external_training.csv` (each row's URL "
        "and date there), predicted with the shipped calibration, which is fitted on Lambda's "
        "rows only: none of these rows was used in any fit.",
        "",
        "| model | GPU | precision | batch | container | measured | predicted | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    errors: list[float] = []
    by_arch: dict[str, list[float]] = {}
    for row in rows:
        predicted = predict(row)
        error = predicted / row.measured - 1
        errors.append(abs(error))
        arch = load_catalog().find(GPU, row.gpu).architecture
        by_arch.setdefault(arch, []).append(abs(error))
        lines.append(
            f"| {row.model} | {row.gpu} | {row.precision} | {row.batch} | {row.container} | "
            f"{row.measured:,.6g} {row.unit} | {predicted:,.6g} | {error:+.1%} |"
        )
    lines += [
        "",
        "| rows | n | median abs error | p90 abs error |",
        "|---|---|---|---|",
        f"| all | {len(errors)} | {statistics.median(errors):.1%} | "
        f"{float(np.quantile(errors, 0.9)):.1%} |",
    ]
    for arch, errs in sorted(by_arch.items()):
        lines.append(
            f"| {arch} | {len(errs)} | {statistics.median(errs):.1%} | "
            f"{float(np.quantile(errs, 0.9)):.1%} |"
        )
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
