"""What a timer on the host's clock reads when it stops without synchronizing the GPU
(dlrig.model.launch_queue), against Lambda's NCF logs of 2024, whose epochs on PyTorch 2 were
timed that way (lambdal/deeplearning-benchmark@aa5addb6 pytorch/results/*/PyTorch_ncf_FP32/,
8,000,000 samples a GPU, 99,308,850 counted an epoch)."""

from __future__ import annotations

import pytest

from dlrig.model.compute import HOST_DISPATCH_S
from dlrig.model.launch_queue import PENDING_LAUNCHES, queued_steps, unsynchronized_loop_s

EPOCH_SAMPLES = 99_308_850
# Dell's 8 GPUs train one step each and time only the host's queueing of it:
# Dell_8xH100_80GB_SXM5_v1/.../16-04-2024_18-47-21.txt, 2.273e10 samples/s -> 4.37 ms.
HOST_STEP_S = EPOCH_SAMPLES / 2.273e10
# Lambda's 2023 server (PyTorch 1.13, whose step waits for the GPU) timed the same steps whole:
# H100_80GB_SXM5_v1/.../14-02-2023_05-05-43.txt, 12 steps in 2.023 s; 2 GPUs 6 in 1.017 s.
ONE_GPU_STEP_S = 2.023 / 12
TWO_GPU_STEP_S = 1.017 / 6


def test_the_queue_holds_about_three_ncf_steps() -> None:
    """1000 launches (NVIDIA forums t/68937) of 15 us each (HOST_DISPATCH_S) over a 4.37 ms
    step: 3.43 steps, where the 2024 logs' validations took the 0.49 s the timer missed, 2.9
    of the 2023 server's 0.169 s steps."""
    assert PENDING_LAUNCHES == 1000.0 and HOST_DISPATCH_S == 15e-6
    assert queued_steps(HOST_STEP_S) == pytest.approx(3.43, abs=0.01)


def test_one_gpu_epoch_reads_the_gpu_work_less_the_queued_steps() -> None:
    """12 steps of 0.1686 s less 3.43 queued: 1.445 s, where Dell's one H100 logged 1.491 s
    (Dell_H100_80GB_SXM5_v1/PyTorch_ncf_FP32/16-04-2024_17-27-35.txt, second epoch): 3% short.
    Synchronized it would read 2.023 s, 36% long."""
    timed = unsynchronized_loop_s(12, ONE_GPU_STEP_S, HOST_STEP_S)
    assert timed == pytest.approx((12 - 3.43) * ONE_GPU_STEP_S, rel=0.002)
    assert timed == pytest.approx(1.491, rel=0.04)


def test_two_gpu_epoch_reads_half_of_its_gpu_work() -> None:
    """6 steps of 0.1695 s less 3.43 queued: 0.436 s, where Dell's 2 GPUs logged 0.504 s
    (Dell_2xH100_80GB_SXM5_v1/.../16-04-2024_17-53-06.txt): 13% short, against the 1.017 s a
    synchronized timer reads (2x long)."""
    timed = unsynchronized_loop_s(6, TWO_GPU_STEP_S, HOST_STEP_S)
    assert timed == pytest.approx(0.504, rel=0.15)


def test_an_epoch_the_queue_holds_reads_the_hosts_queueing_alone() -> None:
    """4 GPUs train 3 steps, fewer than the queue holds: the timer reads 3 x 4.37 = 13.1 ms of
    queueing, where the five servers logged 9.5-15.6 ms (Dell, DellTexas, SMC, 1CC, RAIDZ1
    4xH100 fp32: 1.043e10, 8.515e9, 6.352e9, 1.015e10, 1.019e10 samples/s) and the GPU's own
    work is 0.51 s (the 2023 server's 4 GPUs)."""
    timed = unsynchronized_loop_s(3, 0.510 / 3, HOST_STEP_S)
    assert timed == pytest.approx(3 * HOST_STEP_S)
    logged = [EPOCH_SAMPLES / rate for rate in (1.043e10, 8.515e9, 6.352e9, 1.015e10, 1.019e10)]
    assert min(logged) < timed < max(logged)


def test_a_step_takes_at_least_one_place_in_the_queue() -> None:
    """A step replayed as a CUDA graph is one launch (its host seconds 0 in compute.launch_s):
    the queue holds 1000 of them, not an unbounded number."""
    assert queued_steps(0.0) == 1000.0
    assert unsynchronized_loop_s(1200, 0.01, 0.0) == pytest.approx(200 * 0.01)
