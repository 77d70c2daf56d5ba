"""The speed-ups and memory savings kernel libraries publish, beside what dlrig's `kernels`
field makes of the same jobs, none of it fitted.

    .venv/bin/python bench/bench_kernel_libraries.py [--out FILE]

dlrig does not apply a library's published factor: `kernels` changes the kernels, the bytes and
the saved tensors it counts per layer (dlrig.model.layers.layer_pointwise) and the job fields
the library implies (dlrig.workloads.kernels). Each row below is a library's own headline
benchmark, predicted twice on the build it names, once as eager PyTorch and once with the
library; the ratio of the two is set against the published one. The published jobs do not
state their sequence length, so each is predicted over the lengths that bracket it. Writes
bench/results/kernel_libraries.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import provenance
from machine_info import machine

from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.workloads import resolve_workload

OUT = Path(__file__).resolve().parent / "results" / "kernel_libraries.md"


@dataclass(frozen=True)
class Published:
    """A library's headline: throughput over eager PyTorch, and the share of GPU memory left
    (1 - the published reduction), on the job it describes."""

    library: str
    job: str
    gpu: str
    gpus: int
    workload: dict[str, Any]
    seq_lens: tuple[int, ...]
    speedup: float
    memory_left: float
    source: str


ROWS = (
    Published(
        "liger",
        "Llama 3 8B, batch 8, bf16, AdamW, gradient checkpointing, FSDP1",
        "A100 SXM4 80GB", 8,
        {"model": "llama-3-8b", "batch_size": 8, "parallel": "fsdp",
         "activation_checkpointing": True},
        (1024, 2048, 4096),
        1.20, 0.40,
        "linkedin/Liger-Kernel README, 'Supercharge Your Model with Liger Kernel' (throughput "
        "'more than 20%', memory '60%' less; benchmark conditions under its plots), read "
        "2026-12-06",
    ),
    Published(
        "unsloth",
        "Llama 3.1 8B QLoRA r32 on all linears, batch 2, accumulation 4, Alpaca",
        "H100 SXM5 80GB", 1,
        {"model": "llama-3-8b-qlora", "batch_size": 2, "gradient_accumulation": 4,
         "activation_checkpointing": True},
        (512, 2048),
        2.0, 0.30,
        "docs.unsloth.ai/basics/unsloth-benchmarks (Llama 3.1 8B on 80 GB: '2x' speed, '>70%' "
        "VRAM reduction against Hugging Face + FA2), read 2026-12-06",
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Modelled:
    row: Published
    seq_len: int
    speedup: float
    memory_left: float


def predict(row: Published, seq_len: int) -> Modelled:
    build = resolve_build(
        {"name": f"{row.gpus}x {row.gpu}", "gpus": [{"model": row.gpu, "count": row.gpus}]},
        "bench_kernel_libraries",
    )
    runs = {}
    for library in ("eager", row.library):
        doc = {**row.workload, "seq_len": seq_len, "kernels": library, "dataset": "synthetic"}
        runs[library] = estimate(build, resolve_workload(doc, "bench_kernel_libraries"))
    eager, fast = runs["eager"], runs[row.library]
    assert eager.tokens_per_s and fast.tokens_per_s
    return Modelled(
        row,
        seq_len,
        fast.tokens_per_s / eager.tokens_per_s,
        fast.memory.gpu_required_gb / eager.memory.gpu_required_gb,
    )


def report(results: list[Modelled]) -> str:
    lines = [
        "# Kernel libraries: published speed-ups against the model's",
        "",
        f"Command: `.venv/bin/python bench/bench_kernel_libraries.py` ({dt.date.today()}, "
        f"{machine()}).",
        "",
        "Each library's headline job predicted as eager PyTorch and with `kernels: <library>` "
        "on the build it names; dlrig counts kernels, bytes and saved tensors, it applies no "
        "published factor. " + provenance.status(["kernel_library_speedups"]),
        "",
        "| library | job | GPUs | seq | published speed-up | dlrig | published memory left | "
        "dlrig |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in results:
        r = m.row
        lines.append(
            f"| {r.library} | {r.job} | {r.gpus}x {r.gpu} | {m.seq_len:,} | "
            f"{r.speedup:.2f}x | {m.speedup:.2f}x | {r.memory_left:.0%} | {m.memory_left:.0%} |"
        )
    lines += ["", "Sources: " + "; ".join(f"{r.library}: {r.source}" for r in ROWS) + ".", ""]
    lines += [
        "What the model leaves out: the host's per-kernel launch time these libraries also "
        "save is overlapped with the GPU's work (compute.overlapped_s), so the eager layer's "
        "extra small kernels cost only their fitted GPU time; Unsloth's fused LoRA matmuls and "
        "its QLoRA dequantisation, and the offload of its checkpoints to host RAM, are not "
        "modelled; memory is the model's whole-GPU figure, the published one the library's "
        "own plot.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    results = [predict(row, s) for row in ROWS for s in row.seq_lens]
    args.out.write_text(report(results), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
