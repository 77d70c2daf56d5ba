"""The held-out LLM training table (bench/data/external_llm.csv) and how bench_external_llm.py
turns its rows into dlrig jobs: every row cited and dated, and the FLOPs per token the bench
gives each model reproduce the MFU its publisher computed from the same throughput."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_external_llm as bench

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine import resolve_build
from dlrig.model import Estimate, estimate
from dlrig.workloads import resolve_workload

ROWS = bench.read_rows(bench.DATA)
H100_BF16_PEAK = 989e12  # the peak both MosaicML and NVIDIA divide by (dense BF16, H100 SXM)
A100_BF16_PEAK = 312e12

FSDP_QLORA_DATA = bench.REPO / "bench" / "data" / "fsdp_qlora_2024.csv"


def _row(source: str, model: str, gpu: str, gpus: int, seq: int, precision: str = "bf16"):
    found = [
        r for r in ROWS
        if r.source == source and r.model == model and r.gpu == gpu and r.gpus == gpus
        and r.seq_len == seq and r.precision == precision
    ]  # fmt: skip
    assert found, (source, model, gpu, gpus, seq)
    return found[0]


def _training_flops_per_token(row: bench.Row) -> float:
    return 3.0 * bench.model_block(row)["forward_flops_per_token"]


def test_every_row_is_cited_dated_and_positive() -> None:
    assert len(ROWS) >= 280
    for r in ROWS:
        assert r.url.startswith("https://github.com/"), r
        assert re.fullmatch(r"20\d\d-\d\d-\d\d", r.date), r
        assert r.measured > 0 and r.gpus == max(1, min(r.gpus, 8)) * r.nodes
        assert r.network or r.nodes == 1


@pytest.mark.parametrize(
    ("model", "gpu", "gpus", "seq", "peak", "mfu"),
    [
        # llm-foundry README (@4952183), H100 80GB BF16: 10,643 tok/s/GPU, MFU 46.44
        ("mpt-7b", "H100 SXM5 80GB", 8, 2048, H100_BF16_PEAK, 46.44),
        # ... 1,956 tok/s/GPU at 65,536 tokens, MFU 28.59 (the attention term dominates)
        ("mpt-7b", "H100 SXM5 80GB", 8, 65536, H100_BF16_PEAK, 28.59),
        # A100 80GB table: mpt-70b on 64 GPUs, 410 tok/s/GPU, MFU 53.33
        ("mpt-70b", "A100 SXM4 80GB", 64, 2048, A100_BF16_PEAK, 53.33),
    ],
)
def test_mpt_flops_reproduce_mosaicml_mfu(
    model: str, gpu: str, gpus: int, seq: int, peak: float, mfu: float
) -> None:
    """MosaicML's MFU = (3 x 2 params + 3 x 4 L s h) x tokens/s / peak: the bench's FLOPs per
    token give the published figure within 0.5 points (positions' s x h params aside)."""
    r = _row("llm-foundry", model, gpu, gpus, seq)
    assert 100 * _training_flops_per_token(r) * r.measured / peak == pytest.approx(mfu, abs=0.5)


def test_llama_8b_flops_match_nvidia_model_flops() -> None:
    """dgxc-benchmarking llama3.1/README_8b.md (@143b90d): 'model flops for Llama 3.1 8b for
    GBS=1 is 4.74E+14' (one 8192-token sequence, forward and backward): the bench's count
    within 1%, and the BF16 row's 59.37% MFU on 8 H100 within 0.5 points."""
    r = _row("dgxc-benchmarking", "llama-3.1-8b", "H100 SXM5 80GB", 8, 8192)
    assert _training_flops_per_token(r) * 8192 == pytest.approx(4.74e14, rel=0.01)
    assert 100 * _training_flops_per_token(r) * r.measured / H100_BF16_PEAK == pytest.approx(
        59.37, abs=0.5
    )


def test_interleaved_pipeline_takes_five_times_the_micro_batches() -> None:
    """NeMo's 70B layout (TP 4, PP 4, CP 2, VP 5, GA 64: dgxc-benchmarking README_70b.md)
    idles (p - 1) / (v m) = 3 / 320 of a step: the job dlrig gets states 320 micro-batches,
    the file's 32 whole sequences a GPU run as 64 half-sequence micro-batches over CP 2."""
    r = _row("dgxc-benchmarking", "llama-3.1-70b", "H100 SXM5 80GB", 64, 8192)
    doc = bench.workload_doc(r)
    assert doc["parallel"] == {"strategy": "fsdp", "zero_stage": 1, "tensor": 4, "pipeline": 4,
                               "context": 2, "sequence": True,
                               "micro_batches": 320}  # fmt: skip
    assert doc["gradient_accumulation"] == 64


def test_nemo_long_sequence_tflops_convert_to_tokens_with_nemos_formula() -> None:
    """NeMo performance_long_sequence.md (@19fadb6): Llama3-8B FP8 on 8 B200 at 8k tokens, 1,671
    model TFLOP/s per GPU = 1.671e15 / (3 x 19.305e9) = 28,853 tokens/s per GPU."""
    r = _row("nemo-long-seq", "llama-3.1-8b", "B200 SXM 180GB", 8, 8192, "fp8")
    assert r.measured == pytest.approx(28853, abs=1)
    assert _training_flops_per_token(r) * r.measured == pytest.approx(1.671e15, rel=1e-4)


def test_lora_rows_run_as_lora() -> None:
    """NeMo AutoModel's Llama 3.1 8B LoRA on one H100: r16 on every projection, 41,943,040
    trainable weights (0.5223% of 8.03e9), 2 x 4096 tokens a micro-batch, 16 accumulated."""
    r = _row("nemo-automodel", "llama-3.1-8b", "H100 SXM5 80GB", 1, 4096)
    doc = bench.workload_doc(r)
    assert doc["finetune"] == {
        "method": "lora",
        "adapter_precision": "16bit",  # not peft: no fp32 adapters
        "trainable_fraction": 0.005223,
        "adapter_dropout": 0.0,  # NeMo AutoModel's fused adapters: no dropout kernel counted
        "target_modules": ["q", "k", "v", "o", "gate", "up", "down"],  # "*_proj"
    }
    assert (doc["batch_size"], doc["gradient_accumulation"]) == (2, 16)


def test_each_stacks_lora_adapts_its_own_projections() -> None:
    """Answer.AI fsdp_qlora's 'all' leaves o_proj out (train.py @05ed9f2, lines 1158-1159:
    k, q, v, up, down, gate); torchtune's Llama recipes adapt q, v, output and the MLP
    (lora_attn_modules ['q_proj', 'v_proj', 'output_proj'], apply_lora_to_mlp); NeMo 1.x's
    LoRA its fused attention_qkv."""
    rows = bench.read_rows(bench.DATA) + bench.read_rows(FSDP_QLORA_DATA)
    targets = {
        r.source: bench.workload_doc(r)["finetune"]["target_modules"]
        for r in rows
        if r.finetune != "full"
    }
    assert targets["fsdp_qlora"] == ["q", "k", "v", "gate", "up", "down"]
    assert targets["torchtune"] == ["q", "v", "o", "gate", "up", "down"]
    assert targets["nemo-24.07"] == ["q", "k", "v"]


# Every MLPerf sample is 8192 tokens: GovReport "tokenized and packed so that each sequence has
# length 8192" (AMD's llama2_70b_lora README) and llama31_8b's `SEQ_LENGTH = 8192` (its train.py);
# mlcommons/training_results_v5.1@441d65f, AMD/benchmarks.
MLPERF_SEQ = 8192


def _mlperf(results_dir: str) -> bench.Row:
    found = [r for r in ROWS if r.source == "mlperf-training" and r.url.endswith(results_dir)]
    assert len(found) == 1, results_dir
    return found[0]


@pytest.mark.parametrize(
    ("results_dir", "samples_per_s", "gpus", "tokens_per_gpu"),
    [
        # v5.1 AMD, 8 MI300X: the median of the ten runs' median `tracked_stats` throughput
        # (result_0.txt logs 2.1157 for the 384 samples between two block marks 181.5 s apart)
        ("AMD/results/MI300X_EPYC_9575F_pytorch_llama2_70b/llama2_70b_lora", 2.1170, 8, 2167.9),
        # v5.1 MangoBoost, 2 nodes of 8 MI325X: the same 8-sample steps over 16 GPUs
        ("MangoBoost/results/MI325X-LLMBoost-GPUBoost-2node/llama2_70b_lora", 4.7071, 16, 2410.0),
        # v5.1 AMD, 8 MI355X, Llama 3.1 8B pre-training
        ("AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b", 30.6861, 8, 31422.6),
    ],
)
def test_mlperf_samples_per_s_become_tokens_per_gpu(
    results_dir: str, samples_per_s: float, gpus: int, tokens_per_gpu: float
) -> None:
    """MLPerf's logged throughput is the whole job's samples a second (AMD's callbacks: samples
    over the timed steps' seconds); a row is that x 8192 tokens / the job's GPUs."""
    r = _mlperf(results_dir)
    assert r.gpus == gpus and r.seq_len == MLPERF_SEQ
    assert f"{samples_per_s:.4f} samples/s" in r.notes
    assert r.measured == pytest.approx(samples_per_s * MLPERF_SEQ / gpus, abs=0.1)
    assert r.measured == pytest.approx(tokens_per_gpu, abs=0.1)


def test_mlperf_lora_adapts_nemos_attention_at_one_sample_a_gpu() -> None:
    """AMD's megatron_gpt_peft_tuning_config.yaml (training_results_v5.1@441d65f): LoRA r16 on
    'attention', the fused linear_qkv (8192 -> 8192 + 2 x 1024) and linear_proj (8192 -> 8192)
    of 80 layers: 80 x 16 x (8192 + 10240 + 8192 + 8192) = 44,564,480 weights, 0.0646% of Llama
    2 70B's 68,976,648,192; adapter dropout 0.1; the log's global batch 8 on 8 GPUs, MBS 1."""
    assert 80 * 16 * (8192 + 10240 + 8192 + 8192) == 44_564_480
    r = _mlperf("AMD/results/MI325X_EPYC_9575F_pytorch_llama2_70b/llama2_70b_lora")
    doc = bench.workload_doc(r)
    assert doc["finetune"] == {
        "method": "lora",
        "adapter_precision": "16bit",
        "trainable_fraction": pytest.approx(44_564_480 / 68_976_648_192, abs=5e-7),
        "adapter_dropout": 0.1,
        "target_modules": ["q", "k", "v", "o"],
    }
    assert (doc["batch_size"], doc["gradient_accumulation"], doc["precision"]) == (1, 1, "fp8")


def test_mlperf_rows_store_fp8_weights_without_the_transpose_cache() -> None:
    """AMD's MLPerf configs (training_results_v5.1@441d65f): `fp8_params: ${FP8}` with FP8=True
    in megatron_gpt_peft_tuning_config.yaml, FP8_PARAMS=1 for Llama 3.1 8B, and
    ENABLE_TRANSPOSE_CACHE=0 in every config_*.sh: the 70B LoRA base holds a byte a linear
    weight, so the 288 GB MI355X holds the published job at micro-batch 1."""
    r = _mlperf("AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora")
    doc = bench.workload_doc(r)
    assert (doc["fp8_params"], doc["fp8_transpose_cache"]) == (True, False)
    assert bench.predict(r).fits
    r8 = _mlperf("AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b")
    assert bench.workload_doc(r8)["fp8_params"]


@pytest.mark.parametrize(
    ("results_dir", "micro_batch", "grad_accum"),
    [
        # AMD's config_MI355X_1x8x1_8b.sh: GBS=32, MBS=2 on 8 GPUs: 2 micro-batches a step
        ("AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b", 2, 2),
        # GigaComputing's config_MI355X_1x8x1_8b.sh: GBS=32, MBS=4: one
        ("GigaComputing/results/G893-ZX1-AAX4_pytorch/llama31_8b", 4, 1),
    ],
)
def test_mlperf_8b_accumulates_the_global_batch(
    results_dir: str, micro_batch: int, grad_accum: int
) -> None:
    r = _mlperf(results_dir)
    assert (r.micro_batch, r.grad_accum) == (micro_batch, grad_accum)
    assert r.micro_batch * r.grad_accum * r.gpus == 32


def test_mlperf_rows_are_a_held_out_training_source() -> None:
    """The MLPerf AMD rows stand as their own source in the leave-one-source-out table, and no
    constant of the model was set looking at them."""
    import held_out
    import provenance

    assert held_out.LLM_SOURCES["mlperf-training"] == "mlperf_training_amd"
    assert provenance.sources()["mlperf_training_amd"].kind == "training"
    assert provenance.held_out(["mlperf_training_amd"])


def test_torchtitan_card_is_the_96gb_hbm2e_h100_at_500w() -> None:
    r = _row("torchtitan", "llama-3.1-8b", "H100 SXM 96GB HBM2e", 8, 8192)
    gpu = bench.build_doc(r)["gpus"][0]
    assert gpu["spec"]["memory_gb"] == 96.0 and gpu["spec"]["memory_bandwidth_gb_s"] == 2400.0
    assert gpu["spec"]["fp8_tensor_tflops"] == 1979.0 and gpu["power_limit_w"] == 500


def test_every_row_gets_a_finite_prediction() -> None:
    for r in ROWS:
        p = bench.predict(r)
        assert math.isfinite(p.tokens_per_gpu) and p.tokens_per_gpu > 0, r


def test_flagged_rows_claim_more_than_the_cards_peak() -> None:
    """torchtune's README (@1814feb) credits one RTX A6000 with 4,699 tokens/s of Llama 3.1 8B
    LoRA with recompute: 3 forward passes of 16.08 GFLOPs a token = 227 TFLOP/s, above the
    card's 154.8 dense 16-bit tensor TFLOP/s; such rows are listed, not scored."""
    flagged = [r for r in ROWS if r.flag]
    assert flagged
    for r in flagged:
        peak = load_catalog().find(GPU, r.gpu).bf16_tensor_tflops or 0.0
        passes = 4.0 if r.finetune == "full" else 3.0
        assert r.measured * passes * 16.08e9 / 1e12 > peak, r


def test_llmq_rows_are_per_gpu_and_leave_out_offloaded_runs() -> None:
    """llm.q README (@f14f5e1): Qwen2.5-0.5B on 4 RTX 4090, bf16, batch 8: 151k tokens/s for the
    four (37,750 per GPU); runs whose footnote offloads optimizer state or shards weights (e.g.
    Qwen2.5-7B on one RTX 4090) are not in the table."""
    r = _row("llm.q", "qwen2.5-0.5b", "GeForce RTX 4090", 4, 1024)
    assert r.measured == pytest.approx(37750) and r.pure_16bit
    assert not [x for x in ROWS if x.source == "llm.q" and x.model == "qwen2.5-7b"
                and x.gpu == "GeForce RTX 4090"]  # fmt: skip
    assert bench.predict(r).fits is True  # pure 16-bit (no fp32 master copy) is modelled


@pytest.mark.parametrize(
    ("model", "params"),
    [("qwen2.5-0.5b", 494032768), ("qwen2.5-1.5b", 1543714304), ("qwen2.5-3b", 3085938688),
     ("qwen2.5-14b", 14770033664), ("llama-3.2-3b", 3212749824)],
)  # fmt: skip
def test_dense_parameter_counts_follow_from_the_structure(model: str, params: int) -> None:
    """Each count recomputed from its config: per layer q (h^2 + h), k and v (h x kv + kv each,
    QKV biases for Qwen only), o (h^2), a gated MLP (3 h f) and two norms (2 h); the embedding
    once if tied, twice if not, and the final norm."""
    total, h, layers, heads, kv_heads, ffn, vocab = bench.DENSE[model]
    kv = kv_heads * (h // heads)
    bias = model.startswith("qwen")
    layer = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h + (h + 2 * kv if bias else 0)
    tied = model in bench.TIED
    assert layers * layer + vocab * h * (1 if tied else 2) + h == total


@pytest.mark.parametrize(
    ("model", "measured"),
    [
        # NeMo AutoModel performance-summary.mdx (@36044ad, 2025-12-16), LoRA on one H100 at
        # 4,096 tokens: Llama 3.1 8B 12,473 and Qwen2.5 7B 14,110 tokens/s/GPU (rounded)
        ("llama-3.1-8b", 12_473),
        ("qwen2.5-7b", 14_110),
    ],
)
def test_lora_keeps_the_attention_backward(model: str, measured: float) -> None:
    # LoRA freezes the linears' weight gradients; the attention scores have no weights, so
    # their backward stays 2x the forward. Halving it too predicted these rows 11-13% fast.
    row = _row("nemo-automodel", model, "H100 SXM5 80GB", 1, 4096)
    assert row.finetune == "lora" and row.measured == pytest.approx(measured, abs=1)
    assert abs(bench.predict(row).error) < 0.08


def test_mpt_350m_fits_at_its_published_batch_with_llm_foundrys_fused_loss() -> None:
    # MosaicML ran MPT-350M at 18 x 2,048 tokens per A100 40GB (llm-foundry benchmarking
    # README, table "A100 40GB", 2023-05-03) with its default fused cross-entropy, which keeps
    # the bf16 logits and no fp32 log-softmax: 18 x 2,048 x 50,368 x 4 B = 7.4 GB that the
    # unfused loss would add. dlrig said "does not fit" before the loss kernel was modelled.
    row = _row("llm-foundry", "mpt-350m", "A100 SXM4 40GB", 16, 2048)
    assert row.micro_batch == 18 and bench.fused_loss(row)
    assert bench.predict(row).fits
    unfused = dataclasses.replace(row, source="plain torch")
    assert not bench.fused_loss(unfused)
    assert bench.predict(unfused).fits is False


def test_llmq_qwen_1_5b_fits_at_its_published_batch_with_its_fused_swiglu() -> None:
    # llm.q trained Qwen2.5-1.5B at 32 x 1,024 tokens on one RTX PRO 6000 (96 GB) with no
    # recompute or offload flag (README @f14f5e1, RTX PRO 6000 table). Its SwiGLU kernel keeps
    # the gate and up outputs and recomputes the SiLU (src/kernels/swiglu.cu): 28 layers x
    # 8,960 x 2 B fewer a token than eager PyTorch, 15.3 GiB at this batch, which took dlrig's
    # need from 104.6 to 89.3 GiB.
    gpu = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    row = _row("llm.q", "qwen2.5-1.5b", gpu, 1, 1024)
    assert row.micro_batch == 32 and row.checkpointing == "false"
    assert bench.fused_activation(row)
    build = resolve_build(bench.build_doc(row), "test")
    fused = estimate(build, resolve_workload(bench.workload_doc(row), "test"))
    eager_doc = {**bench.workload_doc(row), "fused_activation": False}
    eager = estimate(build, resolve_workload(eager_doc, "test"))
    assert fused.memory.max_batch_per_gpu >= row.micro_batch > eager.memory.max_batch_per_gpu
    saved = _activations_gb_per_sample(eager) - _activations_gb_per_sample(fused)
    assert saved * row.micro_batch == pytest.approx(28 * 8960 * 2 * 32 * 1024 / 2**30, rel=1e-6)


def test_llmq_rows_accumulate_to_the_readmes_total_batch() -> None:
    # llm.q README @f14f5e1: "a total batch size of 524288 for <= 3B (single-GPU 7B uses half
    # the total batch size)": Qwen2.5-0.5B on 4 RTX 4090 at 8 x 1,024 tokens accumulates 16
    # micro-batches, Qwen2.5-7B on one H100 at 4 x 1,024 accumulates 64.
    assert _row("llm.q", "qwen2.5-0.5b", "GeForce RTX 4090", 4, 1024).grad_accum == 16
    assert _row("llm.q", "qwen2.5-7b", "H100 SXM5 80GB", 1, 1024).grad_accum == 64


def test_llmq_5060_ti_fits_qwen_0_5b_at_batch_10_with_its_chunked_lm_head() -> None:
    # llm.q trained Qwen2.5-0.5B in bf16 at 10 x 1,024 tokens on one 16 GB RTX 5060 Ti with
    # --lmhead-chunks=5 (benchmarks/5060Ti.md @7f895bd): 2 of the 10 sequences' 16-bit logits
    # (151,936 a token) alive at once, 8 x 1,024 x 151,936 x 2 B = 2.32 GiB fewer than a head
    # that keeps them all, which does not fit.
    row = _row("llm.q", "qwen2.5-0.5b", "GeForce RTX 5060 Ti 16GB", 1, 1024)
    assert row.micro_batch == 10 and row.loss_chunks == 5
    build = resolve_build(bench.build_doc(row), "test")
    chunked = estimate(build, resolve_workload(bench.workload_doc(row), "test"))
    whole_doc = {**bench.workload_doc(row), "loss_chunks": 1}
    whole = estimate(build, resolve_workload(whole_doc, "test"))
    assert chunked.memory.max_batch_per_gpu >= row.micro_batch > whole.memory.max_batch_per_gpu
    saved = _activations_gb_per_sample(whole) - _activations_gb_per_sample(chunked)
    assert saved * row.micro_batch == pytest.approx(8 * 1024 * 151936 * 2 / 2**30, rel=1e-6)


def _activations_gb_per_sample(est: Estimate) -> float:
    """Activations per sample of the micro-batch the estimate ran (a batch that does not fit
    runs split: memory_plan)."""
    return est.memory.activations_gb / est.batch_per_gpu
