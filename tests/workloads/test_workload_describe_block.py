"""A model block from dlrig.torch.describe goes straight into a workload (the torch extra)."""

from __future__ import annotations

import pytest

from dlrig.workloads import resolve_workload

torch = pytest.importorskip("torch")


def test_describe_output_is_a_valid_inline_model_block() -> None:
    from dlrig.torch import describe

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    block = describe(model, torch.zeros(8, 64))
    # 64*128 + 128 + 128*10 + 10 parameters; 2 x (64*128 + 128*10) FLOPs per sample.
    assert block["params"] == 64 * 128 + 128 + 128 * 10 + 10
    job = resolve_workload({"name": "mlp", "model": block, "batch_size": 8}, "describe")
    assert job.params == block["params"]
    assert job.forward_flops_per_sample == pytest.approx(2 * (64 * 128 + 128 * 10))
    assert job.activation_bytes_per_sample == block["activation_bytes_per_sample"]
