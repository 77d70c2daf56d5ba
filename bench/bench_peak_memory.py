"""dlrig's GPU memory against published peak memory of LLM fine-tuning jobs.

    .venv/bin/python bench/bench_peak_memory.py [--out FILE]

Rows: bench/data/peak_memory.csv, each with its URL, date, licence and the table it comes from:
Answer.AI's fsdp_qlora benchmarks (benchmarks_03_2024.md: Llama-2 7B and 70B LoRA and QLoRA
with FSDP or its NO_SHARD "DDP" on 2x RTX 3090 and 2x RTX 4090; "Peak Memory (GiB)" is
torch.cuda.max_memory_reserved, two allocated figures from the note under the first table) and
torchtune's README (the 'Memory and training speed' table, and the 'Optimization flags' table:
Llama 3.2 3B on an A100 with one technique added per row; "Peak Memory Active", tensors
allocated). Each row's job is written in the columns bench/bench_external_llm.py reads (model,
GPUs, sequence, micro-batch, precision, LoRA/QLoRA/full, optimizer, checkpointing, FSDP shards,
CPU offload, loss chunks) and predicted as that job ran: its declared layout at its published
micro-batch (dlrig.model.memory.memory_need), not the plan dlrig would choose. Against an
allocated (or active) figure dlrig's live tensors are compared (memory_need allocated: the loss's
tensors or the recomputed layer, whichever is larger); against a reserved one, the allocator's
reserve (both) times its share (calibration allocator_overhead_fraction);
a paged optimizer's state (CUDA managed memory) is in none of those figures and is taken off.
Which constants were chosen with which of these sources in view: bench/provenance.toml (the
result file says).
A row leaves the cleaned figure only on its own flag, evidence from the source (a throughput above
the card's datasheet peak, a technique the workload cannot state); the all-rows figure keeps it.
Writes bench/results/peak_memory.md.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_external_llm as llm
import provenance
from machine_info import machine, write_result

from dlrig.model import memory as mem
from dlrig.model.calibration import default_calibration
from dlrig.model.rates import is_16bit
from dlrig.units import GIB
from dlrig.workloads import resolve_workload

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data" / "peak_memory.csv"
OUT = REPO / "bench" / "results" / "peak_memory.md"
MEASURES = ("allocated", "active", "reserved")


@dataclass(frozen=True)
class MemoryRow:
    """A published peak and the job that reached it (`job`: the columns external_llm reads)."""

    job: llm.Row
    source: str  # a key of bench/provenance.toml [sources]
    table: str
    measure: str  # allocated | active | reserved
    peak_gib: float
    licence: str
    activation_offloading: bool = False


@dataclass(frozen=True)
class MemoryPrediction:
    row: MemoryRow
    predicted_gib: float

    @property
    def error(self) -> float:
        return self.predicted_gib / self.row.peak_gib - 1.0

    @property
    def ratio(self) -> float:
        """Measured over predicted: what an interval on the prediction must hold."""
        return self.row.peak_gib / self.predicted_gib

    @property
    def cleaned(self) -> bool:
        return not self.row.job.flag


def read_rows(path: Path = DATA) -> list[MemoryRow]:
    jobs = llm._read_csv(path)  # the same columns, read the same way
    with path.open() as fh:
        extra = list(csv.DictReader(fh))
    rows = []
    for job, r in zip(jobs, extra, strict=True):
        if r["measure"] not in MEASURES:
            raise ValueError(f"{path}: measure {r['measure']!r}, expected one of {MEASURES}")
        rows.append(MemoryRow(job, r["memory_source"], r["table"], r["measure"],
                              float(r["peak_gib"]), r["licence"],
                              r["activation_offloading"] == "true"))  # fmt: skip
    return rows


def predict(row: MemoryRow) -> MemoryPrediction:
    """The job's tensors on one GPU under its declared layout at its published micro-batch."""
    job = row.job
    doc = llm.workload_doc(job)
    # The row states its own loss: torchtune's flags table adds the chunked loss part-way.
    doc["loss_chunks"] = job.loss_chunks
    doc["activation_offloading"] = row.activation_offloading
    # torchtune's recipes drop the logits before the backward (`del logits`,
    # lora_finetune_single_device.py @1814feb) and its MultiHeadAttention saves K and V copied
    # to every query head (torchtune/modules/attention.py @1814feb); torchtitan's train step
    # does both too (`del pred` before loss.backward(), "need to free to before bwd to avoid
    # peaking memory", train.py; repeat_kv before scaled_dot_product_attention,
    # torchtitan/models/llama/model.py, end of 2024); fsdp_qlora's train.py @05ed9f2 keeps
    # `output` (its logits) through loss.backward(), and transformers' Llama attention repeats K
    # and V inside the attention call (eager) or not at all (SDPA, flash).
    releases = job.framework in ("torchtune", "torchtitan")
    doc["logits_released"] = releases
    doc["expanded_kv"] = releases
    workload = resolve_workload(doc, "peak_memory")
    cal = default_calibration()
    layout = mem.declared_layout(workload, min(job.gpus, llm.GPUS_PER_NODE), job.nodes)
    # An allocated or active peak counts live tensors; a reserved one the allocator's cache.
    need = mem.memory_need(workload, workload.batch_size, is_16bit(workload.precision), layout,
                           cal.cuda_context_gb, cal.allocator_overhead_fraction,
                           allocated=row.measure != "reserved")  # fmt: skip
    # Every measure here is PyTorch's allocator's: a paged optimizer's managed state is not in it.
    tensors = need.peak_tensor_bytes - need.managed_bytes
    if row.measure == "reserved":
        tensors *= 1.0 + cal.allocator_overhead_fraction
    return MemoryPrediction(row, tensors / GIB)


def predictions() -> list[MemoryPrediction]:
    return [predict(r) for r in read_rows()]


def judging_bands() -> dict[str, tuple[float, float]]:
    """The interval each memory calibration source is judged by: the band the other calibration
    sources give (held_out.memory_left_out_bands), so that no source judges itself; a source
    not among them is judged by the shipped memory.MEMORY_RATIO_BAND."""
    import held_out

    return held_out.memory_left_out_bands(held_out.memory())


def band_coverage(
    preds: list[MemoryPrediction], bands: dict[str, tuple[float, float]] | None = None
) -> float | None:
    """Share of the rows whose measured peak lies in the interval around dlrig's figure: its
    source's left-out band in `bands`, else memory.MEMORY_RATIO_BAND."""
    if not preds:
        return None
    bands = bands or {}
    inside = 0
    for p in preds:
        low, high = bands.get(p.row.source, mem.MEMORY_RATIO_BAND)
        inside += low <= p.ratio <= high
    return inside / len(preds)


def _stats(preds: list[MemoryPrediction], bands: dict[str, tuple[float, float]]) -> str:
    if not preds:
        return "0 | - | - | - | -"
    errors = [abs(p.error) for p in preds]
    cover = band_coverage(preds, bands)
    return (
        f"{len(preds)} | {statistics.median(errors):.1%} | {float(np.quantile(errors, 0.9)):.1%} "
        f"| {statistics.median(p.error for p in preds):+.1%} | {cover:.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    preds = predictions()
    sources = sorted({p.row.source for p in preds})
    low, high = mem.MEMORY_RATIO_BAND
    bands = judging_bands()
    left_out = "; ".join(f"{s} by {lo:.3f}-{hi:.3f}x" for s, (lo, hi) in sorted(bands.items()))
    lines = [
        "# GPU memory against published peak memory of fine-tuning jobs",
        "",
        f"Command: `.venv/bin/python bench/bench_peak_memory.py` ({dt.date.today()}, {machine()}).",
        "",
        f"Rows: `bench/data/peak_memory.csv`, {len(preds)} published peaks. "
        + " ".join(provenance.status([s]) for s in sources)
        + " Each job predicted as it ran (its declared layout at its published micro-batch); "
        "dlrig's live tensors (model states, activations, the loss's tensors or the recomputed "
        "layer, whichever is larger) against an allocated or active figure, the allocator's "
        "reserve (both) times its share against a reserved one; a paged optimizer's state, in "
        "CUDA managed "
        "memory, is in none of PyTorch's figures and not counted. Interval: dlrig's "
        f"{low:.3f}-{high:.3f}x band around its figure (memory.MEMORY_RATIO_BAND, from every "
        "row of the memory calibration sources, bench/held_out.memory_band); a calibration "
        "source is judged by the band the other calibration sources give, so that no source "
        f"judges itself ({left_out}).",
        "",
        "| source | rows | median abs error | p90 | median signed error | in interval |",
        "|---|---|---|---|---|---|",
    ]
    for source in sources:
        mine = [p for p in preds if p.row.source == source]
        lines.append(f"| {source} (all rows) | {_stats(mine, bands)} |")
        lines.append(f"| {source} (cleaned) | {_stats([p for p in mine if p.cleaned], bands)} |")
    lines += [
        f"| every row | {_stats(preds, bands)} |",
        f"| every cleaned row | {_stats([p for p in preds if p.cleaned], bands)} |",
        "",
        "| source | table | model | job | GPUs | seq | micro-batch | measure | published GiB | "
        "dlrig GiB | error | capacity GiB | left out of cleaned |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in preds:
        j = p.row.job
        offload = ", CPU offload" if j.cpu_offload else ""
        shard = "FSDP" if j.zero_stage else "replicated"
        lines.append(
            f"| {p.row.source} | {p.row.table} | {j.model} | {j.finetune}, {shard}{offload} | "
            f"{j.gpus}x {j.gpu} | {j.seq_len} | {j.micro_batch} | {p.row.measure} | "
            f"{p.row.peak_gib:.2f} | {p.predicted_gib:.2f} | {p.error:+.1%} | "
            f"{llm.card_memory_gb(j.gpu):g} | {j.flag} |"
        )
    lines.append("")
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
