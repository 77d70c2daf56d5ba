"""Accuracy of `dlrig.model.estimate` on training in other frameworks, held out: NVIDIA's Deep
Learning Examples tables for TensorFlow 1, TensorFlow 2, MXNet and PaddlePaddle.

    .venv/bin/python bench/bench_frameworks.py [--out FILE]

Rows: bench/data/dle_frameworks.csv (URL @ commit, date, container and notes per row). ResNet-50
v1.5 (TensorFlow 1, MXNet, PaddlePaddle), BERT-large SQuAD v1.1 fine-tuning at 384 tokens
(TensorFlow 1, TensorFlow 2, PaddlePaddle) and BERT-large pre-training (TensorFlow 1 and 2:
phase 1 at 128 tokens and phase 2 at 512; PaddlePaddle: phase 1) on 1-8 GPUs of a DGX-1 (V100
SXM2 16/32 GB) or a DGX A100 (A100 SXM4 40/80 GB). Not taken: DGX-2 tables (V100 SXM3 32 GB on
NVSwitch: neither the card nor the platform is in the catalog), multi-node tables (their
one-node rows repeat the single-node job), PaddlePaddle's phase 2 (run_pretraining.sh reads
LDDL's data binned by length, `--bin-size 64`: each batch padded to its bin, not to 512, a
length mix the README does not give and a job has no field for), PaddlePaddle's ASP table
(sparsity), and models the zoo lacks (TensorFlow 2's EfficientNets, TensorFlow 1's
ResNeXt101-32x4d and SE-ResNeXt101-32x4d). dlrig has no framework field, so each row is the
job as its README and scripts say it ran, in the fields a user has:
- the row's precision (mixed precision as fp16; TF32 on A100, FP32 on V100) and batch per GPU;
- NHWC where the code computes in NHWC (`memory_format: channels_last`): TensorFlow's ConvNets
  in every precision (cmdline_helper.py `--data_format` default NHWC), MXNet's float16 runs
  (runner: conv, batchnorm and pooling layouts NHWC), PaddlePaddle's AMP runs (the README's
  benchmark command passes `--data-layout NHWC`);
- XLA as `kernels: xla` (TensorFlow's training_perf.sh and run_squad.sh pass `--xla` /
  `--use_xla` / `--enable_xla`, auto-clustering): element-wise chains fused, each reduction
  (softmax, LayerNorm) ending a fusion, dropout's random numbers made by a TensorFlow kernel
  outside the clusters (dlrig.model.layers XLA_*), a convnet's batch norm fused with its
  ReLU and add (dlrig.workloads.kernels);
- PaddlePaddle's BERT as program.py builds it: cuDNN's fused attention (`attention: cudnn`)
  and the biases in the matmul's epilogue under AMP, neither at TF32 (`bias_epilogue: false`);
- cuDNN's fused batch norm + ReLU and batch norm + add + ReLU as `fused_norm_activation`
  where the code turns them on: MXNet's float16 runs (runner: `--fuse-bn-relu 1
  --fuse-bn-add-relu 1`), PaddlePaddle's AMP runs (program.py: `fuse_bn_act_ops`,
  `fuse_bn_add_act_ops`);
- pre-training as the zoo's BERT-large encoder at the phase's `seq_len` with the table's
  micro-batch and `gradient_accumulation` (PRETRAINING_ENCODER says why);
- synthetic data: DGX hosts feed these jobs with DALI on the GPU or tf.data, and the tables
  time steady-state training; each data-parallel job on the DGX's NVLink.
The job fields were settled before the first prediction was made; `kernels: xla` and
`fused_norm_activation` were counted from the code later, with these rows' errors in view, so
the source is calibration for them (bench/provenance.toml says how). Writes
bench/results/frameworks.md.
"""

from __future__ import annotations

import argparse
import copy
import csv
import datetime as dt
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import provenance
from bench_external_llm import stats_cells
from calibration_data import LAMBDA_MODELS
from machine_info import machine, write_result

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU, Platform
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import estimate
from dlrig.workloads import resolve_workload
from dlrig.workloads.loader import zoo_document

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data" / "dle_frameworks.csv"
OUT = REPO / "bench" / "results" / "frameworks.md"
SOURCE = "dle_frameworks"
# The DGX each table ran on (the catalog's platform: DGX-1's V100 SXM2 hybrid cube-mesh, DGX
# A100's NVSwitch; the 80 GB A100 tables ran the 640 GB DGX A100, the same chassis and switch).
PLATFORMS = {"Volta": "NVIDIA DGX-1 (V100)", "Ampere": "NVIDIA DGX A100 (320GB)"}
PRECISIONS = {"amp": "fp16", "tf32": "tf32", "fp32": "fp32"}
# Frameworks whose ResNet-50 scripts call cuDNN's fused batch norm-activation kernels in their
# mixed-precision runs only (MXNet runner: `--fuse-bn-relu 1 --fuse-bn-add-relu 1` under
# `--dtype float16`; PaddlePaddle program.py: `fuse_bn_act_ops`, `fuse_bn_add_act_ops` under
# `args.amp`); NVIDIA/DeepLearningExamples @729963dd.
FUSED_NORM_ACTIVATION = {"mxnet", "paddle"}
# BERT-large pre-training runs the zoo's BERT-large encoder (24 layers, hidden 1024, 16 heads,
# ffn 4096) at the phase's sequence length (the row's seq_len: 128 in phase 1, 512 in phase 2),
# as many micro-batches per optimizer step as the row's gradient_accumulation (TensorFlow 1's
# run_pretraining_lamb_phase{1,2}.sh `--num_accumulation_steps` with
# `--allreduce_post_accumulation=True`: optimization.py accumulates into `/accum` variables and
# all-reduces and applies LAMB once per accumulated batch; TensorFlow 2's scripts of the same
# names `--num_accumulation_steps` and `--optimizer_type=LAMB`; PaddlePaddle's
# run_pretraining.sh `--gradient-merge-steps`), @729963dd. Its heads are left out: the
# masked-LM head scores the max_predictions_per_seq (20 at 128 tokens, 80 at 512) masked
# positions over the 30522-word vocabulary, 2 * 20 * 1024 * 30522 = 1.25 GFLOP a sample in
# the forward beside the encoder's ~79 (1.6%; 5.0 beside ~335 at 512, 1.5%), and next-sentence
# prediction is one 1024 x 2 product. LAMB keeps Adam's two moments; its step runs once per
# 32 to 16384 micro-batches here.
PRETRAINING_ENCODER = {"bert_large_pretraining": "bert-large-squad"}
PADDLE_BERT = {"bert_large_squad", "bert_large_pretraining"}


@dataclass(frozen=True)
class Row:
    framework: str
    model: str
    gpu: str
    gpus: int
    precision: str
    batch: int
    seq_len: int | None
    gradient_accumulation: int
    measured: float
    unit: str
    container: str
    xla: bool
    layout: str
    source: str
    date: str
    notes: str

    @property
    def label(self) -> str:
        seq = f" seq {self.seq_len}" if self.seq_len else ""
        return f"{self.framework} {self.model}{seq} {self.precision} {self.gpus}x {self.gpu}"


def read_rows(path: Path = DATA) -> list[Row]:
    with path.open() as fh:
        return [
            Row(
                r["framework"],
                r["model"],
                r["gpu"],
                int(r["gpus"]),
                r["precision"],
                int(r["batch_size_per_gpu"]),
                int(r["seq_len"]) if r["seq_len"] else None,
                int(r["gradient_accumulation"]),
                float(r["throughput"]),
                r["unit"],
                r["container"],
                r["xla"] == "yes",
                r["layout"],
                r["source"],
                r["source_date"],
                r["notes"],
            )
            for r in csv.DictReader(fh)
        ]


def workload_doc(row: Row) -> dict[str, object]:
    zoo_name = PRETRAINING_ENCODER.get(row.model) or LAMBDA_MODELS[row.model][0]
    doc: dict[str, object] = {
        "name": f"{zoo_name} ({row.framework})",
        "model": zoo_name,
        "batch_size": row.batch,
        "precision": PRECISIONS[row.precision],
        "dataset": "synthetic",
    }
    if row.seq_len is not None:
        doc["seq_len"] = row.seq_len
    if row.gradient_accumulation > 1:
        doc["gradient_accumulation"] = row.gradient_accumulation
    if row.layout == "NHWC":
        doc["memory_format"] = "channels_last"
    if row.xla:
        doc["kernels"] = "xla"
    if row.framework in FUSED_NORM_ACTIVATION and row.precision == "amp":
        doc["fused_norm_activation"] = True
    if row.framework == "paddle" and row.model in PADDLE_BERT:
        return _paddle_bert(doc, row)
    return doc


def _paddle_bert(doc: dict[str, object], row: Row) -> dict[str, object]:
    """PaddlePaddle's BERT as program.py builds it: under AMP, cuDNN's fused attention
    (`fuse_dot_product_attention = args.fuse_mha`, run_squad.sh's default true) and the biases
    in cuBLASLt's epilogue (`fuse_gemm_epilogue`); at TF32 neither, so its static graph adds
    each linear's bias in an elementwise_add of its own (`bias_epilogue: false`). Its
    FusedTransformerEncoderLayer is off (modeling.py: `self.fuse = False`). The README's AMP
    SQuAD rows were re-measured in the commit that turned the fused attention on (a5388a45,
    "integrate cuDNN fused MHA"): 120 -> 123 and 876 -> 929 sequences a second, far less than
    the model's fused attention gives; the TF32 rows date from the first release, whose
    program.py fused no GEMM epilogue."""
    expanded = copy.deepcopy(zoo_document(str(doc["model"])))
    expanded.update({k: v for k, v in doc.items() if k != "model"})
    if row.precision == "amp":
        model = expanded["model"]
        assert isinstance(model, dict)
        expanded["model"] = {**model, "attention": "cudnn"}
    else:
        expanded["bias_epilogue"] = False
    return expanded


def predict(row: Row) -> float:
    """dlrig's throughput for the row, in the row's unit (images or sequences a second, all
    GPUs), with the shipped calibration."""
    catalog = load_catalog()
    gpu = catalog.find(GPU, row.gpu)
    platform = catalog.find(Platform, PLATFORMS[gpu.architecture]) if row.gpus > 1 else None
    build = Build(
        name=f"{row.gpus}x {gpu.name}", gpus=(GPUGroup(gpu, row.gpus),), platform=platform
    )
    workload = resolve_workload(workload_doc(row), "dle_frameworks")
    return estimate(build, workload).samples_per_s


def _group_lines(rows: list[Row], errors: list[float], key: Callable[[Row], str]) -> list[str]:
    groups: dict[str, list[float]] = {}
    for row, err in zip(rows, errors, strict=True):
        groups.setdefault(key(row), []).append(err)
    return [f"| {name} | {stats_cells(errs)} |" for name, errs in sorted(groups.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = read_rows()
    predicted = [predict(r) for r in rows]
    errors = [p / r.measured - 1.0 for r, p in zip(rows, predicted, strict=True)]
    title = provenance.sources()[SOURCE].title
    lines = [
        "# Accuracy of `dlrig estimate` on TensorFlow, MXNet and PaddlePaddle training",
        "",
        f"Command: `.venv/bin/python bench/bench_frameworks.py` ({dt.date.today()}, {machine()}).",
        "",
        f"{len(rows)} rows from `bench/data/dle_frameworks.csv`: {title}. dlrig has no "
        "framework field: each row is predicted as its scripts ran it, in the fields a user "
        "has (NHWC as `memory_format: channels_last`, XLA as `kernels: xla`, cuDNN's fused "
        "batch norm-ReLU where MXNet's and PaddlePaddle's AMP scripts turn it on as "
        "`fused_norm_activation`, pre-training at its phase's `seq_len` with its "
        "`gradient_accumulation`, synthetic data, the DGX's NVLink). No row is left out.",
        "",
        f"- {title}: {provenance.status([SOURCE])}",
        "",
        "| group | n | median abs error | p90 abs error | median signed |",
        "|---|---|---|---|---|",
        f"| all | {stats_cells(errors)} |",
        *_group_lines(rows, errors, lambda r: f"framework {r.framework}"),
        *_group_lines(rows, errors, lambda r: f"model {r.model}"),
        *_group_lines(rows, errors, lambda r: f"{r.model} {r.framework}"),
        *_group_lines(rows, errors, lambda r: "1 GPU" if r.gpus == 1 else "2-8 GPUs"),
        *_group_lines(
            [r for r in rows if r.seq_len],
            [e for r, e in zip(rows, errors, strict=True) if r.seq_len],
            lambda r: f"{r.model} seq {r.seq_len} {r.precision} {r.gpu}",
        ),
        "",
        "| row | batch/GPU | accumulation | measured | dlrig | error |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r.label} | {r.batch} | {r.gradient_accumulation} | {r.measured:,.1f} {r.unit} "
            f"| {p:,.1f} | {e:+.1%} |"
            for r, p, e in zip(rows, predicted, errors, strict=True)
        ),
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
