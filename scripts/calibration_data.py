"""Shared by scripts/calibrate.py and bench/bench_accuracy.py: read the calibration CSVs and map
Lambda's benchmark rows (model names, units, GPU names) onto dlrig's zoo and catalog."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.errors import UnknownPartError
from dlrig.machine.model import Build, GPUGroup
from dlrig.workloads import Workload, resolve_workload

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO.parent / "shared" / "calibration"

# Lambda model name -> (zoo workload, throughput units per sample, document overrides).
# Units per sample: workloads_reference.csv's forward_gflops_per_sample /
# forward_gflops_per_throughput_unit (GNMT counts 100 source+target tokens per sentence pair,
# Tacotron2 800 mel frames, WaveGlow 8000 audio samples, Transformer-XL target tokens).
LAMBDA_MODELS: dict[str, tuple[str, float, dict[str, object]]] = {
    "resnet50": ("resnet50", 1.0, {}),
    "ssd": ("ssd300", 1.0, {}),
    "maskrcnn": ("maskrcnn", 1.0, {}),
    "gnmt": ("gnmt", 100.0, {}),
    "tacotron2": ("tacotron2", 800.0, {}),
    "waveglow": ("waveglow", 8000.0, {}),
    "bert_base_squad": ("bert-base-squad", 1.0, {}),
    "bert_large_squad": ("bert-large-squad", 1.0, {}),
    "transformerxlbase": ("transformer-xl-base", 192.0, {}),
    # Lambda runs Transformer-XL large at tgt_len = mem_len = 256 (the zoo preset: DLE's 384).
    "transformerxllarge": ("transformer-xl-large", 256.0, {"seq_len": 256}),
    "ncf": ("ncf", 1.0, {}),
}

# Lambda's Tacotron2/WaveGlow "fp16" runs ignore their AMP flag (workloads_reference.csv).
NOT_MIXED_PRECISION = {"tacotron2", "waveglow"}

# Lambda GPU label -> catalog name (None: no catalog entry; the row is left out and listed).
LAMBDA_GPUS: dict[str, str] = {
    "V100 32GB": "Tesla V100 PCIe 32GB",
    "RTX 8000": "Quadro RTX 8000",
    "RTX 6000": "Quadro RTX 6000",
    "RTX 5000": "Quadro RTX 5000",
    "Titan RTX": "NVIDIA TITAN RTX",
    "RTX 3090": "GeForce RTX 3090",
    "RTX 3080": "GeForce RTX 3080",
    "RTX 3070": "GeForce RTX 3070",
    "RTX 2080Ti": "GeForce RTX 2080 Ti",
    "GTX 1080Ti": "GeForce GTX 1080 Ti",
    "A100 40GB PCIe": "A100 PCIe 40GB",
    "A100 80GB PCIe": "A100 PCIe 80GB",
    "A100 40GB SXM4": "A100 SXM4 40GB",
    "A100 80GB SXM4": "A100 SXM4 80GB",
    "RTX A6000": "NVIDIA RTX A6000",
    "LambdaCloud RTX A6000": "NVIDIA RTX A6000",
    "RTX A5500": "NVIDIA RTX A5500",
    "RTX A5000": "NVIDIA RTX A5000",
    "RTX A4500": "NVIDIA RTX A4500",
    "RTX A4000": "NVIDIA RTX A4000",
    "RTX A40": "NVIDIA A40",
    "RTX 3080 Max-Q": "GeForce RTX 3080 Laptop GPU",
    "RTX 2080 SUPER MAX-Q": "GeForce RTX 2080 Super Max-Q",
    "RTX 2080 MAX-Q": "GeForce RTX 2080 Max-Q",
    "RTX 2070 MAX-Q": "GeForce RTX 2070 Max-Q",
}


@dataclass(frozen=True)
class LambdaRow:
    """One usable single-GPU measurement, mapped onto dlrig's types."""

    lambda_model: str
    lambda_gpu: str
    gpu: GPU
    workload: Workload
    units_per_sample: float
    measured_units_per_s: float

    @property
    def measured_samples_per_s(self) -> float:
        return self.measured_units_per_s / self.units_per_sample

    def build(self) -> Build:
        """A one-GPU build with nothing else: synthetic data, so only the GPU is modeled."""
        return Build(name=f"1x {self.gpu.name}", gpus=(GPUGroup(self.gpu),))


def lambda_precision(lambda_model: str, label: str) -> Precision:
    """Lambda's precision label as run: fp32 means TF32 on Ampere (PyTorch's default then);
    Tacotron2/WaveGlow "fp16" ran in full precision."""
    if label.startswith("fp16") and lambda_model not in NOT_MIXED_PRECISION:
        return Precision.FP16
    return Precision.TF32


def read_lambda_rows(data_dir: Path, catalog: Catalog) -> tuple[list[LambdaRow], dict[str, int]]:
    """Usable single-GPU rows (batch given and > 0, GPU in the catalog), and the count of rows
    left out by reason."""
    rows: list[LambdaRow] = []
    skipped: dict[str, int] = {}
    cache: dict[tuple[str, str, int], Workload] = {}
    with (data_dir / "lambda_pytorch_train_v0_2022.csv").open() as fh:
        for rec in csv.DictReader(fh):
            if rec["num_gpus"] != "1" or rec["mode"] != "train":
                continue
            reason = _skip_reason(rec)
            gpu = None
            if reason is None:
                try:
                    gpu = catalog.find(GPU, LAMBDA_GPUS.get(rec["gpu"], rec["gpu"]))
                except UnknownPartError:
                    reason = f"GPU not in catalog: {rec['gpu']}"
            if reason is not None or gpu is None:
                key = reason or "unknown"
                skipped[key] = skipped.get(key, 0) + 1
                continue
            zoo_name, units, extra = LAMBDA_MODELS[rec["model"]]
            precision = lambda_precision(rec["model"], rec["precision"])
            batch = int(rec["batch_size_per_gpu"])
            wkey = (zoo_name, precision.value, batch)
            if wkey not in cache:
                doc = {
                    "name": f"{zoo_name} (Lambda)",
                    "model": zoo_name,
                    "batch_size": batch,
                    "precision": precision.value,
                    "dataset": "synthetic",
                    **extra,
                }
                cache[wkey] = resolve_workload(doc, "lambda")
            rows.append(
                LambdaRow(
                    rec["model"], rec["gpu"], gpu, cache[wkey], units, float(rec["throughput"])
                )
            )
    return rows, skipped


def _skip_reason(rec: dict[str, str]) -> str | None:
    if rec["model"] not in LAMBDA_MODELS:
        return f"model not mapped: {rec['model']}"
    if not rec["batch_size_per_gpu"] or int(rec["batch_size_per_gpu"]) <= 0:
        return "batch size missing or 0"
    if not rec["throughput"] or float(rec["throughput"]) <= 0:
        return "no throughput"
    if "implausible" in rec["flag"]:
        return "flagged implausible"
    return None
