"""Lambda rows read as their logs ran (lambdal/deeplearning-benchmark@aa5addb6
pytorch/results/*/*.txt, read 2026-12-04): runs that crashed out of memory leave, and rows whose
batch the table gets wrong or leaves blank take the batch the logs record."""

from __future__ import annotations

import sys
from pathlib import Path

from dlrig.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"


def test_runs_that_crashed_out_of_memory_are_left_out_and_counted() -> None:
    """WaveGlow "fp16" at batch 10 on 1-16 RTX A4000 and the RTX 3080 Max-Q, and at batch 32 on
    1, 2 and 4 RTX A40: each log ends in "CUDA out of memory" one to 19 iterations in
    (results/A4000/PyTorch_waveglow_FP16/26-06-2021_15-54-57.txt: one 26.4 s iteration, 3,029
    samples/s, against 24,262 at batch 5 in fp32 on the same card). 9 rows, 3 single-GPU."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    reason = "run crashed with CUDA out of memory a few iterations in (logs)"
    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert skipped[reason] == 9
    assert read_lambda_rows(DATA, load_catalog())[1][reason] == 3
    max_q = {
        (r.workload.batch_size, r.num_gpus) for r in rows
        if r.lambda_model == "waveglow" and r.gpu.name == "GeForce RTX 3080 Laptop GPU"
    }  # fmt: skip
    assert max_q == {(5, 1)}  # its fp32 run stays (the A4000's leave with PyTorch 1.9's stack)


def test_the_laptop_tacotron2_rows_take_the_batch_their_logs_ran() -> None:
    """Lambda's table gives the RTX 3080 Max-Q's Tacotron2 batch 2; its logs run batch 48
    ("fp16", 9,254 frames/s) and 52 ("fp32", 9,486: three runs averaged)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog())
    laptop = {
        (r.workload.batch_size, r.measured_units_per_s) for r in rows
        if r.gpu.name == "GeForce RTX 3080 Laptop GPU" and r.lambda_model == "tacotron2"
    }  # fmt: skip
    assert laptop == {(48, 9254.0), (52, 9486.0)}


def test_the_2022_rtx_3090_rows_take_the_batch_their_logs_ran() -> None:
    """Lambda's 2022 table leaves the RTX 3090's single-GPU batch blank; its two runs per job
    in results/3090/ give it (ResNet-50 "fp16": batch 448, 796.34 and 806.99 img/s, tabulated
    801). 21 rows return; WaveGlow fp32, whose runs ran batch 10 and 8, stays out."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog())
    rtx3090 = [r for r in rows if r.gpu.name == "GeForce RTX 3090" and r.version == "v0"]
    assert len(rtx3090) == 21
    found = {
        (r.lambda_model, r.workload.precision.value): (
            r.workload.batch_size,
            r.measured_units_per_s,
        )
        for r in rtx3090
    }
    assert found[("resnet50", "fp16")] == (448, 801.0)
    assert found[("waveglow", "tf32")][0] == 12  # its "fp16" run (no amp); the fp32 one stays out
    assert skipped["batch size missing or 0"] == 7
