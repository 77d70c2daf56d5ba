"""A model's forward work by layer class, computed from its structure.

One sample's forward pass is split into the classes of kernels that bound it differently:

- dense matmuls (linear layers, recurrent gates, the LM head): FLOPs at the path's GEMM
  efficiency, which falls for narrow layers (`gemm_width_elems`, FLOPs per operand element
  moved: dlrig.model.compute.width_factor sets it against the device's ridge point);
- convolutions: FLOPs, of which `winograd_share` are 3x3 stride-1 convolutions that cuDNN may
  run as Winograd transforms on shader cores (fewer multiplications than counted);
- attention scores (QK^T and AV): 4 x s x span x h FLOPs per layer, a batched GEMM as narrow as
  a head; eager attention also materialises the s x span scores of every head in memory;
- norms, activations, residual adds, dropout, the loss: memory-bound, elements moved;
- kernel launches: kernels per step, each with a host and launch cost.

Transformer FLOPs are the workload's own (sourced) forward FLOPs with the attention-score part
taken out; the element counts and kernels per layer are counted from the PyTorch modules.
Models without transformer fields (convnets, recurrent and speech models) take their layer
counts from `CLASSIC_STRUCTURE` (sourced there) or, for any other model, a convnet-like
default: all FLOPs convolutions, the saved activations moved `POINTWISE_PASSES` times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlrig.workloads.model import (
    FinetuneMethod,
    KernelLibrary,
    LoraTarget,
    Mode,
    QuantizedBase,
    Workload,
)

# Elements one transformer layer's pointwise ops move per token in the forward, eager PyTorch
# (each op reads its inputs and writes its output): Q/K/V head transposes 6h, context
# transpose 2h, two dropouts 2 x 2.5h (mask included), two residual adds 2 x 3h, two
# LayerNorms 2 x 2h  => 23h; the FFN activation reads and writes the f-wide tensor => 2f.
LAYER_ELEMS_PER_HIDDEN = 23.0
LAYER_ELEMS_PER_FFN = 2.0
# Token, position (and type) embeddings summed, normalised and dropped out: ~10h per token.
EMBEDDING_ELEMS_PER_HIDDEN = 10.0
# The loss runs in fp32 whatever the precision (autocast's fp32 list: log_softmax, nll): a
# training step moves each logit ~7 times at 4 B (forward: the log-softmax write; backward:
# zero-fill, scatter, two reads, a write, the cast back), 7/3 per forward-equivalent pass.
LOSS_FP32_PASSES = 7.0 / 3.0
# A fused cross-entropy kernel (flash-attn's CrossEntropyLoss with inplace_backward, llm-foundry's
# default loss_fn for MPT: llmfoundry/models/mpt/modeling_mpt.py `loss_fn='fused_crossentropy'`)
# reads each 16-bit logit once and writes its gradient in place: 4 bytes a logit a step, one
# fp32-sized move, 1/3 per forward-equivalent pass.
LOSS_FUSED_PASSES = 1.0 / 3.0
# Fused attention (SDPA/FlashAttention-2) reaches 50-73% of A100 peak against ~85% for large
# GEMMs (Dao 2023, "FlashAttention-2", arXiv:2307.08691, figs. 4-7): 0.75 of a large GEMM.
FLASH_ATTENTION_SHARE = 0.75
# On Hopper and data-centre Blackwell the tensor cores reach their rate only through
# warpgroup-level instructions (wgmma with TMA; tcgen05 on sm_100); FlashAttention-2, PyTorch
# SDPA's flash kernel, issues Ampere's warp-level mma.sync and reaches ~35% of H100's peak
# (Shah et al. 2024, "FlashAttention-3", arXiv:2407.08608, sec. 1), where a large GEMM reaches
# 80% (794.5 of 989.5 TFLOPS measured, model/data/achievable_rates.toml): 0.44 of a GEMM.
# Measured: MosaicML MPT-1B on 8 H100 loses 0.64x of its GEMM rate in attention between 512
# and 32k tokens where 8 A100 lose 0.87x; torchtitan's Llama 3 (SDPA) agrees, NeMo's cuDNN
# fused attention (a wgmma kernel) does not (bench/bench_external_llm.py rows). Kernels
# written for these cards (FlashAttention-3: 740 TFLOPS, 75% of H100's peak in its forward,
# Shah et al. 2024, abstract; cuDNN) reach the 0.75 above: a workload's `attention: cudnn`
# takes it, `flash` (PyTorch's default kernel) this one.
FLASH_ATTENTION_SHARE_WARPGROUP_MMA = 0.44
# Eager attention moves the s x span score tensor of every head this many times in the forward
# (HF/DLE BERT: QK^T write 1, scale 2, mask add 2, softmax 2, dropout 2.5, AV read 1).
EAGER_SCORE_PASSES = 10.5
# ... and this many in the backward, not the forward's twice that the other pointwise work
# takes (compute.BACKWARD_TRAFFIC): AV's gradient writes dP (1) and V's reads P (1), dropout's
# reads dP and its mask and writes (2.5), softmax's reads the gradient and its output and writes
# (3), the mask add passes the gradient on (no kernel), the scale reads and writes (2), and
# QK^T's two gradients each read dS (2) = 11.5 (torch.autograd's derivatives of bmm, dropout,
# softmax and div, tools/autograd/derivatives.yaml).
EAGER_SCORE_BACKWARD_PASSES = 11.5
# Of those counts, dropout's (HF/DLE BERT, GPT-2): the attention probabilities' dropout (2.5
# score passes each way, in EAGER_SCORE_PASSES and EAGER_SCORE_BACKWARD_PASSES) and the two
# hidden-state dropouts (2 x 2.5h, in LAYER_ELEMS_PER_HIDDEN), 2 kernels each. A job that runs
# none moves and launches none of them: nn.Dropout is the identity in eval mode
# (torch.nn.functional.dropout returns its input when `training` is False), so inference never
# runs them, and a model trained without dropout (p = 0: `dropout: false`) skips them too.
SCORE_DROPOUT_PASSES = 2.5
HIDDEN_DROPOUT_ELEMS_PER_HIDDEN = 2.0 * 2.5
DROPOUT_KERNELS = 2.0
# Kernels per transformer layer in the forward: eager 27 (3 QKV linears, 3 transposes, 2 bmm,
# scale, mask, softmax, 2 x dropout (2 each), context copy, out linear, 2 adds, 2 LayerNorms,
# 2 FFN linears, activation); with fused attention (SDPA/flash) the 7 score kernels become 1.
KERNELS_PER_LAYER_EAGER = 27.0
KERNELS_PER_LAYER_FUSED = 21.0
KERNELS_OUTSIDE_LAYERS = 14.0  # embeddings, LM head, loss
# Linear layers in a transformer block: Q, K, V, O and the MLP's two (a gated MLP adds its gate).
LINEARS_PER_LAYER = 6.0
# Of the eager counts above, the head-major copies of Q, K and V: HF/DLE BERT's
# transpose_for_scores permutes each and torch.matmul copies it into a (batch x heads) batch,
# 2 elements moved per element, 3 kernels (NVIDIA/DeepLearningExamples PyTorch/
# LanguageModeling/BERT/modeling.py before a9e2c1d5). Since a9e2c1d5 (2022-03) DLE's BERT runs
# sequence-first and hands torch.bmm views of Q, K and V that its strided batched GEMM reads in
# place (`attention: eager_strided`); the context's copy back (2h, one kernel) stays.
HEAD_COPY_ELEMS_PER_HIDDEN = 6.0
HEAD_COPY_KERNELS = 3.0
# A linear's bias added after the matmul (F.linear on a 3-D activation before PyTorch 1.12:
# `output = input.matmul(weight.t()); output += bias`, pytorch/pytorch#39661; fused into
# addmm by #72728) reads and writes the output once more in a kernel of its own
# (`bias_epilogue: false`); its gradient's reduction runs either way.
BIAS_ADD_ELEMS_PER_OUTPUT = 2.0
# A gated MLP marks the Llama family (Llama, Mistral, Qwen2, Gemma): RMSNorm, rotary positions
# and SwiGLU, whose eager transformers code (models/llama/modeling_llama.py) differs from the
# BERT/GPT layer above. Counted per layer in the forward, elements moved per token (h hidden,
# kv the key/value width, f the MLP's width):
# - LlamaRMSNorm: x.to(float32), pow(2), mean, + eps, rsqrt, multiply, .to(bf16), x weight =
#   8 kernels; 16-bit: the cast's read and write, the weight product's read and write (4h);
#   fp32: the cast's write, pow's read and write, mean's read, the multiply's read and write,
#   the cast back's read (7h). Two per layer.
RMSNORM_EAGER_KERNELS = 8.0
RMSNORM_EAGER_ELEMS = 4.0
RMSNORM_EAGER_FP32_ELEMS = 7.0
# - apply_rotary_pos_emb on q and on k: q x cos, rotate_half's negation and cat, x sin, the sum
#   = 5 kernels moving 2 + 1 + 2 + 2 + 3 = 10 elements per element rotated.
ROPE_EAGER_KERNELS = 5.0
ROPE_EAGER_ELEMS = 10.0
# - the attention output's transpose(1, 2).contiguous() before o_proj (integrations/
#   sdpa_attention.py): 2h, 1 kernel; two residual adds: 6h, 2 kernels; act_fn(gate) and its
#   product with up: 2f + 3f, 2 kernels.
# An activation transformers writes as element-wise ops (activations.py), eager: (kernels,
# elements moved per element of the f-wide input). NewGELUActivation (gelu_new, GPT-2's):
# 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) = pow, mul, add, mul, tanh, add, mul, mul,
# moving 2 + 2 + 3 + 2 + 2 + 2 + 2 + 3 = 18; QuickGELUActivation: x sigmoid(1.702 x) = mul,
# sigmoid, mul: 2 + 2 + 3 = 7. Any other is one kernel reading and writing f (2).
EAGER_ACTIVATION: dict[str, tuple[float, float]] = {
    "gelu_new": (8.0, 18.0),
    "quick_gelu": (3.0, 7.0),
}
# Under autocast, pow is on the float32 list (PyTorch docs, "Automatic Mixed Precision package",
# CUDA Ops that can autocast to float32) and the ops after it promote to its fp32 output, so
# NewGELU's chain runs in fp32 from its cube on: a cast of x in (16-bit read, fp32 write), pow,
# the two scalar products, the two adds and tanh (fp32 reads and writes; the first add also
# reads the 16-bit x), 0.5 x (16-bit), the final product (a 16-bit and an fp32 read, an fp32
# write) and the next linear's cast of that back to 16 bits (fp32 read, 16-bit write): of its
# moves per element, 6 16-bit and 16 fp32 in place of EAGER_ACTIVATION's 18 16-bit. The
# lent H200's GPT-2 profile shows them: fp32 pow, tanh and product kernels, 12 calls each
# (bench/data/h200_gpu_check.json).
AUTOCAST_ACTIVATION_ELEMS: dict[str, tuple[float, float]] = {"gelu_new": (6.0, 16.0)}
# Autocast over an fp32 model (memory.residual_bytes fp32: PyTorch AMP on one GPU or DDP, full
# training) computes only the ops on its lower-precision list (linear, matmul, convolutions,
# SDPA) in 16 bits, casting their fp32 inputs first; layer_norm is on its float32 list and an
# add of a 16-bit and an fp32 tensor promotes to fp32 (PyTorch docs, "Automatic Mixed Precision
# package - torch.amp", CUDA Ops that can autocast to float16 / float32, and "Ops that promote
# to the widest input type"). So the residual stream stays fp32, per layer per token in the
# forward (the counts above are 16-bit):
# - BERT/GPT layer: the two LayerNorms' reads and writes (2 x 2h) and the two residual adds'
#   read of the stream and write of the sum (2 x 2h) move fp32: 8h;
# - Llama layer: the two adds' stream read and sum write (4h); each RMSNorm's `.to(float32)`
#   and `.to(input_dtype)` are no-ops on an fp32 input (Tensor.to returns self when the dtype
#   matches), taking the 16-bit moves RMSNORM_EAGER_ELEMS counts (the cast in, the weight
#   product now fp32: its read and write in place of the cast back's; their 2 kernels each
#   stay in the count, which the fitted cost per kernel was set on);
# - RoPE: the rotary cos and sin come at the hidden states' dtype (transformers'
#   LlamaRotaryEmbedding: `cos.to(dtype=x.dtype)`), fp32 here, so q x cos and rotate_half(q) x
#   sin promote the 16-bit q (and k) to fp32: of ROPE_EAGER_ELEMS' 10 moves per element, the
#   two products read 16-bit and write fp32, the negation and cat stay 16-bit, the sum reads
#   and writes fp32, and SDPA (on autocast's lower-precision list) casts the sum back (an
#   fp32 read, a 16-bit write): 7 16-bit and 6 fp32 moves (AUTOCAST_ROPE_ELEMS);
# - each linear reading a norm's fp32 output casts it to 16 bits (reads h fp32, writes h
#   16-bit, one kernel): one fused QKV (GPT-2's c_attn, torchvision ViT's packed in_proj) or
#   BERT's three (Structure.separate_qkv), and the MLP's one (fc1) or two (gate, up).
# The weights are cast too, once per forward (autocast caches a leaf's cast for the region),
# and their 16-bit gradients back to fp32: compute.weight_cast_bytes. The casts' kernels (BERT:
# 4 a layer's forward, and 2 for each of a layer's 12 weights and biases a step) are not added
# to the counted ones (compute.step_kernels).
AUTOCAST_STREAM_FP32_ELEMS = 8.0
AUTOCAST_GATED_STREAM_FP32_ELEMS = 4.0
AUTOCAST_ROPE_ELEMS = (7.0, 6.0)
# Fused, each chain is one kernel reading its inputs and writing its outputs once: a
# residual add with the next norm reads x and the residual and writes the sum and the normed
# output (4h); a norm alone reads and writes h (2h); RoPE reads and writes q and k (2(h + kv));
# SwiGLU reads gate and up and writes their product (3f); GELU after its matmul reads and
# writes f (2f), or, in a cuBLASLt epilogue (llm.c), writes its output beside the pre-GELU
# one (f).
# Eager attention's score passes when the scale, mask, softmax and dropout between the two
# matmuls run as one kernel (Inductor; llm.c's softmax_forward): QK^T writes the scores (1),
# the fused kernel reads them and writes the probabilities (2), AV reads them (1); 3 kernels
# where eager runs 7.
FUSED_SCORE_PASSES = 4.0
# Its backward: AV's gradients write dP and read P (2), the fused softmax-dropout backward reads
# dP and P and writes dS (3), QK^T's gradients read dS twice (2).
FUSED_SCORE_BACKWARD_PASSES = 7.0
FUSED_SCORE_KERNELS = 3.0
# TensorFlow's XLA auto-clustering (`kernels: xla`) fuses element-wise chains, but on the
# GPU a reduction's result reaches its consumers only through memory (XLA's fusion pass
# fuses producers into a reduction, not the reduction into its consumers), and it leaves
# stateful random ops out of its clusters ("XLA's RNG does not have the same seeding behavior
# as TensorFlow's RNG ... So we avoid auto-clustering stateful RNG ops",
# tensorflow/compiler/jit/compilability_check_util.h, allow_stateful_rng_ops): tf.nn.dropout's
# RandomUniform runs as a TensorFlow kernel writing one number per element, which the fused
# kernel reads. Per score element, forward: QK^T writes S (1); the softmax's max and sum
# fusions read S (2); the normalising fusion reads it (1), reads the dropout's random numbers
# (1) and writes the probabilities the softmax's gradient needs (1) and the dropped ones AV
# reads (1); the random kernel writes (1); AV reads (1) = 9, in 6 kernels (QK^T, 3 fusions,
# the random kernel, AV).
XLA_SCORE_PASSES = 9.0
# Backward: AV's gradients write dP (1) and V's reads the dropped probabilities (1); the
# softmax gradient (TensorFlow's SoftmaxGrad, (dP - sum(dP * P)) * P) is a reduction fusion
# reading dP, the random numbers and P (3) and an element-wise one reading them again and
# writing dS (4); QK^T's two gradients read dS (2) = 11.
XLA_SCORE_BACKWARD_PASSES = 11.0
XLA_SCORE_KERNELS = 6.0
# The BERT/GPT layer's hidden-wide work under XLA, per token, forward: each residual add with
# its LayerNorm is a reduction fusion (mean and mean square, sibling reductions in one
# kernel) reading the input and the residual (2h) and a normalising fusion reading them again
# and writing the sum the backward needs and the normed output (4h); the dropout before it
# reads its random numbers, which a random kernel wrote (2h); Q, K and V each go from the
# matmul's token-major layout to the head-major one a batched GEMM takes (DLE TensorFlow BERT
# modeling.py transpose_for_scores: tf.transpose to [B, N, S, H]; a batched dot over two batch
# dimensions needs them contiguous), a fusion with the bias add that reads and writes each
# (3 x 2h); the context's transpose back before the output projection (2h):
# 2 x (6h + 2h) + 6h + 2h = 24h, in 2 x 3 + 3 + 1 kernels. The other biases and GELU join
# the fusions after their matmuls (GELU reads and writes f, 2f, one kernel).
XLA_LAYER_ELEMS_PER_HIDDEN = 24.0
XLA_LAYER_KERNELS = 10.0
# A convnet's batch norm with its ReLU (and the residual add before it) in one kernel
# (`fused_norm_activation`: cuDNN's fused batch norm as MXNet's --fuse-bn-relu and
# --fuse-bn-add-relu and PaddlePaddle's fuse_bn_act_ops / fuse_bn_add_act_ops call it;
# XLA's and Inductor's fusion of the normalisation with what follows). Counted on ResNet's
# bottleneck in element moves per conv-output element (channels 1:1:4 over its three convs):
# eager, a conv's write (1), BN's statistics read (1), BN's read and write (2), ReLU's read
# and write (2) = 6 forward, 8 backward (ReLU's gradient reads 2 and writes 1, BN's reads 2
# for its reductions, then 2 and writes 1); after the third conv the add reads 2 and writes
# 1 (forward 9), and the branches' gradients are summed (backward 11). Fused: forward 4 (a
# write, the statistics' read, one read and write), 5 after the third conv (the residual read
# too); backward 7 (ReLU's mask read with BN's), 11 after the third conv (the residual's
# gradient written, then summed). A projection's BN (no ReLU) moves 4 and 5 either way. Over
# a block, 12 of ResNet-50's 16 without a projection: eager 48 + 60, fused 28 + 58; the 4 with
# one: 64 + 80 and 44 + 78; (12 x 86 + 4 x 122) / (12 x 108 + 4 x 144) = 1520 / 1872.
FUSED_NORM_ACTIVATION_SHARE = 1520.0 / 1872.0
# Convnets: each saved activation is written by its producer and then read and written by a
# BatchNorm/activation (and read again for BN's statistics): 2.5 element moves per saved
# element in the forward.
POINTWISE_PASSES = 2.5
# A convolution saves its input for its weight gradient and its BatchNorm saves the
# convolution's output (the ReLU between runs in place): two saved tensors per convolution, so
# the convolutions write half of the saved elements.
SAVED_TENSORS_PER_CONV = 2.0
DEFAULT_HEAD_DIM = 64
# Parameter tensors one layer holds, what a per-tensor optimizer loop steps one by one: the
# BERT/GPT layer's six linears with a weight and a bias and two LayerNorms with a weight and a
# bias (DLE BERT modeling.py BertLayer) = 16; the Llama family's seven bias-free linears and two
# weight-only RMSNorms = 9. Outside the layers: BERT's three embedding tables, their LayerNorm
# and the SQuAD head's weight and bias = 7 (its pooler gets no gradient); a Llama's embedding,
# final norm and LM head = 3.
PARAMETER_TENSORS_PER_LAYER = 16.0
PARAMETER_TENSORS_PER_GATED_LAYER = 9.0
PARAMETER_TENSORS_OUTSIDE_LAYERS = 7.0
PARAMETER_TENSORS_OUTSIDE_GATED_LAYERS = 3.0
# Of those, the matrices (a layer's linears; BERT's three embedding tables and the SQuAD head's
# weight, a Llama's embedding and LM head) hold nearly every parameter; the rest are vectors.
PARAMETER_MATRICES_OUTSIDE_LAYERS = 4.0
PARAMETER_MATRICES_OUTSIDE_GATED_LAYERS = 2.0


@dataclass(frozen=True)
class Structure:
    """Layer counts of a model the workload fields do not describe (classic zoo entries):
    FLOP shares by class, kernels per step, and for attention models the score passes.
    `gemm_rows_per_sample`: rows one sample adds to a GEMM call (inf: many, as tokens or
    pixels); `amp_casts_per_kernel`: cast kernels its mixed-precision recipe adds per op;
    `autocast_fp32_elems`: of the pointwise elements, those a mixed-precision run still moves
    in fp32; `parameter_tensors`: the tensors its weights are held in (0: not counted);
    `attention_bias`: a transformer's Q, K, V and output projections carry a bias (its MLP's
    two linears do in every non-gated transformer counted here); `activation_kernels`: the
    ReLU and residual-add kernels of a forward that a fused norm-activation absorbs into its
    batch norms (`fused_norm_activation`; 0: not counted); `separate_qkv`: a transformer's Q, K
    and V are three linear layers (BERT's query, key, value), not one packed projection.
    Autocast runs only the ops on its fp16 list (linear, matmul, convolutions) in 16 bits and
    the others in their input's type; an embedding table is fp32 (the master weights), so its
    lookups and the ops they feed stay fp32 until a linear casts them (PyTorch docs,
    "Automatic Mixed Precision package - torch.amp", CUDA op-specific behavior: embedding is
    on no list, cat promotes to its widest input)."""

    family: str = "convnet"
    conv_share: float = 1.0
    winograd_share: float = 0.0
    gemm_width: float = 1024.0
    conv_width: float = 390.0
    kernels_forward: float = 200.0
    kernels_per_sample: float = 0.0
    vocab: int | None = None
    pointwise_elems: float | None = None
    attention_span: float = 1.0
    score_passes: float = EAGER_SCORE_PASSES
    score_backward_passes: float = EAGER_SCORE_BACKWARD_PASSES
    attention_bias: bool = True
    gemm_rows_per_sample: float = math.inf
    amp_casts_per_kernel: float = 0.0
    autocast_fp32_elems: float = 0.0
    parameter_tensors: float = 0.0
    activation_kernels: float = 0.0
    separate_qkv: bool = False
    source: str = ""


# Facts per classic zoo model, counted from the reference implementations Lambda ran
# (NVIDIA DeepLearningExamples, torchvision); the sums are stated beside each. Widths are
# arithmetic intensity x operand bytes, FLOP-weighted over the layers: a 1x1 convolution of
# c_in -> c_out channels has 2 c_in c_out / (c_in + c_out), a 3x3 one 9 times that.
# The convnets' widths (FLOP-weighted harmonic means) and 3x3 stride-1 shares are printed by
# scripts/count_conv_structure.py from every convolution's shape; its FLOP totals reproduce
# the zoo's sourced ones (ResNet-50 8.17, ResNet-152 23.02, SSD300 40.30 GFLOPs).
_DLE = "github.com/NVIDIA/DeepLearningExamples PyTorch/"
STAND_IN_CONV = "probe conv stand-in"
CLASSIC_STRUCTURE: dict[str, Structure] = {
    # torchvision resnet50: 53 convs + 53 BN + 49 ReLU + 16 adds + pools, fc, loss = 176
    # kernels. Counted: 36.8% of the FLOPs in 3x3 stride-1 convs (Winograd-eligible; the
    # downsampling projections, stride-2 3x3s and the 7x7 stem are not), width 407.
    "resnet50": Structure(
        winograd_share=0.368, kernels_forward=176.0, conv_width=407.0,
        activation_kernels=49.0 + 16.0,
        source="torchvision.models.resnet50 (counted)",
    ),
    # `dlrig probe --train`'s stand-in for a convnet (dlrig.hardware.torch_train._network):
    # 8 x (3x3 conv, batch norm, ReLU), pool, linear, log-softmax, NLL = 28 kernels; every conv
    # 3x3 stride 1 (Winograd-eligible), C in and out channels: width 9 C, above any card's
    # ridge for every zoo stand-in (C 564-5,270). Estimated with ResNet-50's 176 kernels and
    # width 407, its step on a lent H200 came out at 38.9 ms against 19.1 ms measured.
    STAND_IN_CONV: Structure(
        winograd_share=1.0, kernels_forward=28.0, conv_width=math.inf,
        source="dlrig.hardware.torch_train conv stand-in (counted)",
    ),
    # torchvision resnet152: 155 convs + 155 BN + 151 ReLU + 50 adds + pools, fc, loss = 516
    # kernels; the same bottlenecks (3, 8, 36, 3 per stage) weight the wider stages more.
    # Counted: 3x3 stride-1 share 47.2%, width 536.
    "resnet152": Structure(
        winograd_share=0.472, kernels_forward=516.0, conv_width=536.0,
        activation_kernels=151.0 + 50.0,
        source="torchvision.models.resnet152 (counted)",
    ),
    # DLE SSD300: ResNet-50 to layer3 (~140 kernels), 5 extra blocks (30), 6 loc/conf 3x3
    # heads with reshapes (30), loss (~40): ~240. Counted (layer3 at stride 1, 38 x 38): the
    # 3x3 heads (28% of the FLOPs, the conf heads ~4400 wide) raise the width to 658 and the
    # 3x3 stride-1 share to 59.6%.
    "ssd300": Structure(
        winograd_share=0.596, kernels_forward=240.0, conv_width=658.0,
        source=_DLE + "Detection/SSD ssd/model.py (counted)",
    ),
    # maskrcnn_benchmark R-50-FPN: backbone with frozen BN ~200 kernels, FPN 20, RPN heads
    # and losses ~100, RoIAlign per level, box/mask heads ~50: ~400 per batch; anchor
    # matching, box coding, top-k/NMS per level and proposal sampling loop over the images in
    # Python: ~150 kernels per image. Box head fc: ~4% of FLOPs; FPN and mask-head 3x3 convs
    # of 256 channels (width ~2300) beside the backbone's 390. Its fp16 runs use apex amp O1
    # (tools/train_net.py: opt_level 'O1' when DTYPE is float16), which patches every torch
    # function to cast its inputs (nvidia.github.io/apex/amp.html, "opt-levels", O1:
    # patch_torch_functions): one cast per op.
    "maskrcnn": Structure(
        conv_share=0.96, winograd_share=0.5, kernels_forward=400.0, kernels_per_sample=150.0,
        conv_width=600.0, amp_casts_per_kernel=1.0,
        source=_DLE + "Segmentation/MaskRCNN (counted)",
    ),
    # DLE GNMT: cuDNN LSTMs launch ~2 kernels per time step per layer: 4 encoder layers (the
    # first bidirectional) and 4 decoder layers over 50 steps each = 900, plus attention,
    # classifier and loss: ~1000. All FLOPs are GEMMs of width 1024; a 31800-token
    # vocabulary (label-smoothed loss in fp32).
    "gnmt": Structure(
        family="recurrent", conv_share=0.0, kernels_forward=1000.0, gemm_width=1024.0,
        vocab=31800, source=_DLE + "Translation/GNMT seq2seq/models (counted)",
    ),
    # DLE Tacotron2: the decoder runs once per mel frame (800): prenet 8 kernels, attention
    # LSTMCell 3, location attention 10, decoder LSTMCell 3, dropouts 4, concats 2,
    # projections 2 = 32 per frame = 25,600, plus encoder and postnet ~40. Postnet and encoder
    # conv1d (5 + 3 layers, 512 channels, kernel 5: width 2560): ~30% of the FLOPs. The
    # decoder's GEMMs run once per frame over the batch: one row per sample per call.
    "tacotron2": Structure(
        family="recurrent", conv_share=0.3, kernels_forward=25640.0, gemm_width=1024.0,
        conv_width=2560.0, gemm_rows_per_sample=1.0,
        source=_DLE + "SpeechSynthesis/Tacotron2 tacotron2/model.py",
    ),
    # DLE WaveGlow: 12 flows x (8 WN layers x 9 kernels + ~15) = 1044; dilated 1-D convs (no
    # Winograd): 3-tap 256 -> 512 (width 1024) and 1x1 res/skip (341). Parameter tensors: the
    # upsampling ConvTranspose1d's weight and bias, and per flow the invertible 1x1 conv's
    # weight, WN's weight-normed start conv (weight_g, weight_v, bias), its end conv (weight,
    # bias) and 8 layers of weight-normed in, cond and res/skip convs (3 each): 2 + 12 x 78 = 938.
    "waveglow": Structure(
        kernels_forward=1050.0, conv_width=500.0, parameter_tensors=938.0,
        source=_DLE + "SpeechSynthesis/Tacotron2 waveglow/model.py (counted)",
    ),
    # DLE NCF (NeuMF): 4 embedding lookups, MLP 256-256-128-64 with ReLU, MF product, concat,
    # output, loss: ~40 kernels; GEMMs as narrow as 64-256 (width ~170). Pointwise elements
    # per sample in the forward: gathers 384, concat 512, ReLUs 896, MF product 192, final
    # concat and output 256 = 2240. Under autocast the embedding rows come out in fp32 and
    # all before the first linear stays so (Structure.autocast_fp32_elems): gathers, concat,
    # MF product, the final concat (cat promotes to its widest input, the fp32 MF branch) =
    # 1344, plus the casts' fp32 reads into the first and the final linear (256 + 128) = 1728.
    # Lambda's runs and DLE's README rows ran apex amp O2, a 16-bit model with no autocast
    # (Lambda's logs: "cast_model_type : torch.float16", "patch_torch_functions : False"; DLE's
    # ncf.py took autocast only at NVIDIA/DeepLearningExamples@05ee9863, 2023), and keep this
    # count all the same: counted 16-bit, the 2022 fp16 rows and NVIDIA's A100 fp16 row came
    # out 20-60% fast. Those runs gained 1.44-1.56x from fp16 over TF32 on A100 and 1.63-1.86x
    # on GDDR Ampere and Ada cards (the RTX A5000 1.33x), rising with the card's issue rate per
    # byte of bandwidth (rates.shader_issue_rate over the achievable bandwidth: A100 11-14
    # lane-instructions a byte, GA10x 21-31, AD102 45-55), not the 2x of a 16-bit model's
    # bytes: the count stands for that shortfall, which is not modeled.
    "ncf": Structure(
        family="mlp", conv_share=0.0, kernels_forward=40.0, gemm_width=170.0,
        pointwise_elems=2240.0, autocast_fp32_elems=1728.0,
        source=_DLE + "Recommendation/NCF neumf.py (counted)",
    ),
    # HF/DLE BERT computes softmax(QK^T) explicitly (eager attention); SQuAD's head has 2
    # outputs (no vocabulary logits); BertSelfAttention's query, key and value are three
    # nn.Linear layers.
    "bert-base-squad": Structure(
        family="transformer", conv_share=0.0, separate_qkv=True,
        source=_DLE + "LanguageModeling/BERT modeling.py",
    ),
    "bert-large-squad": Structure(
        family="transformer", conv_share=0.0, separate_qkv=True,
        source=_DLE + "LanguageModeling/BERT modeling.py",
    ),
    # DLE Transformer-XL: eager attention over target + memory (tgt_len = mem_len: span 2s),
    # with the relative-position term: a second score matmul (write 1), rel_shift's pad and
    # copy (3) and the sum (3) on top of BERT's 10.5 passes = 17.5. Lambda runs the full
    # 267735-word WikiText-103 softmax (adaptive off). Backward: BERT's 11.5, the causal
    # masked_fill_'s (2), rel_shift's copy back (3) and the second score matmul's two gradient
    # reads (2) = 18.5 (the sum passes its gradient on). Its qkv_net, o_net and r_net are
    # nn.Linear(..., bias=False); only PositionwiseFF's two linears carry a bias.
    "transformer-xl-base": Structure(
        family="transformer", conv_share=0.0, attention_span=2.0,
        score_passes=17.5, score_backward_passes=18.5, vocab=267735, attention_bias=False,
        source=_DLE + "LanguageModeling/Transformer-XL mem_transformer.py",
    ),
    "transformer-xl-large": Structure(
        family="transformer", conv_share=0.0, attention_span=2.0,
        score_passes=17.5, score_backward_passes=18.5, vocab=267735, attention_bias=False,
        source=_DLE + "LanguageModeling/Transformer-XL mem_transformer.py",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class LayerWork:
    """One sample's forward work by layer class, and the kernels one step launches. Widths
    are arithmetic intensity x operand bytes (FLOPs per operand element moved);
    `kernels_per_sample` are launched once per sample (per-image loops), `tensor_elems` is one
    activation tensor of one sample (what has to fit in L2 to be read back from it);
    `gemm_rows_per_sample` the rows one sample adds to a dense GEMM call (a recurrent step's
    GEMM has only the batch's rows and re-reads its weights every step); `amp_casts_per_kernel`
    the cast kernels a function-patching mixed-precision recipe adds per op; `lm_head_flops`
    the part of `gemm_flops` in the vocabulary projection, whose output width is
    `lm_head_width` (the vocabulary: dlrig.model.compute times a width that breaks the
    tensor cores' 16-byte alignment at a lower efficiency); `fused_attention`: the attention
    FLOPs run in one fused kernel (flash), at a share of a GEMM's efficiency;
    `conv_output_elems` the elements the convolutions of one sample write (what a
    channels-first layout has cuDNN transpose); `autocast_fp32_elems` the pointwise elements
    a mixed-precision run still moves in fp32 (Structure); `linears` the linear layers a
    forward runs through (what QLoRA dequantises, one by one); `adapter_fp32_elems` the
    elements fp32 LoRA adapters move beyond the pointwise ones (fp32_adapter_elems);
    `expert_gemm_flops` the part of `gemm_flops` in a mixture of experts' routed MLPs, whose
    matrices have `expert_width_elems` and get `expert_rows_per_sample` rows from each sample
    (its tokens x k / E: each expert's GEMM runs on the tokens routed to it);
    `adapter_step_elems` the 16-bit elements of one sample that eager LoRA adapters add over a
    whole training step (eager_adapter_elems); `parameter_tensors` the tensors the weights are
    held in (0: not counted), what an optimizer run tensor by tensor steps one at a time,
    `parameter_matrices` those of them that are matrices (0: not told apart), which hold nearly
    every parameter, `score_backward_elems` the elements the backward of eager attention's
    score chain moves (None: BACKWARD_TRAFFIC times its forward's `score_elems`);
    `fp32_model_elems_16bit`, `fp32_model_elems_fp32` what one sample's forward adds to the
    16-bit and fp32 element moves when it runs under autocast over an fp32 model
    (autocast_stream_work; the 16-bit change may be negative), and
    `autocast_elems_16bit`, `autocast_elems_fp32` the same changes under any autocast (an
    activation on its float32 list: AUTOCAST_ACTIVATION_ELEMS)."""

    gemm_flops: float
    gemm_width_elems: float
    conv_flops: float
    conv_width_elems: float
    winograd_share: float
    attention_flops: float
    attention_width_elems: float
    pointwise_elems: float
    score_elems: float
    loss_fp32_elems: float
    kernels_forward: float
    kernels_per_sample: float = 0.0
    tensor_elems: float = 0.0
    gemm_rows_per_sample: float = math.inf
    amp_casts_per_kernel: float = 0.0
    lm_head_flops: float = 0.0
    lm_head_width: int = 0
    fused_attention: bool = False
    conv_output_elems: float = 0.0
    autocast_fp32_elems: float = 0.0
    linears: float = 0.0
    adapter_fp32_elems: float = 0.0
    expert_gemm_flops: float = 0.0
    expert_width_elems: float = math.inf
    expert_rows_per_sample: float = math.inf
    adapter_step_elems: float = 0.0
    parameter_tensors: float = 0.0
    parameter_matrices: float = 0.0
    score_backward_elems: float | None = None
    fp32_model_elems_16bit: float = 0.0
    fp32_model_elems_fp32: float = 0.0
    autocast_elems_16bit: float = 0.0
    autocast_elems_fp32: float = 0.0


def structure_of(workload: Workload) -> Structure | None:
    """The classic zoo facts of this workload's model; a model that does not state its
    transformer fields also borrows those of the model it names with `similar_to`."""
    keys = [workload.model_name, workload.name]
    if not (workload.hidden_size and workload.num_layers and workload.seq_len):
        keys.append(workload.similar_to)
    for key in keys:
        if key and key in CLASSIC_STRUCTURE:
            return CLASSIC_STRUCTURE[key]
    return None


def _linear_width(n_in: float, n_out: float) -> float:
    """FLOPs per operand element of a linear layer over many tokens: 2 n_in n_out /
    (n_in + n_out) (activations in and out dominate the weights)."""
    return 2.0 * n_in * n_out / (n_in + n_out)


def transformer_layer_width(h: float, f: float, kv_share: float) -> float:
    """FLOP-weighted (harmonic) width of a layer's linears: Q and O (h -> h), K and V
    (h -> 2 kv_share h), the two FFN matrices (h -> f)."""
    parts = [(h * h, h), (2 * kv_share * h * h, _linear_width(h, 2 * kv_share * h))]
    parts += [(h * h, h), (2 * h * f, _linear_width(h, f))]
    return sum(w for w, _ in parts) / sum(w / width for w, width in parts)


def lora_adapter_io(
    h: float, f: float, kv_share: float, gated: bool, targets: frozenset[LoraTarget]
) -> tuple[float, float]:
    """(input, output) elements of one token at one layer's LoRA adapters: an adapter (x A) B
    of rank r runs far below the memory roofline, so each reads its linear's input and writes
    into its output once more, over the projections `targets` names (NeMo AutoModel's
    *_proj and peft's all-linear: all seven; torchtune's Llama recipes: q, v, output and the
    MLP; Answer.AI's fsdp_qlora 'all': q, k, v, gate, up, down). An ungated MLP's one input
    projection (fc1) is its up; it has no gate."""
    kv = h * kv_share
    # projection: (input elements, output elements) per token
    shapes = {
        LoraTarget.Q: (h, h),
        LoraTarget.K: (h, kv),
        LoraTarget.V: (h, kv),
        LoraTarget.O: (h, h),
        LoraTarget.GATE: (h, f) if gated else (0.0, 0.0),
        LoraTarget.UP: (h, f),
        LoraTarget.DOWN: (f, h),
    }
    inputs = sum(shapes[t][0] for t in targets)
    outputs = sum(shapes[t][1] for t in targets)
    return inputs, outputs


def lora_adapter_elems(
    h: float, f: float, kv_share: float, gated: bool, targets: frozenset[LoraTarget]
) -> float:
    """Elements one token's 16-bit LoRA adapters move in one layer's forward (lora_adapter_io):
    every adapted linear's input and output once."""
    return sum(lora_adapter_io(h, f, kv_share, gated, targets))


# An adapter run as written in PyTorch (peft's LoRA Linear and bitsandbytes Linear4bit,
# `output = lora_B(lora_A(dropout(x))) * scaling` then `result = result + output`:
# huggingface/peft src/peft/tuners/lora/layer.py and bnb.py forward; torchtune's LoRALinear
# the same, torchtune/modules/peft/lora.py). Beside B's write of the update
# (lora_adapter_elems), in 16 bits: forward, the scaling reads and writes it and the add reads
# it with the base output and writes their sum (5 moves per output element); backward,
# autograd scales the update's gradient (a read and a write per output element) and adds the
# adapter branch's input gradient to the base's (two reads and a write per input element).
# fp32 adapters count theirs in fp32_adapter_elems. Their kernels are left to the fitted cost
# per counted kernel (calibration.toml gpu_kernel_s), fitted on counts that leave such small
# ops out: the H200's Llama 3 8B LoRA step launches 10,216 where 5,048 are counted.
EAGER_ADAPTER_FORWARD_OUTPUT_ELEMS = 5.0
EAGER_ADAPTER_BACKWARD_OUTPUT_ELEMS = 2.0
EAGER_ADAPTER_BACKWARD_INPUT_ELEMS = 3.0
# A bitsandbytes 4-bit base's output is copied before the update is added ("As per Tim Dettmers,
# for 4bit, we need to defensively clone here": peft bnb.py Linear4bit.forward, and Answer.AI
# fsdp_qlora train.py's LORA module): a read and a write of each output element in each
# forward; its backward passes the gradient through.
NF4_CLONE_OUTPUT_ELEMS = 2.0
# LoRA dropout with p > 0 (peft's `lora_dropout`; at 0 peft puts an nn.Identity there) reads the
# adapter's input and writes the dropped copy and its mask, one byte an element (torch's
# native_dropout returns a bool mask), and its backward reads the gradient and the mask and
# writes the result: 2.5 moves of a 16-bit element per input element each way (4.5 where the
# input was cast to fp32 first, as fp32 adapters do).
ADAPTER_DROPOUT_INPUT_ELEMS = 2.5
FP32_ADAPTER_DROPOUT_INPUT_ELEMS = 4.5


def eager_adapter_elems(
    h: float, f: float, kv_share: float, gated: bool, workload: Workload
) -> float:
    """16-bit elements one token's LoRA adapters move in one layer over a training step (every
    forward, the recompute under activation checkpointing, the backward) beyond
    lora_adapter_elems and fp32_adapter_elems when they run eagerly (`kernels: eager`): the
    scaling and the add of 16-bit adapters and their backward (EAGER_ADAPTER_*), a bitsandbytes
    NF4 base's clone (NF4_CLONE_OUTPUT_ELEMS) and the dropout of `finetune.adapter_dropout` > 0
    (ADAPTER_DROPOUT_INPUT_ELEMS), over every adapted linear (lora_adapter_io). Other kernel
    libraries keep lora_adapter_elems alone; inference moves none of it."""
    if (
        workload.finetune is FinetuneMethod.FULL
        or workload.kernels is not KernelLibrary.EAGER
        or workload.mode is not Mode.TRAINING
    ):
        return 0.0
    inputs, outputs = lora_adapter_io(h, f, kv_share, gated, workload.lora_targets)
    forwards = 1.0 + workload.pointwise_recompute_share
    sixteen = not workload.fp32_adapters
    # Under autocast fp32 adapters scale and add their update in 16 bits, as 16-bit ones do.
    sixteen_update = sixteen or workload.adapter_autocast
    fwd_out = EAGER_ADAPTER_FORWARD_OUTPUT_ELEMS if sixteen_update else 0.0
    bwd_out = EAGER_ADAPTER_BACKWARD_OUTPUT_ELEMS if sixteen_update else 0.0
    bwd_in = EAGER_ADAPTER_BACKWARD_INPUT_ELEMS if sixteen_update else 0.0
    fwd_in = 0.0
    if workload.finetune is FinetuneMethod.QLORA and workload.quantized_base in (
        None,
        QuantizedBase.NF4,
        QuantizedBase.TORCHAO_NF4,
    ):
        fwd_out += NF4_CLONE_OUTPUT_ELEMS
    if workload.adapter_dropout > 0:
        drop = ADAPTER_DROPOUT_INPUT_ELEMS if sixteen else FP32_ADAPTER_DROPOUT_INPUT_ELEMS
        fwd_in, bwd_in = fwd_in + drop, bwd_in + drop
    return forwards * (fwd_out * outputs + fwd_in * inputs) + bwd_out * outputs + bwd_in * inputs


def fp32_adapter_elems(
    h: float,
    f: float,
    kv_share: float,
    gated: bool,
    targets: frozenset[LoraTarget],
    autocast: bool = True,
) -> tuple[float, float]:
    """(fp32, 16-bit) elements one token's fp32 LoRA adapters move in one layer's forward
    beyond lora_adapter_elems, as peft runs them (tuners/lora/layer.py Linear.forward: the
    input cast to the adapters' fp32, `result + lora_B(lora_A(dropout(x))) * scaling`).
    Under torch.autocast (`autocast`) A multiplies in 16 bits: the input's fp32 copy is written
    and read back by autocast's cast, which writes the 16-bit copy A reads (2 fp32 and 2 16-bit
    moves per input element), and the update, scaling and add stay 16-bit, as 16-bit adapters
    run them. Without autocast (a 16-bit model stepped as is) the fp32 copy is written and read
    by A (2 fp32 moves per input element); B writes its fp32 update, the scaling reads and
    writes it, the add reads it with the 16-bit result and writes fp32, the cast back reads it
    and writes 16-bit (7 fp32 and 1 more 16-bit move per output element). A Llama-3-8B LoRA
    step run so on a lent H200 shows them as cast, fp32 add and fp32 SIMT GEMM kernels
    (bench/data/h200_gpu_check.json); with them the step, 641-650 ms measured, is estimated at
    718 ms (bench/bench_h200.py)."""
    inputs, outputs = lora_adapter_io(h, f, kv_share, gated, targets)
    if autocast:
        return 2.0 * inputs, 2.0 * inputs
    return 2.0 * inputs + 7.0 * outputs, outputs


@dataclass(frozen=True)
class LayerPointwise:
    """One transformer layer's forward beside its FLOPs: the kernels it launches (matmuls and
    attention included), the elements its element-wise, norm, rotary and copy kernels move per
    token, the part of those moved in fp32 even in a 16-bit run, and the times eager attention
    moves its score matrices."""

    kernels: float
    elems: float
    fp32_elems: float
    score_passes: float
    score_backward_passes: float = EAGER_SCORE_BACKWARD_PASSES


_FUSING = (
    KernelLibrary.COMPILE,
    KernelLibrary.COMPILE_REDUCE_OVERHEAD,
    KernelLibrary.FUSED,
    KernelLibrary.XLA,
)


def loss_passes(workload: Workload) -> float:
    """fp32 moves of each logit per forward-equivalent pass for the loss: LOSS_FUSED_PASSES or
    LOSS_FP32_PASSES in training; none in inference, whose forward pass returns the logits
    and computes no loss (transformers' models compute one only when given labels)."""
    if workload.mode is not Mode.TRAINING:
        return 0.0
    return LOSS_FUSED_PASSES if workload.fused_loss else LOSS_FP32_PASSES


def runs_dropout(workload: Workload) -> bool:
    """The job's dropout layers run: a training job whose model has them (`dropout`); in eval
    mode, as inference runs, nn.Dropout is the identity and launches nothing."""
    return workload.dropout and workload.mode is Mode.TRAINING


def bias_add_work(
    workload: Workload, h: float, kv: float, f: float, attention_bias: bool
) -> tuple[float, float]:
    """(kernels, elements per token) one non-gated layer's bias adds run in its forward when
    they are not in the matmul (`bias_epilogue` off): one kernel per biased linear moving
    BIAS_ADD_ELEMS_PER_OUTPUT its output, over Q, O (h), K, V (kv) where `attention_bias`,
    and the MLP's up (f) and down (h) projections."""
    if workload.bias_epilogue:
        return 0.0, 0.0
    outputs = [f, h] + ([h, kv, kv, h] if attention_bias else [])
    return float(len(outputs)), BIAS_ADD_ELEMS_PER_OUTPUT * sum(outputs)


def layer_pointwise(
    workload: Workload,
    h: float,
    kv: float,
    f: float,
    eager_passes: float,
    *,
    attention_bias: bool = True,
    eager_backward_passes: float = EAGER_SCORE_BACKWARD_PASSES,
) -> LayerPointwise:
    """Per layer, by the workload's `kernels` (a library the model does not change keeps the
    eager counts): for the BERT/GPT layer (LayerNorm, GELU) eager is LAYER_ELEMS_PER_HIDDEN h +
    LAYER_ELEMS_PER_FFN f in KERNELS_PER_LAYER_EAGER/FUSED kernels; Inductor and hand-fused
    trainers fuse each add-norm chain, XLA fuses them around its reductions and dropout's
    random numbers (XLA_*; without dropout it fuses as Inductor does), liger and unsloth leave
    this layer as it is (Liger's
    LayerNorm moves what PyTorch's one-kernel LayerNorm does; Unsloth patches Llama-family
    models), except an activation written as element-wise ops (`hidden_act`,
    EAGER_ACTIVATION), less the Q/K/V head copies strided attention skips
    (HEAD_COPY_*), plus a bias kernel per biased linear where `bias_epilogue` is off
    (bias_add_work). For the Llama-family layer (`gated_mlp`) eager counts transformers'
    RMSNorm, RoPE and SwiGLU (the constants above); liger and unsloth replace each with one kernel;
    compile fuses the adds into the norms too; fused (llm.q) also runs one QKV and one
    gate-and-up matmul and writes attention in the layout o_proj reads."""
    library = workload.kernels
    eager_attention = not workload.flash_attention
    dropout = runs_dropout(workload)
    gemms = LINEARS_PER_LAYER + (1.0 if workload.gated_mlp else 0.0)
    attention_kernels = 1.0
    passes, backward = eager_passes, eager_backward_passes
    # XLA without dropout fuses as Inductor does (_FUSING); dropout's random numbers split it.
    xla_split = library is KernelLibrary.XLA and dropout
    if eager_attention:
        attention_kernels = 1.0 + KERNELS_PER_LAYER_EAGER - KERNELS_PER_LAYER_FUSED
        if xla_split:
            attention_kernels, passes = XLA_SCORE_KERNELS, XLA_SCORE_PASSES
            backward = XLA_SCORE_BACKWARD_PASSES
        elif library in _FUSING:
            attention_kernels, passes = FUSED_SCORE_KERNELS, FUSED_SCORE_PASSES
            backward = FUSED_SCORE_BACKWARD_PASSES
    if not workload.gated_mlp:
        if xla_split:
            kernels = gemms + attention_kernels + XLA_LAYER_KERNELS + 1.0
            elems = XLA_LAYER_ELEMS_PER_HIDDEN * h + 2.0 * f
            return LayerPointwise(kernels, elems, 0.0, passes, backward)
        if library in _FUSING:
            gelu = f if library is KernelLibrary.FUSED else 2.0 * f
            if library is KernelLibrary.FUSED:  # one QKV matmul, GELU in the epilogue
                return LayerPointwise(
                    4.0 + attention_kernels + 2.0, 8.0 * h + gelu, 0.0, passes, backward
                )
            # two add-norms, the attention output's copy, GELU
            kernels = gemms + attention_kernels + 4.0
            return LayerPointwise(kernels, 10.0 * h + gelu, 0.0, passes, backward)
        act_kernels, act_elems = EAGER_ACTIVATION.get(
            workload.hidden_act, (1.0, LAYER_ELEMS_PER_FFN)
        )
        kernels = KERNELS_PER_LAYER_FUSED - 2.0 + act_kernels + attention_kernels
        elems = LAYER_ELEMS_PER_HIDDEN * h + act_elems * f
        if eager_attention and workload.strided_heads:
            kernels -= HEAD_COPY_KERNELS
            elems -= HEAD_COPY_ELEMS_PER_HIDDEN * h
        if not dropout:
            kernels -= 2.0 * DROPOUT_KERNELS
            elems -= HIDDEN_DROPOUT_ELEMS_PER_HIDDEN * h
            if eager_attention:
                kernels -= DROPOUT_KERNELS
                passes -= SCORE_DROPOUT_PASSES
                backward -= SCORE_DROPOUT_PASSES
        bias_kernels, bias_elems = bias_add_work(workload, h, kv, f, attention_bias)
        return LayerPointwise(kernels + bias_kernels, elems + bias_elems, 0.0, passes, backward)
    rope = 2.0 * (h + kv)
    if library is KernelLibrary.FUSED:
        # QKV and gate-up matmuls, two residual-norms, RoPE, SwiGLU
        return LayerPointwise(
            4.0 + attention_kernels + 4.0, 8.0 * h + rope + 3.0 * f, 0.0, passes, backward
        )
    if library in _FUSING:
        # two add-norms, RoPE on q and on k, the output copy, SwiGLU
        kernels = gemms + attention_kernels + 6.0
        return LayerPointwise(kernels, 8.0 * h + rope + 2.0 * h + 3.0 * f, 0.0, passes, backward)
    residual = 6.0 * h + 2.0 * h  # two adds, the output copy
    if dropout:
        residual += 2.0 * 2.5 * h  # two dropouts, their masks written
    if library in (KernelLibrary.LIGER, KernelLibrary.UNSLOTH):
        kernels = gemms + attention_kernels + 2.0 + 1.0 + 3.0 + 1.0
        return LayerPointwise(
            kernels, 2.0 * 2.0 * h + rope + residual + 3.0 * f, 0.0, passes, backward
        )
    norms = 2.0 * (RMSNORM_EAGER_ELEMS + RMSNORM_EAGER_FP32_ELEMS) * h
    act_kernels, act_elems = EAGER_ACTIVATION.get(workload.hidden_act, (1.0, 2.0))
    kernels = gemms + attention_kernels + 2.0 * RMSNORM_EAGER_KERNELS + 2.0 * ROPE_EAGER_KERNELS
    kernels += 3.0 + act_kernels + 1.0 + (4.0 if dropout else 0.0)
    return LayerPointwise(
        kernels,
        norms + ROPE_EAGER_ELEMS * (h + kv) + residual + (act_elems + 3.0) * f,
        2.0 * RMSNORM_EAGER_FP32_ELEMS * h,
        passes,
        backward,
    )


def expert_params(workload: Workload) -> float:
    """Parameters in the routed experts' MLPs: experts x (3 gated, else 2) x hidden x FFN
    width a layer (Mixtral 8x7B: 45.1 B of its 46.7 B)."""
    w = workload
    if not (w.experts and w.experts > 1 and w.hidden_size and w.ffn_hidden_size and w.num_layers):
        return 0.0
    matrices = 3.0 if w.gated_mlp else 2.0
    return min(
        float(w.params), w.num_layers * w.experts * matrices * w.hidden_size * w.ffn_hidden_size
    )


def moe_dispatch_elems(workload: Workload, h: float) -> float:
    """Elements one token moves per layer to reach its k experts and come back: the permute
    reads the token and writes k copies, grouped by expert; the unpermute reads the k outputs
    and writes their weighted sum, 2 (k + 1) h (Megatron-Core's moe_utils permute and
    unpermute; an all-to-all's buffers are these copies)."""
    if not (workload.experts and workload.experts > 1 and workload.experts_per_token):
        return 0.0
    return 2.0 * (workload.experts_per_token + 1.0) * h


def autocast_stream_work(
    workload: Workload, h: float, kv: float, separate_qkv: bool
) -> tuple[float, float]:
    """(16-bit elements, fp32 elements) one token's eager layer adds to its forward under
    autocast over an fp32 model, whose residual stream stays fp32 (AUTOCAST_STREAM_FP32_ELEMS
    and the casts into each linear that reads a norm; the Llama family's no-op RMSNorm casts
    and its fp32 RoPE on q, h wide, and k, kv wide: AUTOCAST_ROPE_ELEMS).
    Other kernel libraries (Inductor, the fused trainers) fuse the casts into the kernels
    around them: none counted."""
    if workload.kernels is not KernelLibrary.EAGER:
        return 0.0, 0.0
    if workload.gated_mlp:
        casts = 3.0 + 2.0  # q, k, v; gate, up
        fp32 = AUTOCAST_GATED_STREAM_FP32_ELEMS * h
        rope16, rope32 = AUTOCAST_ROPE_ELEMS
        sixteen = -fp32 - 2.0 * RMSNORM_EAGER_ELEMS * h + casts * h
        sixteen += (rope16 - ROPE_EAGER_ELEMS) * (h + kv)
        return sixteen, fp32 + casts * h + rope32 * (h + kv)
    casts = (3.0 if separate_qkv else 1.0) + 1.0  # Q, K, V or one packed QKV; fc1
    fp32 = AUTOCAST_STREAM_FP32_ELEMS * h
    return -fp32 + casts * h, fp32 + casts * h


def autocast_activation_work(workload: Workload, f: float) -> tuple[float, float]:
    """(16-bit elements, fp32 elements) one token's eager activation adds to its layer's forward
    under autocast (AUTOCAST_ACTIVATION_ELEMS against EAGER_ACTIVATION's 16-bit count)."""
    if workload.kernels is not KernelLibrary.EAGER or workload.gated_mlp:
        return 0.0, 0.0
    if workload.hidden_act not in AUTOCAST_ACTIVATION_ELEMS:
        return 0.0, 0.0
    sixteen, fp32 = AUTOCAST_ACTIVATION_ELEMS[workload.hidden_act]
    return (sixteen - EAGER_ACTIVATION[workload.hidden_act][1]) * f, fp32 * f


def transformer_work(workload: Workload) -> LayerWork:
    """A transformer's classes from hidden size h, layers L, sequence s, heads, FFN width f and
    vocabulary V: attention FLOPs 4 s span h per layer (Kaplan et al. 2020's 2 x 2 n_ctx
    d_attn per token), the rest of the workload's forward FLOPs dense matmuls."""
    h = float(workload.hidden_size or 0)
    layers = float(workload.num_layers or 0)
    s = float(workload.seq_len or 0)
    heads = float(workload.num_heads or max(h / DEFAULT_HEAD_DIM, 1.0))
    kv_share = float(workload.kv_heads or heads) / heads
    f = float(workload.ffn_hidden_size or 4 * h)
    found = structure_of(workload)
    # The workload's own attention field decides (the classic entries state none: eager, as
    # DLE's BERT and Transformer-XL run), so `--set model.attention=flash` reaches the compute.
    eager = not workload.flash_attention
    span = s * (found.attention_span if found is not None else 1.0)
    total = workload.forward_flops_per_sample
    attention = min(4.0 * s * span * h * layers, total)
    experts = (workload.experts_per_token or 1) if workload.experts else 1
    eager_passes = found.score_passes if found is not None else EAGER_SCORE_PASSES
    eager_backward = (
        found.score_backward_passes if found is not None else EAGER_SCORE_BACKWARD_PASSES
    )
    layer = layer_pointwise(
        workload,
        h,
        h * kv_share,
        f * experts,
        eager_passes,
        attention_bias=found.attention_bias if found is not None else True,
        eager_backward_passes=eager_backward,
    )
    per_token = layers * (layer.elems + moe_dispatch_elems(workload, h))
    per_token += EMBEDDING_ELEMS_PER_HIDDEN * h
    adapter_fp32 = adapter_step = 0.0
    if workload.finetune is not FinetuneMethod.FULL:
        targets = workload.lora_targets
        per_token += layers * lora_adapter_elems(
            h, f * experts, kv_share, workload.gated_mlp, targets
        )
        adapter_step = (
            layers * s * eager_adapter_elems(h, f * experts, kv_share, workload.gated_mlp, workload)
        )
        if workload.fp32_adapters:
            fp32, sixteen = fp32_adapter_elems(
                h, f * experts, kv_share, workload.gated_mlp, targets, workload.adapter_autocast
            )
            per_token += layers * sixteen
            adapter_fp32 = layers * fp32 * s
    stream16, stream32 = autocast_stream_work(
        workload, h, h * kv_share, found.separate_qkv if found is not None else False
    )
    act16, act32 = autocast_activation_work(workload, f * experts)
    vocab = float(workload.vocab_size or (found.vocab if found is not None else 0) or 0)
    score = score_backward = 0.0
    head_dim = h / heads
    # Eager QK^T / AV write or read the s x span scores: 2 head_dim FLOPs per element moved.
    # Fused attention keeps them on chip and runs at a share of a large GEMM's efficiency
    # (dlrig.model.compute: FLASH_ATTENTION_SHARE, or less on warpgroup-MMA cards).
    attention_width = 2.0 * head_dim
    if eager:
        score = layer.score_passes * heads * s * span * layers
        score_backward = layer.score_backward_passes * heads * s * span * layers
    else:
        attention_width = math.inf
    gemm_flops = total - min(4.0 * s * span * h * layers, total)
    routed = 0.0
    if workload.experts and workload.experts_per_token:
        # Each token runs k of the E experts' MLPs: 2 FLOPs per weight of k/E of them.
        share = workload.experts_per_token / workload.experts
        routed = min(2.0 * s * expert_params(workload) * share, gemm_flops)
    return LayerWork(
        gemm_flops=gemm_flops,
        gemm_width_elems=transformer_layer_width(h, f, kv_share),
        conv_flops=0.0,
        conv_width_elems=math.inf,
        winograd_share=0.0,
        attention_flops=attention,
        attention_width_elems=attention_width,
        pointwise_elems=per_token * s,
        score_elems=score,
        score_backward_elems=score_backward,
        loss_fp32_elems=loss_passes(workload) * vocab * s,
        kernels_forward=layer.kernels * layers + KERNELS_OUTSIDE_LAYERS,
        tensor_elems=s * h,
        lm_head_flops=min(2.0 * h * vocab * s, total),
        lm_head_width=int(vocab),
        fused_attention=not eager,
        linears=layers * (LINEARS_PER_LAYER + (1.0 if workload.gated_mlp else 0.0)),
        autocast_fp32_elems=layers * layer.fp32_elems * s,
        adapter_fp32_elems=adapter_fp32,
        expert_gemm_flops=routed,
        expert_width_elems=_linear_width(h, f) if routed else math.inf,
        expert_rows_per_sample=s * experts / workload.experts
        if routed and workload.experts
        else math.inf,
        adapter_step_elems=adapter_step,
        fp32_model_elems_16bit=layers * stream16 * s,
        fp32_model_elems_fp32=layers * stream32 * s,
        autocast_elems_16bit=layers * act16 * s,
        autocast_elems_fp32=layers * act32 * s,
        parameter_tensors=layers
        * (PARAMETER_TENSORS_PER_GATED_LAYER if workload.gated_mlp else PARAMETER_TENSORS_PER_LAYER)
        + (
            PARAMETER_TENSORS_OUTSIDE_GATED_LAYERS
            if workload.gated_mlp
            else PARAMETER_TENSORS_OUTSIDE_LAYERS
        ),
        parameter_matrices=layers * (LINEARS_PER_LAYER + (1.0 if workload.gated_mlp else 0.0))
        + (
            PARAMETER_MATRICES_OUTSIDE_GATED_LAYERS
            if workload.gated_mlp
            else PARAMETER_MATRICES_OUTSIDE_LAYERS
        ),
    )


def classic_work(workload: Workload) -> LayerWork:
    """A convnet, recurrent or speech model from its saved activations and the counts in
    `CLASSIC_STRUCTURE` (a ResNet-like convnet by default); a convnet whose batch norms apply
    their ReLU and residual add (`fused_norm_activation`) moves FUSED_NORM_ACTIVATION_SHARE of
    the eager elements and launches no ReLU or add kernels."""
    found = structure_of(workload) or Structure()
    total = workload.forward_flops_per_sample
    pointwise = found.pointwise_elems
    if pointwise is None:
        pointwise = POINTWISE_PASSES * workload.activation_bytes_per_sample / 4.0
    # one activation tensor of a sample: the eager passes over the eager kernel count
    tensor_elems = pointwise / POINTWISE_PASSES / max(found.kernels_forward, 1.0)
    kernels = found.kernels_forward
    if workload.fused_norm_activation and found.family == "convnet":
        pointwise *= FUSED_NORM_ACTIVATION_SHARE
        kernels -= found.activation_kernels
    tokens = float(workload.seq_len or 0)
    return LayerWork(
        gemm_flops=total * (1.0 - found.conv_share),
        gemm_width_elems=found.gemm_width,
        conv_flops=total * found.conv_share,
        conv_width_elems=found.conv_width,
        winograd_share=found.winograd_share,
        attention_flops=0.0,
        attention_width_elems=math.inf,
        pointwise_elems=pointwise,
        score_elems=0.0,
        loss_fp32_elems=LOSS_FP32_PASSES * float(found.vocab or 0) * tokens,
        kernels_forward=kernels,
        kernels_per_sample=found.kernels_per_sample,
        tensor_elems=tensor_elems,
        gemm_rows_per_sample=found.gemm_rows_per_sample,
        amp_casts_per_kernel=found.amp_casts_per_kernel,
        autocast_fp32_elems=found.autocast_fp32_elems,
        conv_output_elems=found.conv_share
        * workload.activation_bytes_per_sample
        / 4.0
        / SAVED_TENSORS_PER_CONV,
        parameter_tensors=found.parameter_tensors,
    )


def layer_work(workload: Workload) -> LayerWork:
    """The forward work of one sample of `workload`, by layer class: a transformer when the
    structure says so or the workload states hidden size, layers and sequence length."""
    found = structure_of(workload)
    if found is not None:
        transformer = found.family == "transformer"
    else:
        transformer = bool(workload.hidden_size and workload.num_layers and workload.seq_len)
    return transformer_work(workload) if transformer else classic_work(workload)
