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
    assert len(rows) == 112
    for r in rows:
        assert r.source.startswith("https://github.com/NVIDIA/DeepLearningExamples/blob/")
        assert r.date == "2024-04-04" and r.container and 1 <= r.gpus <= 8
    assert provenance.sources()[fw.SOURCE].kind == "training"


def test_the_source_is_calibration_for_the_xla_and_fused_norm_counts() -> None:
    """kernels xla and fused_norm_activation were counted with these rows' errors in view:
    bench/provenance.toml says so, and the bench no longer calls the source held out."""
    assert not provenance.held_out([fw.SOURCE])
    assert any("kernels xla" in c.name for c in provenance.set_on([fw.SOURCE], "chosen"))


def test_a_row_runs_as_its_scripts_say() -> None:
    """TensorFlow's ConvNets compute in NHWC in every precision (cmdline_helper.py
    `--data_format` default) under `--xla` (auto-clustering: kernels xla); MXNet's FP32 runs
    keep NCHW and cuDNN's unfused batch norm (the runner sets NHWC layouts and
    `--fuse-bn-relu 1 --fuse-bn-add-relu 1` for float16 only); PaddlePaddle's AMP runs fuse
    them too (program.py: fuse_bn_act_ops, fuse_bn_add_act_ops under args.amp)."""
    rows = {r.label: r for r in fw.read_rows()}
    tf = fw.workload_doc(rows["tensorflow1 resnet50 tf32 1x A100 SXM4 40GB"])
    assert tf["memory_format"] == "channels_last" and tf["kernels"] == "xla"
    mx = fw.workload_doc(rows["mxnet resnet50 fp32 1x Tesla V100 SXM2 16GB"])
    assert not {"memory_format", "kernels", "fused_norm_activation"} & set(mx)
    mx_amp = fw.workload_doc(rows["mxnet resnet50 amp 1x Tesla V100 SXM2 16GB"])
    assert mx_amp["precision"] == "fp16" and mx_amp["memory_format"] == "channels_last"
    assert mx_amp["fused_norm_activation"] is True
    paddle = {p: fw.workload_doc(rows[f"paddle resnet50 {p} 1x A100 SXM4 80GB"]) for p in
              ("amp", "tf32")}  # fmt: skip
    assert paddle["amp"]["fused_norm_activation"] is True
    assert "fused_norm_activation" not in paddle["tf32"]
    bert = fw.workload_doc(rows["tensorflow2 bert_large_squad amp 1x A100 SXM4 80GB"])
    assert bert["kernels"] == "xla" and "fused_norm_activation" not in bert


def test_paddle_bert_runs_as_its_program_builds_it() -> None:
    """PaddlePaddle's BERT program.py: under AMP, fuse_dot_product_attention (cuDNN's fused
    attention; run_squad.sh's fuse_mha defaults to true) and fuse_gemm_epilogue; at TF32
    neither, each bias an elementwise_add of its own."""
    rows = {r.label: r for r in fw.read_rows()}
    amp, tf32 = (
        fw.resolve_workload(
            fw.workload_doc(rows[f"paddle bert_large_squad {p} 1x A100 SXM4 80GB"]), "t"
        )
        for p in ("amp", "tf32")
    )
    assert amp.flash_attention and amp.native_attention and amp.bias_epilogue
    assert not tf32.flash_attention and not tf32.bias_epilogue
    assert (amp.batch_size, tf32.name) == (32, "bert-large-squad (paddle)")


def test_bench_accuracy_counts_every_row_as_a_training_source() -> None:
    pairs = held_out.ADAPTERS["dle_frameworks"]()
    assert len(pairs) == 112
    assert {p.source for p in pairs} == {fw.SOURCE}
    assert all(p.predicted > 0 for p in pairs)


def test_pre_training_runs_its_phase_and_accumulation() -> None:
    """TensorFlow 1's DGX-1 16GB table (README @729963dd): phase 2 at 512 tokens, 4 sequences a
    GPU under AMP, 8192 micro-batches per LAMB step on one GPU (run_pretraining_lamb_phase2.sh
    `--num_accumulation_steps`, `--allreduce_post_accumulation=True`): the encoder at 512
    tokens, the optimizer once per 8192 micro-batches. PaddlePaddle's phase 1 at 128 tokens,
    256 a GPU under AMP (the accumulated 8192 over 32 gradient-merge steps) runs as its
    program.py builds BERT."""
    rows = {r.label: r for r in fw.read_rows()}
    tf = rows["tensorflow1 bert_large_pretraining seq 512 amp 1x Tesla V100 SXM2 16GB"]
    assert (tf.batch, tf.gradient_accumulation, tf.measured) == (4, 8192, 28.72)
    w = fw.resolve_workload(fw.workload_doc(tf), "t")
    assert (w.seq_len, w.gradient_accumulation, w.batch_size) == (512, 8192, 4)
    paddle = rows["paddle bert_large_pretraining seq 128 amp 1x A100 SXM4 80GB"]
    pw = fw.resolve_workload(fw.workload_doc(paddle), "t")
    assert (pw.seq_len, pw.gradient_accumulation, pw.batch_size) == (128, 32, 256)
    assert pw.flash_attention and pw.bias_epilogue
    assert not any(r.framework == "paddle" and r.seq_len == 512 for r in rows.values())
