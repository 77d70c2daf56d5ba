"""Per-layer kernels and bytes by kernel library (layers.layer_pointwise), counted from each
library's code, and the speed-up they add up to beside the published one."""

from __future__ import annotations

import dataclasses

from model_fixtures import make_workload

from dlrig.machine import resolve_build
from dlrig.model import compute, estimate, layers
from dlrig.model.layers import (
    FUSED_NORM_ACTIVATION_SHARE,
    KERNELS_PER_LAYER_FUSED,
    LAYER_ELEMS_PER_FFN,
    LAYER_ELEMS_PER_HIDDEN,
    classic_work,
    layer_pointwise,
)
from dlrig.workloads.model import Workload

H, KV, F = 4096.0, 1024.0, 14336.0  # Llama 3 8B (config.json: 8 kv heads of 128)


def _layer(library: str, model: str = "llama-3-8b-lora") -> tuple[float, float, float]:
    w = make_workload(model, kernels=library)
    p = layer_pointwise(w, H, KV, F, 10.5)
    return p.kernels, p.elems, p.fp32_elems


def test_transformers_eager_llama_layer() -> None:
    """transformers' LlamaDecoderLayer (models/llama/modeling_llama.py), SDPA attention: 7
    matmuls, 1 attention, 2 RMSNorms of 8 kernels, RoPE 5 kernels on q and on k, the output
    copy, 2 residual adds, SiLU and its product = 39 kernels; 2 x 11h + 10 (h + kv) + 2h + 6h +
    5f elements a token, of which the norms' 2 x 7h move in fp32."""
    assert _layer("eager") == (39.0, 40 * H + 10 * KV + 5 * F, 14 * H)


def test_liger_replaces_norms_rope_and_swiglu_with_one_kernel_each() -> None:
    """Liger (ops/rms_norm.py, ops/rope.py, ops/swiglu.py): each norm reads and writes h, RoPE
    reads and writes q and k in one kernel, SwiGLU reads gate and up and writes f; the adds and
    the output copy stay eager: 7 + 1 + 2 + 1 + 1 + 2 + 1 = 15 kernels, nothing in fp32."""
    assert _layer("liger") == (15.0, 4 * H + 2 * (H + KV) + 8 * H + 3 * F, 0.0)
    assert _layer("unsloth") == _layer("liger")


def test_compile_fuses_each_residual_add_into_its_norm() -> None:
    """Inductor: add + RMSNorm one kernel (4h) twice, RoPE on q and on k, the output copy,
    SwiGLU: 7 + 1 + 6 = 14 kernels."""
    assert _layer("compile") == (14.0, 8 * H + 2 * (H + KV) + 2 * H + 3 * F, 0.0)
    assert _layer("compile-reduce-overhead") == _layer("compile")


def test_fused_runs_one_qkv_and_one_gate_up_matmul() -> None:
    """llm.q: QKV and gate-up matmuls (4 in all), attention, 2 residual-norms, RoPE, SwiGLU =
    9 kernels."""
    assert _layer("fused") == (9.0, 8 * H + 2 * (H + KV) + 3 * F, 0.0)


def test_bert_layer_eager_is_the_calibrated_count_and_liger_leaves_it() -> None:
    """The LayerNorm/GELU layer keeps LAYER_ELEMS_PER_HIDDEN h + LAYER_ELEMS_PER_FFN f in
    KERNELS_PER_LAYER_FUSED kernels eager (flash attention) with its dropouts; the zoo's gpt2
    trains without them (nanoGPT's dropout 0.0), so its two hidden dropouts' 2 x 2 kernels
    and 2 x 2.5h are not run; Liger's LayerNorm moves what PyTorch's one-kernel LayerNorm does;
    compile fuses two add-norms (4h each), the output copy (2h) and GELU (2f): 6 + 1 + 4 = 11
    kernels."""
    eager = _layer("eager", "gpt2")
    assert eager == (KERNELS_PER_LAYER_FUSED - 4.0,
                     (LAYER_ELEMS_PER_HIDDEN - 5.0) * H + LAYER_ELEMS_PER_FFN * F, 0.0)  # fmt: skip
    with_dropout = dataclasses.replace(make_workload("gpt2"), dropout=True)
    p = layer_pointwise(with_dropout, H, KV, F, 10.5)
    assert (p.kernels, p.elems) == (
        KERNELS_PER_LAYER_FUSED, LAYER_ELEMS_PER_HIDDEN * H + LAYER_ELEMS_PER_FFN * F,
    )  # fmt: skip
    assert _layer("liger", "gpt2") == eager
    assert _layer("compile", "gpt2") == (11.0, 10 * H + 2 * F, 0.0)


def test_xla_fuses_around_its_reductions_and_dropouts_random_numbers() -> None:
    """TensorFlow's XLA auto-clustering on DLE's TensorFlow BERT layer (modeling.py): two
    add-LayerNorms of a reduction fusion, a normalising fusion and the dropout's random kernel
    (6h + 2h each), Q, K and V's bias-and-transpose fusions (3 x 2h), the context's transpose
    (2h), GELU (2f): 6 linears + 6 score kernels + 10 + 1 = 23 kernels, 24h + 2f a token. Its
    eager score chain moves the scores 9 times forward (QK^T's write, the softmax's max, sum
    and normalising reads, the random numbers written and read, P and the dropped P written,
    AV's read) and 11 backward, against Inductor's 4 and 7 and eager PyTorch's 10.5 and 11.5;
    without dropout nothing stays outside the fusions, and it counts as Inductor's."""
    w = make_workload("bert-large-squad", kernels="xla")
    p = layer_pointwise(w, H, H, F, layers.EAGER_SCORE_PASSES)
    assert (p.kernels, p.elems, p.score_passes, p.score_backward_passes) == (
        23.0, 24 * H + 2 * F, 9.0, 11.0
    )  # fmt: skip
    eager = layer_pointwise(make_workload("bert-large-squad"), H, H, F, 10.5)
    assert eager.score_passes == 10.5 and eager.score_backward_passes == 11.5
    bare = dataclasses.replace(w, dropout=False)
    compiled = dataclasses.replace(w, dropout=False, kernels=layers.KernelLibrary.COMPILE)
    assert layer_pointwise(bare, H, H, F, 10.5) == layer_pointwise(compiled, H, H, F, 10.5)


def test_a_fused_norm_activation_moves_less_and_launches_no_relu_or_add() -> None:
    """cuDNN's fused batch norm + ReLU (+ add) on ResNet-50 (MXNet --fuse-bn-relu and
    --fuse-bn-add-relu): the element moves counted over its bottlenecks fall from 1,872 to
    1,520 units (FUSED_NORM_ACTIVATION_SHARE, layers.py), and its 49 ReLU and 16 add kernels of
    176 are gone; the tensor one kernel reads stays what it was."""
    eager = classic_work(make_workload("resnet50", precision="fp16"))
    fused = classic_work(make_workload("resnet50", precision="fp16", fused_norm_activation=True))
    assert FUSED_NORM_ACTIVATION_SHARE == 1520.0 / 1872.0
    assert fused.pointwise_elems == eager.pointwise_elems * 1520.0 / 1872.0
    assert (eager.kernels_forward, fused.kernels_forward) == (176.0, 111.0)
    assert fused.tensor_elems == eager.tensor_elems


def test_fused_norm_activation_speeds_a_memory_heavy_convnet_step() -> None:
    """On an A100 at fp16 a ResNet-50 step's memory-bound share is large: the fused batch norm
    makes the step faster, by less than its pointwise share could give (the convolutions
    stay)."""
    build = resolve_build({"name": "1x A100", "gpus": [{"model": "A100 SXM4 80GB", "count": 1}]},
                          "test")  # fmt: skip
    base = {"precision": "fp16", "batch_size": 256, "memory_format": "channels_last",
            "dataset": "synthetic"}  # fmt: skip
    eager = estimate(build, make_workload("resnet50", **base)).samples_per_s
    fused = estimate(build, make_workload("resnet50", fused_norm_activation=True, **base))
    assert 1.0 < fused.samples_per_s / eager < 1.0 / FUSED_NORM_ACTIVATION_SHARE


def test_xla_speed_up_on_resnet50_beside_the_published_one() -> None:
    """DLE's TensorFlow ResNet-50 v1.5 README @fed7ba99 (20.03-tf1 container), one V100 at
    mixed precision, batch 256: 1,099.55 img/s without XLA and 1,217.90 with it on a DGX-1
    (1.11x), 1,020.80 and 1,157.97 on a DGX-2 (1.13x); without XLA its batch norm and ReLU run
    unfused ("Performance without XLA enabled is low due to BN + ReLU fusion bug"). From the
    counted bytes and kernels alone (nothing set on these rows): 1.115x."""
    build = resolve_build({"name": "1x V100", "gpus": [{"model": "Tesla V100 SXM2 16GB",
                                                        "count": 1}]}, "test")  # fmt: skip
    job = {"precision": "fp16", "batch_size": 256, "memory_format": "channels_last",
           "dataset": "synthetic"}  # fmt: skip
    eager = estimate(build, make_workload("resnet50", **job)).samples_per_s
    xla = estimate(build, make_workload("resnet50", kernels="xla", **job)).samples_per_s
    assert 1.08 < xla / eager < 1.16


def _liger_readme_job(library: str) -> Workload:
    return make_workload("llama-3-8b", batch_size=8, kernels=library, parallel="fsdp",
                         activation_checkpointing=True)  # fmt: skip


def test_liger_speed_up_beside_the_published_one() -> None:
    """Liger Kernel's README: Llama 3 8B, batch 8, bf16, AdamW, gradient checkpointing, FSDP1
    on 8 A100s: "more than 20%" more throughput, "60%" less memory. The model, from the
    kernels and bytes alone (nothing fitted on it), at 2,048 tokens: 11% faster and 49% less
    GPU memory (bench/bench_kernel_libraries.py). It counts part of what Liger saves, never
    more: faster than eager by at least 5%, by no more than published; memory down by at least
    a third (the logits and the SiLU output no longer held)."""
    build = resolve_build({"name": "8x A100", "gpus": [{"model": "A100 SXM4 80GB", "count": 8}]},
                          "test")  # fmt: skip
    runs = {k: estimate(build, _liger_readme_job(k)) for k in ("eager", "liger")}
    assert 1.05 < runs["liger"].tokens_per_s / runs["eager"].tokens_per_s <= 1.20
    memory = runs["liger"].memory.gpu_required_gb / runs["eager"].memory.gpu_required_gb
    assert 0.40 <= memory < 0.67


def test_transformers_gpt2_newgelu_is_eight_eager_kernels() -> None:
    """transformers' NewGELUActivation (activations.py, GPT-2's gelu_new): pow, mul, add, mul,
    tanh, add, mul, mul = 8 kernels moving 2+2+3+2+2+2+2+3 = 18 elements per element, where
    nanoGPT's one-kernel GELU moves 2; compiled, the chain is one kernel again. On the lent
    H200 transformers' GPT-2 launched 1,145 kernels a step (bench/results/h200.md), where the
    zoo's one-kernel GELU counts 798: gelu_new adds 7 kernels x 12 layers x 3 passes = 252."""
    gpt2 = make_workload("gpt2")
    new = dataclasses.replace(gpt2, hidden_act="gelu_new")
    h, f = 768.0, 3072.0
    one = layer_pointwise(gpt2, h, h, f, 10.5)
    eight = layer_pointwise(new, h, h, f, 10.5)
    assert eight.kernels - one.kernels == 7.0
    assert eight.elems - one.elems == (18.0 - 2.0) * f
    steps = [compute.step_kernels(layers.layer_work(w), w, 12) for w in (gpt2, new)]
    assert steps[1] - steps[0] == 252.0
    compiled = make_workload("gpt2", kernels="compile")
    assert layer_pointwise(dataclasses.replace(compiled, hidden_act="gelu_new"), h, h, f,
                           10.5) == layer_pointwise(compiled, h, h, f, 10.5)  # fmt: skip
