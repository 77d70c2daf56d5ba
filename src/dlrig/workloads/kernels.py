"""The job fields a kernel library sets (the workload's `kernels`), each with its source.

Users name the library their trainer runs; the model needs what it changes. Two parts:
the per-layer kernel counts and bytes live in dlrig.model.layers (`layer_pointwise`); the job
fields a library implies (a fused loss, a one-kernel SwiGLU that recomputes its SiLU, chunked
logits, CUDA graphs, activation checkpointing) are set here. A field the workload file gives
itself wins over its library's: `kernels: liger` with `loss_chunks: 1` is Liger without its
fused linear cross-entropy.
"""

from __future__ import annotations

import math
from typing import Any

from dlrig.workloads.model import KernelLibrary

# The fields a library may set, and the value each takes under eager PyTorch (the defaults).
PRESET_FIELDS = (
    "fused_loss",
    "loss_chunks",
    "fused_activation",
    "cuda_graphs",
    "activation_checkpointing",
    "fused_norm_activation",
)

# Liger's fused linear cross-entropy (liger_kernel/ops/fused_linear_cross_entropy.py,
# fused_linear_cross_entropy_forward: inc_factor = cdiv(V, H), chunk_size =
# next_power_of_2(cdiv(BT, inc_factor))) runs the LM head and its loss over about V / H chunks
# of the tokens, each chunk's logits freed before the next: `loss_chunks` is that count.
LIGER_CHUNKS = "vocab/hidden"

PRESETS: dict[KernelLibrary, dict[str, Any]] = {
    # PyTorch eager as transformers writes its models: every op its own kernel, the
    # cross-entropy upcast to fp32 (the job fields' defaults).
    KernelLibrary.EAGER: {},
    # torch.compile's default mode fuses element-wise and norm chains into Triton kernels
    # (PyTorch docs, "torch.compiler Getting Started": "the single most important optimization
    # that inductor performs is fusion ... 2 reads and 2 writes into 1 read and 1 write"): what
    # that changes is per layer (dlrig.model.layers). A convnet's training-mode batch norm is
    # decomposed into its statistics' reductions and one element-wise normalisation
    # (torch/_decomp/decompositions.py native_batch_norm, in Inductor's decomposition table)
    # that the ReLU and the residual add after it join: fused_norm_activation.
    KernelLibrary.COMPILE: {"fused_norm_activation": True},
    # mode="reduce-overhead" adds CUDA graphs to the same fusion (PyTorch docs, torch.compile:
    # "reduce-overhead ... reduces the overhead of python with CUDA graphs").
    KernelLibrary.COMPILE_REDUCE_OVERHEAD: {"cuda_graphs": True, "fused_norm_activation": True},
    # Liger Kernel's apply_liger_kernel_to_llama defaults: rope, rms_norm, swiglu and
    # fused_linear_cross_entropy on (linkedin/Liger-Kernel README, "Low Level APIs";
    # src/liger_kernel/transformers/monkey_patch.py). Its SwiGLU (ops/swiglu.py) saves gate
    # and up and recomputes the SiLU in the backward; its fused linear cross-entropy computes
    # each chunk's logits, loss and gradient in 16 bits in the forward and frees them.
    KernelLibrary.LIGER: {
        "fused_loss": True,
        "loss_chunks": LIGER_CHUNKS,
        "fused_activation": True,
    },
    # Unsloth (unslothai/unsloth, unsloth/kernels: rms_layernorm.py, rope_embedding.py,
    # swiglu.py, cross_entropy_loss.py; HF blog "Make LLM Fine-tuning 2x faster with Unsloth and
    # TRL", 2024-01-10): Triton RMSNorm, RoPE and SwiGLU (its backward recomputes the SiLU from
    # the saved gate and up), a fused cross-entropy over the 16-bit logits, and its own
    # gradient checkpointing (get_peft_model's use_gradient_checkpointing="unsloth", its
    # notebooks' default) recomputing each layer in the backward.
    KernelLibrary.UNSLOTH: {
        "fused_loss": True,
        "fused_activation": True,
        "activation_checkpointing": True,
    },
    # Hand-written trainers: llm.c (karpathy/llm.c train_gpt2.cu: fused_classifier,
    # fused_residual_forward5, GELU in the cuBLASLt epilogue) and llm.q (IST-DASLab/llmq
    # src/kernels: fused_classifier.cu, swiglu.cu whose backward takes only its input).
    KernelLibrary.FUSED: {"fused_loss": True, "fused_activation": True},
    # TensorFlow's XLA auto-clustering: XLA's GPU backend expands a training batch norm into
    # reductions and element-wise ops (xla/service/batchnorm_expander.cc; the cuDNN batch norm
    # call is off by default, --xla_gpu_use_cudnn_batchnorm) and fuses the ReLU and the add
    # after it into the normalisation (DeepLearningExamples' TensorFlow ConvNets README:
    # "Performance without XLA enabled is low due to BN + ReLU fusion bug"; its README
    # @fed7ba99 measured 1.11x and 1.13x with XLA on one V100 at mixed precision, where the
    # counted bytes give 1.115x). The transformer layer's fusions are counted in
    # dlrig.model.layers (XLA_*).
    KernelLibrary.XLA: {"fused_norm_activation": True},
}


def preset_fields(
    library: KernelLibrary, hidden_size: int | None, vocab_size: int | None
) -> dict[str, Any]:
    """The job fields `library` sets, with Liger's chunk count from the model's vocabulary and
    hidden size (1 when either is unknown)."""
    fields = dict(PRESETS[library])
    if fields.get("loss_chunks") == LIGER_CHUNKS:
        chunks = 1
        if hidden_size and vocab_size:
            chunks = max(math.ceil(vocab_size / hidden_size), 1)
        fields["loss_chunks"] = chunks
    return fields
