"""GPU memory against jobs that ran: every Lambda training row (v0 2022 + v1 2024, 1-8 GPUs) at
its published per-GPU batch must fit its GPU (issue 10: a "does not fit" for a job people ran is
a wrong answer), and the largest batch that fits must be at least that batch.

Also lists, for each zoo entry whose activations are a per-sample figure (no transformer
structure), the tightest upper bound the rows put on that figure: (capacity - CUDA context -
model states x (1 + allocator share)) / ((1 + allocator share) x batch), in 32-bit terms. The zoo's
figures for GNMT, Mask R-CNN and Tacotron2 are these bounds (rounded down); ResNet-50's,
ResNet-152's and WaveGlow's are counted on the meta device (scripts/zoo_activations.py) and
checked against their bounds here.

Usage: .venv/bin/python bench/bench_memory.py
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import provenance
from calibration_data import DEFAULT_DATA_DIR, REPO, LambdaRow, read_lambda_rows
from machine_info import machine

from dlrig.catalog import load_catalog
from dlrig.model import estimate
from dlrig.model import memory as mem
from dlrig.model.calibration import default_calibration
from dlrig.model.rates import is_16bit

RESULT = REPO / "bench" / "results" / "memory.md"
MAX_GPUS = 8  # one node, as the accuracy bench


def implied_fp32_bound(row: LambdaRow) -> float:
    """The largest 32-bit per-sample activation figure under which the row's batch fits."""
    cal = default_calibration()
    w = row.workload
    sixteen = is_16bit(w.precision)
    layout = mem.declared_layout(w, row.num_gpus)
    need = mem.memory_need(
        w, w.batch_size, sixteen, layout, cal.cuda_context_gb, cal.allocator_overhead_fraction
    )
    scale = 1.0 + need.allocator_overhead_fraction
    room = mem.gpu_memory_bytes(row.gpu) - need.context_bytes
    # The backward's gradients are not held with every activation (MemoryNeed.peak_tensor_bytes).
    states = need.model_states_bytes - need.backward_gradient_bytes
    per_sample = (room / scale - states) / w.batch_size
    return per_sample * (2.0 if sixteen else 1.0)


def main() -> None:
    rows, _ = read_lambda_rows(DEFAULT_DATA_DIR, load_catalog(), multi_gpu=True)
    rows = [r for r in rows if r.num_gpus <= MAX_GPUS]
    cal = default_calibration()
    worst: dict[tuple[str, str], tuple[float, LambdaRow]] = {}
    counts: dict[tuple[str, str], list[int]] = {}
    no_fit: list[LambdaRow] = []
    short: list[LambdaRow] = []
    for r in rows:
        m = estimate(r.build(), r.workload, calibration=cal).memory
        key = (r.lambda_model, r.workload.precision.value)
        tally = counts.setdefault(key, [0, 0])
        tally[0] += 1
        # A batch that fits only split into accumulated micro-batches does not fit as written.
        if m.max_batch_per_gpu < r.workload.batch_size:
            no_fit.append(r)
            tally[1] += 1
        if m.max_batch_per_gpu < r.workload.batch_size:
            short.append(r)
        share = m.gpu_required_gb / m.gpu_available_gb
        if key not in worst or share > worst[key][0]:
            worst[key] = (share, r)

    lines = [
        "# GPU memory against the batches Lambda ran",
        "",
        f"Command: `.venv/bin/python bench/bench_memory.py` ({dt.date.today().isoformat()}, "
        f"{machine()}).",
        "",
        f"Rows: {len(rows)} Lambda training rows (v0 2022 + v1 2024, 1-{MAX_GPUS} GPUs, as read by "
        "`scripts/calibration_data.py`). Predicted not to fit at the published batch: "
        f"**{len(no_fit)}**; largest batch that fits below the published one: **{len(short)}** "
        "(target: 0 and 0). " + provenance.status(["lambda_memory"]),
        "",
        "| model precision | rows | do not fit | tightest row: need / capacity | GPU, batch |",
        "|---|---|---|---|---|",
    ]
    for key in sorted(counts):
        share, r = worst[key]
        lines.append(
            f"| {key[0]} {key[1]} | {counts[key][0]} | {counts[key][1]} | {share:.1%} "
            f"| {r.num_gpus}x {r.gpu.name}, {r.workload.batch_size} |"
        )
    lines += [
        "",
        "Per-sample activation figures (32-bit) of the zoo entries without transformer "
        "structure, against the tightest upper bound the rows put on them:",
        "",
        "| zoo entry | zoo figure MB | tightest bound MB | from |",
        "|---|---|---|---|",
    ]
    bounds: dict[str, tuple[float, LambdaRow]] = {}
    for r in rows:
        if r.workload.has_transformer_structure:
            continue
        name = r.workload.model_name or r.workload.name
        bound = implied_fp32_bound(r)
        if name not in bounds or bound < bounds[name][0]:
            bounds[name] = (bound, r)
    for name in sorted(bounds):
        bound, r = bounds[name]
        figure = r.workload.activation_bytes_per_sample
        lines.append(
            f"| {name} | {figure / 1e6:.3g} | {bound / 1e6:.3g} | {r.num_gpus}x {r.gpu.name}, "
            f"{r.workload.precision.value}, batch {r.workload.batch_size} |"
        )
    bert = next(r.workload for r in rows if r.lambda_model == "bert_base_squad")
    structural = mem.per_sample_bytes(bert, True)
    lines += [
        "",
        "BERT-base SQuAD (s = 384, 16-bit): "
        f"{structural / 1e6:.1f} MB per sample from its structure (Korthikanti et al. 2022) "
        f"against the {bert.activation_bytes_per_sample / 2e6:.0f} MB the zoo's Lambda-implied "
        f"32-bit figure gave halved ({bert.activation_bytes_per_sample / 2 / structural:.2f}x).",
        "",
    ]
    RESULT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
