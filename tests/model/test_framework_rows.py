"""Training rows in TensorFlow, MXNet and PaddlePaddle the model was never tuned on
(bench/data/dle_frameworks.csv, read and predicted by bench/bench_frameworks.py): each row
carries its source, and each is the job its scripts ran, in the fields a user has."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
for folder in ("scripts", "bench"):
    if str(REPO / folder) not in sys.path:
        sys.path.insert(0, str(REPO / folder))

import bench_frameworks as fw  # noqa: E402
import held_out  # noqa: E402
import provenance  # noqa: E402


def test_every_row_names_its_source_date_and_container() -> None:
    rows = fw.read_rows()
    assert len(rows) == 64
    for r in rows:
        assert r.source.startswith("https://github.com/NVIDIA/DeepLearningExamples/blob/")
        assert r.date == "2024-04-04" and r.container and 1 <= r.gpus <= 8
    assert provenance.sources()[fw.SOURCE].kind == "training"


def test_the_source_is_held_out() -> None:
    assert provenance.held_out([fw.SOURCE])


def test_a_row_runs_as_its_scripts_say() -> None:
    """TensorFlow's ConvNets compute in NHWC in every precision (cmdline_helper.py
    `--data_format` default) under `--xla`; MXNet's FP32 runs keep NCHW (runner sets NHWC
    layouts for float16 only)."""
    rows = {r.label: r for r in fw.read_rows()}
    tf = fw.workload_doc(rows["tensorflow1 resnet50 tf32 1x A100 SXM4 40GB"])
    assert tf["memory_format"] == "channels_last" and tf["kernels"] == "compile"
    mx = fw.workload_doc(rows["mxnet resnet50 fp32 1x Tesla V100 SXM2 16GB"])
    assert "memory_format" not in mx and "kernels" not in mx
    mx_amp = fw.workload_doc(rows["mxnet resnet50 amp 1x Tesla V100 SXM2 16GB"])
    assert mx_amp["precision"] == "fp16" and mx_amp["memory_format"] == "channels_last"


def test_bench_accuracy_counts_every_row_as_a_training_source() -> None:
    pairs = held_out.ADAPTERS["dle_frameworks"]()
    assert len(pairs) == 64
    assert {p.source for p in pairs} == {fw.SOURCE}
    assert all(p.predicted > 0 for p in pairs)
