"""Lambda's NCF rows read as its code counts and times them (LambdaLabsML/DeepLearningExamples
@c1781a37 PyTorch/Recommendation/NCF/dataloading.py and ncf.py; lambdal/deeplearning-benchmark
@aa5addb6 pytorch/results/*/PyTorch_ncf_*/*.txt): every sample of the epoch counted, whole
batches trained, the epoch timed without waiting for the GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"
sys.path.insert(0, str(REPO / "scripts"))

from calibrate import predicted_units_per_s  # noqa: E402
from calibration_data import (  # noqa: E402
    NCF_EPOCH_SAMPLES,
    NCF_NO_STEP,
    NCF_UNSYNCED_TIMING,
    ncf_counted_per_trained,
    read_lambda_rows,
)

from dlrig.model.calibration import default_calibration  # noqa: E402


def test_the_epoch_is_ml20m_training_ratings_with_four_negatives_each() -> None:
    """20,000,263 ratings less one test rating for each of 138,493 users, times 1 + 4: the
    99,308,850 samples the Dell 8x H100 fp32 log's first epoch implies (1.530e8/s x 0.649 s)."""
    assert NCF_EPOCH_SAMPLES == 99_308_850
    first_epoch = 1.530e8 * 0.649  # samples/s x s, as logged
    assert abs(first_epoch / NCF_EPOCH_SAMPLES - 1) < 0.001


def test_eight_gpus_at_8m_a_gpu_train_one_batch_of_their_share_and_count_all_of_it() -> None:
    """Each of 8 processes holds 12,413,606 samples: split into 8,000,000 and 4,413,606, the
    last dropped, so 64,000,000 train and 99,308,850 count (1.552x); one GPU at the same batch
    trains 12 of its 13 batches (1.034x): 8 GPUs log 12.0x one GPU's rate at equal speed, where
    the 8-GPU fp32 runs on A100 SXM4 and H100 logged 11.7-11.9x, flagged "superlinear" (v1 csv,
    scaling_vs_1gpu)."""
    eight = ncf_counted_per_trained(8_000_000, 8)
    one = ncf_counted_per_trained(8_000_000, 1)
    assert eight == pytest.approx(99_308_850 / 64_000_000)
    assert one == pytest.approx(99_308_850 / 96_000_000)
    assert eight is not None and one is not None
    assert 8 * eight / one == pytest.approx(12.0)


def test_a_share_of_one_batch_or_less_trains_nothing_and_the_row_cannot_be_predicted() -> None:
    """8x A100 80GB SXM4 fp16 in 2021 ran a 120,000,000 global batch, 15,000,000 a GPU against a
    12,413,606-sample share: no step, and a logged 1.09e10 samples/s, 253x one GPU. It leaves
    every row set as a row with no throughput does."""
    assert ncf_counted_per_trained(15_000_000, 8) is None
    _, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    assert skipped[NCF_NO_STEP] == 1


def test_ncf_rows_are_predicted_in_the_samples_their_log_counts() -> None:
    """Every NCF row carries its counted-per-trained share as its units per sample, so a
    prediction of trained samples/s compares with the logged figure: 8 RTX 6000 Ada at
    5,000,000 a GPU train 2 of their 3 batches (99,308,850 / 80,000,000 = 1.241)."""
    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    ada = [
        r for r in rows
        if r.lambda_model == "ncf" and r.num_gpus == 8 and r.workload.batch_size == 5_000_000
        and r.gpu.name == "NVIDIA RTX 6000 Ada Generation"
    ]  # fmt: skip
    assert ada and all(r.units_per_sample == pytest.approx(1.2414, abs=1e-4) for r in ada)


def test_the_2024_h100_servers_ncf_rows_leave_the_cleaned_set_only() -> None:
    """Their epochs stop the timer before the GPU finishes (one GPU: 1.49 s and a 0.59 s
    validation, where the 2023 server logged 2.02 and 0.10 s): 10 rows left out of the cleaned
    set beyond those the file flags or the 80 GB config shows ran without --amp; every row
    keeps all 6 servers' NCF rows."""
    reason = "ncf on PyTorch 2 timed before the GPU finished its work (logs)"
    _, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert skipped[reason] == 10
    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    servers = {
        r.lambda_gpu.split()[0] for r in every
        if r.lambda_model == "ncf" and r.version == "v1" and r.gpu.name == "H100 SXM5 80GB"
    }  # fmt: skip
    assert {"Dell", "DellTexas", "SMC", "1CC", "RAIDZ1", "LambdaCloud"} <= servers


def test_every_row_predicts_the_pytorch_2_epochs_as_their_timer_read_them() -> None:
    """The 42 NCF rows of the six PyTorch 2 H100 SXM5 servers (sys_pytorch.txt: 2.3.0a0 on
    Dell, DellTexas, SMC, 1CC, RAIDZ1; 2.1.0a0 on Lambda Cloud's 8x) carry their epoch's steps
    a GPU (12, 6, 3, 1 at 8,000,000; 9, 4, 2, 1 at 10,000,000); no other row does, and the
    cleaned set keeps none of them."""
    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    timed = [r for r in every if r.unsynced_epoch_steps]
    assert len(timed) == 42
    assert all(
        r.lambda_model == "ncf" and r.version == "v1" and NCF_UNSYNCED_TIMING.match(r.lambda_gpu)
        for r in timed
    )
    steps = {(r.workload.batch_size, r.num_gpus, r.unsynced_epoch_steps) for r in timed}
    assert steps == {
        (8_000_000, 1, 12), (8_000_000, 2, 6), (8_000_000, 4, 3), (8_000_000, 8, 1),
        (10_000_000, 1, 9), (10_000_000, 2, 4), (10_000_000, 4, 2), (10_000_000, 8, 1),
    }  # fmt: skip
    unsynced = sum(
        1 for r in every
        if r.lambda_model == "ncf" and r.version == "v1" and NCF_UNSYNCED_TIMING.match(r.lambda_gpu)
    )  # fmt: skip
    assert unsynced == 42
    cleaned, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert not any(r.unsynced_epoch_steps for r in cleaned)


def test_an_eight_gpu_epoch_of_one_step_is_predicted_as_the_hosts_queueing() -> None:
    """Dell's 8 H100 at 8,000,000 a GPU logged 2.273e10 samples/s, an epoch of 4.4 ms
    (Dell_8xH100_80GB_SXM5_v1/PyTorch_ncf_FP32/16-04-2024_18-47-21.txt): the host's launches
    of its one step, 120 kernels (layers: NCF's 40 forward, x3 in training) at the fitted
    host_kernel_s, where a synchronized step predicts 30x too slow."""
    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    row = next(
        r for r in every
        if r.lambda_gpu == "Dell 8x H100 80GB SXM5" and r.workload.batch_size == 8_000_000
    )  # fmt: skip
    assert row.measured_units_per_s == pytest.approx(2.273e10, rel=0.001)
    predicted = predicted_units_per_s(row, default_calibration())
    assert predicted == pytest.approx(2.273e10, rel=0.25)
