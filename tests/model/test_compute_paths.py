"""Every compute path the model can pick has its fitted matmul efficiency (model/data): a path
added to the enum without a calibration entry would fail at estimate time, not here. And the
bounds of the classes that are not matmuls."""

from __future__ import annotations

import pytest

from dlrig.model import compute
from dlrig.model.calibration import default_calibration
from dlrig.model.rates import ComputePath


def test_every_compute_path_has_a_matmul_efficiency() -> None:
    assert set(default_calibration().matmul_efficiency) == {p.value for p in ComputePath}


def test_nchw_transposes_are_instruction_bound_where_the_sms_issue_little_per_byte() -> None:
    """cuDNN's NCHW <-> NHWC transposes cost their bytes or their index arithmetic, the slower
    (compute.transposes_s). At the calibrated 40 lane-instructions per element moved, an A100
    (19.5 T instructions a second, 2,039 GB/s) spends 2.05 ns an fp16 element move against
    0.98 ns for its bytes: instruction-bound, 2.1x. An RTX 4090 (41.3 T, 1,008 GB/s) spends
    0.97 ns against 1.98 ns: its bytes bind, as before the bound existed."""
    instructions = default_calibration().transpose_instructions_per_move
    assert instructions == 40.0
    a100 = compute.transposes_s(1e9, 2.0, 2039e9, 19.5e12, instructions)
    assert a100 == pytest.approx(1e9 * 40 / 19.5e12)
    assert a100 / (1e9 * 2.0 / 2039e9) == pytest.approx(2.09, abs=0.01)
    rtx4090 = compute.transposes_s(1e9, 2.0, 1008e9, 41.3e12, instructions)
    assert rtx4090 == pytest.approx(1e9 * 2.0 / 1008e9)
    assert compute.transposes_s(1e9, 2.0, 1008e9, 0.0, instructions) == rtx4090


def test_16bit_pointwise_kernels_run_at_the_sms_rate_on_the_b200_not_the_h100() -> None:
    """Pointwise kernels cost their bytes or POINTWISE_INSTRUCTIONS_PER_MOVE (16) lane-
    instructions an element, the slower (compute.memory_bound_s). NVIDIA's datasheets: H100
    SXM5 FP32 67 TFLOPS (33.5 T lane-instructions a second), 3,352 GB/s; B200 75 TFLOPS
    (37.5 T), 7,700 GB/s. A billion fp16 moves: the H100's bytes take 0.597 ms against 0.478 ms
    of instructions (bytes bind); the B200's 0.260 ms against 0.427 ms (instructions bind, 1.64x
    its bytes); in TF32 (4-byte moves) the B200's bytes, 0.519 ms, bind again. Moves of 1 byte
    each (FP8) would leave the H100 instruction-bound too."""
    per_move = compute.POINTWISE_INSTRUCTIONS_PER_MOVE
    assert per_move == 16.0
    h100 = compute.memory_bound_s(2e9, 1e9, 3352e9, 33.5e12, per_move)
    assert h100 == pytest.approx(2e9 / 3352e9)
    b200 = compute.memory_bound_s(2e9, 1e9, 7700e9, 37.5e12, per_move)
    assert b200 == pytest.approx(16e9 / 37.5e12)
    assert b200 / (2e9 / 7700e9) == pytest.approx(1.64, abs=0.01)
    assert compute.memory_bound_s(4e9, 1e9, 7700e9, 37.5e12, per_move) == pytest.approx(
        4e9 / 7700e9
    )
    assert compute.memory_bound_s(1e9, 1e9, 3352e9, 33.5e12, per_move) == pytest.approx(
        16e9 / 33.5e12
    )
    assert compute.memory_bound_s(2e9, 1e9, 7700e9, 0.0, per_move) == pytest.approx(2e9 / 7700e9)
