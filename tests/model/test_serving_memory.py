"""What a serving engine keeps on each card beside the weights and the KV cache
(dlrig.model.serving_memory.activation_bytes)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.model import serving_memory as mem
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec

MIB = 2**20


def _spec(workload: str, **changes: object) -> ServeSpec:
    spec = load_workload(workload).serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def test_tensorrt_llm_keeps_its_profiling_pass_peak() -> None:
    """NVIDIA's planner for TensorRT-LLM (ai-dynamo/aiconfigurator @095f58a5): 2 x 8,192
    max_num_tokens x the attention width (Llama 3.1 70B: 64 heads x 128) x 6.5 at tensor
    parallel 2, NCCL's 342 MB on two H100s and the 3.5 GiB the engine keeps besides (the
    sequences it held on H100s: scripts/trtllm_kv_capacity_check.py); 11 on one card, no NCCL."""
    spec = _spec("llama-3.1-70b-serve")
    width = 64 * 128
    assert mem.activation_bytes(spec, 2) == pytest.approx(
        2 * 8192 * width * 6.5 + 358_612_992 + 3584 * MIB
    )
    assert mem.activation_bytes(spec, 1) == pytest.approx(2 * 8192 * width * 11 + 3584 * MIB)


def test_a_mixture_of_experts_under_attention_data_parallelism_keeps_twice_the_activations() -> (
    None
):
    """A mixture of experts' coefficient is twice a dense model's, and under attention data
    parallelism the attention runs unsplit on each card (degree 1): Qwen3-235B-A22B (64 heads x
    128) on eight cards, 2 x 8,192 x 8,192 x 22 beside NCCL's 392 MB and the engine's 3.5 GiB."""
    spec = _spec("qwen3-235b-a22b-serve", tensor_parallel=8, attention_data_parallel=True)
    assert mem.activation_bytes(spec, 8) == pytest.approx(
        2 * 8192 * 64 * 128 * 22 + 411_041_792 + 3584 * MIB
    )


def test_tensorrt_llm_fills_the_card_and_vllm_ninety_percent() -> None:
    """TensorRT-LLM's CUDA state is in its reserve, so it may fill the whole card; vLLM's
    gpu_memory_utilization defaults to 0.90 of it; llama.cpp leaves its 0.5 GiB context."""
    card = 80 * 2**30
    spec = _spec("llama-3.1-8b-serve")
    assert mem.usable_bytes_per_gpu(spec, card, 1) == card
    assert mem.usable_bytes_per_gpu(replace(spec, engine=Engine.VLLM), card, 1) == 0.9 * card
    local = replace(spec, engine=Engine.LOCAL)
    assert mem.usable_bytes_per_gpu(local, card, 1) == card - 0.5 * 2**30
