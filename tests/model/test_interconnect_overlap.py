"""Overlap of the gradient exchange with the backward pass: how much of it shows."""

from __future__ import annotations

import pytest

from dlrig.enums import Bottleneck
from dlrig.model.interconnect import (
    Fabric,
    LinkClass,
    data_parallel_exchange,
    exposed_after_producer_s,
    exposed_before_consumer_s,
)
from dlrig.model.parallelism import data_parallel_traffic


def test_only_the_last_bucket_shows_when_the_backward_is_long() -> None:
    """4 buckets of 0.1 s ready at 0.5, 1.0, 1.5, 2.0 s of a 2 s backward: each is sent before
    the next is ready, so only the last one's 0.1 s outlasts the backward."""
    assert exposed_after_producer_s(2.0, [0.1] * 4) == pytest.approx(0.1)


def test_buckets_that_outlast_the_backward_show() -> None:
    """4 buckets of 1 s in a 2 s backward: they queue (end at 1.5, 2.5, 3.5, 4.5 s), 2.5 s
    show after the backward."""
    assert exposed_after_producer_s(2.0, [1.0] * 4) == pytest.approx(2.5)


def test_gathers_ahead_of_the_forward_show_their_first_and_any_excess() -> None:
    """4 layers of 0.25 s each; gathers of 0.1 s: only the first waits (0.1 s). Gathers of
    0.5 s: each layer waits for its weights, the forward ends at 2.25 s, 1.25 s late."""
    assert exposed_before_consumer_s(1.0, [0.1] * 4) == pytest.approx(0.1)
    assert exposed_before_consumer_s(1.0, [0.5] * 4) == pytest.approx(1.25)


def test_gradient_accumulation_amortises_the_all_reduce() -> None:
    """DDP with no_sync all-reduces once per optimizer step: 8 accumulated micro-batches pay an
    eighth of the exchange each, whether it hides or shows."""
    fabric = Fabric(LinkClass.PCIE, 10.0, 42e-6)
    traffic = data_parallel_traffic(0, 1e9, 5e8)
    one = data_parallel_exchange(traffic, 4, 1, fabric, 25 * 2**20, 0.1, 0.2, 1)
    eight = data_parallel_exchange(traffic, 4, 1, fabric, 25 * 2**20, 0.1, 0.2, 8)
    assert eight.intra_s == pytest.approx(one.intra_s / 8)
    assert eight.exposed_intra_s == pytest.approx(one.exposed_intra_s / 8)
    assert one.exposed_intra_s > 0


def test_zero3_gathers_every_micro_batch_even_when_accumulating() -> None:
    """ZeRO-3 needs each layer's weights in every forward and backward: accumulation does not
    thin its gathers (Rajbhandari et al. 2020, section 7.2.2)."""
    fabric = Fabric(LinkClass.NVLINK, 389.0, 0.0)
    traffic = data_parallel_traffic(3, 2e9, 2e9)
    one = data_parallel_exchange(traffic, 8, 1, fabric, 6e7, 0.3, 0.6, 1)
    eight = data_parallel_exchange(traffic, 8, 1, fabric, 6e7, 0.3, 0.6, 8)
    assert eight.intra_s == pytest.approx(one.intra_s)


def test_ddp_copies_each_gradient_into_its_bucket_and_back() -> None:
    """PyTorch DDP's default (gradient_as_bucket_view=False) copies every gradient into its
    all-reduce bucket and back: 4 moves of the fp32 gradients a step on each of 2+ replicas
    (BERT-large: 4 x 336M x 4 B = 5.4 GB), none on one GPU or under FSDP's in-place
    reduce-scatter, and a 2-GPU BERT-large step grows by that traffic's memory time. BERT-large
    under autocast here (`gradient_precision = "fp32"`): the zoo's apex O2 run reduces 16-bit
    gradients (tests/model/test_gradient_precision.py)."""
    from model_fixtures import RTX_A6000, make_build, make_workload

    from dlrig.model import estimate
    from dlrig.model.interconnect import ddp_bucket_copy_bytes
    from dlrig.model.parallelism import layout

    bert = make_workload(
        "bert-large-squad", dataset="synthetic", precision="fp16", gradient_precision="fp32"
    )
    two = layout(bert, 2, 1)
    assert ddp_bucket_copy_bytes(bert, two, True) == pytest.approx(4 * bert.params * 4)
    assert ddp_bucket_copy_bytes(bert, layout(bert, 1, 1), True) == 0.0
    sharded = make_workload("bert-large-squad", dataset="synthetic", parallel="fsdp")
    assert ddp_bucket_copy_bytes(sharded, two, True) == 0.0
    one = estimate(make_build(RTX_A6000), bert).stages_s[Bottleneck.GPU_MEMORY_BANDWIDTH]
    two_s = estimate(make_build(RTX_A6000, count=2), bert).stages_s[Bottleneck.GPU_MEMORY_BANDWIDTH]
    copy_s = 4 * bert.params * 4 / 768e9  # the A6000's 768 GB/s, memory efficiency 1.0
    # The rest of the difference is the wait for the slower GPU, a few percent of the step.
    assert copy_s < two_s - one < copy_s + 0.05 * one
