"""What a serving engine keeps on each card beside the weights and the KV cache
(dlrig.model.serving_memory.activation_bytes)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.model import serving_memory as mem
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec, WeightFormat

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
    128) on eight cards, 2 x 8,192 x 8,192 x 22 beside the MoE workspace for the other seven
    ranks' tokens (moe_dispatch_workspace_bytes), NCCL's 392 MB and the engine's 3.5 GiB."""
    spec = _spec("qwen3-235b-a22b-serve", tensor_parallel=8, attention_data_parallel=True)
    assert mem.activation_bytes(spec, 8) == pytest.approx(
        2 * 8192 * 64 * 128 * 22 + mem.moe_dispatch_workspace_bytes(spec, 8) + 411_041_792
        + 3584 * MIB
    )  # fmt: skip


def test_the_moe_workspace_holds_every_other_ranks_routed_rows() -> None:
    """TensorRT-LLM's MoE layer takes all eight ranks' tokens under attention data parallelism
    (CutlassFusedMoE: moe_max_num_tokens = max_num_tokens x world size), and the CUTLASS
    workspace holds each routed row's inputs and outputs (getWorkspaceDeviceBufferSizes).
    Qwen3-235B-A22B in FP8 (hidden 4,096, experts 1,536 wide, top 8) at max_num_tokens 2,048:
    7 x 2,048 x 8 rows x (8,192 B of FC2's BF16 output over the 4,096 B FP8 input + 8,192 B of
    FC2's output over FC1's gated 6,144 + 20 B) = 1.88 GB a card. Tensor parallelism (one
    rank's tokens, in the coefficient) and vLLM add none."""
    spec = _spec("qwen3-235b-a22b-serve", tensor_parallel=8, attention_data_parallel=True,
                 max_num_tokens=2048, quantization=WeightFormat.FP8)  # fmt: skip
    assert mem.expert_width(spec) == pytest.approx(1536)
    assert mem.moe_dispatch_workspace_bytes(spec, 8) == pytest.approx(
        7 * 2048 * 8 * (8192 + 8192 + 20)
    )
    assert mem.moe_dispatch_workspace_bytes(spec, 8) == pytest.approx(1.881e9, rel=1e-3)
    assert mem.moe_dispatch_workspace_bytes(replace(spec, attention_data_parallel=False), 8) == 0
    assert mem.moe_dispatch_workspace_bytes(replace(spec, engine=Engine.VLLM), 8) == 0


def test_tensorrt_llm_fills_the_card_and_vllm_ninety_percent() -> None:
    """TensorRT-LLM's CUDA state is in its reserve, so it may fill the whole card; vLLM's
    gpu_memory_utilization defaults to 0.90 of it; llama.cpp leaves its 0.5 GiB context."""
    card = 80 * 2**30
    spec = _spec("llama-3.1-8b-serve")
    assert mem.usable_bytes_per_gpu(spec, card, 1) == card
    assert mem.usable_bytes_per_gpu(replace(spec, engine=Engine.VLLM), card, 1) == 0.9 * card
    local = replace(spec, engine=Engine.LOCAL)
    assert mem.usable_bytes_per_gpu(local, card, 1) == card - 0.5 * 2**30
