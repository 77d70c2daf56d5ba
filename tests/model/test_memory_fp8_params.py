"""FP8 weight storage (`fp8_params`: Transformer Engine's fp8_model_init, NeMo's fp8_params):
a byte a linear weight, and in training a second byte for the transposed copy TE keeps for the
backward (dlrig.model.memory.FP8_WEIGHT_BYTES, FP8_TRANSPOSE_BYTES)."""

from __future__ import annotations

import pytest
from model_fixtures import make_workload

from dlrig.errors import ValidationError
from dlrig.model import memory

# Llama 3 8B (Meta's config.json): 128,256 x 4,096 input embedding and untied output projection.
LLAMA3_8B_EMBEDDINGS = 2 * 128_256 * 4_096


def test_fp8_params_needs_fp8_precision() -> None:
    with pytest.raises(ValidationError, match="fp8_params"):
        make_workload("llama-3-8b-lora", precision="bf16", fp8_params=True)


def test_inference_holds_a_byte_a_linear_weight_and_16_bit_embeddings() -> None:
    """At inference no backward needs the transpose: Llama 3 8B's 6.98e9 linear weights at
    1 B and its 1.05e9 embedding and head weights at 2 B, 9.08e9 B against 16.06e9 B."""
    fp8 = make_workload("llama-3-8b", mode="inference", precision="fp8", fp8_params=True)
    plain = make_workload("llama-3-8b", mode="inference", precision="fp8")
    layout = memory.MemoryLayout()
    linear = fp8.params - LLAMA3_8B_EMBEDDINGS
    stored, _ = memory.model_state_bytes(fp8, True, layout)
    assert stored == pytest.approx(linear * 1.0 + LLAMA3_8B_EMBEDDINGS * 2.0)
    assert memory.model_state_bytes(plain, True, layout)[0] == pytest.approx(fp8.params * 2.0)


def test_lora_base_in_fp8_keeps_its_transpose_in_training() -> None:
    """Under LoRA the frozen linear weights are FP8 (1 B) with the transposed FP8 copy the
    dgrad GEMM reads on a TN-only GPU (1 B): two bytes, the same as the 16-bit copy dlrig
    counts without fp8_params; the adapters stay 16-bit."""
    fp8 = make_workload("llama-3-8b-lora", precision="fp8", fp8_params=True)
    plain = make_workload("llama-3-8b-lora", precision="fp8")
    frozen = fp8.params * (1.0 - fp8.trainable_fraction)
    assert memory.fp8_weight_params(fp8, frozen, trained=False) == pytest.approx(
        frozen - LLAMA3_8B_EMBEDDINGS
    )
    assert memory.fp8_weight_params(fp8, fp8.params - frozen, trained=True) == 0.0
    assert memory.fp8_weight_bytes_per_param(fp8) == 2.0
    layout = memory.MemoryLayout()
    assert memory.model_state_bytes(fp8, True, layout) == pytest.approx(
        memory.model_state_bytes(plain, True, layout)
    )


def test_full_training_in_fp8_keeps_the_fp32_master_copy() -> None:
    """Full training with FP8 weights: 1 + 1 B of FP8 weight and transpose, 2 B of gradient,
    4 B of fp32 master and 8 B of Adam moments: 16 B a linear weight, as mixed precision's
    2 + 2 + 4 + 8."""
    fp8 = make_workload("llama-3-8b", precision="fp8", fp8_params=True, optimizer="adamw")
    assert memory.fp8_weight_params(fp8, fp8.params, trained=True) == pytest.approx(
        fp8.params - LLAMA3_8B_EMBEDDINGS
    )
    stored, _ = memory.model_state_bytes(fp8, True, memory.MemoryLayout())
    assert stored == pytest.approx(fp8.params * 16.0)


def test_without_the_transpose_cache_a_frozen_fp8_weight_is_one_byte() -> None:
    """ROCm TE's keep_fp8_weight_transpose_cache=False (AMD's MLPerf Llama 2 70B LoRA,
    ENABLE_TRANSPOSE_CACHE=0): the frozen base holds a byte a linear weight, Llama 3 8B's
    6.98e9 of them 6.98e9 B less than with the cache."""
    cached = make_workload("llama-3-8b-lora", precision="fp8", fp8_params=True)
    uncached = make_workload(
        "llama-3-8b-lora", precision="fp8", fp8_params=True, fp8_transpose_cache=False
    )
    assert memory.fp8_weight_bytes_per_param(uncached) == 1.0
    layout = memory.MemoryLayout()
    frozen = cached.params * (1.0 - cached.trainable_fraction)
    saved = memory.model_state_bytes(cached, True, layout)[0]
    saved -= memory.model_state_bytes(uncached, True, layout)[0]
    assert saved == pytest.approx(frozen - LLAMA3_8B_EMBEDDINGS)


def test_the_transpose_cache_flag_needs_fp8_params() -> None:
    with pytest.raises(ValidationError, match="fp8_transpose_cache"):
        make_workload("llama-3-8b-lora", precision="fp8", fp8_transpose_cache=False)
