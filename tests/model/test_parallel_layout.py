"""The parallel-layout arithmetic (dlrig.model.parallelism), each fact against its source."""

from __future__ import annotations

import pytest
from model_fixtures import make_workload

from dlrig.errors import ValidationError
from dlrig.model import parallelism
from dlrig.model.parallelism import (
    check_layout,
    data_parallel_traffic,
    layout,
    pipeline_bubble_fraction,
    pipeline_time_factor,
    tensor_parallel_collectives_per_layer,
    tensor_parallel_message_bytes,
)


def test_pipeline_bubble_is_p_minus_1_over_m_plus_p_minus_1() -> None:
    """Narayanan et al. 2021 (arXiv:2104.04473), section 2.2.1: with p stages and m
    micro-batches the bubble is (p-1)/(m+p-1) of the step (GPipe and 1F1B alike)."""
    assert pipeline_bubble_fraction(1, 8) == 0.0
    assert pipeline_bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert pipeline_bubble_fraction(4, 1) == pytest.approx(3 / 4)
    assert pipeline_time_factor(4, 8) == pytest.approx(11 / 8)


def test_zero3_moves_one_and_a_half_times_what_ddp_moves() -> None:
    """Rajbhandari et al. 2020 (arXiv:1910.02054), section 7.2: data parallelism's all-reduce
    moves 2 psi per GPU; ZeRO-2 the same (reduce-scatter + all-gather); ZeRO-3 3 psi, 1.5x."""
    psi = 1e9
    ddp = data_parallel_traffic(0, psi, psi).ring_volume_bytes(64)
    assert ddp == pytest.approx(2 * psi * 63 / 64)
    assert data_parallel_traffic(1, psi, psi).ring_volume_bytes(64) == pytest.approx(ddp)
    assert data_parallel_traffic(2, psi, psi).ring_volume_bytes(64) == pytest.approx(ddp)
    assert data_parallel_traffic(3, psi, psi).ring_volume_bytes(64) == pytest.approx(1.5 * ddp)


def test_gradient_accumulation_sends_the_all_reduce_once_per_optimizer_step() -> None:
    """DDP under no_sync: one all-reduce per optimizer step, so a quarter per micro-batch at 4
    accumulated micro-batches; ZeRO-3's gathers stay per micro-batch."""
    ddp = data_parallel_traffic(0, 1e9, 1e9)
    assert ddp.ring_volume_bytes(8, 4) == pytest.approx(ddp.ring_volume_bytes(8) / 4)
    zero3 = data_parallel_traffic(3, 1e9, 1e9)
    assert zero3.ring_volume_bytes(8, 4) == pytest.approx(zero3.ring_volume_bytes(8))


def test_megatron_tensor_parallel_sends_four_activation_all_reduces_per_layer() -> None:
    """Shoeybi et al. 2019 (arXiv:1909.08053), figure 4: 2 all-reduces in the forward, 2 in
    the backward; recomputing the forward under checkpointing repeats its 2 (in a quarter of
    the layers under Megatron's block method with 20 of 80: 4.5 a layer). Each carries the
    layer's b x s x h activations."""
    assert tensor_parallel_collectives_per_layer(0.0) == 4
    assert tensor_parallel_collectives_per_layer(1.0) == 6
    assert tensor_parallel_collectives_per_layer(20 / 80) == 4.5
    assert tensor_parallel_message_bytes(1, 2048, 4096, 2.0) == 2048 * 4096 * 2


def test_layout_places_tensor_groups_inside_a_node() -> None:
    """8 GPUs a node, 2 nodes, tensor 2 x pipeline 2: 4 data-parallel replicas, 2 of them in
    each node."""
    job = make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 2, "pipeline": 2})
    lay = layout(job, 8, 2)
    assert (lay.data, lay.tensor, lay.pipeline) == (4, 2, 2)
    assert (lay.data_in_node, lay.data_nodes) == (2, 2)


def test_tensor_group_spanning_part_of_a_node_is_refused_naming_the_field() -> None:
    """A tensor group wider than a node must span whole nodes: 6 over nodes of 4 would split
    a node between two groups; 8 (two whole nodes) is a layout Megatron can run."""
    job = make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 6})
    with pytest.raises(ValidationError) as err:
        check_layout(job, 4, 3, "job.yaml")
    assert err.value.field == "parallel.tensor"
    assert "parallel.tensor = 6" in str(err.value)
    check_layout(make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 8}), 4, 2, "j")


def test_tensor_times_pipeline_must_divide_the_gpu_count() -> None:
    job = make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 2, "pipeline": 3})
    with pytest.raises(ValidationError) as err:
        check_layout(job, 8, 1, "job.yaml")
    assert err.value.field == "parallel.pipeline"
    check_layout(make_workload("llama-3-8b"), 8, 1, "job.yaml")  # the default layout passes


def test_ddp_under_mixed_precision_all_reduces_fp32_gradients() -> None:
    """PyTorch AMP keeps fp32 parameters, so DDP's gradients are fp32 (4 bytes); sharded data
    parallelism reduces in the 16-bit precision (2 bytes)."""
    ddp = make_workload("resnet50")
    fsdp = make_workload("llama-3-8b")
    assert parallelism.gradient_bytes_per_param(ddp, sixteen_bit=True) == 4.0
    assert parallelism.gradient_bytes_per_param(fsdp, sixteen_bit=True) == 2.0
    assert parallelism.zero_stage(fsdp) == 3
