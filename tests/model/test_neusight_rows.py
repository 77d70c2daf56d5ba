"""NeuSight's measured rows (bench/data/neusight_2025.csv, predicted by bench/bench_neusight.py):
each row carries its source, and each is the job NeuSight's measure_e2e ran, in the fields a
user has."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for folder in ("scripts", "bench"):
    if str(REPO / folder) not in sys.path:
        sys.path.insert(0, str(REPO / folder))

import bench_neusight as ns  # noqa: E402
import provenance  # noqa: E402

from dlrig.workloads import resolve_workload  # noqa: E402
from dlrig.workloads.model import KernelLibrary, Mode, OptimizerStep  # noqa: E402


def _row(label: str) -> ns.Row:
    return next(r for r in ns.read_rows() if r.label == label)


def test_every_label_file_is_a_row_with_its_source() -> None:
    """149 label JSONs at db1fdc96 (scripts/asplos/label/*/*.json); 146 of them are in the
    summary with NeuSight's prediction (the two 2,048-token Switch rows on the A100 PCIe and
    the L4's switch4 row are not)."""
    rows = ns.read_rows()
    assert len(rows) == 149
    assert sum(r.neusight_ms is not None for r in rows) == 146
    for r in rows:
        assert r.url.startswith(
            "https://github.com/sitar-lab/NeuSight/blob/db1fdc966633fe96c0717e0706e7621ad0921ed2/"
            "scripts/asplos/label/"
        )
        if r.variant in ("dp4", "tp4", "pp4_1"):
            continue  # Megatron-LM's step time alone (no forward/backward split)
        # measure_e2e: e2e = forward + backward (0 for inference)
        assert r.measured_ms == pytest.approx(r.fw_ms + r.bw_ms, abs=2e-4)  # 4 decimals
        assert (r.bw_ms == 0.0) == (r.mode == "inference")
    assert provenance.sources()[ns.SOURCE].kind == "training"
    assert (REPO / "bench" / "data" / "neusight_2025.LICENSE").read_text().count("MIT") >= 1


def test_a_row_copies_its_label_file() -> None:
    """NVIDIA_H100_80GB_HBM3/gpt2_large-train-1024-4.json: e2e 638.81 ms = fw 226.33 + bwall
    412.48; summary.csv's neusight_all_e2e_latency for it 649.56 ms."""
    row = _row("gpt2_large training 1024x4 NVIDIA_H100_80GB_HBM3")
    assert row.measured_ms == pytest.approx(638.8086, abs=1e-3)
    assert row.fw_ms == pytest.approx(226.3273, abs=1e-3)
    assert row.neusight_ms == pytest.approx(649.5551, abs=1e-3)
    assert row.gpu == "H100 SXM5 80GB"


def test_the_model_sizes_are_the_configs() -> None:
    """transformers' parameter counts for the configs: GPT-2 Large 774,030,080 (HF gpt2-large),
    OPT-1.3B 1,315,758,080 (HF facebook/opt-1.3b), BERT-large 335,141,888 for the encoder and
    pooler (HF bert-large-uncased, 336 M with its pre-training heads)."""
    assert ns.params(ns.CONFIGS["gpt2_large"], True) == 774_030_080
    assert ns.params(ns.CONFIGS["opt_13"], True) == 1_315_758_080
    bert = ns.CONFIGS["bert_large"]
    assert ns.params(bert, False) - (2 * 1024 + 2) == 335_141_888
    assert ns.params(bert, True) > ns.params(bert, False)


def test_a_row_runs_as_measure_e2e_ran_it() -> None:
    """Training: fp32, forward + backward with no optimizer step, dropout on (model.train());
    inference: one forward pass over the whole sequences (no KV cache: no decoding), dropout
    off; BERT infers as a sequence classifier (no vocabulary head); `-fusion` rows under
    torch.compile."""
    train = resolve_workload(ns.workload_doc(_row("bert_large training 512x8 NVIDIA_L4")), "t")
    assert train.mode is Mode.TRAINING and train.optimizer_step is OptimizerStep.NONE
    assert train.precision.value == "fp32" and train.dropout and train.vocab_size == 30522
    infer = resolve_workload(
        ns.workload_doc(_row("bert_large inference 512x8 fusion NVIDIA_L4")), "t"
    )
    assert infer.mode is Mode.INFERENCE and infer.kv_bytes_per_token is None
    assert infer.vocab_size is None and not infer.dropout
    assert infer.kernels is KernelLibrary.COMPILE


def test_rows_dlrig_cannot_express_are_counted_not_dropped() -> None:
    """13 Switch Transformer rows, 11 Megatron-LM 4-GPU rows, 16 MI250 (one GCD) rows and 8 on
    the P100 and P4, which the catalog lacks: 48 of 149."""
    reasons = [ns.not_predicted(r) for r in ns.read_rows()]
    assert sum(why is not None for why in reasons) == 48
    assert sum(why is not None and "MI250" in why for why in reasons) == 16


def test_the_source_is_calibration_for_the_constants_set_on_it() -> None:
    """The FP32 GEMM rows and the dropout/loss counts were chosen with these rows' errors in
    view: bench/provenance.toml says so, the bench no longer calls the source held out, and its
    rows enter the interval's calibration sources (scripts/calibrate.py band_sources)."""
    from calibrate import band_sources

    assert not provenance.held_out([ns.SOURCE])
    chosen = provenance.set_on([ns.SOURCE], "chosen")
    assert any("FP32 (SGEMM)" in c.name for c in chosen)
    assert any("dropout" in c.name for c in chosen)
    assert ns.SOURCE in band_sources()
