"""dlrig.torch.describe counts real modules on the meta device; numbers checked by hand."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from dlrig.errors import ValidationError
from dlrig.torch import describe

FP32_BYTES = 4


def test_linear_is_two_flops_per_multiply_add_per_sample() -> None:
    # A Linear(in, out) is in*out multiply-adds per sample, 2 FLOPs each (dlrig.units).
    block = describe(nn.Linear(64, 32), torch.randn(8, 64))
    assert block["forward_flops_per_sample"] == 2 * 64 * 32
    assert block["params"] == 64 * 32 + 32
    assert block["param_bytes"] == (64 * 32 + 32) * FP32_BYTES
    # The one saved tensor is the input (needed for the weight's gradient): 64 floats a sample.
    assert block["activation_bytes_per_sample"] == 64 * FP32_BYTES


def test_small_cnn_matches_hand_count() -> None:
    model = nn.Sequential(
        nn.Conv2d(3, 8, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 16 * 16, 10),
    )
    block = describe(model, torch.randn(4, 3, 32, 32))
    conv_flops = 2 * (8 * 32 * 32) * (3 * 3 * 3)  # 2 x outputs x (Cin x kh x kw)
    linear_flops = 2 * (8 * 16 * 16) * 10
    assert block["forward_flops_per_sample"] == conv_flops + linear_flops == 483_328
    assert block["params"] == (8 * 3 * 3 * 3 + 8) + (8 * 16 * 16 * 10 + 10)
    # Saved for backward, per sample: the input (conv), the ReLU output (ReLU and the pool
    # share it), the pool's int64 indices and its output (the Linear's input, flattened view).
    saved_bytes = (
        3 * 32 * 32 * FP32_BYTES
        + 8 * 32 * 32 * FP32_BYTES
        + 8 * 16 * 16 * 8
        + 8 * 16 * 16 * FP32_BYTES
    )
    assert block["activation_bytes_per_sample"] == saved_bytes


def test_batch_norm_running_stats_are_not_activations_and_model_is_untouched() -> None:
    model = nn.Sequential(nn.Linear(16, 16), nn.BatchNorm1d(16))
    before = model[1].running_mean.clone()
    block = describe(model, torch.randn(10, 16))
    assert torch.equal(model[1].running_mean, before)
    assert model[0].weight.device.type == "cpu"
    # input (16 floats) + Linear output saved by BatchNorm (16 floats) per sample, plus BN's
    # per-feature batch mean and inverse std (2 x 16 floats for the batch of 10).
    assert block["activation_bytes_per_sample"] == 32 * FP32_BYTES + 2 * 16 * FP32_BYTES / 10


def test_tied_weights_count_once_and_kwargs_input() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(100, 12)
            self.head = nn.Linear(12, 100, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return self.head(self.embed(tokens))

    tokens = torch.randint(0, 100, (3, 7))
    block = describe(Tied(), {"tokens": tokens})
    assert block["params"] == 100 * 12
    # per sample: 7 tokens through a 12 -> 100 projection
    assert block["forward_flops_per_sample"] == 2 * 7 * 12 * 100


def test_transformer_encoder_layer_matches_hand_count() -> None:
    d, heads, ff, seq, batch = 64, 4, 128, 10, 2
    layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
    block = describe(layer, torch.randn(batch, seq, d))
    projections = 2 * seq * d * 3 * d + 2 * seq * d * d  # Q, K, V in one matmul, then out
    feed_forward = 2 * seq * d * ff * 2  # up and down
    attention = 2 * seq * seq * d * 2  # Q K^T and the weighted sum of V, over all heads
    assert block["forward_flops_per_sample"] == projections + feed_forward + attention == 680_960
    assert block["params"] == sum(p.numel() for p in layer.parameters())


def test_bf16_parameters_count_two_bytes() -> None:
    model = nn.Linear(16, 8).to(torch.bfloat16)
    block = describe(model, torch.randn(4, 16, dtype=torch.bfloat16))
    assert block["param_bytes"] == (16 * 8 + 8) * 2
    assert block["activation_bytes_per_sample"] == 16 * 2


def test_meta_model_is_counted_without_memory() -> None:
    with torch.device("meta"):
        model = nn.Linear(4096, 4096)
    block = describe(model, torch.empty(2, 4096, device="meta"))
    assert block["forward_flops_per_sample"] == 2 * 4096 * 4096


def test_input_without_batch_dimension_is_an_error_with_hint() -> None:
    with pytest.raises(ValidationError) as info:
        describe(nn.Linear(2, 2), (3,))
    assert info.value.hint is not None and "batch_size" in info.value.hint


def test_import_does_not_load_torch() -> None:
    code = "import sys, dlrig.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_lightning_callback_without_lightning_says_what_to_install() -> None:
    pytest.importorskip("torch")
    try:
        import lightning  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install lightning"):
            from dlrig.torch import StepTimerCallback
    else:  # pragma: no cover - Lightning is not in the dev environment
        from dlrig.torch import StepTimerCallback

        assert StepTimerCallback().report is None


def test_the_block_is_a_valid_inline_model_of_a_workload_file() -> None:
    # The contract with the workload file (design.md): describe()'s dict goes under `model:`.
    from dlrig.workloads.loader import parse_workload

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    block = describe(model, torch.randn(8, 32))
    workload = parse_workload({"name": "my-mlp", "model": block, "batch_size": 8}, "test")
    assert workload.model.forward_flops_per_sample == 2 * (32 * 64 + 64 * 10)
