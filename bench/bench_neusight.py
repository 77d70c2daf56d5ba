"""Accuracy of `dlrig.model.estimate` on NeuSight's own measured rows, dlrig beside NeuSight.

    .venv/bin/python bench/bench_neusight.py [--out FILE]

NeuSight (Lee et al., "Forecasting GPU Performance for Deep Learning Training and Inference",
ASPLOS 2025, doi:10.1145/3669940.3707265) is a published latency predictor; its repository
(github.com/sitar-lab/NeuSight @db1fdc96, MIT licence: bench/data/neusight_2025.LICENSE) ships
the latencies it measured (scripts/asplos/label/<GPU>/<model>-<mode>-<seq>-<batch>.json) and its
own predictions of them (scripts/asplos/summary/summary.csv). Rows: bench/data/neusight_2025.csv,
one per label file, with NeuSight's prediction where the summary has it.

What a row measured (neusight/Tracing/trace.py measure_e2e and get_model @db1fdc96): a
transformers model built from the config in scripts/asplos/data/DLmodel_configs/ with
attn_implementation="eager" and fp32 weights (no autocast; cudnn.allow_tf32 False and PyTorch
2.1's default matmul precision: true FP32 GEMMs), on one GPU, input_ids of batch x seq_len
tokens; the mean of the 5 fastest of 25 iterations. Training: model.train() (dropout on), the
forward timed, then the cross-entropy over the logits (untimed), then `loss.backward()` timed:
no optimizer step. Inference: model.eval() under no_grad, one forward pass over every token
(for the decoder models too: a scoring pass, not generation). BERT-large trains as
BertForPreTraining (the MLM head over the vocabulary, the loss on its logits) and infers as
BertForSequenceClassification (no vocabulary head); "GPT3-XL" and "GPT3-2.7B" are GPT-2
architectures at the configs' widths; `-fusion` rows ran the model under torch.compile.

Each row is the job as that code ran it, in the fields a user has: precision fp32, the
config's structure (widths, layers, heads, vocabulary, tied embeddings, `hidden_act`),
eager attention, dropout in training only, synthetic inputs; training with `optimizer_step:
none` (forward + backward, no step), inference with no KV cache (one forward pass over the
whole sequences); `-fusion` as `kernels: compile`. Not predicted, counted in the table: the
Switch Transformer rows (an encoder-decoder MoE whose attention is 32 heads x 128 wide on a
1,024-wide stream: dlrig's structure has no attention width apart from the hidden size), the
4-GPU Megatron-LM rows (dp4/tp4/pp4_1: another stack and step), and the GPUs the catalog lacks
(Tesla P100 PCIe 16GB, Tesla P4) or has only otherwise (the MI250 rows ran on one of its two
GCDs, which PyTorch sees as a GPU; the catalog's MI250 is the two-GCD module). Writes
bench/results/neusight.md.

The rows were first predicted held out (16.3% / 43.4% median / p90 over the 101 rows, NeuSight
7.7% on the same rows; commit c1e7421). Two changes were then made with their errors in view,
so the source is calibration for them (bench/provenance.toml; the status line below says so):
the FP32 GEMM rates measured on four of its GPUs' cards, and inference (eval mode) running no
dropout and no loss.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import provenance
from bench_external_llm import stats_cells
from machine_info import machine, write_result

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import estimate
from dlrig.workloads import resolve_workload

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data" / "neusight_2025.csv"
OUT = REPO / "bench" / "results" / "neusight.md"
SOURCE = "neusight"


@dataclass(frozen=True)
class Config:
    """A model config of NeuSight's scripts/asplos/data/DLmodel_configs/ (@db1fdc96): hidden
    width d, layers L, heads, FFN width f, vocabulary V, learned positions P, the MLP's
    activation, and which head the job runs."""

    title: str
    d: int
    layers: int
    heads: int
    f: int
    vocab: int
    positions: int
    hidden_act: str
    family: str  # gpt2 | opt | bert


CONFIGS: dict[str, Config] = {
    # gpt2_large.json: n_embd 1280, n_layer 36, n_head 20, n_positions 1024, gelu_new
    "gpt2_large": Config("GPT-2 Large", 1280, 36, 20, 5120, 50257, 1024, "gelu_new", "gpt2"),
    # gpt3_xl.json: GPT2LMHeadModel, n_embd 3072, n_layer 24, n_head 24, n_positions 2048
    "gpt3_xl": Config("GPT3-XL (GPT-2 arch.)", 3072, 24, 24, 12288, 50257, 2048, "gelu_new",
                      "gpt2"),
    # gpt3_27.json: GPT2LMHeadModel, n_embd 2560, n_layer 32, n_head 32, n_positions 2048
    "gpt3_27": Config("GPT3-2.7B (GPT-2 arch.)", 2560, 32, 32, 10240, 50257, 2048, "gelu_new",
                      "gpt2"),
    # opt_13.json: hidden 2048, 24 layers, 32 heads, ffn_dim 8192, vocab 50272, relu; OPT's
    # learned positions carry an offset of 2 (OPTLearnedPositionalEmbedding)
    "opt_13": Config("OPT-1.3B", 2048, 24, 32, 8192, 50272, 2050, "relu", "opt"),
    # bert_large.json: hidden 1024, 24 layers, 16 heads, intermediate 4096, vocab 30522, gelu
    "bert_large": Config("BERT-Large", 1024, 24, 16, 4096, 30522, 512, "gelu", "bert"),
}  # fmt: skip


def params(c: Config, training: bool) -> float:
    """The model's parameters by transformers' modules: embeddings (tokens, positions; BERT's
    2 token types and LayerNorm), per layer Q, K, V, O and the two MLP matrices with biases
    and two LayerNorms, the final LayerNorm (GPT-2, OPT) or BERT's pooler, and BERT's heads:
    BertForPreTraining's MLM transform, LayerNorm and vocabulary bias (its decoder tied) and
    the 2-way NSP classifier; BertForSequenceClassification's 2-way classifier."""
    d, f = c.d, c.f
    layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    total = c.vocab * d + c.positions * d + c.layers * layer
    if c.family != "bert":
        return float(total + 2 * d)
    total += 2 * d + 2 * d + d * d + d  # token types, embedding LayerNorm, pooler
    if training:
        return float(total + d * d + d + 2 * d + c.vocab + 2 * d + 2)
    return float(total + 2 * d + 2)


def has_vocabulary_head(c: Config, training: bool) -> bool:
    """The decoders always run their LM head; BERT only in pre-training (classification infers)."""
    return c.family != "bert" or training


def forward_flops_per_token(c: Config, seq_len: int, training: bool) -> float:
    """2 FLOPs per weight of every matmul a token passes (the layers' 4 d^2 + 2 d f, BERT's
    MLM transform d^2 and the vocabulary head V d where the job runs them), plus attention's
    4 s d a layer (QK^T and PV over every position: eager attention computes the whole s x s
    scores and masks them)."""
    matmul = c.layers * (4.0 * c.d * c.d + 2.0 * c.d * c.f)
    if has_vocabulary_head(c, training):
        matmul += c.vocab * c.d + (c.d * c.d if c.family == "bert" else 0.0)
    return 2.0 * matmul + 4.0 * c.layers * seq_len * c.d


@dataclass(frozen=True)
class Row:
    model: str
    mode: str
    seq_len: int
    batch: int
    device: str
    gpu: str
    variant: str
    measured_ms: float
    fw_ms: float
    bw_ms: float
    neusight_ms: float | None
    url: str

    @property
    def training(self) -> bool:
        return self.mode == "training"

    @property
    def label(self) -> str:
        tail = f" {self.variant}" if self.variant else ""
        return f"{self.model} {self.mode} {self.seq_len}x{self.batch}{tail} {self.device}"


def _row(r: dict[str, str]) -> Row:
    neusight = float(r["neusight_e2e_ms"]) if r["neusight_e2e_ms"] else None
    return Row(
        r["model"], r["mode"], int(r["seq_len"]), int(r["batch"]), r["device"], r["gpu"],
        r["variant"], float(r["measured_e2e_ms"]), float(r["measured_fw_ms"]),
        float(r["measured_bw_ms"]), neusight, r["url"],
    )  # fmt: skip


def read_rows(path: Path = DATA) -> list[Row]:
    with path.open() as fh:
        return [_row(r) for r in csv.DictReader(fh)]


def not_predicted(row: Row) -> str | None:
    """Why dlrig gives no figure for the row (None: it does)."""
    if row.model not in CONFIGS:
        return "Switch Transformer: attention 32 x 128 wide on a 1,024 stream, not expressible"
    if row.variant in ("dp4", "tp4", "pp4_1"):
        return "4-GPU Megatron-LM run: another stack and step"
    if row.device == "AMD_Instinct_MI250":
        return "one GCD of an MI250: the catalog has the two-GCD module only"
    if not row.gpu:
        return "GPU not in the catalog"
    return None


def workload_doc(row: Row) -> dict[str, Any]:
    """The job as NeuSight's measure_e2e ran it, in the fields a user has."""
    c = CONFIGS[row.model]
    model: dict[str, Any] = {
        "kind": "language",
        "params": params(c, row.training),
        "forward_flops_per_token": forward_flops_per_token(c, row.seq_len, row.training),
        "seq_len": row.seq_len,
        "hidden_size": c.d,
        "num_layers": c.layers,
        "num_heads": c.heads,
        "ffn_hidden_size": c.f,
        "hidden_act": c.hidden_act,
        "attention": "eager",
        "dropout": row.training,  # model.train() in training, model.eval() in inference
    }
    if has_vocabulary_head(c, row.training):
        model.update(vocab_size=c.vocab, tied_embeddings=True)
    doc: dict[str, Any] = {
        "name": f"{c.title} ({row.mode}, NeuSight)",
        "model": model,
        "mode": row.mode,
        "batch_size": row.batch,
        "precision": "fp32",
        "optimizer": "adamw",
        "dataset": "synthetic",
    }
    if row.training:
        doc["optimizer_step"] = "none"
    if row.variant == "fusion":
        doc["kernels"] = "compile"
    return doc


@dataclass(frozen=True)
class Prediction:
    row: Row
    ms: float
    low_ms: float
    high_ms: float

    @property
    def error(self) -> float:
        return self.ms / self.row.measured_ms - 1.0

    @property
    def inside(self) -> bool:
        return self.low_ms <= self.row.measured_ms <= self.high_ms

    @property
    def neusight_error(self) -> float | None:
        n = self.row.neusight_ms
        return None if n is None else n / self.row.measured_ms - 1.0


def predict(row: Row) -> Prediction:
    """dlrig's time for the row's step on one GPU, with the shipped calibration."""
    gpu = load_catalog().find(GPU, row.gpu)
    build = Build(name=f"1x {gpu.name}", gpus=(GPUGroup(gpu, 1),))
    est = estimate(build, resolve_workload(workload_doc(row), "bench_neusight"))
    return Prediction(row, est.step_time_s * 1e3, est.step_time_s_low * 1e3,
                      est.step_time_s_high * 1e3)  # fmt: skip


def _cells(preds: list[Prediction]) -> str:
    both = [p for p in preds if p.neusight_error is not None]
    neusight = [abs(e) for p in both if (e := p.neusight_error) is not None]
    ours = [abs(p.error) for p in both]
    inside = sum(p.inside for p in preds)
    pair = f"{statistics.median(ours):.1%} vs {statistics.median(neusight):.1%}" if both else "-"
    return f"{stats_cells([p.error for p in preds])} | {inside}/{len(preds)} | {len(both)} | {pair}"


def _groups(preds: list[Prediction], key: Callable[[Row], str]) -> list[str]:
    groups: dict[str, list[Prediction]] = {}
    for p in preds:
        groups.setdefault(key(p.row), []).append(p)
    return [f"| {name} | {_cells(g)} |" for name, g in sorted(groups.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = read_rows()
    skipped = {r: why for r in rows if (why := not_predicted(r)) is not None}
    preds = [predict(r) for r in rows if r not in skipped]
    reasons: dict[str, int] = {}
    for why in skipped.values():
        reasons[why] = reasons.get(why, 0) + 1
    title = provenance.sources()[SOURCE].title
    lines = [
        "# Accuracy of `dlrig estimate` on NeuSight's measured rows, beside NeuSight",
        "",
        f"Command: `.venv/bin/python bench/bench_neusight.py` ({dt.date.today()}, {machine()}).",
        "",
        f"{len(rows)} rows from `bench/data/neusight_2025.csv`: {title}. Each is one GPU's "
        "time for the forward + backward (no optimizer step) or the inference forward pass "
        "of a transformers model in true FP32, eager attention, as NeuSight's measure_e2e "
        "ran it; dlrig predicts it from the job's fields (`optimizer_step: none`, an "
        "inference pass over whole sequences, `kernels: compile` for the torch.compile "
        f"rows). {len(preds)} predicted; {len(skipped)} not, by reason: "
        + "; ".join(f"{why} ({n})" for why, n in sorted(reasons.items()))
        + ". NeuSight's error is its own prediction of the same row "
        "(scripts/asplos/summary/summary.csv); the last columns compare the two on the rows "
        "both predict. The interval is dlrig's shipped one.",
        "",
        f"- {title}: {provenance.status([SOURCE])}",
        "",
        "| group | n | median abs error | p90 abs error | median signed | inside interval "
        "| n with NeuSight | median abs: dlrig vs NeuSight |",
        "|---|---|---|---|---|---|---|---|",
        f"| all | {_cells(preds)} |",
        *_groups(preds, lambda r: f"mode {r.mode}"),
        *_groups(preds, lambda r: f"GPU {r.gpu}"),
        *_groups(preds, lambda r: f"model {r.model}"),
        *_groups(preds, lambda r: f"{r.mode} {r.gpu}"),
        *_groups(preds, lambda r: "torch.compile" if r.variant == "fusion" else "eager"),
        "",
        "| row | measured ms | dlrig ms | error | interval | NeuSight ms | NeuSight error |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {p.row.label} | {p.row.measured_ms:,.1f} | {p.ms:,.1f} | {p.error:+.1%} | "
            f"{p.low_ms:,.0f}-{p.high_ms:,.0f} | "
            + (
                f"{p.row.neusight_ms:,.1f} | {e:+.1%} |"
                if p.row.neusight_ms is not None and (e := p.neusight_error) is not None
                else "- | - |"
            )
            for p in preds
        ),
        "",
        "Not predicted:",
        "",
        *(f"- {r.label}: {why}" for r, why in skipped.items()),
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
