"""`selective_checkpointing`: torchtitan's selective activation checkpointing by op (its
configs' default). Its policy (_apply_ac_to_transformer_block, torchtitan/parallelisms/
parallelize_llama.py, end of 2024) keeps the outputs of aten.mm "except every second mm", of
the attention kernels and of the reduce-scatters, and recomputes everything else."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from model_fixtures import make_workload

from dlrig.errors import DlrigError
from dlrig.model import memory
from dlrig.model.compute import attention_flop_multiplier, training_flop_multiplier
from dlrig.model.memory import MemoryLayout, per_sample_bytes

REPO = Path(__file__).resolve().parents[2]


def _llama_8b(**keys: object):  # type: ignore[no-untyped-def]
    """Llama 3 8B (hidden 4096, 8 KV heads of 128, gated MLP of 14,336, 32 heads) with
    activation_checkpointing off unless asked."""
    return make_workload("llama-3-8b", **{"activation_checkpointing": False, **keys})


def test_every_second_linear_is_recomputed() -> None:
    """torchtitan's Llama layer calls wq, wk, wv, wo, w1, w3, w2: wk, wo and w3 run again,
    4096 x (1024 + 4096 + 14336) of 4096 x (4096 + 2 x 1024 + 4096 + 3 x 14336) FLOPs,
    19,456 / 53,248 = 36.5%. A full-finetune step: 1 + 2 + that; the attention's output is kept,
    so its scores are not recomputed (3x, as with no checkpointing)."""
    w = _llama_8b(selective_checkpointing=True)
    share = 19456 / 53248
    assert memory.selective_gemm_recompute_share(w) == pytest.approx(share)
    assert training_flop_multiplier(w) == pytest.approx(3.0 + share)
    assert attention_flop_multiplier(w) == 3.0
    assert w.recompute_share == 0.0 and w.pointwise_recompute_share == 1.0


def test_a_layer_keeps_its_input_its_odd_linears_and_its_attention() -> None:
    """Per token in bf16: the input (2 x 4096), wq's and wv's outputs (2 x 4096, 2 x 1024),
    w1's and w2's (2 x 14,336, 2 x 4096), the attention's output (2 x 4096) and its fp32
    log-sum-exp per head (4 x 32): 63,616 bytes, between full checkpointing's input alone and
    no checkpointing's every saved tensor."""
    w = _llama_8b(selective_checkpointing=True)
    layout = MemoryLayout()
    assert memory.selective_saved_bytes(w, 2.0, 2.0, layout) == 63616
    every = per_sample_bytes(_llama_8b(activation_checkpointing=True), True)
    none = per_sample_bytes(_llama_8b(), True)
    assert every < per_sample_bytes(w, True) < none


def test_it_replaces_a_zoo_entrys_full_recompute_and_a_librarys() -> None:
    """llama-3-8b checkpoints every layer in the zoo, and Unsloth's preset does too: a job that
    asks for selective checkpointing and says nothing of activation_checkpointing gets it."""
    for keys in ({}, {"kernels": "unsloth"}):
        w = make_workload("llama-3-8b", selective_checkpointing=True, **keys)
        assert w.selective_checkpointing and not w.activation_checkpointing


def test_it_is_one_policy_of_two_and_needs_the_layers_widths() -> None:
    with pytest.raises(DlrigError, match="selective_checkpointing"):
        _llama_8b(selective_checkpointing=True, activation_checkpointing=True)
    with pytest.raises(DlrigError, match="selective_checkpointing"):
        make_workload("resnet50", selective_checkpointing=True)


def test_torchtitans_llama_31_8b_on_eight_h100_peaks_as_its_table_says() -> None:
    """torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 1: Llama 3.1 8B, FSDP on
    8 H100 (96 GB HBM2e), local batch 2 at 8,192 tokens, selective checkpointing: 82.4 GiB
    reserved in eager mode (torchtitan logs max_reserved_gib). dlrig's reserve: within 10%
    (78.0 GiB); with the job given as no checkpointing, as before, 151 GiB."""
    for folder in ("scripts", "bench"):
        if str(REPO / folder) not in sys.path:
            sys.path.insert(0, str(REPO / folder))
    import bench_peak_memory

    row = next(
        r
        for r in bench_peak_memory.read_rows()
        if r.source == "torchtitan_memory" and r.peak_gib == 82.4
    )
    assert bench_peak_memory.predict(row).predicted_gib == pytest.approx(82.4, rel=0.10)
