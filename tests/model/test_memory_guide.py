"""GPU memory: bytes per parameter, QLoRA, and what does not fit (GPU.4)."""

from __future__ import annotations

import pytest
from model_fixtures import RTX_3090, RTX_A6000, make_build, make_workload

from dlrig.model import estimate
from dlrig.model.memory import MemoryLayout, model_state_bytes, trainable_state_bytes_per_param
from dlrig.workloads import resolve_workload
from dlrig.workloads.loader import zoo_document


def test_7b_mixed_precision_adam_needs_16_to_18_bytes_per_parameter() -> None:
    """Guide (issue): a 7B model with mixed-precision Adam needs ~16-18 bytes per parameter
    before activations (ZeRO: 2 + 2 + 4 + 8 = 16)."""
    assert 16 <= trainable_state_bytes_per_param("adam", True) <= 18
    job = resolve_workload(
        {"model": {"params": 7e9, "forward_flops_per_token": 14e9, "seq_len": 2048},
         "precision": "bf16", "optimizer": "adamw"},
        "test",
    )  # fmt: skip
    per_param = model_state_bytes(job, True, MemoryLayout())[0] / 7e9
    assert 16 <= per_param <= 18


def test_70b_qlora_fits_a_48_gb_gpu_at_a_small_batch() -> None:
    """QLoRA (Dettmers et al. 2023): a 65B model fine-tunes on one 48 GB GPU, at its Guanaco
    recipe's lengths (artidoro/qlora scripts/finetune_guanaco_65b.sh: source_max_len 16 +
    target_max_len 512 tokens, gradient checkpointing). Llama 3 70B carries 8% more weights
    and a 4x larger vocabulary than LLaMA 65B: at those 528 tokens one sequence at a time
    fits, at 2048 tokens its logits, their fp32 log-softmax and their gradients (12 s v =
    3.2 GB) tip it over."""
    short = zoo_document("llama-3-70b-qlora")
    short = {**short, "name": "guanaco length", "batch_size": 1,
             "model": {**short["model"], "seq_len": 528}}  # fmt: skip
    est = estimate(make_build(RTX_A6000), resolve_workload(short, "test"))
    assert est.memory.fits
    assert est.memory.max_batch_per_gpu >= 1
    assert est.memory.gpu_available_gb == 48
    full = estimate(make_build(RTX_A6000), make_workload("llama-3-70b-qlora", batch_size=1))
    assert not full.memory.fits


def test_full_8b_fine_tune_does_not_fit_one_24_gb_gpu() -> None:
    """16 B/parameter x 8.03e9 = 128.5e9 bytes of model states alone: 119.7 GB in the binary
    GB a card's 24 GB is counted in."""
    est = estimate(make_build(RTX_3090), make_workload("llama-3-8b", batch_size=1))
    assert not est.memory.fits
    assert est.memory.max_batch_per_gpu == 0
    assert est.memory.model_states_gb == pytest.approx(8030261248 * 16 / 2**30)


def test_fsdp_shards_model_states_and_lora_shrinks_them() -> None:
    one = estimate(make_build(RTX_A6000), make_workload("llama-3-8b", batch_size=1))
    eight = estimate(make_build(RTX_A6000, count=8), make_workload("llama-3-8b", batch_size=1))
    # ZeRO-3 over 8: 16 B/param / 8, plus the gathered root unit (bf16 embedding and LM head,
    # 2 x 128256 x 4096) and two gathered layers (the rest of the bf16 weights / 32 each); at
    # the peak, the backward's start, its gradients' 2 B/param / 8 are not made yet but the
    # output projection's (memory.MemoryNeed.peak_states_bytes, memory.head_gradient_params).
    params, embeddings = 8030261248, 2 * 128256 * 4096
    gathered = 2 * embeddings + 2 * 2 * (params - embeddings) / 32
    expected_gib = ((16 - 2) * params / 8 + 2 * embeddings / 2 / 8 + gathered) / 2**30
    assert eight.memory.model_states_gb == pytest.approx(expected_gib)
    assert eight.memory.model_states_gb < one.memory.model_states_gb / 6
    lora = estimate(make_build(RTX_3090), make_workload("llama-3-8b-lora", batch_size=1))
    qlora = estimate(make_build(RTX_3090), make_workload("llama-3-8b-qlora", batch_size=1))
    assert lora.memory.fits and qlora.memory.model_states_gb < lora.memory.model_states_gb / 2


def test_largest_batch_is_consistent_with_fits() -> None:
    """The largest batch runs as written; one more sample runs split into accumulated
    micro-batches no larger than it (memory_plan)."""
    build = make_build(RTX_3090)
    est = estimate(build, make_workload("resnet50"))
    biggest = est.memory.max_batch_per_gpu
    at = estimate(build, make_workload("resnet50", batch_size=biggest))
    assert at.memory.fits and at.batch_per_gpu == biggest
    over = estimate(build, make_workload("resnet50", batch_size=biggest + 1))
    assert over.memory.fits and over.batch_per_gpu <= biggest
    assert over.parallel is not None
    assert over.batch_per_gpu * over.parallel.gradient_accumulation == biggest + 1


def test_pure_bf16_adam_keeps_8_bytes_per_parameter_and_no_fp32_copy() -> None:
    """Pure 16-bit training (as llm.q trains: bench/data/external_llm.csv, pure_16bit) keeps
    16-bit weights, gradients and Adam moments and no fp32 master copy: 2 + 2 + 2 x 2 = 8 B a
    parameter where mixed precision keeps 16 (ZeRO's 2 + 2 + 4 + 8); its gradients all-reduce
    in 16 bits and its optimizer step moves half the bytes. An fp32 run ignores the flag."""
    from dlrig.model import compute, parallelism

    assert trainable_state_bytes_per_param("adamw", True, pure_16bit=True) == 8
    assert trainable_state_bytes_per_param("sgd", True, pure_16bit=True) == 6
    doc = {"model": {"params": 7e9, "forward_flops_per_token": 14e9, "seq_len": 2048},
           "precision": "bf16", "optimizer": "adamw"}  # fmt: skip
    mixed = resolve_workload(doc, "test")
    pure = resolve_workload({**doc, "pure_16bit": True}, "test")
    assert model_state_bytes(pure, True, MemoryLayout())[0] == pytest.approx(8 * 7e9)
    assert parallelism.gradient_bytes_per_param(pure, sixteen_bit=True) == 2.0
    assert parallelism.gradient_bytes_per_param(mixed, sixteen_bit=True) == 4.0
    assert compute.optimizer_bytes(pure, 7e9) == compute.optimizer_bytes(mixed, 7e9) / 2
    assert not resolve_workload({**doc, "precision": "fp32", "pure_16bit": True}, "t").pure_16bit


def test_the_optimizer_step_is_shared_by_the_accumulated_micro_batches() -> None:
    """With k micro-batches per optimizer step the step's traffic (Adam: 28 B a parameter,
    compute.optimizer_bytes) runs once per k, so each micro-batch carries 1/k of it."""
    from dlrig.model import compute

    doc = {"model": {"params": 7e9, "forward_flops_per_token": 14e9, "seq_len": 2048},
           "precision": "bf16", "optimizer": "adamw"}  # fmt: skip
    once = resolve_workload(doc, "test")
    eight = resolve_workload({**doc, "gradient_accumulation": 8}, "test")
    assert compute.optimizer_bytes(once, 7e9) == pytest.approx(28 * 7e9)
    assert compute.optimizer_bytes(eight, 7e9) == pytest.approx(28 * 7e9 / 8)
