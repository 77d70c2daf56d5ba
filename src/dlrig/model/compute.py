"""GPU compute per step: a roofline per layer class (dlrig.model.layers).

Each class of kernels runs at its own bound, and the classes add (they are separate kernels):

- dense matmuls and attention-score matmuls: FLOPs / (rate x GEMM efficiency x width factor),
  the width factor w / (w + w_half) for a GEMM as narrow as w elements (tiles and waves of a
  narrow GEMM leave SMs idle);
- convolutions: FLOPs / (rate x convolution efficiency), minus what Winograd saves on shader
  cores;
- norms, activations, residuals, attention scores when materialised, the optimizer step:
  bytes / (achievable bandwidth x memory efficiency);
- each kernel's fixed cost on the GPU beyond its FLOPs and bytes (`gpu_kernel_s`, fitted:
  ramp, tail and the gaps between dependent kernels).

The host launches the kernels while the GPU runs the earlier ones: its dispatch
(`host_kernel_s` a kernel, fitted) overlaps the GPU's work and binds only when the host is the
slower of the two (`overlapped_s`). A step replayed as a CUDA graph is launched in one host
call: its kernels keep their GPU-side cost and the host's share is gone (PyTorch blog,
"Accelerating PyTorch with CUDA Graphs", 2021-10-26).

Every efficiency is a share of an achievable rate, at most 1, shared by all models on a path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlrig.model import memory
from dlrig.model.layers import FLASH_ATTENTION_SHARE, LayerWork
from dlrig.model.rates import ComputePath
from dlrig.units import BITS_PER_BYTE, gb_s_to_bytes_s
from dlrig.workloads.model import FinetuneMethod, Mode, OptimizerStep, QuantizedBase, Workload

# cuDNN runs 3x3 stride-1 convolutions on shader cores with Winograd F(2x2, 3x3), 2.25x fewer
# multiplications than the counted direct convolution (Lavin & Gray 2016, "Fast Algorithms for
# Convolutional Neural Networks", arXiv:1509.09308, table 1). Bounded at that factor: the
# larger F(4x4, 3x3) tiles lose fp32 accuracy and cuDNN uses them rarely.
WINOGRAD_FLOP_REDUCTION = 2.25
# Where a TF32 run's 3x3 convolutions take FP32 Winograd on the shaders (tf32_conv_s): Ampere,
# whose GA10x shaders match (GeForce) or reach half (RTX A-series, A10, A40) their tensor
# cores' dense TF32 rate. Lambda's TF32 rows show it (leave-one-architecture-out): the tensor
# path alone predicted GeForce GA10x cards at 0.67-0.75 of their measured rate on SSD300 and
# 0.76-0.85 on ResNet-50 and Mask R-CNN, with the choice 0.96-1.10; the A100 stays at
# 0.81-1.14. Ada's cards, at the same shader-to-tensor ratios, ran what the tensor path alone
# predicts (RTX 4090 ResNet-50 1.01, RTX 6000 Ada 1.16; with the shaders 1.20 and 1.24), so
# cuDNN's kernels for Ada keep the tensor cores; Hopper's and Blackwell's tensor cores outrun
# their shaders 7-14x and the choice never falls to the shaders.
SHADER_WINOGRAD_ARCHITECTURES = frozenset({"Ampere"})
# 16-bit tensor-core convolutions run on NHWC tensors; on PyTorch's default NCHW "the NCHW
# tensor must be transposed to NHWC before the convolution and transposed back to NCHW after"
# (MosaicML Composer, "Channels Last" method card, docs.mosaicml.com, after NVIDIA's diagram),
# a read and a write of each: 4 element moves per output element in the forward, as many
# again per backward pass (traffic_multiplier). Measured on the same GPUs, the same
# DeepLearningExamples ResNet-50 with AMP: NHWC (its configs.yml, AMP: memory_format nhwc)
# 1,200 img/s on V100 SXM2 16GB and 2,470 on A100 SXM4 80GB (bench/data/external_training.csv)
# against Lambda's NCHW runs (no --memory-format: DLE's default nchw, logged as
# "memory_format : nchw") 833 and 1,582 (data/calibration, v1): 1.44x and 1.56x; FP32/TF32,
# NCHW in both, agree within 1-12%.
NCHW_TRANSPOSE_MOVES = 4.0
# TF32 convolutions before Blackwell transpose their input only. cuDNN's TF32 tensor-core
# kernels read NHWC activations and write NCHW output: the family
# sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw (activations NHWC, filters
# KRSC, output NCHW, by cuDNN's naming) runs TF32 on Ampere (its sm80 and sm86 builds) and on
# Hopper (the sm80 build), there with an nchwToNhwcKernel<float> beside it and no transpose
# back (public profiles read 2026-12-07; none could be pinned to a repository, so none is
# cited); Ada is taken to run the same family (no profile of it seen). cuDNN "may use
# padding, folding, and NCHW-to-NHWC transformations to call the Tensor Core operations"
# (cuDNN developer guide, Legacy API, Data and Filter Formats). So a read and a write of the
# input: 2 moves per output element, of 4-byte elements. Looked for with Lambda's TF32
# convnets in view, which ran 10-18% below their fp16 relative to dlrig on Ampere, Ada and
# Hopper alike (bench/provenance.toml); the count is the kernels', not fitted. On GeForce
# Ampere, where shader Winograd takes the 3x3 convolutions (tf32_conv_s), those skip the
# transpose and the count is then high by their share of outputs.
NCHW_INPUT_TRANSPOSE_MOVES = 2.0
# Where cuDNN runs TF32 convolutions on NHWC-in, NHWC-out kernels, so that an NCHW model's
# TF32 convolutions pay the same transposes as its 16-bit ones: Blackwell. That rests on
# Lambda's runs alone (a profile of it was seen but its source could not be pinned down, so it
# is not cited): Lambda's B200 (NGC 25.06, PyTorch 2.8.0a0, CUDA 12.9; its log's
# `memory_format : nchw`) ran NCHW ResNet-50 at 2,967 img/s in TF32 and 3,076 in fp16 (1.04x)
# where the H100 SXM5's fp16 ran 1.47x its TF32: both precisions bound by the same transposes
# (chosen on those rows: bench/provenance.toml).
NHWC_TF32_CONVOLUTION_ARCHITECTURES = frozenset({"Blackwell", "Blackwell Ultra"})
# Lane-instructions a memory-bound (pointwise) kernel spends per element it reads or writes:
# the load or store, the index arithmetic, the op itself in fp32 (PyTorch's opmath) and a
# 16-bit element's conversion. Such kernels are bound by whichever is slower, their bytes at
# the card's bandwidth or their instructions at its issue rate (memory_bound_s, the bound the
# NCHW transposes take too). At 16 an element the bytes bind wherever a card issues more than
# 8 lane-instructions per byte of bandwidth: an A100 9.6 (19.5 T a second for 2,039 GB/s), an
# H100 SXM5 10 (33.5 T for 3,352), a GeForce card 18-40. The HBM3e cards grew their bandwidth
# past their SMs, an H200 7.0 (33.5 T for 4,800) and a B200 4.9 (37.5 T for 7,700; NVIDIA's
# datasheets: FP32 67 and 75 TFLOPS, 2 FLOPs a lane-instruction), so that their 16-bit
# pointwise kernels run at the SMs' rate, not the HBM's. Measured on a B200 (CCCL's
# DeviceTransform benchmarks of PyTorch's element-wise ops, github.com/NVIDIA/cccl/pull/7391,
# 2^28 fp16 elements): relu moved 6.55 TB/s (its bytes bind), div 5.74 TB/s (13 issue slots a
# move), gelu 2.83 TB/s (26 a move): the op decides, and a training step mixes cheap ops
# (adds, relu, casts) with costly ones (GELU, dropout's random numbers, softmax's exp, the
# norms' reductions). 16, inside that measured range, was chosen on Lambda's 2025 fp16 rows
# (bench/provenance.toml): the B200's BERT-base and BERT-large fp16 rows moved from 44% and
# 23% fast to 16% and 2%, its NCHW ResNet-50 and SSD300 fp16 from 44% and 25% fast to 29%
# and 12%, while its GNMT fp16 went from 5% fast to 11% slow. Counted on the moves the model
# sends to DRAM (after its L2 hits, l2_hit): an L2-resident tensor's kernels are short, and
# their time is what the fitted cost a kernel (gpu_kernel_s) stands for; counting their
# instructions as well put dlrig's own H200 jobs (bench_h200) at a 14.8% step median against
# 10.5%.
POINTWISE_INSTRUCTIONS_PER_MOVE = 16.0
# The backward pass moves about twice the forward's pointwise bytes (reads the saved input and
# the incoming gradient, writes the outgoing one) and launches about twice its kernels.
BACKWARD_TRAFFIC = 2.0
# The host's dispatch of one eager kernel of a decoding step on today's PyTorch. Llama 3.1 8B's
# eager decode step took 8.4 ms on an H100 SXM5 and 5.1 ms as a CUDA graph (cloudai.pt, "CUDA
# Graphs + torch.compile: 1.65x LLM Decode Speedup", read 2026-12-03): launch-bound, 8.4 ms
# over the 558 kernels dlrig.model.layers counts for that forward in eval mode (no dropout:
# layers.runs_dropout) = 15 us per kernel, where the graphed 5.1 ms is the 16 GB of weights at
# the H100's achievable 3 TB/s (the tiny kernels cost nothing beyond their reads). A training
# step's kernels dispatch through autograd and, in recurrent models, Python loops: their host
# cost is fitted (`host_kernel_s`).
HOST_DISPATCH_S = 15e-6
# Half of the pointwise moves are reads of the tensor the previous kernel just wrote; those hit
# L2 when the tensor fits in it (Ada's 72-96 MB L2 holds a layer's activations that GA102's 6 MB
# cannot). Writes still reach DRAM when the lines are evicted.
L2_READ_SHARE = 0.5
# Tensor-core GEMM kernels load their operands 16 bytes at a time; a dimension that is not a
# multiple of 16 bytes (a 50,257-word vocabulary in 16-bit) sends cuBLAS to kernels without
# those loads and at a lower occupancy (NVIDIA, "Matrix Multiplication Background User's
# Guide", Tensor Core Requirements: most efficient at multiples of 8 fp16 elements). Measured:
# padding nanoGPT's GPT-2 vocabulary from 50,257 to 50,304 made its A100 training step ~25%
# faster (A. Karpathy, 2023-02, quoted at simonwillison.net/tags/andrej-karpathy); this
# model's gpt2 step on an A100 SXM4 40GB gives 1.24x when the unaligned projection runs at
# 0.4 of the aligned one's efficiency (tests/model/test_layers.py). Applied to 16-bit operands
# only: that is the measured case.
UNALIGNED_GEMM_SHARE = 0.4
TENSOR_CORE_ALIGN_BYTES = 16
# What bounds those kernels is not the tensor cores: small-alignment tensor-op kernels
# (CUTLASS's align1/align2 templates, github.com/NVIDIA/cutlass/issues/459, 2022-04-13) issue
# one load instruction per 2-4 operand bytes instead of one per 16, so the SM's instruction
# issue sets their rate, and that follows the card's shader throughput whatever its tensor
# cores add. The share of the tensor rate they keep is then the card's FP32 shader / 16-bit
# tensor peak ratio, scaled from the measured A100 (19.5 vs 312 dense TFLOPS: 0.4); NVIDIA's
# guide (above, DU-09799-001, 2023-02) asks the A100 for 128-byte multiples where older parts
# need 16. Lambda's Transformer-XL rows (a 267,735-word head, 63% of the FLOPs;
# lambda_pytorch_train_v1_2024.csv, read 2026-12-03) show it: fp16 over TF32 throughput is
# 1.36-1.52x on A100 and H100 (16-bit tensor rate 15-16x their FP32 rate) but 1.78-1.89x on
# the RTX 3090, A10, RTX A6000, RTX 4090 and RTX 6000 Ada (4x or less), near BERT-large's
# aligned 2.0-2.2x on the same cards.
A100_TENSOR_PER_SHADER = 312.0 / 19.5
# FP8 training recipes convert the linear layers only: Transformer Engine's fp8_autocast runs
# te.Linear-family modules in FP8 while attention (fused or not) stays in 16-bit, and torchao's
# float8 training converts nn.Linear modules and leaves the output projection in 16-bit
# (torchtitan's float8 converter skips `output`; Megatron keeps its output layer in 16-bit).
# Those parts run at the 16-bit tensor rate, half the FP8 datasheet rate on every card with FP8
# tensor cores (H100 SXM 989.5 vs 1979, L40S 362 vs 733, B200 2250 vs 4500 dense TFLOPS).
# Measured: NeMo Llama 3.1 8B on 8 H100 runs 1.335x faster in FP8 than in bf16, 70B on 64
# H100 1.337x (NVIDIA dgxc-benchmarking llama3.1 README_8b/README_70b @143b90d, 2025-06-09),
# where every FLOP at the FP8 rate gave 1.72x/1.60x (bench/bench_external_llm.py).
FP8_PER_16BIT_RATE = 2.0


def unaligned_gemm_share(tensor_flops_s: float, shader_flops_s: float) -> float:
    """Share of the aligned efficiency a 16-bit GEMM with an unaligned dimension keeps on a
    card of these datasheet 16-bit tensor and FP32 shader rates: UNALIGNED_GEMM_SHARE at the
    A100's ratio, more where the shader rate is larger against the tensor rate, at most 1."""
    if tensor_flops_s <= 0 or shader_flops_s <= 0:
        return UNALIGNED_GEMM_SHARE
    ratio = A100_TENSOR_PER_SHADER * shader_flops_s / tensor_flops_s
    return min(1.0, UNALIGNED_GEMM_SHARE * ratio)


def cuda_core_gemm_share(fp32_gemm_tflops: float, tensor_gemm_tflops: float) -> float:
    """The same share where cuBLAS sends the unaligned GEMM to the CUDA cores
    (Workload.unaligned_tensor_cores false): the card's sustained FP32 GEMM rate over its
    sustained 16-bit tensor rate. NVIDIA's guide (DU-09799-001, Tensor Core Requirements,
    Table 1) gives cuBLAS before 11.0 tensor cores for 16-bit operands only at multiples of 8,
    and cuBLAS 11.0 and later always; PyTorch's 16-bit matmul accumulates in FP32
    (cublasGemmEx, CUDA_R_32F), the CUDA cores' FP32 pipe. Lambda's 2020 Transformer-XL fp16 on
    a Quadro RTX 8000 (CUDA 10.2) ran 1.52x its fp32 throughput, where the same card on CUDA
    11.8 ran 2.75x."""
    if fp32_gemm_tflops <= 0 or tensor_gemm_tflops <= 0:
        return UNALIGNED_GEMM_SHARE
    return min(1.0, fp32_gemm_tflops / tensor_gemm_tflops)


def training_flop_multiplier(workload: Workload) -> float:
    """FLOPs of a step per forward FLOP: forward 1 + backward 2 (activation and weight
    gradients); frozen weights (LoRA/QLoRA) skip the weight gradients; activation
    checkpointing recomputes the forward of the layers it checkpoints once
    (Workload.recompute_share), selective checkpointing every second linear of each layer
    (memory.selective_gemm_recompute_share; the output projection, outside the layers, is
    counted with them). Inference runs the forward only."""
    if workload.mode is Mode.INFERENCE:
        return 1.0
    backward = 2.0 if workload.finetune is FinetuneMethod.FULL else 1.0
    if workload.selective_checkpointing:
        return 1.0 + backward + memory.selective_gemm_recompute_share(workload)
    return 1.0 + backward + workload.recompute_share


def attention_flop_multiplier(workload: Workload) -> float:
    """FLOPs of a step per forward FLOP of the attention scores (QK^T, PV): their backward
    (dS, dV, dQ, dK) has no weights to freeze, so it stays 2x the forward under LoRA/QLoRA
    too; activation checkpointing recomputes the forward once (selective checkpointing keeps
    the attention's output: none). NeMo AutoModel LoRA on H100
    at 4,096 tokens (bench/data/external_llm.csv): Llama 3.1 8B predicted +13.3% fast with
    the linears' 1x backward applied to attention, +3.9% without."""
    if workload.mode is Mode.INFERENCE:
        return 1.0
    return 1.0 + 2.0 + workload.recompute_share


def traffic_multiplier(workload: Workload) -> float:
    """Pointwise bytes and kernels of a step per forward pass: 1 + the backward's 2 in
    training, plus a recomputed forward under activation checkpointing (all of it under
    selective checkpointing: Workload.pointwise_recompute_share)."""
    if workload.mode is Mode.INFERENCE:
        return 1.0
    return 1.0 + BACKWARD_TRAFFIC + workload.pointwise_recompute_share


def width_factor(width_elems: float, ridge_elems: float) -> float:
    """Share of a class's large-size efficiency reached at `width_elems` FLOPs per operand
    element: w / (w + ridge), the additive roofline of a kernel whose compute time is F/rate
    and whose operand traffic is F/w elements. `ridge_elems` is the device's rate over its
    bandwidth in FLOPs per operand element (times the fitted intensity scale)."""
    if math.isinf(width_elems):
        return 1.0
    return width_elems / (width_elems + ridge_elems)


def gemm_call_width(layer_width_elems: float, rows: float) -> float:
    """FLOPs per operand element of a GEMM call with `rows` rows (M) through a layer whose
    K and N give `layer_width_elems`: 2MKN / (MK + KN + MN) = 1 / (1/w + 1/(2M)). Many rows
    (tokens, pixels) leave the layer's width; a recurrent step's few rows re-read the weights
    for little work."""
    if math.isinf(rows):
        return layer_width_elems
    return 1.0 / (1.0 / layer_width_elems + 1.0 / (2.0 * rows))


def expert_rows(work: LayerWork, workload: Workload, samples: float) -> float:
    """Rows of one routed expert's GEMM on one GPU: the micro-batch's tokens x k / E with
    routing balanced, of its 1/context of each sequence, and from every rank of its expert
    group (expert parallelism sends each GPU the tokens of its E/expert experts from
    `expert` ranks: why it raises the rows, and the weights are read once per call)."""
    if math.isinf(work.expert_rows_per_sample):
        return math.inf
    split = workload.expert_parallel / workload.context_parallel
    return work.expert_rows_per_sample * samples * split


def operand_bytes(path: str) -> float:
    """Bytes of one matmul operand element on a compute path: 1 for FP8, 2 for 16-bit tensor
    cores, 4 for TF32 (stored as fp32) and on shader cores (GPU.3: 16-bit computes in fp32)."""
    return {"tensor_fp8": 1.0, "tensor_16bit": 2.0}.get(path, 4.0)


def unaligned_extra_flops(
    work: LayerWork, operand_bytes: float, share: float = UNALIGNED_GEMM_SHARE
) -> float:
    """FLOPs to add to the dense GEMMs so that the vocabulary projection runs at `share` of
    their efficiency (unaligned_gemm_share) when its width is not a multiple of the tensor
    cores' 16-byte loads (16-bit operands; 0 otherwise)."""
    if operand_bytes != 2.0 or work.lm_head_flops <= 0:
        return 0.0
    if work.lm_head_width % int(TENSOR_CORE_ALIGN_BYTES / operand_bytes) == 0:
        return 0.0
    return work.lm_head_flops * (1.0 / share - 1.0)


def l2_hit(l2_bytes: float, tensor_bytes: float) -> float:
    """Share of an activation tensor still in L2 when the next op reads it: all of it when it
    fits, else the part the cache holds."""
    if l2_bytes <= 0 or tensor_bytes <= 0:
        return 0.0
    return min(1.0, l2_bytes / tensor_bytes)


def bandwidth_time_s(n_bytes: float, bandwidth_gb_s: float, efficiency: float) -> float:
    """Time to move n_bytes through memory at the achievable share of its bandwidth."""
    return n_bytes / (gb_s_to_bytes_s(bandwidth_gb_s) * efficiency)


def moves_16bit_activations(sixteen_bit: bool, path: str) -> bool:
    """Whether the memory-bound kernels move 16-bit tensors. Not on a GPU without fast 16-bit
    (GPU.3): there every op computes in fp32, and autocast's conversions around each one eat
    the saving (Lambda measured only 1.17x from fp16 on a GTX 1080 Ti)."""
    return sixteen_bit and path != "simt_16bit"


def nchw_transposes(
    work: LayerWork, workload: Workload, operand_bytes: float, *, on_shader_cores: bool
) -> bool:
    """Tensor-core convolutions on PyTorch's default NCHW tensors, which cuDNN transposes:
    16-bit and TF32 ones (nchw_transpose_moves says how much)."""
    if on_shader_cores or workload.channels_last or work.conv_output_elems <= 0:
        return False
    return operand_bytes in (2.0, 4.0)


def nchw_transpose_moves(operand_bytes: float, tf32_nhwc: bool) -> float:
    """Element moves per convolution output element in the forward: input and output for
    16-bit convolutions and for TF32 ones where `tf32_nhwc` (NHWC_TF32_CONVOLUTION_ARCHITECTURES,
    NCHW_TRANSPOSE_MOVES), the input alone for other TF32 ones (NCHW_INPUT_TRANSPOSE_MOVES)."""
    if operand_bytes == 2.0 or tf32_nhwc:
        return NCHW_TRANSPOSE_MOVES
    return NCHW_INPUT_TRANSPOSE_MOVES


def transposes_s(
    element_moves: float,
    elem_bytes: float,
    bandwidth_bytes_s: float,
    issue_rate: float,
    instructions_per_move: float,
) -> float:
    """Seconds of cuDNN's NCHW <-> NHWC transposes: `element_moves` DRAM reads and writes of
    `elem_bytes` each, each costing `instructions_per_move` lane-instructions of index
    arithmetic (a transform kernel finds an element's place in the other layout by dividing its
    index by the tensor's dimensions); the slower bound holds (memory_bound_s). On cards that
    issue few instructions per byte of memory bandwidth (A100: 19.5 T a second for 2,039 GB/s;
    H100 SXM: 33.5 T for 3,352) the instructions bind, and Lambda's NCHW fp16 ResNet-50 on them
    (1,582 and ~2,700 img/s at batch 1280) is predicted within 10% (tests/model/test_layers.py);
    on V100 and GeForce cards the bytes still bind. `issue_rate` 0 (unknown): the bytes alone."""
    return memory_bound_s(
        element_moves * elem_bytes, element_moves, bandwidth_bytes_s, issue_rate,
        instructions_per_move,
    )  # fmt: skip


def memory_bound_s(
    moved_bytes: float,
    element_moves: float,
    bandwidth_bytes_s: float,
    issue_rate: float,
    instructions_per_move: float,
) -> float:
    """Seconds of memory-bound kernels that move `moved_bytes` in `element_moves` element
    reads and writes, each costing `instructions_per_move` lane-instructions: the slower of the
    bytes at the bandwidth and the instructions at `issue_rate` (0, unknown: the bytes)."""
    memory = moved_bytes / bandwidth_bytes_s
    if issue_rate <= 0:
        return memory
    return max(memory, element_moves * instructions_per_move / issue_rate)


# An optimizer run op by op (PyTorch's torch.optim without `fused=True`: its per-tensor loop, and
# its foreach path, which batches the launches but not the bytes; hand-written steps such as
# BERT's BertAdam) reads and writes whole tensors in every op, where a fused kernel (apex
# FusedAdam, `fused=True`) reads the weight, gradient and moments once and writes them once.
# Element moves per parameter, counted from torch/optim/adam.py and sgd.py
# `_single_tensor_adam` / `_single_tensor_sgd` (pytorch v1.13): Adam's
# `exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)` 2 + 3, `exp_avg_sq.mul_(beta2).addcmul_(grad,
# grad, value=1 - beta2)` 2 + 3, `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`
# 2 + 2 + 2, `param.addcdiv_(exp_avg, denom, value=-step_size)` 4 = 20; AdamW first decays the
# weight, `param.mul_(1 - lr * weight_decay)` 2 more = 22; SGD with momentum,
# `buf.mul_(momentum).add_(d_p, alpha=1 - dampening)` 2 + 3 and `param.add_(d_p, alpha=-lr)` 3
# = 8 (fused: 5). An 8-bit optimizer is a fused kernel (bitsandbytes).
UNFUSED_OPTIMIZER_MOVES: dict[str, float] = {"adam": 20.0, "adamw": 22.0, "sgd": 8.0}


def optimizer_step_bytes_per_param(
    optimizer: str, pure_16bit: bool, *, fused: bool = True
) -> float:
    """Bytes an optimizer step moves per trainable parameter. Fused: the weight and its
    gradient read and the weight written (fp32, or 16-bit in pure 16-bit training), each
    moment read and written at its width (memory.moment_bytes): SGD momentum 5 x 4 B, Adam
    7 x 4 B, AdamW 8-bit 3 x 4 + 4 x 1 B. Op by op (`fused` false): every op's reads and
    writes at the state's width (UNFUSED_OPTIMIZER_MOVES: Adam 20 x 4 B)."""
    value = 2.0 if pure_16bit else 4.0
    if not fused and optimizer in UNFUSED_OPTIMIZER_MOVES:
        return UNFUSED_OPTIMIZER_MOVES[optimizer] * value
    moments = memory.optimizer_moments(optimizer)
    return 3.0 * value + 2.0 * moments * memory.moment_bytes(optimizer, pure_16bit)


# The kernels the same loop launches per tensor: Adam's mul_, add_, mul_, addcmul_, sqrt, div,
# add_, addcdiv_ = 8; AdamW's decay mul_ 9; SGD momentum's mul_, add_, add_ = 3 (the ops above).
UNFUSED_OPTIMIZER_OPS: dict[str, float] = {"adam": 8.0, "adamw": 9.0, "sgd": 3.0}
# torch.nn.utils.clip_grad_norm_ before PyTorch 1.10, called on one tensor, runs a norm, a stack,
# the norm of the stack, + 1e-6, max_norm / that, the `clip_coef < 1` test and the mul_ = 7
# kernels, and the test copies a GPU value to the host: the host stops until the GPU has run
# everything queued (pytorch/pytorch#60691, "bad GPU utilization due to GPU-data-dependent
# control-flow", 2021-06-24; removed by #61042, 2021-07, for 1.10). A loop that clips each
# tensor before stepping it (DLE BERT's BertAdam, optimization.py, `clip_grad_norm_(p,
# group['max_grad_norm'])` inside `for p in group['params']`) waits once per tensor.
CLIP_OPS_PER_TENSOR = 7.0


def optimizer_loops(workload: Workload) -> bool:
    """A training step whose optimizer is a Python loop over the parameter tensors
    (OptimizerStep.PER_TENSOR, PER_TENSOR_SYNCED): its launches are timed apart from the rest
    of the step (optimizer_phase_s)."""
    return workload.mode is Mode.TRAINING and workload.optimizer_step in (
        OptimizerStep.PER_TENSOR,
        OptimizerStep.PER_TENSOR_SYNCED,
    )


def optimizer_host_s(work: LayerWork, workload: Workload) -> float:
    """Seconds per micro-batch the host spends dispatching a per-tensor optimizer loop: its ops
    per tensor (UNFUSED_OPTIMIZER_OPS, plus CLIP_OPS_PER_TENSOR where it clips each tensor and
    waits) over `parameter_tensors` at HOST_DISPATCH_S each, once per `gradient_accumulation`
    micro-batches; 0 for another step or a model whose tensors are not counted."""
    if not optimizer_loops(workload):
        return 0.0
    ops = UNFUSED_OPTIMIZER_OPS.get(workload.optimizer.value, 0.0)
    if workload.optimizer_step is OptimizerStep.PER_TENSOR_SYNCED:
        ops += CLIP_OPS_PER_TENSOR
    per_step = work.parameter_tensors * ops * HOST_DISPATCH_S
    return per_step / max(1, workload.gradient_accumulation)


def optimizer_phase_s(
    work: LayerWork, gpu_s: float, host_s: float, workload: Workload
) -> tuple[float, float]:
    """(launch-bound, memory-bound) seconds of a per-tensor optimizer loop whose GPU work takes
    `gpu_s` and whose launches `host_s`. The loop follows the backward, after the step's
    gradient clip or loss-scale check has read a GPU value on the host, so the backward's
    kernels do not hide its launches: the slower of the two binds. A loop that waits once per
    tensor binds tensor by tensor: each vector (a bias, a norm's weight) costs its launches,
    each matrix (`parameter_matrices`, sharing the GPU work) the slower of its launches and
    its share of the GPU work; with the matrices not told apart, every tensor shares it."""
    tensors = work.parameter_tensors
    if workload.optimizer_step is not OptimizerStep.PER_TENSOR_SYNCED or tensors <= 0:
        return max(host_s - gpu_s, 0.0), gpu_s
    matrices = work.parameter_matrices if work.parameter_matrices > 0 else tensors
    per_tensor_host = host_s / tensors
    phase = (tensors - matrices) * per_tensor_host
    phase += matrices * max(per_tensor_host, gpu_s / matrices)
    return max(phase - gpu_s, 0.0), gpu_s


def optimizer_bytes(workload: Workload, trainable_params: float) -> float:
    """Bytes the optimizer step moves per micro-batch (0 for inference and for a job that
    steps no optimizer): the step runs once per `gradient_accumulation` micro-batches, so each
    carries 1/k of it."""
    if workload.mode is Mode.INFERENCE or workload.optimizer_step is OptimizerStep.NONE:
        return 0.0
    per_param = optimizer_step_bytes_per_param(
        workload.optimizer.value,
        workload.pure_16bit,
        fused=workload.optimizer_step is OptimizerStep.FUSED,
    )
    return per_param * trainable_params / max(1, workload.gradient_accumulation)


def dequantizes(workload: Workload) -> bool:
    """QLoRA training: the frozen 4-bit weights are dequantized for every matmul pass."""
    return workload.mode is Mode.TRAINING and workload.finetune is FinetuneMethod.QLORA


def dequantize_bytes(workload: Workload, quantized_params: float) -> float:
    """Bytes one step moves turning 4-bit weights back into 16-bit ones: QLoRA training
    dequantizes each frozen weight before every matmul that multiplies by it, in the forward,
    in the backward's input gradient and in a recomputed forward (bitsandbytes
    `MatMul4Bit`: "1. Dequantize 2. Matmul", `F.dequantize_4bit` then `F.linear`, and again
    in its backward; bitsandbytes/autograd/_functions.py), reading the packed weight and
    writing a 16-bit copy that the matmul then reads as LoRA's would. A GPTQ or AWQ base takes
    the same two steps at training's row counts: AutoAWQ's WQLinear_GEMM dequantizes
    (`awq_ext.dequantize_weights_cuda`) and calls torch.matmul once the input has 1,024 rows
    or more (awq/modules/linear/gemm.py, FP16_MATMUL_HEURISTIC_CONDITION), and again in its
    backward; ExLlamaV2's GPTQ kernel reconstructs the fp16 weight and calls cuBLAS above 50
    rows (exllamav2 q_gemm, MAX_Q_GEMM_ROWS). Per pass, not per sample: a short micro-batch
    pays it in full."""
    if not dequantizes(workload):
        return 0.0
    per_weight = memory.quantized_bits_per_weight(workload) / BITS_PER_BYTE + 2.0
    return quantized_params * per_weight * training_flop_multiplier(workload)


def adapter_fp32_bytes(work: LayerWork, workload: Workload, units: float) -> float:
    """Bytes fp32 LoRA adapters move in a step of `units` samples beyond 16-bit ones
    (layers.fp32_adapter_elems), over the forward, backward and any recompute."""
    return work.adapter_fp32_elems * 4.0 * traffic_multiplier(workload) * units


def decode_bytes_per_step(workload: Workload, weight_bytes: float, batch: int) -> float:
    """Bytes read per decoding step of a language model: every weight once, plus each
    sequence's KV cache over its context."""
    kv = (workload.kv_bytes_per_token or 0.0) * (workload.seq_len or 0) * batch
    return weight_bytes + kv


def decoding(workload: Workload) -> bool:
    """Token-by-token generation with a KV cache: one token per sequence per step."""
    return workload.mode is Mode.INFERENCE and bool(
        workload.kv_bytes_per_token is not None and workload.seq_len
    )


def step_kernels(
    work: LayerWork, workload: Workload, batch: int, *, mixed_precision: bool = False
) -> float:
    """Kernels one step launches: the forward's, plus those launched once per sample, times
    the backward's and any recompute's share, times the casts a function-patching
    mixed-precision recipe adds beside each op, plus QLoRA's dequantisations. Autocast's own
    casts over an fp32 model (layers.autocast_stream_work, weight_cast_bytes) are left out, as eager
    LoRA's small kernels are: the fitted GPU cost per kernel (calibration.toml gpu_kernel_s)
    was fitted on counts without them and stands in for element-wise time the counts miss
    (bench/provenance.toml)."""
    casts = 1.0 + (work.amp_casts_per_kernel if mixed_precision else 0.0)
    forward = work.kernels_forward + work.kernels_per_sample * batch
    return forward * traffic_multiplier(workload) * casts + dequantize_kernels(work, workload)


def autocast_fp32_model(workload: Workload, mixed_precision: bool) -> bool:
    """A 16-bit training step under autocast over the fp32 weights it trains: its residual
    stream is fp32 (memory.residual_bytes) and every weight is cast for each forward."""
    return mixed_precision and memory.residual_bytes(workload, True) == memory.RESIDUAL_BYTES_FP32


def _weight_casts(workload: Workload) -> float:
    """Casts of each weight a step makes under autocast over an fp32 model: one per forward
    (autocast caches a leaf's cast within its region: torch.autocast's `cache_enabled`; a
    checkpointed layer's recompute opens a region of its own and casts again) and the
    16-bit gradient's cast back to fp32 in the backward (the cast's autograd function,
    ToCopyBackward0)."""
    return 1.0 + workload.pointwise_recompute_share + 1.0


def weight_cast_bytes(workload: Workload, params: float, mixed_precision: bool) -> float:
    """Bytes a step moves casting `params` fp32 weights under autocast (autocast_fp32_model):
    each cast reads 4 B and writes 2 B a weight (_weight_casts). Every trainable weight is
    counted, the embeddings that no linear reads included (BERT-large: 31 M of 335 M)."""
    if not autocast_fp32_model(workload, mixed_precision):
        return 0.0
    return params * (4.0 + 2.0) * _weight_casts(workload)


# bitsandbytes' `dequantize_4bit` on double-quantized NF4 weights launches three kernels: the
# blockwise dequantisation of the 8-bit absmax constants, the add of their offset, and the NF4
# dequantisation itself (bitsandbytes/functional.py dequantize_4bit, `quant_state.nested`).
DEQUANTIZE_KERNELS = 3.0
# A GPTQ or AWQ weight dequantizes in one kernel: its constants are plain fp16 scales and
# packed zeros, not quantized again (AutoAWQ `dequantize_weights_cuda`, ExLlamaV2's
# reconstruct kernel).
GROUP_DEQUANTIZE_KERNELS = 1.0


def dequantize_kernels(work: LayerWork, workload: Workload) -> float:
    """Kernels QLoRA's dequantisations launch in a step: DEQUANTIZE_KERNELS (NF4) or
    GROUP_DEQUANTIZE_KERNELS (GPTQ, AWQ) per linear layer per pass that multiplies by its
    weight (dequantize_bytes)."""
    if not dequantizes(workload):
        return 0.0
    nf4 = workload.quantized_base in (None, QuantizedBase.NF4, QuantizedBase.TORCHAO_NF4)
    per_linear = DEQUANTIZE_KERNELS if nf4 else GROUP_DEQUANTIZE_KERNELS
    return work.linears * per_linear * training_flop_multiplier(workload)


def launch_s(
    work: LayerWork, workload: Workload, batch: int, factors: ComputeFactors, *, sixteen_bit: bool
) -> float:
    """Seconds the host spends launching one step's kernels (step_kernels x the fitted host
    seconds per kernel), which overlap the GPU's work (overlapped_s); none for a step replayed
    as a CUDA graph, which the host launches in one call. Not for decoding, whose launches
    queue behind the weight reads (gpu_step_s)."""
    if workload.cuda_graphs:
        return 0.0
    return step_kernels(work, workload, batch, mixed_precision=sixteen_bit) * (
        factors.host_kernel_s
    )


def overlapped_s(gpu_s: float, host_s: float, exponent: float) -> float:
    """A step's time when the host launches kernels while the GPU runs earlier ones: the longer
    of the two, blended where they are close (the power mean (gpu^p + host^p)^(1/p), p =
    `host_overlap_exponent`; p infinite is the plain maximum): the host's launches run ahead of
    long kernels and fall behind short ones, so neither side hides the other entirely when
    their totals match."""
    big = max(gpu_s, host_s)
    if host_s <= 0.0 or gpu_s <= 0.0 or math.isinf(exponent):
        return big
    blend = float((gpu_s / big) ** exponent + (host_s / big) ** exponent)
    return big * float(blend ** (1.0 / exponent))


@dataclass(frozen=True)
class ClassTimes:
    """One step's seconds per layer class at efficiency 1 (divide each by its efficiency),
    and the kernels it launches."""

    gemm_s: float
    conv_s: float
    memory_s: float
    kernels: float


def class_times(
    work: LayerWork,
    workload: Workload,
    batch: int,
    flops_s: float,
    bandwidth_gb_s: float,
    *,
    winograd: bool,
    operand_bytes: float,
    sixteen_traffic: bool,
    optimizer_params: float,
    intensity_scale: float,
    l2_bytes: float = 0.0,
    mixed_precision: bool = False,
    unaligned_share: float = UNALIGNED_GEMM_SHARE,
    unaligned_on_cuda_cores: bool = False,
    attention_share: float = FLASH_ATTENTION_SHARE,
    issue_rate: float = 0.0,
    transpose_instructions: float = 0.0,
    quantized_params: float = 0.0,
    tf32_nhwc: bool = False,
) -> ClassTimes:
    """Seconds per class for `batch` samples at `flops_s` (the path's rate) and
    `bandwidth_gb_s` (achievable), before efficiencies. `winograd`: convolutions run on shader
    cores, where cuDNN's Winograd saves multiplications on the 3x3 share. `operand_bytes`: of
    one matmul operand element on this path (2 for 16-bit, 4 for TF32/FP32).
    `mixed_precision`: a 16-bit run, whose recipe may add cast kernels per op.
    `unaligned_share`: see unaligned_gemm_share; `unaligned_on_cuda_cores`: the unaligned
    GEMM runs on the CUDA cores (cuda_core_gemm_share), whose lower rate its operands'
    traffic does not slow as it slows the tensor cores'. `attention_share`: a fused attention
    kernel's share of a GEMM's efficiency on this card (dlrig.model.rates.flash_attention_share).
    `issue_rate` (lane-instructions per second, dlrig.model.rates.shader_issue_rate) and
    `transpose_instructions` (per element moved) bound the NCHW transposes (transposes_s).
    `quantized_params`: 4-bit weights on this device that QLoRA dequantizes (dequantize_bytes).
    `tf32_nhwc`: TF32 convolutions transpose their output as well as their input
    (nchw_transpose_moves)."""
    flop_mult = training_flop_multiplier(workload)
    traffic = traffic_multiplier(workload)
    units = float(batch)
    if decoding(workload):
        units = batch / float(workload.seq_len or 1)  # one token of each sequence per step
    bandwidth = gb_s_to_bytes_s(bandwidth_gb_s)
    ridge = intensity_scale * operand_bytes * flops_s / bandwidth
    gemm_width = gemm_call_width(work.gemm_width_elems, work.gemm_rows_per_sample * units)
    gemm = work.gemm_flops - work.expert_gemm_flops
    unaligned = unaligned_extra_flops(work, operand_bytes, unaligned_share)
    if not unaligned_on_cuda_cores:
        gemm += unaligned
    sixteen_bit_share = 1.0
    if operand_bytes == 1.0:  # FP8: the LM head and attention run in 16-bit
        sixteen_bit_share = FP8_PER_16BIT_RATE
        head = work.lm_head_flops + unaligned_extra_flops(work, 2.0, unaligned_share)
        gemm += head * (FP8_PER_16BIT_RATE - 1.0)
    gemm /= width_factor(gemm_width, ridge)
    if unaligned_on_cuda_cores:
        gemm += unaligned
    gemm += work.expert_gemm_flops / width_factor(
        gemm_call_width(work.expert_width_elems, expert_rows(work, workload, units)), ridge
    )
    attention = work.attention_flops * sixteen_bit_share
    if work.fused_attention:
        attention /= attention_share
    attention /= width_factor(work.attention_width_elems, ridge)
    conv = work.conv_flops / width_factor(work.conv_width_elems, ridge)
    if winograd:
        conv *= 1.0 - work.winograd_share * (1.0 - 1.0 / WINOGRAD_FLOP_REDUCTION)
    elem_bytes = 2.0 if sixteen_traffic else 4.0
    # the activations' pointwise kernels: their bytes, and their element moves (whatever each
    # element's width), which their instructions follow (POINTWISE_INSTRUCTIONS_PER_MOVE)
    pointwise = work.pointwise_elems * elem_bytes
    moves = work.pointwise_elems
    if sixteen_traffic:
        pointwise += work.autocast_fp32_elems * (4.0 - elem_bytes)
        if memory.runs_autocast(workload, mixed_precision):
            pointwise += work.autocast_elems_16bit * elem_bytes + work.autocast_elems_fp32 * 4.0
            moves += work.autocast_elems_16bit + work.autocast_elems_fp32
        if autocast_fp32_model(workload, mixed_precision):
            pointwise += work.fp32_model_elems_16bit * elem_bytes + work.fp32_model_elems_fp32 * 4.0
            moves += work.fp32_model_elems_16bit + work.fp32_model_elems_fp32
    from_dram = 1.0 - L2_READ_SHARE * l2_hit(l2_bytes, work.tensor_elems * elem_bytes * units)
    pointwise *= from_dram
    moves *= from_dram
    moved = (pointwise + work.score_elems * elem_bytes + work.loss_fp32_elems * 4.0) * traffic
    moves = (moves + work.score_elems + work.loss_fp32_elems) * traffic
    if work.score_backward_elems is not None and workload.mode is Mode.TRAINING:
        # the score chain's backward moves its own count, not BACKWARD_TRAFFIC x its forward
        extra = work.score_backward_elems - BACKWARD_TRAFFIC * work.score_elems
        moved += extra * elem_bytes
        moves += extra
    pointwise_s = memory_bound_s(
        moved * units, moves * units, bandwidth, issue_rate, POINTWISE_INSTRUCTIONS_PER_MOVE
    )
    # the other memory-bound kernels, at their bytes
    other = weight_cast_bytes(workload, optimizer_params, mixed_precision and sixteen_traffic)
    if not optimizer_loops(workload):  # a per-tensor loop is timed apart (optimizer_phase_s)
        other += optimizer_bytes(workload, optimizer_params)
    other += dequantize_bytes(workload, quantized_params) + adapter_fp32_bytes(
        work, workload, units
    )
    # eager LoRA's own passes (counted over the whole step), as cached as the other pointwise
    other += work.adapter_step_elems * 2.0 * units * from_dram
    transposes = 0.0
    if nchw_transposes(work, workload, operand_bytes, on_shader_cores=winograd):
        moves = nchw_transpose_moves(operand_bytes, tf32_nhwc)
        element_moves = moves * work.conv_output_elems * traffic * units
        transposes = transposes_s(
            element_moves, elem_bytes, bandwidth, issue_rate, transpose_instructions
        )
    return ClassTimes(
        gemm_s=(gemm * flop_mult + attention * attention_flop_multiplier(workload))
        * units
        / flops_s,
        conv_s=conv * flop_mult * units / flops_s,
        memory_s=pointwise_s + other / bandwidth + transposes,
        kernels=step_kernels(work, workload, batch, mixed_precision=mixed_precision),
    )


@dataclass(frozen=True)
class Rates:
    """What one device runs a step at: the path's sustained matmul FLOP/s, the path, the
    memory bandwidth in GB/s, the L2 cache in bytes (0 when unknown: no L2 hits counted), the
    share of the GEMM efficiency an unaligned 16-bit GEMM keeps (unaligned_gemm_share, or
    cuda_core_gemm_share where `unaligned_on_cuda_cores`) and
    the one a fused attention kernel keeps (dlrig.model.rates.flash_attention_share).
    TF32 convolutions run on the TF32 tensor cores: PyTorch's `torch.backends.cudnn.allow_tf32`
    defaults to True (PyTorch docs, CUDA semantics, "TensorFloat-32 (TF32) on Ampere (and
    later) devices"), except the 3x3 ones that run faster as FP32 Winograd on the shader cores
    at `shader_flops_s` (0: not an option; tf32_conv_s). `tf32_nhwc_convolutions`: the card's
    cuDNN runs TF32 convolutions on NHWC kernels, transposing NCHW tensors (nchw_transposes)."""

    flops_s: float
    path: str
    bandwidth_gb_s: float
    l2_bytes: float = 0.0
    unaligned_share: float = UNALIGNED_GEMM_SHARE
    unaligned_on_cuda_cores: bool = False
    attention_share: float = FLASH_ATTENTION_SHARE
    issue_rate: float = 0.0
    shader_flops_s: float = 0.0
    tf32_nhwc_convolutions: bool = False


@dataclass(frozen=True)
class ComputeFactors:
    """The fitted, shared factors (model/data/calibration.toml [compute])."""

    matmul_efficiency: dict[str, float]
    conv_efficiency: dict[str, float]
    memory_efficiency: float
    gpu_kernel_s: float
    host_kernel_s: float
    host_overlap_exponent: float
    intensity_scale: float
    transpose_instructions_per_move: float = 0.0


def _seconds_per_tensor_second(rates: Rates, factors: ComputeFactors) -> tuple[float, float]:
    """(tensor cores, shader Winograd) seconds of a 3x3 convolution per second it takes at
    the TF32 tensor rate before efficiency; the shaders' is infinite where they are no option."""
    tensor = 1.0 / factors.conv_efficiency[ComputePath.TENSOR_TF32]
    if rates.shader_flops_s <= 0:
        return tensor, math.inf
    shader = (
        rates.flops_s / rates.shader_flops_s
        / WINOGRAD_FLOP_REDUCTION / factors.conv_efficiency[ComputePath.SIMT_FP32]
    )  # fmt: skip
    return tensor, shader


def shaders_win_3x3(rates: Rates, factors: ComputeFactors) -> bool:
    """A TF32 run's 3x3 convolutions are faster as FP32 Winograd on the shader cores than on
    the tensor cores at these rates and efficiencies (tf32_conv_s)."""
    tensor, shader = _seconds_per_tensor_second(rates, factors)
    return shader < tensor


def tf32_conv_s(
    conv_s: float, winograd_share: float, rates: Rates, factors: ComputeFactors
) -> float:
    """A TF32 step's convolution seconds (`conv_s` at the tensor rate, before efficiency), each
    3x3 convolution on whichever cuDNN finds faster: TF32 implicit GEMM on the tensor cores, or
    FP32 Winograd on the shader cores (WINOGRAD_FLOP_REDUCTION fewer multiplications, at
    `rates.shader_flops_s`). Where a card's FP32 shader rate matches its dense TF32 rate
    (GeForce Ampere: RTX 3090 35.6 and 35.6 TFLOPS, NVIDIA's GA102 whitepaper) the shaders
    win; where the tensor cores run 8x the shaders (A100: 156 against 19.5), they do."""
    tensor, shader = _seconds_per_tensor_second(rates, factors)
    return conv_s * ((1.0 - winograd_share) * tensor + winograd_share * min(tensor, shader))


def gpu_step_s(
    work: LayerWork,
    workload: Workload,
    batch: int,
    rates: Rates,
    factors: ComputeFactors,
    *,
    optimizer_params: float,
    sixteen_bit: bool,
    weight_bytes: float = 0.0,
    quantized_params: float = 0.0,
) -> tuple[float, float]:
    """(compute seconds, memory-bound seconds) of one step on one device: the compute seconds
    carry each kernel's GPU-side cost and whatever the host's launches add where they outlast
    the GPU's work (overlapped_s). Decoding (`weight_bytes` > 0 and a KV cache) waits on
    reading every weight when that takes longer than its matmuls."""
    path = rates.path
    t = class_times(
        work, workload, batch, rates.flops_s, rates.bandwidth_gb_s,
        winograd=path.startswith("simt"), operand_bytes=operand_bytes(path),
        sixteen_traffic=moves_16bit_activations(sixteen_bit, path),
        optimizer_params=optimizer_params, intensity_scale=factors.intensity_scale,
        l2_bytes=rates.l2_bytes, mixed_precision=sixteen_bit,
        unaligned_share=rates.unaligned_share,
        unaligned_on_cuda_cores=rates.unaligned_on_cuda_cores,
        attention_share=rates.attention_share,
        issue_rate=rates.issue_rate,
        transpose_instructions=factors.transpose_instructions_per_move,
        quantized_params=quantized_params, tf32_nhwc=rates.tf32_nhwc_convolutions,
    )  # fmt: skip
    t_flops = t.gemm_s / factors.matmul_efficiency[path]
    if path == ComputePath.TENSOR_TF32 and rates.shader_flops_s > 0:
        t_flops += tf32_conv_s(t.conv_s, work.winograd_share, rates, factors)
    else:
        t_flops += t.conv_s / factors.conv_efficiency[path]
    t_mem = t.memory_s / factors.memory_efficiency
    if decoding(workload) and weight_bytes > 0:
        read = decode_bytes_per_step(workload, weight_bytes, batch)
        t_weights = bandwidth_time_s(read, rates.bandwidth_gb_s, factors.memory_efficiency)
        if t_weights > t_flops:
            # The matmuls wait on their weights; the host's launches of these tiny kernels
            # queue behind the reads and cost only what exceeds them (nothing from a graph).
            per_kernel = 0.0 if workload.cuda_graphs else HOST_DISPATCH_S
            return max(t.kernels * per_kernel - t_weights, 0.0), t_mem + t_weights
    gpu = t_flops + t.kernels * factors.gpu_kernel_s
    host = 0.0 if workload.cuda_graphs else t.kernels * factors.host_kernel_s
    both = overlapped_s(gpu + t_mem, host, factors.host_overlap_exponent)
    if optimizer_loops(workload):
        loop_gpu = bandwidth_time_s(
            optimizer_bytes(workload, optimizer_params),
            rates.bandwidth_gb_s,
            factors.memory_efficiency,
        )
        launches, loop_mem = optimizer_phase_s(
            work, loop_gpu, optimizer_host_s(work, workload), workload
        )
        return both - t_mem + launches, t_mem + loop_mem
    return both - t_mem, t_mem
