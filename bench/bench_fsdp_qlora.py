"""Accuracy of `dlrig.model.estimate` on Answer.AI's FSDP + QLoRA benchmarks (fsdp_qlora,
February-March 2024), a calibration source (bench/provenance.toml).

    .venv/bin/python bench/bench_fsdp_qlora.py [--out FILE]

Rows: bench/data/fsdp_qlora_2024.csv, each with its URL and date: Llama-2 7B and 70B LoRA and
QLoRA fine-tuning with FSDP (full shard, or `ddp`: FSDP's NO_SHARD) at 512 and 2,048 tokens on
2x RTX 3090 (280 W, "older motherboard" with slow PCIe lanes), 2x RTX 4090 (PCIe 4.0 x16 each),
and Llama-2 70B QLoRA on 2-8 cloud RTX A5000, RTX 6000 Ada, A100 SXM4 40GB and 4 H100 SXM,
as "seconds to train 1,024 samples", turned into tokens/s per GPU. The job as train.py runs it
(AnswerDotAI/fsdp_qlora @05ed9f2): the model and its LoRA adapters in bf16 with no fp32 copy
(`--precision bf16`: no MixedPrecision policy, `quant_storage=bfloat16`), peft LoRA of rank 64
on q, k, v, gate, up and down (`lora_target_modules='all'`) with its dropout of 0.1
(`lora_dropout`), run eagerly, activation checkpointing of every decoder layer applied inside
each layer's FSDP unit (apply_activation_checkpointing after the FSDP wrap: the recompute runs
on the parameters the backward gathered, two gathers a micro-batch), FSDP's
CPUOffload(offload_params=True) where the row says so (train.py's default is True; every
table states it). Each row is
predicted as bench/bench_external_llm.py predicts its rows (its reading and workload builder),
on a build of the row's GPUs with the PCIe link the source gives each machine (MACHINE_LINKS):
the 4090s' stated PCIe 4.0 x16, the 3090s' "slow PCI lanes", x8; the rented
RTX A5000 and RTX 6000 Ada machines, "bandwidth-bound" in the source's words, without
peer-to-peer (RENTED_PCIE_WITHOUT_P2P; the other reading printed beside them). The published
machines' boards, cases and CPUs are not given otherwise, so the other cards' peer-to-peer is
the model's default for the card, and 3+ cards in that unknown chassis are not assumed to
throttle (the cloud rows ran on rented machines).
Writes bench/results/fsdp_qlora.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_external_llm as llm
import provenance
from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Bottleneck
from dlrig.machine import resolve_build
from dlrig.model import Estimate, estimate
from dlrig.model.interconnect import LinkClass, intra_node_link
from dlrig.workloads import resolve_workload

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data" / "fsdp_qlora_2024.csv"
OUT = REPO / "bench" / "results" / "fsdp_qlora.md"
SOURCE = "fsdp_qlora"  # its key in bench/provenance.toml


# Each machine's PCIe link to its GPUs, as the source's case studies describe it. The dual
# 4090 "budget workstation": "both GPUs have full PCIe v4 x16 lanes". Johno's dual 3090s sit on
# "an older motherboard" with "slow PCI lanes", and the 4090s' edge is put down to "the faster
# data transfer speed from full x16 PCIe lanes": fewer than x16 lanes each, read as x8 (the
# x8/x8 split of a desktop board with two cards) at the cards' own PCIe 4.0, 15.75 GB/s a
# direction. The generation is not stated: an older PCIe 3.0 board at x8 would halve it. The
# cloud machines' links are not given.
MACHINE_LINKS: dict[str, dict[str, int]] = {
    "GeForce RTX 3090": {"gen": 4, "lanes": 8},
    "GeForce RTX 4090": {"gen": 4, "lanes": 16},
}


# The rented machines of the 70B table ran PCIe cards (RTX A5000, RTX 6000 Ada) whose transfers
# were not hidden: "for the lower-end configurations ... training speed was bandwidth-bound.
# Once we moved to the H100 system with fast interconnect ... compute was the limiting factor"
# (the same file, "Recommendations for Different Hardware Configurations"). On PCIe that is
# what dlrig gives a machine without peer-to-peer (a virtual machine's passthrough GPUs, a
# probe's `peer_to_peer: false`): NCCL stages every hop through host memory and the gathers
# do not run beside the compute (interconnect.every_hop_host_staged). With peer-to-peer the
# model hides them behind the compute (0.04-0.09 s of 2-3.5 s exposed), the opposite of the
# source's words; that reading is printed beside each of these rows (other_reading).
RENTED_PCIE_WITHOUT_P2P = frozenset({"NVIDIA RTX A5000", "NVIDIA RTX 6000 Ada Generation"})


def build_doc(row: llm.Row, host_staged: bool | None = None) -> dict[str, Any]:
    """The row's build (bench_external_llm.build_doc) with its machine's PCIe link and, on the
    rented PCIe machines (or where `host_staged` says so), no peer-to-peer between its GPUs."""
    doc = llm.build_doc(row)
    link = MACHINE_LINKS.get(row.gpu)
    if link:
        doc["gpus"] = [{**doc["gpus"][0], "pcie": link}]
    staged = row.gpu in RENTED_PCIE_WITHOUT_P2P if host_staged is None else host_staged
    if staged:
        doc["measured"] = {"taken": row.date, "peer_to_peer": False}
    return doc


def _tokens_per_gpu(build: dict[str, Any], row: llm.Row) -> tuple[float, Estimate]:
    est = estimate(resolve_build(build, "fsdp_qlora"),
                   resolve_workload(llm.workload_doc(row), "fsdp_qlora"))  # fmt: skip
    assert est.tokens_per_s is not None
    return est.tokens_per_s / est.gpus, est


def predict(row: llm.Row) -> llm.Prediction:
    """A row as bench_external_llm.predict predicts it, on the machine the source describes."""
    tokens, est = _tokens_per_gpu(build_doc(row), row)
    fits = est.memory.max_batch_per_gpu >= row.micro_batch
    return llm.Prediction(row, tokens, fits, str(est.bottleneck), est)


def predictions() -> list[llm.Prediction]:
    """Every row of the file, predicted (none is flagged)."""
    return [predict(r) for r in llm.read_rows(DATA)]


def link_cell(row: llm.Row) -> str:
    """The PCIe link the row's build is given (the card's own where the source is silent), and
    whether its GPUs reach each other peer-to-peer."""
    link = MACHINE_LINKS.get(row.gpu)
    gen = "unstated"
    if link:
        gen = f"gen {link['gen']}" + (f" x{link['lanes']}" if "lanes" in link else "")
    return gen + (", no P2P" if row.gpu in RENTED_PCIE_WITHOUT_P2P else "")


def other_reading(row: llm.Row) -> float | None:
    """Tokens/s per GPU of a row whose cards can reach their peers over PCIe, predicted under
    the other reading of its machine: with peer-to-peer for the rented machines
    (RENTED_PCIE_WITHOUT_P2P), with every hop through host memory for the rest (a board
    whose slots meet at the CPU's host bridge, where NCCL uses no P2P on an Intel host from
    2.9.6, or a virtual machine). None where the card's link leaves one reading (NVLink,
    GeForce cards: host-staged either way). A second reading of the same rows."""
    gpu = load_catalog().find(GPU, row.gpu)
    build = build_doc(row, host_staged=False)
    link = intra_node_link(resolve_build(build, "fsdp_qlora"), gpu, row.gpus)
    if row.gpus < 2 or link is not LinkClass.PCIE:
        return None
    staged = row.gpu in RENTED_PCIE_WITHOUT_P2P
    return _tokens_per_gpu(build_doc(row, host_staged=not staged), row)[0]


def _parts_table(preds: list[llm.Prediction]) -> list[str]:
    lines = [
        "| model | job | GPUs | micro-batch | measured s | predicted s | compute | memory | "
        "interconnect (exposed) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in preds:
        # One GPU's micro-batch x sequence tokens at the published tokens/s per GPU, beside
        # dlrig's stages, which are per micro-batch: a reading of the row, not a fit.
        r, est = p.row, p.result
        measured_s = r.micro_batch * r.seq_len / r.measured
        stage, exposed = est.stages_s, est.exposed_s
        link = Bottleneck.INTERCONNECT
        lines.append(
            f"| {r.model} | {r.finetune} | {r.gpus}x {r.gpu} | {r.micro_batch} x {r.seq_len} | "
            f"{measured_s:.2f} | {est.step_time_s:.2f} | "
            f"{stage[Bottleneck.GPU_COMPUTE]:.2f} | {stage[Bottleneck.GPU_MEMORY_BANDWIDTH]:.2f} | "
            f"{stage[link]:.2f} ({exposed.get(link, 0.0):.2f}) |"
        )
    return lines


def _table(preds: list[llm.Prediction]) -> list[str]:
    lines = [
        "| model | job | GPUs | PCIe link | sharding | CPU offload | seq | micro-batch | "
        "measured tok/s/GPU | predicted | error | bottleneck | the other P2P reading: "
        "predicted, error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in preds:
        r = p.row
        staged = other_reading(r)
        other = f"{staged:,.1f}, {staged / r.measured - 1:+.1%}" if staged else ""
        gpu = r.gpu + (f" at {r.power_limit_w:.0f} W" if r.power_limit_w else "")
        lines.append(
            f"| {r.model} | {r.finetune} | {r.gpus}x {gpu} | {link_cell(r)} | "
            f"{'full shard' if r.zero_stage else 'NO_SHARD'} | {'yes' if r.cpu_offload else 'no'} "
            f"| {r.seq_len} | {r.micro_batch} | {r.measured:,.1f} | {p.tokens_per_gpu:,.1f} | "
            f"{p.error:+.1%} | {p.bottleneck} | {other} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    preds = predictions()
    by_job: dict[str, list[float]] = {}
    by_gpus: dict[str, list[float]] = {}
    for p in preds:
        r = p.row
        by_job.setdefault(f"{r.model} {r.finetune}", []).append(p.error)
        by_gpus.setdefault(f"{r.gpus}x {r.gpu}", []).append(p.error)
    groups = {"all": [p.error for p in preds], **by_job, **by_gpus}
    status = provenance.status([SOURCE]).rstrip(".")
    url, date = preds[0].row.url, preds[0].row.date
    lines = [
        "# Accuracy of `dlrig estimate` on Answer.AI's FSDP + QLoRA benchmarks",
        "",
        f"Command: `.venv/bin/python bench/bench_fsdp_qlora.py` ({dt.date.today()}, {machine()}).",
        "",
        f"{len(preds)} rows from `bench/data/fsdp_qlora_2024.csv` ({url}, {date}); "
        f"{provenance.sources()[SOURCE].title}: {status}.",
        "",
        "| rows | n | median abs error | p90 abs error | median signed |",
        "|---|---|---|---|---|",
        *(f"| {k} | {llm.stats_cells(v)} |" for k, v in groups.items()),
        "",
        *_table(preds),
        "",
        "Each row's micro-batch (one GPU's micro-batch x sequence tokens) in seconds: as measured "
        "(those tokens at the published tokens/s per GPU) and as dlrig's stages give it "
        "(compute and memory in series, the interconnect's exposed part added).",
        "",
        *_parts_table(preds),
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
