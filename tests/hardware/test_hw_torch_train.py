"""The training loop of `probe --train` on this machine's CPU (torch's CPU build), kept tiny:
it trains, times, and its stand-ins have the parameters `dlrig.probe.train` counts for them."""

from __future__ import annotations

import pytest

from dlrig.enums import Optimizer, Precision
from dlrig.hardware import torch_train as tt

pytest.importorskip("torch")


def test_conv_stand_in_trains_and_counts_its_params() -> None:
    spec = tt.TrainSpec("conv", 3, 16, 6, 4, Precision.FP32, Optimizer.SGD, classes=10)
    timing = tt.train_steps(spec, steps=3, warmup=1)
    # 3 layers of 3x3 16->16 convs (no bias) + batch norm (2 x 16) + a 16->10 linear head
    assert timing.params == 3 * 9 * 16 * 16 + 3 * 2 * 16 + 16 * 10 + 10
    assert timing.steps == 3 and timing.step_s > 0
    assert timing.samples_per_s == pytest.approx(4 / timing.step_s)
    assert timing.step_s_min <= timing.step_s <= timing.step_s_max
    assert timing.copy_s is None  # no CUDA: nothing crosses PCIe
    assert "1 untimed warm-up" in timing.method


def test_transformer_stand_in_trains_with_adam_under_bf16_autocast() -> None:
    spec = tt.TrainSpec(
        "transformer", 2, 32, 16, 2, Precision.BF16, Optimizer.ADAMW, heads=4, input_bytes=64.0
    )
    timing = tt.train_steps(spec, steps=2, warmup=1)
    assert timing.params == 2 * (12 * 32 * 32 + 13 * 32)  # attention, MLP and norms per block
    assert timing.precision is Precision.BF16 and timing.steps == 2


def test_time_limit_stops_the_loop_after_one_step() -> None:
    spec = tt.TrainSpec("conv", 1, 8, 4, 2, Precision.FP32, Optimizer.SGD, classes=2)
    timing = tt.train_steps(spec, steps=1000, warmup=0, time_limit_s=0.0)
    assert timing.steps == 1
