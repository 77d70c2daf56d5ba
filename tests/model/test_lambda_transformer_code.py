"""Lambda's transformer rows run the code each run's logs name: v0's DeepLearningExamples copy
inside the NGC 20.01-21.05 containers (PyTorch 1.4-1.9: every biased linear adds its bias in a
kernel of its own; BERT copies Q, K and V head-major), v1's LambdaLabsML fork of DLE on
PyTorch 1.13-2.3 (biases in the matmul, BERT's strided attention, the zoo's)."""

from __future__ import annotations

import sys
from pathlib import Path

from dlrig.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"


def test_each_run_maps_to_the_code_it_ran() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    ran = {
        (r.lambda_model, r.workload.precision.value, r.version, r.lambda_gpu.strip()): (
            r.workload.bias_epilogue,
            r.workload.strided_heads,
        )
        for r in rows
        if r.num_gpus == 1
    }
    # v0 RTX 3090: NGC build 16972326, PyTorch 1.7 (results/3090/sys_pytorch.txt)
    assert ran[("bert_large_squad", "fp16", "v0", "RTX 3090")] == (False, False)
    # v0 RTX A4500: build 25165078, PyTorch 1.12: the bias in addmm, DLE's older attention
    assert ran[("bert_large_squad", "fp16", "v0", "RTX A4500")] == (True, False)
    # v1 RTX 3090: build 44877844, DLE with distillation/ (after a9e2c1d5)
    assert ran[("bert_large_squad", "fp16", "v1", "RTX 3090")] == (True, True)
    assert ran[("transformerxllarge", "fp16", "v0", "RTX 3090")] == (False, False)
    assert ran[("transformerxllarge", "fp16", "v1", "RTX 3090")] == (True, False)
    # jobs whose code was not mapped keep the zoo's fields
    assert ran[("resnet50", "fp16", "v0", "RTX 3090")] == (True, False)


def test_cuda_10_runs_keep_unaligned_gemms_off_the_tensor_cores() -> None:
    """sys_pytorch.txt of each v0 system: Quadro RTX 8000 and V100 on CUDA 10.2 (NGC 20.01),
    RTX 3090 on CUDA 11.1; every v1 system CUDA 11.8 or later."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    ran = {
        (r.lambda_model, r.version, r.lambda_gpu.strip()): r.workload.unaligned_tensor_cores
        for r in rows
        if r.num_gpus == 1 and r.workload.precision.value == "fp16"
    }
    assert ran[("transformerxlbase", "v0", "RTX 8000")] is False
    assert ran[("transformerxlbase", "v0", "V100 32GB")] is False
    assert ran[("transformerxlbase", "v0", "RTX 3090")] is True
    assert ran[("transformerxlbase", "v1", "Quadro RTX 8000")] is True
