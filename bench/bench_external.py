"""Accuracy of `dlrig.model.estimate` on published training throughput the model was never
fitted on.

    .venv/bin/python bench/bench_external.py [--out FILE]

Rows: bench/data/external_training.csv, NVIDIA's own single-GPU "Training performance results"
tables of the PyTorch Deep Learning Examples (DGX A100 and DGX-1 V100 runs in the NGC container
each row names; URL and date per row). scripts/calibrate.py fits on Lambda's rows only
(data/calibration/), so every prediction here is the shipped calibration's, out of sample:
other software versions, other batch sizes, another benchmark team. Writes
bench/results/external.md: each row measured against predicted, and the median and 90th
percentile of |predicted / measured - 1|.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import provenance
from calibration_data import LAMBDA_MODELS, REPO, lambda_precision
from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import estimate
from dlrig.workloads import Workload, resolve_workload

DATA = REPO / "bench" / "data" / "external_training.csv"
OUT = REPO / "bench" / "results" / "external.md"
# DLE Transformer-XL large trains at tgt_len 384 (its run_wt103_large.sh), the zoo preset, where
# Lambda's runs override it to 256: its throughput unit is target tokens, 384 per sample.
UNITS_PER_SAMPLE = {"transformerxllarge": 384.0}
# DLE's own Transformer-XL runs train with an adaptive softmax, where Lambda's runs (the zoo
# entries) compute all 267,735 logits: wt103_base.yaml and wt103_large.yaml set `adaptive:
# true` (div_val 1 and 4), with clusters cut at [19997, 39997, 199997] (wt103_large.yaml
# manual_config; github.com/NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL/
# pytorch, read 2026-12-03). Every token computes the head's 19,997 + 3 logits; a token of tail
# cluster i also computes that cluster's logits through a d / div_val^i projection
# (utils/proj_adaptive_softmax.py).
ADAPTIVE_CUTOFFS = (19997, 39997, 199997)
ADAPTIVE_DIV_VAL = {"transformerxlbase": 1, "transformerxllarge": 4}
# Convnets DLE ran on NHWC tensors (torch.channels_last) where Lambda's runs kept PyTorch's NCHW
# (logged "memory_format : nchw"): ResNet-50 with AMP (PyTorch/Classification/ConvNets/
# configs.yml, every platform's AMP entry: `memory_format: nhwc`; FP32 and TF32 keep the default
# nchw) and SSD in every precision (PyTorch/Detection/SSD main.py `--data-layout` defaults to
# channels_last since its November 2021 release, container 21.11; these rows ran 22.10).
CHANNELS_LAST = {("resnet50", "fp16"), ("ssd", "fp16"), ("ssd", "fp32"), ("ssd", "tf32")}
# Containers whose PyTorch ran F.linear on a 3-D activation as a matmul and then a bias kernel
# (before PyTorch 1.12, pytorch/pytorch#72728): NGC 20.x and 21.x (PyTorch 1.6-1.11). The
# transformer rows (Transformer-XL, 20.06) run `bias_epilogue: false`, as Lambda's v0 rows do.
SEPARATE_BIAS_CONTAINERS = ("pytorch-20.", "pytorch-21.")


def _harmonic(n: float) -> float:
    return math.log(n) + 0.5772156649 + 1.0 / (2.0 * n)


def adaptive_softmax(workload: Workload, div_val: int) -> Workload:
    """The workload with its full-vocabulary LM head replaced by DLE's adaptive softmax: the
    head's FLOPs and logits per token, plus each tail cluster's weighted by the share of
    tokens that fall in it. Word frequencies follow Zipf's law (frequency ~ 1/rank), so the
    words of ranks a..b take (H(b) - H(a)) / H(V) of the tokens (H: harmonic number)."""
    vocab = float(workload.vocab_size or 0)
    h = float(workload.hidden_size or 0)
    ends = (0, *ADAPTIVE_CUTOFFS, vocab)
    clusters = len(ADAPTIVE_CUTOFFS)
    logits = ADAPTIVE_CUTOFFS[0] + clusters
    flops = 2.0 * h * logits
    for i in range(1, clusters + 1):
        share = (_harmonic(ends[i + 1]) - _harmonic(ends[i])) / _harmonic(vocab)
        d = h / div_val**i
        size = ends[i + 1] - ends[i]
        flops += share * (2.0 * h * d + 2.0 * d * size)
        logits += share * size
    saved = (2.0 * h * vocab - flops) * (workload.seq_len or 0)
    return dataclasses.replace(
        workload,
        forward_flops_per_sample=workload.forward_flops_per_sample - saved,
        # The head (20,000 logits) and the two larger clusters are multiples of 8 wide: the
        # tensor cores' aligned path (dlrig.model.compute.UNALIGNED_GEMM_SHARE).
        vocab_size=8 * round(logits / 8),
    )


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
    if (row.model, row.precision) in CHANNELS_LAST:
        doc["memory_format"] = "channels_last"
    if row.container.startswith(SEPARATE_BIAS_CONTAINERS):
        doc["bias_epilogue"] = False
    workload = resolve_workload(doc, "external")
    if row.model in ADAPTIVE_DIV_VAL:
        workload = adaptive_softmax(workload, ADAPTIVE_DIV_VAL[row.model])
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
        "rows only: none of these rows was used in any fit. "
        + provenance.status(["nvidia_dle"])
        + " Transformer-XL rows run DLE's "
        "adaptive softmax (its wt103 configs), where the zoo entries (Lambda's runs) compute "
        "the full softmax: bench_external.adaptive_softmax.",
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
