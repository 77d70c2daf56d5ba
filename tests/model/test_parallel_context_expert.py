"""Context and expert parallelism (dlrig.model.parallelism, dlrig.model.interconnect): the
layout, the bytes each sends, and what an estimate makes of them."""

from __future__ import annotations

import math

import pytest
from model_fixtures import make_workload

from dlrig.errors import ValidationError
from dlrig.machine import load_build
from dlrig.model import compute, estimate, parallelism
from dlrig.model.layers import expert_params, layer_work, moe_dispatch_elems
from dlrig.model.parallelism import check_layout, layout

MIXTRAL_FULL = {"method": "full"}


def test_context_ranks_split_the_micro_batch_and_share_the_gradient_reduction() -> None:
    """16 GPUs, tensor 2 x context 4: 2 data replicas; each micro-batch's work splits over 8
    GPUs; the 8 ranks holding the same weights (data x context) reduce gradients together,
    as Megatron-Core's data-parallel-with-context group does; a context group of 4 after a
    tensor group of 2 fits one 8-GPU node."""
    job = make_workload("llama-3-8b", seq_len=32768, parallel={"tensor": 2, "context": 4})
    lay = layout(job, 8, 2)
    assert (lay.data, lay.replica_gpus, lay.weight_split) == (2, 8, 2)
    assert (lay.gradient_ranks, lay.data_in_node, lay.data_nodes) == (8, 4, 2)
    assert lay.context_in_node == 4


def test_ring_attention_passes_each_ranks_keys_and_values_three_times_per_layer() -> None:
    """Llama 3 8B (8 KV heads of 128, config.json), one 32k sequence over 4 ranks in bf16: a
    rank's keys and values are 8,192 tokens x 2 x 8 x 128 x 2 B = 32 MiB; the forward passes
    them context - 1 = 3 times, the backward 6 (keys and values, then their gradients),
    checkpointing's recompute 3 more (Megatron-Core's AttnFuncWithCPAndKVP2P)."""
    step = parallelism.context_parallel_kv_bytes(1, 32768, 8, 128, 1, 4, 2.0)
    assert step == 8192 * 2 * 8 * 128 * 2 == 32 * 2**20
    assert parallelism.context_parallel_kv_bytes(1, 32768, 8, 128, 2, 4, 2.0) == step / 2
    assert parallelism.context_parallel_ring_steps_per_layer(4, 0.0) == 9
    assert parallelism.context_parallel_ring_steps_per_layer(4, 1.0) == 12
    assert parallelism.context_parallel_ring_steps_per_layer(1, 1.0) == 0


def test_mixtral_experts_hold_45_1_of_its_46_7_billion_parameters() -> None:
    """Mixtral 8x7B (config.json: 32 layers, hidden 4096, FFN 14336, 8 experts, 2 a token):
    32 x 8 x 3 x 4096 x 14336 = 45.1e9 in the experts; the paper's 12.9e9 active parameters
    follow (46.7e9 - 45.1e9 x 6/8), and expert parallelism over 8 GPUs leaves each GPU the
    1.6e9 dense parameters and one expert a layer: 7.2e9, 15.5% of the model."""
    job = make_workload("mixtral-8x7b-qlora", finetune=MIXTRAL_FULL)
    routed = expert_params(job)
    assert routed == 32 * 8 * 3 * 4096 * 14336
    assert job.params - routed * 6 / 8 == pytest.approx(12.9e9, rel=0.005)
    assert parallelism.expert_split_share(job, 8) * job.params == pytest.approx(7.24e9, rel=0.01)
    assert parallelism.expert_split_share(make_workload("llama-3-8b"), 8) == 1.0


def test_expert_all_to_all_sends_each_token_to_its_k_experts() -> None:
    """GShard's dispatch (Lepikhin et al. 2020): a token's hidden vector goes to each of its k
    experts: 4,096 tokens x 2 x 4,096 x 2 B = 64 MiB a call; under sequence parallelism a
    tensor rank dispatches only its 1/tensor of the tokens. Four calls a layer (dispatch and
    combine, forward and backward), six with checkpointing's recompute."""
    sent = parallelism.expert_all_to_all_bytes(1, 4096, 4096, 2, 1, 1, False, 2.0)
    assert sent == 64 * 2**20
    assert parallelism.expert_all_to_all_bytes(1, 4096, 4096, 2, 1, 2, True, 2.0) == sent / 2
    assert parallelism.expert_all_to_all_bytes(1, 4096, 4096, 2, 2, 1, False, 2.0) == sent / 2
    assert parallelism.expert_all_to_alls_per_layer(0.0) == 4
    assert parallelism.expert_all_to_alls_per_layer(1.0) == 6


def test_layout_refuses_context_and_expert_degrees_that_do_not_divide() -> None:
    """tensor x pipeline x context must divide the GPUs; expert must divide the GPUs holding
    the same weights (Megatron-Core builds expert groups inside them)."""
    cp = make_workload("llama-3-8b", seq_len=12288, parallel={"tensor": 2, "context": 3})
    with pytest.raises(ValidationError) as err:
        check_layout(cp, 8, 1, "job.yaml")
    assert err.value.field == "parallel.context"
    ep = make_workload(
        "mixtral-8x7b-qlora", finetune=MIXTRAL_FULL, parallel={"tensor": 4, "expert": 4}
    )
    with pytest.raises(ValidationError) as err:
        check_layout(ep, 8, 1, "job.yaml")
    assert err.value.field == "parallel.expert"
    assert "2 GPUs that hold the same weights" in str(err.value)


def test_context_and_expert_need_what_they_split() -> None:
    """A context degree must divide the sequence; an expert degree needs experts to split."""
    with pytest.raises(ValidationError) as err:
        make_workload("llama-3-8b", seq_len=1000, parallel={"context": 3})
    assert err.value.field == "parallel.context"
    with pytest.raises(ValidationError) as err:
        make_workload("llama-3-8b", parallel={"expert": 2})
    assert err.value.field == "parallel.expert"


H100_NODES = "examples/builds/8x-h100-hgx-server.yaml"


def test_context_parallelism_splits_activations_and_keeps_the_speed_of_long_sequences() -> None:
    """A 32k-token Llama 3 8B sequence over 4 context ranks (16 H100s, ZeRO-1, checkpointing):
    each GPU keeps a quarter of the sequence's activations; the ring's 12 steps a layer of
    32 MiB hide behind the attention of 32k tokens, so tokens/s per GPU stays within 5% of
    the same GPUs each running whole sequences."""
    build = load_build(H100_NODES)
    common = {"seq_len": 32768, "batch_size": 1, "activation_checkpointing": True}
    whole = estimate(build, make_workload("llama-3-8b", **common, parallel={"zero_stage": 1}))
    split = estimate(
        build, make_workload("llama-3-8b", **common, parallel={"zero_stage": 1, "context": 4})
    )
    assert split.parallel is not None and split.parallel.context == 4
    assert split.parallel.data == whole.gpus // 4
    assert split.memory.activations_gb == pytest.approx(whole.memory.activations_gb / 4)
    assert whole.tokens_per_s and split.tokens_per_s
    assert split.tokens_per_s == pytest.approx(whole.tokens_per_s, rel=0.05)
    assert any("context parallelism over 4 GPUs" in a for a in split.assumptions)


def test_expert_parallelism_trades_expert_weights_for_all_to_alls() -> None:
    """Mixtral 8x7B fully trained on 16 H100s (ZeRO-1): over 8 expert ranks each GPU keeps
    15.5% of the weights and gradients (above), and the tokens' all-to-alls add
    communication on the critical path that the replicated layout does not have."""
    build = load_build(H100_NODES)
    common = {"seq_len": 4096, "batch_size": 1, "finetune": MIXTRAL_FULL}
    replicated = estimate(
        build, make_workload("mixtral-8x7b-qlora", **common, parallel={"zero_stage": 1})
    )
    split = estimate(
        build,
        make_workload("mixtral-8x7b-qlora", **common, parallel={"zero_stage": 1, "expert": 8}),
    )
    assert split.parallel is not None and split.parallel.expert == 8
    assert split.memory.model_states_gb < 0.3 * replicated.memory.model_states_gb
    assert replicated.parallel is not None
    assert split.parallel.communication_exposed_s > replicated.parallel.communication_exposed_s
    assert any("expert parallelism over 8 GPUs" in a for a in split.assumptions)


def test_an_experts_gemm_gets_its_routed_tokens_and_expert_parallelism_gathers_more() -> None:
    """Mixtral 8x7B at 1,024 tokens (2 of 8 experts a token, routing balanced): each expert's
    GEMM runs on 1,024 x 2 / 8 = 256 rows of one sample; over 8 expert ranks a GPU holds one
    expert a layer and gets its tokens from all 8 ranks, 2,048 rows, so the expert weights it
    reads once per call serve 8x the FLOPs (compute.gemm_call_width)."""
    replicated = make_workload("mixtral-8x7b-qlora", finetune=MIXTRAL_FULL)
    split = make_workload(
        "mixtral-8x7b-qlora", finetune=MIXTRAL_FULL, parallel={"zero_stage": 1, "expert": 8}
    )
    work = layer_work(replicated)
    assert work.expert_gemm_flops == pytest.approx(2 * 3 * 4096 * 14336 * 2 * 1024 * 32)
    assert compute.expert_rows(work, replicated, 1) == 256
    assert compute.expert_rows(layer_work(split), split, 1) == 2048
    assert compute.expert_rows(layer_work(make_workload("llama-3-8b")), replicated, 1) == math.inf


def test_a_token_moves_2_k_plus_1_hidden_vectors_to_reach_its_experts() -> None:
    """Megatron-Core's permute reads a token and writes its k copies grouped by expert; the
    unpermute reads the k outputs and writes their weighted sum: Mixtral (k = 2, h = 4,096)
    2 x 3 x 4,096 = 24,576 elements a token a layer; a dense model none."""
    assert moe_dispatch_elems(make_workload("mixtral-8x7b-qlora"), 4096.0) == 24576.0
    assert moe_dispatch_elems(make_workload("llama-3-8b"), 4096.0) == 0.0


def test_a_mixture_of_experts_training_estimate_says_what_it_leaves_out() -> None:
    """The router, top-k and sorting kernels and expert imbalance are not modelled: the
    estimate says its step is a lower bound rather than presenting it as whole."""
    build = load_build(H100_NODES)
    moe = estimate(build, make_workload("mixtral-8x7b-qlora", finetune=MIXTRAL_FULL))
    dense = estimate(build, make_workload("llama-3-8b"))
    assert any(a.startswith("mixture of experts:") for a in moe.assumptions)
    assert not any(a.startswith("mixture of experts:") for a in dense.assumptions)
