"""What Lambda's Tacotron2 and WaveGlow "fp16" rows ran: apex amp O1 on its 2020 systems (their
logs record `"amp_run": true` or `amp : True` and "Selected optimization level O1" on every GTX
1080 Ti, Turing, V100, RTX 3070 and RTX 3080 system), full precision everywhere else (`amp :
False` on the RTX 3090, A100, RTX A-series, RTX 3080 Max-Q and every v1 system;
lambdal/deeplearning-benchmark pytorch/results/*/PyTorch_{tacotron2,waveglow}_FP16/*.txt
@aa5addb6, read 2026-12-04). The mixed-precision rows are left out and counted; the rest are
read as the TF32 (Ampere+) or FP32 runs they were."""

from __future__ import annotations

import sys
from pathlib import Path

from dlrig.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"
REASON = "mislabeled tacotron2/waveglow fp16 ran apex amp O1 on v0 2020 systems (logs)"


def test_the_2020_speech_rows_that_ran_amp_are_left_out_and_counted() -> None:
    """69 rows of 1-16 GPUs, 20 of them single-GPU (the calibration's own count,
    model/data/calibration.toml [meta.lambda_rows_skipped]). Among them the v0 Quadro RTX 8000
    Tacotron2 "fp16" run: batch 336 at 31,664 frames/s, its 6.05 s iteration 3x faster per
    sample than the fp32 run's 9.3 s at batch 168, which full precision on Turing cannot do."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert skipped[REASON] == 69
    _, single_skipped = read_lambda_rows(DATA, load_catalog())
    assert single_skipped[REASON] == 20
    kept = {(r.lambda_model, r.gpu.name, r.version, r.workload.batch_size) for r in rows}
    assert ("tacotron2", "Quadro RTX 8000", "v0", 336) not in kept


def test_speech_rows_that_ran_full_precision_stay_as_tf32() -> None:
    """The RTX A6000's v0 Tacotron2 "fp16" run logs `amp : False` (batch 148, 23,068 frames/s,
    within 5% of its fp32 run's 24,085): kept, and read as TF32. So are the RTX 3080 Max-Q's
    (a 2021 laptop run without amp) and the v1 RTX 4090's."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog())
    speech = [r for r in rows if r.lambda_model in ("tacotron2", "waveglow")]
    assert all(r.workload.precision.value == "tf32" for r in speech)
    a6000 = [
        r for r in speech
        if r.gpu.name == "NVIDIA RTX A6000" and r.version == "v0" and r.workload.batch_size == 148
        and r.lambda_model == "tacotron2"
    ]  # fmt: skip
    assert [r.measured_units_per_s for r in a6000] == [23068.0, 22639.0]
    laptop = sorted(
        r.measured_units_per_s for r in speech
        if r.gpu.name == "GeForce RTX 3080 Laptop GPU" and r.lambda_model == "tacotron2"
    )  # fmt: skip
    assert laptop == [9254.0, 9486.0]  # its "fp16" and fp32 runs, batch 48 and 52 (their logs)
    rtx4090 = sorted(
        r.measured_units_per_s for r in speech
        if r.gpu.name == "GeForce RTX 4090" and r.lambda_model == "tacotron2"
    )  # fmt: skip
    assert rtx4090 == [32661.0, 32910.0]  # v1 "fp16" (amp : False) and fp32, both batch 88


def test_apex_o1_rows_on_ngc_20_10_are_put_back_as_the_fp16_they_ran() -> None:
    """With every row put back, the 8 apex O1 rows of the RTX 3070 and 3080 (NGC 20.10: their
    sys_pytorch.txt reads PyTorch 1.7.0a0+7036e91, CUDA 11.1) are predicted as fp16: among them
    the RTX 3080's WaveGlow at batch 4, 68,121 samples/s (results/3080/PyTorch_waveglow_FP16/
    28-10-2020_04-50-22.txt: `amp : True`, "Selected optimization level O1", 32,000 samples
    in 0.47 s an iteration). The 61 of NGC 20.01 (PyTorch 1.4, cuDNN 7.6.5) keep full
    precision: the Quadro RTX 8000's WaveGlow at batch 52, 92,695 samples/s (O1 too, 4.47 s
    for 52 x 8000 samples), whose stack dlrig does not model."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import APEX_O1_CURRENT_STACK_GPUS, read_lambda_rows

    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    fp16 = [
        r for r in every
        if r.lambda_model in ("tacotron2", "waveglow") and r.workload.precision.value == "fp16"
    ]  # fmt: skip
    assert len(fp16) == 8
    assert {r.gpu.name for r in fp16} == APEX_O1_CURRENT_STACK_GPUS
    rtx3080 = [
        r for r in fp16
        if r.lambda_model == "waveglow" and r.num_gpus == 1 and r.workload.batch_size == 4
    ]  # fmt: skip
    assert [r.measured_units_per_s for r in rtx3080] == [68121.0]
    rtx8000 = [
        r for r in every
        if r.lambda_model == "waveglow" and r.gpu.name == "Quadro RTX 8000" and r.version == "v0"
        and r.num_gpus == 1 and r.workload.batch_size == 52
    ]  # fmt: skip
    # dlrig's "tf32" is PyTorch's fp32 default: full fp32 on Turing, which has no TF32
    assert [(r.measured_units_per_s, r.workload.precision.value) for r in rtx8000] == [
        (92695.0, "tf32")
    ]


def test_apex_o1_weight_casts_are_already_in_the_fp16_waveglow_step() -> None:
    """Apex O1 keeps the fp32 weights (the logs: `cast_model_type : None`) and casts each one
    once an iteration (a Parameter's cast is cached until amp.scale_loss exits: apex/amp/utils.py
    should_cache @01802f62, handle.py _clear_cache @007c5947), as autocast does: the fp16 step
    the RTX 3080's O1 row is predicted as moves WaveGlow's 268,294,760 weights x (4 + 2 B
    forward, 2 + 4 B for the gradient back) = 3.22 GB of casts, what O1 would add to it beyond
    its cast kernels (calibration_data.py, the note at APEX_O1_CURRENT_STACK_GPUS)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    from dlrig.model import compute

    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    o1 = next(
        r.workload for r in every
        if r.lambda_model == "waveglow" and r.workload.precision.value == "fp16"
    )  # fmt: skip
    assert o1.params == 268_294_760
    assert compute.autocast_fp32_model(o1, True)
    assert compute.weight_cast_bytes(o1, o1.params, True) == 268_294_760 * 12
