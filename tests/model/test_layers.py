"""Work by layer class from a model's structure (dlrig.model.layers) and its time per class
(dlrig.model.compute): no per-workload factor, physical bounds on every term."""

from __future__ import annotations

import dataclasses
import math

import pytest
from model_fixtures import make_workload

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import compute, estimate, layers
from dlrig.model.calibration import default_calibration
from dlrig.model.layers import (
    CLASSIC_STRUCTURE,
    EAGER_SCORE_PASSES,
    KERNELS_PER_LAYER_EAGER,
    KERNELS_PER_LAYER_FUSED,
    LayerWork,
    layer_work,
    transformer_work,
)
from dlrig.model.rates import achievable_matmul_tflops, matmul_peak
from dlrig.workloads.model import Mode, Workload


def _gpu(name: str) -> GPU:
    return builtin_catalog().find(GPU, name)


def test_bert_base_attention_flops_follow_kaplan() -> None:
    """Kaplan et al. 2020 (arXiv:2001.08361, table 1): attention scores cost 2 x n_layer x
    n_ctx x d_attn FLOPs per token forward, doubled for QK^T and AV: 4 x 12 x 384 x 768 =
    14.16 MFLOPs per token, 5.44 GFLOPs per 384-token sample; the rest of BERT-base's 0.184
    GFLOPs per token (workloads_reference.csv) is dense matmuls."""
    job = make_workload("bert-base-squad")
    work = layer_work(job)
    assert work.attention_flops == pytest.approx(4 * 12 * 384 * 384 * 768)
    assert work.attention_flops / 384 == pytest.approx(14.16e6, rel=1e-3)
    assert work.gemm_flops + work.attention_flops == pytest.approx(job.forward_flops_per_sample)


def test_eager_attention_materialises_the_scores_and_flash_does_not() -> None:
    """DLE BERT computes softmax(QK^T) explicitly: 10.5 passes over 12 heads x 384 x 384
    scores per layer; the same model with fused attention moves none and launches 6 fewer
    kernels per layer (as transformers' eager attention, copying Q, K, V head-major)."""
    job = dataclasses.replace(make_workload("bert-base-squad"), strided_heads=False)
    eager = layer_work(job)
    assert eager.score_elems == pytest.approx(EAGER_SCORE_PASSES * 12 * 384 * 384 * 12)
    fused = transformer_work(
        dataclasses.replace(job, model_name="x", name="x", flash_attention=True)
    )
    assert fused.score_elems == 0.0
    assert eager.kernels_forward - fused.kernels_forward == pytest.approx(
        12 * (KERNELS_PER_LAYER_EAGER - KERNELS_PER_LAYER_FUSED)
    )


def test_strided_attention_skips_the_head_copies() -> None:
    """DLE's BERT since a9e2c1d5 (2022-03) hands torch.bmm views of Q, K and V
    (`attention: eager_strided`, the zoo's BERT): per layer 3 kernels fewer and 6h fewer
    elements per token than the head-major copies of its earlier code, 6 x 768 x 384 x 12
    layers = 21.2 M a sample for BERT-base."""
    job = make_workload("bert-base-squad")
    assert job.strided_heads
    copied = layer_work(dataclasses.replace(job, strided_heads=False))
    strided = layer_work(job)
    assert copied.kernels_forward - strided.kernels_forward == 12 * 3
    assert copied.pointwise_elems - strided.pointwise_elems == pytest.approx(6 * 768 * 384 * 12)


def test_a_bias_added_after_its_matmul_moves_the_output_again() -> None:
    """F.linear on a 3-D activation before PyTorch 1.12 ran `output += bias` after the matmul
    (pytorch/pytorch#39661): each of BERT-base's 6 biased linears per layer adds a kernel and
    reads and writes its output, 2 x (5 x 768 + 3072) = 13,824 elements per token per layer;
    Transformer-XL's bias-free attention projections leave its two feed-forward ones,
    2 x (1024 + 4096) per token at d_model 1024 and d_inner 4096 (its large preset)."""
    job = make_workload("bert-base-squad")
    apart = layer_work(dataclasses.replace(job, bias_epilogue=False))
    fused = layer_work(job)
    assert apart.kernels_forward - fused.kernels_forward == 12 * 6
    assert apart.pointwise_elems - fused.pointwise_elems == pytest.approx(13_824 * 384 * 12)
    txl = make_workload("transformer-xl-large", seq_len=256)
    txl_apart = layer_work(dataclasses.replace(txl, bias_epilogue=False))
    layers, s = float(txl.num_layers or 0), 256.0
    assert txl_apart.kernels_forward - layer_work(txl).kernels_forward == 2 * layers
    assert txl_apart.pointwise_elems - layer_work(txl).pointwise_elems == pytest.approx(
        2 * (1024 + 4096) * s * layers
    )


def test_the_score_chains_backward_moves_its_own_passes() -> None:
    """A training step moves eager attention's scores 10.5 times forward and 11.5 backward
    (layers.EAGER_SCORE_BACKWARD_PASSES, counted from the autograd derivatives), not 3 x 10.5:
    BERT-base at batch 1, fp16, 1 TB/s moves 22 x 12 heads x 384^2 x 12 layers x 2 B of
    scores = 0.934 ms; inference moves the forward's alone."""
    job = make_workload("bert-base-squad", precision="fp16")
    work = layer_work(job)
    assert work.score_backward_elems == pytest.approx(11.5 * 12 * 384 * 384 * 12)

    def memory_s(w: Workload, scores: bool) -> float:
        cut = (
            work if scores else dataclasses.replace(work, score_elems=0.0, score_backward_elems=0.0)
        )
        return compute.class_times(
            cut, w, 1, 1e14, 1000.0, winograd=False, operand_bytes=2.0, sixteen_traffic=True,
            optimizer_params=0.0, intensity_scale=1.0,
        ).memory_s  # fmt: skip

    moved = 22 * 12 * 384**2 * 12 * 2 / 1e12
    assert moved == pytest.approx(0.934e-3, rel=1e-3)
    assert memory_s(job, True) - memory_s(job, False) == pytest.approx(moved)
    serving = dataclasses.replace(job, mode=Mode.INFERENCE)
    assert memory_s(serving, True) - memory_s(serving, False) == pytest.approx(moved * 10.5 / 22)


def test_a_models_own_attention_field_sets_its_kernels() -> None:
    """A transformer outside the classic zoo runs the attention its file states: `attention:
    eager` (the schema's default) moves the scores in compute as memory.py keeps them, where
    compute used to take every such model as fused."""
    job = make_workload("bert-base-squad")
    renamed = dataclasses.replace(job, model_name="x", name="x")
    assert not renamed.flash_attention
    assert transformer_work(renamed).score_elems == pytest.approx(layer_work(job).score_elems)


def test_attention_share_grows_with_sequence_length() -> None:
    """Issue 10: measured MFU on H100 falls from 41% at 2k tokens to 27% at 64k; attention
    FLOPs per token grow with s (4 s h L) while the dense part stays: at 64k the predicted
    compute time per token on an H100 is well above the 2k figure."""
    h100 = _gpu("H100 SXM5 80GB")
    peak = matmul_peak(h100, Precision.BF16)[0]
    cal = default_calibration()

    def seconds_per_token(seq: int) -> float:
        base = make_workload("llama-3-8b", seq_len=seq, batch_size=1)
        dense = 2 * 7.505e9  # 2 x matmul parameters per token (zoo note)
        flops = (dense + 4 * seq * 4096 * 32 / 2) * seq  # causal: half the scores
        job = dataclasses.replace(base, forward_flops_per_sample=flops)
        t = compute.class_times(
            layer_work(job), job, 1, peak, h100.memory_bandwidth_gb_s, winograd=False,
            operand_bytes=2.0, sixteen_traffic=True, optimizer_params=0.0,
            intensity_scale=cal.intensity_scale,
        )  # fmt: skip
        return t.gemm_s / seq

    assert seconds_per_token(65536) > 1.4 * seconds_per_token(2048)


def test_winograd_is_a_bounded_flop_reduction_on_shader_cores() -> None:
    """cuDNN's Winograd F(2x2,3x3) needs 2.25x fewer multiplications (Lavin & Gray 2016) on
    the 3x3 stride-1 share of ResNet-50 (36.8%, scripts/count_conv_structure.py): its
    shader-core convolution time is 1 - 0.368 x (1 - 1/2.25) = 0.80 of the counted FLOPs'
    time; never below 1/2.25 whatever the share."""
    job = make_workload("resnet50")
    work = layer_work(job)
    kwargs = dict(
        operand_bytes=4.0, sixteen_traffic=False, optimizer_params=0.0, intensity_scale=0.0
    )
    direct = compute.class_times(work, job, 256, 1e13, 900.0, winograd=False, **kwargs)
    wino = compute.class_times(work, job, 256, 1e13, 900.0, winograd=True, **kwargs)
    assert wino.conv_s / direct.conv_s == pytest.approx(1 - 0.368 * (1 - 1 / 2.25))
    all_3x3 = dataclasses.replace(work, winograd_share=1.0)
    best = compute.class_times(all_3x3, job, 256, 1e13, 900.0, winograd=True, **kwargs)
    assert best.conv_s / direct.conv_s == pytest.approx(1 / compute.WINOGRAD_FLOP_REDUCTION)


def test_narrow_layers_lose_more_on_a_gpu_with_a_higher_ridge() -> None:
    """The additive roofline: a GEMM of w FLOPs per operand element reaches w / (w + ridge) of
    its large-size efficiency; an H100 SXM (989 TFLOPS over 3.35 TB/s) has a higher ridge
    than an A100 SXM (312 over 2.04), so ResNet-50's ~407-wide convolutions reach a smaller
    share on it (issue 10: Hopper fp16 convnets were predicted 30-170% fast)."""
    scale = default_calibration().intensity_scale

    def share(gpu: GPU, width: float) -> float:
        ridge = (
            scale * 2.0 * matmul_peak(gpu, Precision.FP16)[0] / (gpu.memory_bandwidth_gb_s * 1e9)
        )
        return compute.width_factor(width, ridge)

    a100, h100 = _gpu("A100 SXM4 80GB"), _gpu("H100 SXM5 80GB")
    assert share(h100, 407) < share(a100, 407) < share(a100, 4096) < 1.0
    assert compute.width_factor(float("inf"), 500.0) == 1.0


def test_kernel_launches_grow_with_layers_not_with_the_workload_name() -> None:
    """Launch cost is kernels x seconds per kernel: a transformer of twice the layers
    launches (almost) twice the kernels; a training step launches 3x the forward's. The zoo's
    gpt2 (flash attention) trains without dropout: each layer launches KERNELS_PER_LAYER_FUSED
    less its two hidden dropouts' 2 x 2."""
    job = make_workload("gpt2")
    deep = dataclasses.replace(job, num_layers=24)
    assert layer_work(deep).kernels_forward - layer_work(job).kernels_forward == pytest.approx(
        12 * (KERNELS_PER_LAYER_FUSED - 4.0)
    )
    assert compute.traffic_multiplier(job) == 3.0


def test_classic_models_without_transformer_fields_use_counted_structure() -> None:
    """ResNet-50 (no hidden size) is all convolutions with its counted 176 forward kernels;
    an unknown convnet degrades to the ResNet-like default, not to an error."""
    work = layer_work(make_workload("resnet50"))
    assert work.conv_flops > 0 and work.gemm_flops == 0.0
    assert work.kernels_forward == CLASSIC_STRUCTURE["resnet50"].kernels_forward
    other = dataclasses.replace(make_workload("resnet50"), model_name="my-cnn", name="my-cnn")
    assert layer_work(other).conv_flops == other.forward_flops_per_sample


def test_ada_l2_serves_the_reads_of_a_layer_that_fits() -> None:
    """The Ada whitepaper gives the RTX 4090 72 MB of L2 (GA102: 6 MB). BERT-base at 32 x 384
    tokens has 32 x 384 x 768 x 2 B = 18.9 MB hidden tensors: they fit in 72 MB, so half the
    pointwise moves (the reads of what the previous kernel wrote) hit L2; in 6 MB a third of
    each tensor does."""
    job = make_workload("bert-base-squad", batch_size=32)
    work = layer_work(job)
    tensor = 32 * 384 * 768 * 2.0
    assert compute.l2_hit(72 * 2**20, tensor) == 1.0
    assert compute.l2_hit(6 * 2**20, tensor) == pytest.approx(6 * 2**20 / tensor)
    assert compute.l2_hit(0.0, tensor) == 0.0

    def memory_s(l2_mb: float) -> float:
        return compute.class_times(
            work, job, 32, 1e14, 1000.0, winograd=False, operand_bytes=2.0,
            sixteen_traffic=True, optimizer_params=0.0, intensity_scale=1.0,
            l2_bytes=l2_mb * 2**20,
        ).memory_s  # fmt: skip

    pointwise = work.pointwise_elems * 2.0 * 3 * 32 / 1e12
    assert memory_s(0.0) - memory_s(72.0) == pytest.approx(compute.L2_READ_SHARE * pointwise)
    assert _gpu("GeForce RTX 4090").l2_cache_mb == 72


def test_eager_decoding_on_an_h100_is_launch_bound() -> None:
    """Llama 3.1 8B's eager decode step took 8.4 ms on an H100 SXM5, 5.1 ms as a CUDA graph
    (cloudai.pt, "CUDA Graphs + torch.compile: 1.65x LLM Decode Speedup", read 2026-12-03):
    the host's launches, not the 16 GB of weights (~5 ms at 3.35 TB/s), set the step. dlrig's
    one-token step at batch 1 lands within 10% of the eager figure."""
    from dlrig.machine.model import Build, GPUGroup
    from dlrig.model import estimate

    job = make_workload("llama-3-8b-inference", batch_size=1)
    build = Build(name="h100", gpus=(GPUGroup(_gpu("H100 SXM5 80GB"), 1),))
    assert estimate(build, job).step_time_s == pytest.approx(8.4e-3, rel=0.10)


def test_resnet152_launches_its_own_kernels_not_resnet50s() -> None:
    """zoo.toml: resnet152 is `similar_to = "resnet50"`, but has its own counted structure:
    155 convolutions, 155 BatchNorms, 151 ReLUs, 50 adds, pools, fc and loss = 516 kernels."""
    assert layer_work(make_workload("resnet152")).kernels_forward == 516.0


def test_a_recurrent_steps_gemm_has_only_the_batchs_rows() -> None:
    """Tacotron2's decoder runs its LSTMCells and projections once per mel frame over the
    batch: a GEMM of M = batch rows through a 1024-wide layer has 2MKN / (MK + KN + MN) =
    1 / (1/1024 + 1/(2M)) FLOPs per operand element, 114 at batch 64 against 1024 for a layer
    whose rows are tokens or pixels, so a smaller batch costs more per sample."""
    assert compute.gemm_call_width(1024.0, 64.0) == pytest.approx(1 / (1 / 1024 + 1 / 128))
    assert compute.gemm_call_width(1024.0, 64.0) == pytest.approx(113.8, abs=0.1)
    assert compute.gemm_call_width(1024.0, float("inf")) == 1024.0
    job = make_workload("tacotron2")
    work = layer_work(job)
    assert work.gemm_rows_per_sample == 1.0
    assert layer_work(make_workload("resnet50")).gemm_rows_per_sample == float("inf")

    def gemm_s_per_sample(batch: int) -> float:
        return compute.class_times(
            work, job, batch, 1e14, 1000.0, winograd=False, operand_bytes=4.0,
            sixteen_traffic=False, optimizer_params=0.0, intensity_scale=1.0,
        ).gemm_s / batch  # fmt: skip

    assert gemm_s_per_sample(16) > gemm_s_per_sample(256)


def test_apex_o1_mixed_precision_casts_beside_every_op() -> None:
    """DLE Mask R-CNN's fp16 runs call apex amp.initialize with opt_level 'O1'
    (PyTorch/Segmentation/MaskRCNN/pytorch/tools/train_net.py), which patches every torch
    function to cast its inputs (apex docs, opt-levels): one cast kernel per op, so an fp16
    step launches twice the kernels of its fp32 step; recipes with fp16 master weights (BERT,
    apex O2) launch the same kernels in both."""
    for model, factor in (("maskrcnn", 2.0), ("bert-base-squad", 1.0)):
        job = make_workload(model, batch_size=8)
        work = layer_work(job)

        def kernels(sixteen: bool, job: Workload = job, work: LayerWork = work) -> float:
            return compute.class_times(
                work, job, 8, 1e14, 1000.0, winograd=False, operand_bytes=2.0,
                sixteen_traffic=sixteen, optimizer_params=0.0, intensity_scale=1.0,
                mixed_precision=sixteen,
            ).kernels  # fmt: skip

        assert kernels(True) == pytest.approx(factor * kernels(False))


def test_an_unaligned_vocabulary_slows_the_16bit_lm_head_as_nanogpt_measured() -> None:
    """Padding nanoGPT's GPT-2 vocabulary from 50,257 to 50,304 (a multiple of 64) made its
    A100 training step ~25% faster (A. Karpathy, 2023-02, quoted at
    simonwillison.net/tags/andrej-karpathy): a 16-bit GEMM whose width is not a multiple of 8
    elements misses the tensor cores' 16-byte loads. The zoo's gpt2 (bf16) on an A100 SXM4
    40GB gains 1.22x from the padding, though it adds 0.1% FLOPs (the quoted "~25%" read as
    22-28%); TF32 (no measurement) and a vocabulary that is a multiple of 8 (Llama 3's
    128,256) are untouched."""
    from dlrig.machine.model import Build, GPUGroup
    from dlrig.model import estimate

    job = make_workload("gpt2")
    padded = dataclasses.replace(
        job,
        vocab_size=50304,
        forward_flops_per_sample=job.forward_flops_per_sample + 2 * 768 * 47 * 1024,
    )
    build = Build(name="a100", gpus=(GPUGroup(_gpu("A100 SXM4 40GB"), 1),))
    speedup = estimate(build, padded).samples_per_s / estimate(build, job).samples_per_s
    assert speedup == pytest.approx(1.25, abs=0.03)
    work = layer_work(job)
    assert work.lm_head_flops == pytest.approx(2 * 768 * 50257 * 1024)
    assert compute.unaligned_extra_flops(work, 2.0) == pytest.approx(1.5 * work.lm_head_flops)
    assert compute.unaligned_extra_flops(work, 4.0) == 0.0
    assert compute.unaligned_extra_flops(layer_work(make_workload("llama-3-8b")), 2.0) == 0.0


def test_the_unaligned_share_follows_the_cards_shader_to_tensor_ratio() -> None:
    """compute.unaligned_gemm_share: an unaligned 16-bit GEMM is bound by the SM's instruction
    issue (narrow loads), so it keeps 0.4 of the aligned efficiency on the A100 where it was
    measured (19.5 FP32 vs 312 tensor TFLOPS), 0.4 x 16 x 66.9 / 989.5 = 0.43 on an H100 SXM5,
    and all of it on an RTX A6000 (38.7 vs 154.8) and an RTX 4090 (82.6 vs 165.2 with FP32
    accumulate), whose shader rate feeds it at the tensor cores' pace."""

    def share(name: str) -> float:
        gpu = _gpu(name)
        return compute.unaligned_gemm_share(
            matmul_peak(gpu, Precision.FP16)[0], gpu.fp32_tflops * 1e12
        )

    assert share("A100 SXM4 40GB") == pytest.approx(0.4)
    assert share("H100 SXM5 80GB") == pytest.approx(0.4 * 16 * 66.9 / 989.5, rel=0.01)
    assert share("NVIDIA RTX A6000") == 1.0
    assert share("GeForce RTX 4090") == 1.0


def test_transformer_xl_fp16_on_cublas_10_gains_what_lambdas_2020_run_measured() -> None:
    """cuBLAS before 11.0 runs a 16-bit GEMM with a dimension that is not a multiple of 8 on
    the CUDA cores (NVIDIA DU-09799-001, Tensor Core Requirements, Table 1): Transformer-XL
    base's 267,735-word head, 63% of its FLOPs. Lambda's 2020 run on a Quadro RTX 8000, CUDA
    10.2 (results/QuadroRTX8000/PyTorch_transformerxlbase_FP{16,32}, sys_pytorch.txt): fp16 at
    batch 72 9,290 tok/s, fp32 at 32 6,124 (1.52x); on CUDA 11.8 the same card ran fp16 at
    18,223 (results/QuadroRTX8000_v1). The model's fp16/fp32 ratio on cuBLAS 10 is within 10%
    of 1.52x, and cuBLAS 11's tensor-core kernels give it at least 1.5x more (measured:
    18,223 / 6,623 = 2.75x against 1.52x, 1.8x more)."""
    from dlrig.machine.model import Build, GPUGroup
    from dlrig.model import estimate

    build = Build(name="rtx8000", gpus=(GPUGroup(_gpu("Quadro RTX 8000"), 1),))
    fp16 = make_workload("transformer-xl-base", batch_size=72)
    fp32 = dataclasses.replace(
        make_workload("transformer-xl-base", batch_size=32), precision=Precision.TF32
    )
    cublas10 = dataclasses.replace(fp16, unaligned_tensor_cores=False)
    base = estimate(build, fp32).samples_per_s
    ratio = estimate(build, cublas10).samples_per_s / base
    assert ratio == pytest.approx(9290 / 6124, rel=0.10)
    assert estimate(build, fp16).samples_per_s / base > 1.5 * ratio
    # the card's sustained FP32 GEMM rate over its 16-bit tensor rate, both as dlrig holds them
    # (rates.achievable_matmul_tflops: 13.21 and 89.14 TFLOPS): 14.8% of the tensor path
    rtx_8000 = _gpu("Quadro RTX 8000")
    share = compute.cuda_core_gemm_share(
        achievable_matmul_tflops(rtx_8000, Precision.FP32, None),
        achievable_matmul_tflops(rtx_8000, Precision.FP16, None),
    )
    assert share == pytest.approx(0.148, abs=0.001)
    said = " ".join(estimate(build, cublas10).assumptions)
    assert "267,735-wide output projection" in said and "CUDA cores" in said
    # an RTX 4090's shader rate feeds the unaligned GEMM at full speed: nothing to say
    rtx_4090 = Build(name="4090", gpus=(GPUGroup(_gpu("GeForce RTX 4090"), 1),))
    assert not any("output projection" in a for a in estimate(rtx_4090, fp16).assumptions)


def test_transformer_xl_gains_more_from_fp16_on_ga102_than_on_a100_as_lambda_measured() -> None:
    """Lambda's 2024 run (lambda_pytorch_train_v1_2024.csv): Transformer-XL base (a
    267,735-word head, not a multiple of 8) runs 1.80x faster in fp16 than in TF32 on an RTX
    A6000 but 1.41x on an A100 SXM4 80GB, where BERT-large (aligned) gains ~2x on both. The
    model's fp16/TF32 ratio, at Lambda's batches (64/32 and 104/52), is larger on the A6000
    than on the A100 by at least half that gap, and within 15% of each measured ratio."""
    from dlrig.machine.model import Build, GPUGroup
    from dlrig.model import estimate

    def ratio(name: str, fp16_batch: int, tf32_batch: int) -> float:
        build = Build(name=name, gpus=(GPUGroup(_gpu(name), 1),))
        fp16 = make_workload("transformer-xl-base", batch_size=fp16_batch)
        tf32 = dataclasses.replace(
            make_workload("transformer-xl-base", batch_size=tf32_batch),
            precision=Precision.TF32,
        )
        return estimate(build, fp16).samples_per_s / estimate(build, tf32).samples_per_s

    a6000 = ratio("NVIDIA RTX A6000", 64, 32)
    a100 = ratio("A100 SXM4 80GB", 104, 52)
    assert a6000 / a100 > 1.0 + 0.5 * (1.80 / 1.41 - 1.0)
    assert a6000 == pytest.approx(1.80, rel=0.15)
    assert a100 == pytest.approx(1.41, rel=0.15)


def test_fp8_runs_the_lm_head_and_attention_at_the_16bit_rate() -> None:
    """FP8 recipes (Transformer Engine, torchao float8) convert the linear layers only: the
    LM head and attention stay in 16-bit, at half the FP8 datasheet rate (H100 SXM 989.5 vs
    1979 TFLOPS). Llama 3 8B (its 128,256-word head aligned, 7% of the dense FLOPs; attention
    8.7%): at twice the rate, FP8 saves only the other linears' half, (G - head) / 2R per FLOP
    multiplier. NeMo measured 1.335x for FP8 over bf16 on 8 H100 (dgxc-benchmarking llama3.1
    README_8b @143b90d, 2025-06-09); every FLOP at the FP8 rate would give up to 2x."""
    job = make_workload("llama-3-8b", batch_size=1)
    work = layer_work(job)
    rate = 1e15

    def gemm_s(flops_s: float, operand_bytes: float) -> float:
        return compute.class_times(
            work, job, 1, flops_s, 3000.0, winograd=False, operand_bytes=operand_bytes,
            sixteen_traffic=True, optimizer_params=0.0, intensity_scale=0.0,
        ).gemm_s  # fmt: skip

    saved = gemm_s(rate, 2.0) - gemm_s(2 * rate, 1.0)
    others = (work.gemm_flops - work.lm_head_flops) * compute.training_flop_multiplier(job)
    assert work.lm_head_flops > 0 and work.attention_flops > 0
    assert saved == pytest.approx(others / (2 * rate))


def test_flash_attention_runs_at_a_smaller_share_on_warpgroup_mma_cards() -> None:
    """PyTorch's flash kernel (FlashAttention-2, warp-level mma.sync) reaches ~35% of an
    H100's peak (FlashAttention-3, arXiv:2407.08608) against 80% for a large GEMM there: 0.44
    of a GEMM on Hopper and data-centre Blackwell, 0.75 on Ampere, Ada and sm_120 Blackwell
    (Dao 2023: 50-73% of A100 peak). Measured: MosaicML MPT-1B on 8 H100 keeps 0.64x of its
    GEMM rate in attention at 32k tokens where 8 A100 keep 0.87x (bench_external_llm rows).
    The attention time of a fused workload scales with 1 / share; eager attention does not."""
    from dlrig.model.rates import flash_attention_share

    assert flash_attention_share(_gpu("H100 SXM5 80GB")) == 0.44
    assert flash_attention_share(_gpu("B200 SXM 180GB")) == 0.44
    # cuDNN / Transformer Engine (NeMo, Megatron) and FlashAttention-3 are written for the
    # warpgroup MMA: 740 TFLOPS, 75% of H100's peak (FlashAttention-3, abstract). NeMo's Llama
    # 3.1 8B on B200 keeps 35-38% MFU from 8k to 1M tokens (bench_external_llm rows).
    assert flash_attention_share(_gpu("H100 SXM5 80GB"), native=True) == 0.75
    assert flash_attention_share(_gpu("B200 SXM 180GB"), native=True) == 0.75
    assert flash_attention_share(_gpu("A100 SXM4 80GB")) == 0.75
    assert flash_attention_share(_gpu("GeForce RTX 5090")) == 0.75
    job = make_workload("llama-3-8b", batch_size=1)
    work = layer_work(job)
    assert work.fused_attention and work.attention_flops > 0

    def gemm_s(share: float) -> float:
        return compute.class_times(
            work, job, 1, 1e15, 3000.0, winograd=False, operand_bytes=2.0,
            sixteen_traffic=True, optimizer_params=0.0, intensity_scale=0.0,
            attention_share=share,
        ).gemm_s  # fmt: skip

    attention = work.attention_flops * compute.training_flop_multiplier(job) / 1e15
    assert gemm_s(0.44) - gemm_s(0.75) == pytest.approx(attention * (1 / 0.44 - 1 / 0.75))
    assert not layer_work(make_workload("bert-large-squad")).fused_attention


def test_the_hosts_launches_add_only_what_outlasts_the_gpus_work() -> None:
    """compute.launch_s is the host's seconds for a step's kernels (the share a data-parallel
    straggler term weighs): BERT-large fp16 at batch 8 on an A100 launches (24 x 24 + 14) x 3
    = 1,770 kernels (eager layers reading Q, K, V in place, forward and backward), each at the
    fitted host figure. They
    overlap the GPU's work: the step is the two overlapped (compute.overlapped_s), at least the
    longer of them and less than their sum."""
    cal = default_calibration().compute
    job = make_workload("bert-large-squad", batch_size=8)
    work = layer_work(job)
    gpu = _gpu("A100 SXM4 40GB")
    peak, path, _ = matmul_peak(gpu, Precision.FP16)
    rates = compute.Rates(peak, path.value, gpu.memory_bandwidth_gb_s)

    def step(factors: compute.ComputeFactors) -> float:
        return sum(
            compute.gpu_step_s(
                work, job, 8, rates, factors, optimizer_params=job.params, sixteen_bit=True
            )
        )

    launches = compute.launch_s(work, job, 8, cal, sixteen_bit=True)
    assert launches == pytest.approx((24 * 24 + 14) * 3 * cal.host_kernel_s)
    gpu_alone = step(dataclasses.replace(cal, host_kernel_s=0.0))
    assert step(cal) == pytest.approx(
        compute.overlapped_s(gpu_alone, launches, cal.host_overlap_exponent)
    )
    assert max(gpu_alone, launches) <= step(cal) < gpu_alone + launches


def test_overlap_is_the_longer_side_blended_where_they_meet() -> None:
    """compute.overlapped_s: the longer side alone when the other is nothing; at p = 2 two equal
    sides give sqrt(2) of one (the host and the GPU take turns waiting); p infinite is the
    plain maximum."""
    assert compute.overlapped_s(3.0, 0.0, 2.0) == 3.0
    assert compute.overlapped_s(0.0, 2.0, 4.0) == 2.0
    assert compute.overlapped_s(1.0, 1.0, 2.0) == pytest.approx(2**0.5)
    assert compute.overlapped_s(1.0, 1.0, math.inf) == 1.0
    assert compute.overlapped_s(3.0, 4.0, 2.0) == pytest.approx(5.0)


def test_convnet_widths_and_winograd_shares_are_counted_from_the_layer_shapes() -> None:
    """scripts/count_conv_structure.py counts every convolution of ResNet-50/152 v1.5
    (torchvision) and DLE SSD300 (ResNet-50 to layer3 at stride 1, extra blocks, loc/conf
    heads): its FLOP totals reproduce the zoo's sourced forward FLOPs (8.18, 23.03, 40.3
    GFLOPs from workloads_reference.csv), and CLASSIC_STRUCTURE carries its widths and 3x3
    stride-1 shares."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "count_conv_structure.py"
    spec = importlib.util.spec_from_file_location("count_conv_structure", path)
    assert spec is not None and spec.loader is not None
    counted = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = counted  # its dataclass looks its module up while defined
    spec.loader.exec_module(counted)
    models = {
        "resnet50": counted.resnet((3, 4, 6, 3)),
        "resnet152": counted.resnet((3, 8, 36, 3)),
        "ssd300": counted.ssd300(),
    }
    for name, convs in models.items():
        flops = sum(c.flops for c in convs)
        assert flops == pytest.approx(make_workload(name).forward_flops_per_sample, rel=0.002)
        width = flops / sum(c.flops / c.width for c in convs)
        share = sum(c.flops for c in convs if c.kernel == 3 and c.stride1) / flops
        assert CLASSIC_STRUCTURE[name].conv_width == pytest.approx(width, abs=0.5)
        assert CLASSIC_STRUCTURE[name].winograd_share == pytest.approx(share, abs=0.0005)


def test_lora_halves_the_linears_backward_not_the_attention_scores() -> None:
    # Forward 1 + backward 2 per FLOP; LoRA drops the linears' weight gradients (backward 1)
    # but QK^T and PV have no weights: dS, dV, dQ, dK stay 2x the forward. A recomputed
    # forward adds 1 to both under activation checkpointing.
    lora = make_workload("llama-3-8b-lora")
    assert compute.training_flop_multiplier(lora) == 1.0 + 1.0 + float(
        lora.activation_checkpointing
    )
    assert compute.attention_flop_multiplier(lora) == 1.0 + 2.0 + float(
        lora.activation_checkpointing
    )
    full = make_workload("llama-3-8b")
    assert compute.attention_flop_multiplier(full) == compute.training_flop_multiplier(full)


def test_channels_last_resnet50_runs_as_much_faster_as_dle_measured_over_lambda() -> None:
    """The same DeepLearningExamples ResNet-50 with AMP on the same GPU: NHWC (DLE's own
    runs, configs.yml AMP `memory_format: nhwc`) 1,200 img/s on a V100 SXM2 16GB and 2,470 on
    an A100 SXM4 80GB (bench/data/external_training.csv), NCHW (Lambda's v1 runs, logged
    `memory_format : nchw`) 833 and 1,582 (data/calibration/lambda_pytorch_train_v1_2024.csv):
    1.44x and 1.56x. The transposes NCHW costs (compute.NCHW_TRANSPOSE_MOVES, bound by their
    bytes or their index arithmetic) leave the NHWC run that much faster, within 12% (the A100's
    NHWC run is predicted 7.7% fast, bench/results/external.md); TF32 and FP32 keep their one
    layout (measured alike)."""
    for gpu_name, measured in (
        ("Tesla V100 SXM2 16GB", 1200 / 833),
        ("A100 SXM4 80GB", 2470 / 1582),
    ):
        build = Build(name="one", gpus=(GPUGroup(_gpu(gpu_name), 1),))
        nchw = make_workload("resnet50", dataset="synthetic", precision="fp16", batch_size=256)
        nhwc = make_workload(
            "resnet50", dataset="synthetic", precision="fp16", batch_size=256,
            memory_format="channels_last",
        )  # fmt: skip
        gain = estimate(build, nhwc).samples_per_s / estimate(build, nchw).samples_per_s
        assert gain == pytest.approx(measured, rel=0.12), gpu_name
        assert any("NCHW" in a for a in estimate(build, nchw).assumptions)
        assert not any("NCHW" in a for a in estimate(build, nhwc).assumptions)
        assert "channels_last" in estimate(build, nchw).advice  # what would move it
        assert "channels_last" not in estimate(build, nhwc).advice
    fp32 = make_workload("resnet50", dataset="synthetic", precision="fp32", batch_size=112)
    fp32_nhwc = make_workload(
        "resnet50", dataset="synthetic", precision="fp32", batch_size=112,
        memory_format="channels_last",
    )  # fmt: skip
    v100 = Build(name="one", gpus=(GPUGroup(_gpu("Tesla V100 SXM2 16GB"), 1),))
    assert estimate(v100, fp32).samples_per_s == estimate(v100, fp32_nhwc).samples_per_s


@pytest.mark.parametrize(
    ("gpu_name", "measured"),
    [
        # Lambda's v1 NCHW ResNet-50, fp16, batch 1280 (data/calibration/
        # lambda_pytorch_train_v1_2024.csv): A100 SXM4 80GB 1,582 img/s; H100 SXM5 80GB
        # 2,616-2,791 img/s over its six servers (2,700 here). Their bytes alone do not hold
        # these cards back enough: the transposes' index arithmetic does (compute.transposes_s).
        ("A100 SXM4 80GB", 1582.0),
        ("H100 SXM5 80GB", 2700.0),
    ],
)
def test_nchw_resnet50_on_hbm_cards_waits_on_its_transposes(gpu_name: str, measured: float) -> None:
    build = Build(name="one", gpus=(GPUGroup(_gpu(gpu_name), 1),))
    job = make_workload("resnet50", dataset="synthetic", precision="fp16", batch_size=1280)
    assert estimate(build, job).samples_per_s == pytest.approx(measured, rel=0.1)


def test_lora_adapters_move_each_projections_input_and_output_once_more() -> None:
    """An adapter (x A) B of rank 16 runs far below the memory roofline: one more read of each
    adapted projection's input and write of its output. Llama 3.1 8B (h 4,096, ffn 14,336, 8 of
    32 heads for k and v, gated MLP): q, o 2 x 8,192, k, v 2 x 5,120, gate/up/down 3 x 18,432
    = 81,920 elements a token a layer, on top of the full job's pointwise moves."""
    from dlrig.model.layers import lora_adapter_elems
    from dlrig.workloads.model import ALL_LORA_TARGETS

    assert lora_adapter_elems(4096, 14336, 8 / 32, True, ALL_LORA_TARGETS) == 81_920
    full = make_workload("llama-3-8b", batch_size=1)
    lora = make_workload(
        "llama-3-8b-lora",
        batch_size=1,
        finetune={"method": "lora", "trainable_fraction": 0.005223, "adapter_precision": "16bit"},
    )
    assert lora.seq_len == full.seq_len and lora.num_layers == 32 and not lora.fp32_adapters
    extra = layer_work(lora).pointwise_elems - layer_work(full).pointwise_elems
    assert extra == pytest.approx(32 * 81_920 * full.seq_len)
    assert layer_work(lora).adapter_fp32_elems == 0.0


def test_peft_fp32_adapters_move_their_casts_and_fp32_updates() -> None:
    """peft upcasts bf16 adapters to fp32 by default (get_peft_model autocast_adapter_dtype=True)
    and its Linear.forward casts the input to fp32. Llama 3.1 8B: inputs q, k, v, o, gate, up
    6 x 4,096 + down 14,336 = 38,912, outputs 2 x 4,096 + 2 x 1,024 + 2 x 14,336 + 4,096 =
    43,008 a token a layer. A 16-bit model stepped without autocast (finetune.autocast: false,
    as the lent H200's jobs ran) multiplies, scales and adds in fp32 and casts the update back:
    2 x 38,912 + 7 x 43,008 = 378,880 fp32 moves and 43,008 more 16-bit ones; on the H200 the
    step went from dlrig's 423 ms (16-bit adapters) to 594 ms against 641-650 ms measured
    (bench/bench_h200.py). Under autocast (Hugging Face's Trainer with bf16) autocast casts the
    fp32 copy back to 16 bits for the adapter's matmul and the update stays 16-bit: 2 x 38,912
    = 77,824 fp32 moves and as many 16-bit ones."""
    from dlrig.model.layers import fp32_adapter_elems
    from dlrig.workloads.model import ALL_LORA_TARGETS

    assert fp32_adapter_elems(4096, 14336, 8 / 32, True, ALL_LORA_TARGETS, autocast=False) == (
        378_880,
        43_008,
    )
    assert fp32_adapter_elems(4096, 14336, 8 / 32, True, ALL_LORA_TARGETS) == (77_824, 77_824)
    no_autocast = {"method": "lora", "trainable_fraction": 0.005223, "autocast": False}
    lora = make_workload("llama-3-8b-lora", batch_size=1, finetune=no_autocast)
    assert lora.fp32_adapters and not lora.adapter_autocast
    assert make_workload("llama-3-8b-lora").adapter_autocast  # the default
    unstated = make_workload("llama-3-8b-lora", finetune={"adapter_precision": None})
    assert unstated.fp32_adapters
    assert any("adapter precision not given: fp32 assumed" in a for a in unstated.assumptions)
    work = layer_work(lora)
    assert work.adapter_fp32_elems == pytest.approx(32 * 378_880 * lora.seq_len)
    sixteen = make_workload(
        "llama-3-8b-lora",
        batch_size=1,
        finetune={"method": "lora", "trainable_fraction": 0.005223, "adapter_precision": "16bit"},
    )
    extra = work.pointwise_elems - layer_work(sixteen).pointwise_elems
    assert extra == pytest.approx(32 * 43_008 * lora.seq_len)
    # The estimate says so: 378,880 x 4 B x 32 layers x 2,048 tokens x 2 sequences x 4 passes
    # (forward, recompute, backward's 2) = 794.6 GB; under autocast 77,824: 163.2 GB.
    h200 = Build(name="h200", gpus=(GPUGroup(_gpu("H200 SXM 141GB"), 1),))
    plain = make_workload("llama-3-8b-lora", finetune=no_autocast)
    notes = [a for a in estimate(h200, plain).assumptions if "peft" in a]
    assert len(notes) == 1 and "794.6 GB of fp32 moved a step" in notes[0]
    under_autocast = estimate(h200, make_workload("llama-3-8b-lora"))
    notes = [a for a in under_autocast.assumptions if "peft" in a]
    assert len(notes) == 1 and "163.2 GB of fp32 moved a step" in notes[0]
    # README's figures: 608 ms a step under autocast, 718 ms without (bench_h200), 565 in 16 bits.
    assert under_autocast.step_time_s == pytest.approx(0.608, abs=0.0005)
    assert estimate(h200, plain).step_time_s == pytest.approx(0.718, abs=0.0005)
    assert "under torch.autocast" in notes[0]
    assert not any("peft" in a for a in estimate(h200, sixteen).assumptions)


def test_ncf_keeps_its_embedding_traffic_in_fp32_under_autocast() -> None:
    """DLE NCF (Recommendation/NCF neumf.py) looks its rows up in fp32 embedding tables, and
    autocast leaves lookups, the MF product and the concatenations in their input's type
    (PyTorch torch.amp docs: embedding on no list, cat promotes to the widest input) until a
    linear casts them: 1,728 of the 2,240 pointwise elements a sample moves stay 4 bytes, so a
    mixed-precision step moves (512 x 2 + 1,728 x 4) / (2,240 x 4) = 0.886 of the fp32 step's
    pointwise bytes, not half. NVIDIA measured its NCF at 1.51x its TF32 throughput in fp16
    on an A100 SXM4 40GB (3.408e7 against 2.259e7 samples/s, bench/data/external_training.csv)
    where halving all of it gave the model 2.0x (that run, container 21.04, was apex amp O2,
    a 16-bit model: DLE's ncf.py took autocast only in 2023, NVIDIA/DeepLearningExamples
    @05ee9863; layers.py's NCF comment)."""
    job = make_workload("ncf", batch_size=1024)
    work = layer_work(job)
    assert work.autocast_fp32_elems == 1728.0

    def memory_s(sixteen: bool) -> float:
        return compute.class_times(
            work, job, 1024, 1e14, 1000.0, winograd=False, operand_bytes=2.0,
            sixteen_traffic=sixteen, optimizer_params=0.0, intensity_scale=1.0,
        ).memory_s  # fmt: skip

    assert memory_s(True) / memory_s(False) == pytest.approx(0.886, abs=0.001)
    assert layer_work(make_workload("bert-base-squad")).autocast_fp32_elems == 0.0


def test_autocast_over_an_fp32_model_keeps_the_residual_stream_fp32() -> None:
    """Under autocast over fp32 weights, layer_norm runs in fp32 and a 16-bit + fp32 add
    promotes (PyTorch AMP docs): per layer and token the two LayerNorms' and two residual
    adds' 8h moves go fp32, and each linear reading a norm casts its fp32 output (one fp32
    read, one 16-bit write). BERT's query, key and value cast it three times and fc1 once:
    16-bit -8h + 4h, fp32 8h + 4h (h = 1024: -4,096 and 12,288 per token per layer); GPT-2's
    packed c_attn and c_fc: -8h + 2h and 8h + 2h. A Llama layer: its adds' 4h go fp32, its
    RMSNorms' 16-bit casts (2 x 4h) are no-ops, q, k, v, gate and up each cast h, and RoPE on
    q (h) and k (kv) runs in fp32, 7 16-bit and 6 fp32 moves where eager counts 10 16-bit:
    16-bit -4h - 8h + 5h - 3 (h + kv), fp32 4h + 5h + 6 (h + kv); Llama 3 8B (h 4,096, kv
    1,024): -7h - 3 x 5,120 = -44,032 and 9h + 6 x 5,120 = 67,584."""
    bert = make_workload("bert-large-squad", gradient_precision="fp32")
    assert layers.autocast_stream_work(bert, 1024.0, 1024.0, separate_qkv=True) == (
        -4096.0,
        12288.0,
    )
    gpt2 = make_workload("gpt2", precision="bf16")
    assert layers.autocast_stream_work(gpt2, 768.0, 768.0, separate_qkv=False) == (
        -6 * 768.0,
        10 * 768.0,
    )
    llama = make_workload("llama-3-8b", precision="bf16")
    assert layers.autocast_stream_work(llama, 4096.0, 1024.0, separate_qkv=False) == (
        -44032.0,
        67584.0,
    )
    work = transformer_work(bert)
    tokens = 24 * 384  # BERT-large's layers x its SQuAD sequence
    assert work.fp32_model_elems_fp32 == pytest.approx(12288.0 * tokens)


def test_fp32_model_moves_count_only_where_the_stream_is_fp32() -> None:
    """The fp32 stream's bytes count where memory.residual_bytes says the stream is fp32:
    full training under autocast over fp32 weights (bench_h200's BERT job), not the zoo's
    apex O2 BERT, whose 16-bit model computes in 16 bits. The first moves more."""
    fp32_model = make_workload("bert-large-squad", gradient_precision="fp32")
    o2 = make_workload("bert-large-squad")
    assert compute.autocast_fp32_model(fp32_model, True)
    assert not compute.autocast_fp32_model(o2, True)
    assert not compute.autocast_fp32_model(fp32_model, False)  # no autocast in an fp32 run

    def memory_s(w: Workload) -> float:
        return compute.class_times(
            layer_work(w), w, 32, 1e14, 1000.0, winograd=False, operand_bytes=2.0,
            sixteen_traffic=True, optimizer_params=0.0, intensity_scale=1.0,
            mixed_precision=True,
        ).memory_s  # fmt: skip

    moved = [memory_s(w) for w in (fp32_model, o2)]
    assert moved[0] > moved[1]


def test_weights_are_cast_once_a_forward_and_their_gradients_back() -> None:
    """Autocast caches a weight's 16-bit cast for its region: one cast a forward (4 B read, 2 B
    written) and the gradient's cast back (2 B read, 4 B written) = 12 B a weight a step; a
    checkpointed layer's recompute casts again: 18 B. A 16-bit model casts nothing."""
    job = make_workload("bert-large-squad", gradient_precision="fp32")
    assert compute.weight_cast_bytes(job, 1e9, True) == pytest.approx(12e9)
    ckpt = dataclasses.replace(job, activation_checkpointing=True)
    assert compute.weight_cast_bytes(ckpt, 1e9, True) == pytest.approx(18e9)
    assert compute.weight_cast_bytes(make_workload("bert-large-squad"), 1e9, True) == 0.0


def test_new_gelu_runs_in_fp32_from_its_cube_under_autocast() -> None:
    """pow is on autocast's float32 list, so NewGELU's chain after it is fp32: 6 16-bit and
    16 fp32 moves per element (layers.AUTOCAST_ACTIVATION_ELEMS) where EAGER_ACTIVATION counts
    18 16-bit: per token per layer of GPT-2 (f = 3,072) 16-bit -12f = -36,864, fp32 16f =
    49,152. Compiled, or as nanoGPT's one-kernel GELU, nothing changes."""
    gpt2 = dataclasses.replace(make_workload("gpt2", precision="bf16"), hidden_act="gelu_new")
    assert layers.autocast_activation_work(gpt2, 3072.0) == (-36864.0, 49152.0)
    assert layers.autocast_activation_work(make_workload("gpt2"), 3072.0) == (0.0, 0.0)
