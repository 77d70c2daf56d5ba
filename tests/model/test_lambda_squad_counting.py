"""Lambda's 2022-2025 BERT SQuAD rows read as their code counts them: train_batch_size x
max_steps x world size over the training time, where the loop may end after its 2 epochs first
(LambdaLabsML/DeepLearningExamples@b5e1251 PyTorch/LanguageModeling/BERT/run_squad.py;
lambdal/deeplearning-benchmark@aa5addb6 pytorch/results*/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"
sys.path.insert(0, str(REPO / "scripts"))

from calibration_data import read_lambda_rows, squad_counted_per_trained  # noqa: E402


def test_eight_h200s_at_592_count_what_100_steps_would_have_trained() -> None:
    """results_v2/ASUS_8xH200_140GB_SXM_lambda-scalar_v2, bert_base_squad fp16: 88,641
    features, 19 steps an epoch on each of 8 processes, 19,748 sequences a second logged over
    23.98 s: 100 x 592 x 8 = 473,600 counted where 2 x 88,641 (and 7 padded) ran."""
    factor = squad_counted_per_trained(592, 8)
    assert factor == pytest.approx(473_600 / 177_296)


def test_eight_a100s_at_320_and_one_gpu_runs() -> None:
    """results/8xA100_80GB_SXM4_v1: 59.898 s x 4,273.9 a second = 256,000 = 100 x 320 x 8
    counted, 2 x 35 steps of 11,081 run (1.444x); one GPU stops at global_step 101 > 100, one
    step more than it counts (results/A100_80GB_SXM4_v1: 72.118 s x 443.72 = 32,000)."""
    assert squad_counted_per_trained(320, 8) == pytest.approx(256_000 / 177_296)
    assert squad_counted_per_trained(320, 1) == pytest.approx(100 / 101)


def test_a_2021_run_counts_its_own_max_steps() -> None:
    """results/8xA5500 bert_base_squad fp16: --max_steps 1000 (config_v0/config_pytorch_8xA5500
    .sh), 131.31 s x 3,168.0 a second = 416,000 = 1,000 x 52 x 8 counted, where each of 8
    processes ran 2 x 214 steps of its 11,081 features: 2.35x."""
    assert squad_counted_per_trained(52, 8, 1000) == pytest.approx(416_000 / (2 * 11_081 * 8))


def test_only_the_runs_whose_logs_carry_the_count_are_read_as_counted() -> None:
    """v1 rows carry the count; v0 rows keep one sequence a unit (the NGC containers' own
    copies, other --max_steps) except the runs V0_SQUAD_MAX_STEPS names."""
    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    units = {
        (r.version, r.lambda_gpu.strip(), r.num_gpus): r.units_per_sample
        for r in rows
        if r.lambda_model == "bert_base_squad" and r.workload.precision.value == "fp16"
    }
    assert units[("v1", "A100 80GB SXM4", 8)] == pytest.approx(256_000 / 177_296)
    assert units[("v0", "A100 80GB SXM4", 8)] == 1.0
    assert units[("v0", "RTX A5500", 8)] == pytest.approx(416_000 / (2 * 11_081 * 8))
