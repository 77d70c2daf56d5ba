"""GPU memory per GPU: model states (weights, gradients, optimizer state) under a ZeRO stage,
activations x batch from the model's structure, the CUDA context and the allocator's share; and
the one decision whether a job that does not fit replicated is sharded (`memory_plan`).

Model states (Rajbhandari et al. 2020, "ZeRO", arXiv:1910.02054, sec. 3.1 and 5.1): per trainable
parameter mixed-precision Adam keeps a 16-bit weight (2 B), a 16-bit gradient (2 B) and K = 12 B
of optimizer state (fp32 master weight + two fp32 moments): 16 B. fp32 training keeps 4 + 4 B and
the moments only. Over Nd data-parallel ranks stage 1 shards the K part, stage 2 also the
gradients, stage 3 (FSDP) also the weights: (2 + 2 + K) / Nd. Tensor x pipeline parallelism splits
every layer's states over its GPUs.

Activations of a transformer layer: Korthikanti et al. 2022, "Reducing Activation Recomputation
in Large Transformer Models" (arXiv:2205.05198), sec. 4; other models: the workload's measured
per-sample bytes (`dlrig.torch.describe`'s count, 32-bit; halved for 16-bit).

The step's peak (MemoryNeed.peak_tensor_bytes) is the larger of the backward's start, every
activation saved and the gradients not yet made, and the optimizer step, every gradient made and
the activations freed: the backward makes each layer's gradients as it frees that layer's saved
tensors. A 16-bit run under autocast over fp32 weights keeps an fp32 residual stream
(residual_bytes), eager RMSNorms keep fp32 copies (eager_rms_norm), an unfused softmax runs in
fp32 (score_bytes).

GPU capacity: memory is binary (dlrig.units): a card's `memory_gb` is GiB, read into bytes once,
by `gpu_memory_bytes`, for the training and the serving model alike, and every need is reported
in GiB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from dlrig.catalog.schema import GPU
from dlrig.enums import Parallelism
from dlrig.model import parallelism
from dlrig.units import BITS_PER_BYTE, bytes_to_gib, gib_to_bytes
from dlrig.workloads.model import (
    FinetuneMethod,
    KernelLibrary,
    LoraTarget,
    Mode,
    OptimizerStep,
    QuantizedBase,
    Workload,
)

# 4-bit NF4 with double quantization: 4 bits + 0.127 bits of constants per weight (QLoRA,
# Dettmers et al. 2023, sec. 3). Embeddings and the output projection stay 16-bit (bitsandbytes
# quantizes nn.Linear layers only, and transformers keeps the LM head out).
QLORA_BITS_PER_WEIGHT = 4.127
# A GPTQ or AWQ checkpoint packs eight int4 weights into each int32 of `qweight` and keeps, per
# group of `group_size` input channels and per output channel, an fp16 scale and a 4-bit zero
# point (packed eight to an int32 in `qzeros`): 4 + (16 + 4) / group_size bits per weight, 4.156
# at the usual 128 (AutoGPTQ/GPTQModel QuantLinear and AutoAWQ WQLinear_GEMM buffers: qweight
# (in/8, out) int32, qzeros (in/g, out/8) int32, scales (in/g, out) fp16; GPTQ's g_idx, one
# int32 per input channel, adds 32/out bits, under 0.04 for the 1,024-wide and wider layers).
GROUP_SCALE_BITS = 16.0
GROUP_ZERO_BITS = 4.0
INT4_BITS = 4.0
# FP8 weight storage (workload field fp8_params: Transformer Engine's fp8_model_init, NeMo's
# `fp8_params`, Megatron's --fp8-param-gather): each TE linear weight is a Float8Tensor, one byte
# a weight, with one fp32 scale inverse per tensor (negligible, not counted), and no 16-bit copy
# (TE's fp8_model_init docstring, transformer_engine/pytorch/fp8.py: modules "will hold only FP8
# copies of its parameters, as opposed to the default behavior where both higher precision and
# FP8 copies are present"; dlrig counts that default's 16-bit copy alone). Where a backward needs
# the weight (dgrad), TE >= 2.0 also keeps its transposed FP8 copy, one more byte a weight: the
# weight's quantizer is set columnwise while grad is enabled (transformer_engine/pytorch/module/
# base.py reset_parameters, `quantizer.set_usage(rowwise=True, columnwise=
# torch.is_grad_enabled())`, NVIDIA/TransformerEngine@fecb10b), and Float8Quantizer.make_empty
# allocates `data_transpose` for columnwise usage (ROCm/TransformerEngine@07f3c6a
# transformer_engine/pytorch/tensor/float8_tensor.py) wherever FP8 GEMMs take only the TN layout:
# every ROCm GPU (`is_non_tn_fp8_gemm_supported` returns False under HIP, ROCm
# TransformerEngine@07f3c6a transformer_engine/pytorch/utils.py), Hopper and Ada. Blackwell
# (compute capability 10.x) runs non-TN FP8 GEMMs and needs no copy: not told apart here, so a
# Blackwell FP8-params training job is counted a byte a weight high. Without the cache
# (workload field fp8_transpose_cache false) each backward makes a layer's transpose and frees
# it (under a GB for a Llama 2 70B layer, not counted): ROCm TE's Linear takes
# `keep_fp8_weight_transpose_cache=False` (AMD-AGI/Primus@f670d91 primus/backends/megatron/
# patches/te_patches/linear_fp8_cache_patches.py sets it "to reduce memory usage"), and TE 1.x
# filled the cache only when given is_first_microbatch (ROCm/TransformerEngine@ac80527
# transformer_engine/pytorch/module/linear.py, `transpose_2d(fill_cache=True)`), which Megatron
# withholds under disable_parameter_transpose_cache.
FP8_WEIGHT_BYTES = 1.0
FP8_TRANSPOSE_BYTES = 1.0
# FSDP holds a layer unit's gathered weights while it computes and prefetches the next one's.
GATHERED_UNITS = 2
# Cross-entropy keeps the logits' log-softmax in fp32 (Korthikanti et al. 2022: 4 s b v bytes).
LOSS_BYTES_PER_LOGIT = 4.0
# The loss's backward makes a gradient the size of each logits tensor it saved (the fp32
# log-softmax's, then the 16-bit logits') while those are still held: the step's peak. Measured
# on a lent H200 (bench/data/h200_gpu_check.json): transformers' Llama 3 8B with peft LoRA at
# batch 2 x 2048 peaked at 25.13e9 bytes allocated, 3.2e9 above its weights, adapter states and
# the 4.29e9 bytes autograd saved; 2 x 2048 x 128,256 logits at 2 + 4 bytes are 3.15e9.
LOSS_GRADIENT_COPIES = 1.0
# peft's default fp32 adapters cast each adapted linear's input to fp32 for its LoRA A
# (tuners/lora/layer.py Linear.forward, _cast_input_dtype): autograd saves that fp32 copy, once
# per adapted projection, and not the 16-bit input, which the frozen base weight's backward
# does not need.
FP32_ADAPTER_INPUT_BYTES = 4.0
# A fused cross-entropy keeps no fp32 copy: its gradient overwrites the 16-bit logits in place,
# and it saves one fp32 log-sum-exp per token (flash-attn ops/triton/cross_entropy.py).
FUSED_LOSS_BYTES_PER_TOKEN = 4.0
# f-wide tensors a gated MLP saves. Eager PyTorch's down(silu(gate(x)) * up(x)) keeps SiLU's
# input (the gate output), both operands of the product (SiLU's output and the up output) and
# the down projection's input (the product): 4. A fused SwiGLU whose backward recomputes the
# SiLU from the gate and up outputs keeps those two and the product: 3 (llm.q's
# swiglu_backward(dinp, dout, inp) takes only the 2f-wide input, IST-DASLab/llmq
# src/kernels/swiglu.cu @b77d969; its run state keeps MlpUp (2f) and SwiGLu (f) per layer,
# src/models/llama_run_state.h).
GATED_MLP_SAVED = 4.0
GATED_MLP_SAVED_FUSED = 3.0
# Under torch.compile the layer's forward and backward are one joint graph that Inductor's
# default partitioner (min_cut_rematerialization_partition, torch/_functorch/partitioners.py)
# cuts so that pointwise ops are recomputed in the backward rather than saved: the SwiGLU's
# backward and the down projection's weight gradient need only the gate and up outputs, the
# matmuls' results, so those two are kept and SiLU and the product recomputed from them.
GATED_MLP_SAVED_COMPILED = 2.0
MASK_BYTES = 1.0  # a dropout mask keeps one byte per element
# transformers' NewGELUActivation (gelu_new, GPT-2's: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
# pow(x, 3)))), activations.py) as eager ops under autocast with fp32 weights: torch.pow is on
# autocast's float32 list (PyTorch docs, "Automatic Mixed Precision package", CUDA ops that can
# autocast to float32), so pow saves an fp32 copy of the f-wide input and type promotion runs
# the rest in fp32; autograd keeps that copy, tanh's fp32 output and both operands of the last
# product (0.5 x at 16 bits, 1 + tanh in fp32): 4 + 4 + 2 + 4 bytes per element, where one GELU
# kernel keeps its 16-bit input (2).
AUTOCAST_NEW_GELU_SAVED_BYTES = 4.0 + 4.0 + 2.0 + 4.0
# The residual stream is in the dtype of the weights the model is stored in: PyTorch's autocast
# runs matmuls in 16 bits but leaves the embedding lookup and the residual adds alone, so a model
# whose weights are fp32 (autocast mixed precision, as `gradients_16bit` is not) carries an fp32
# residual stream, and every norm's input is fp32 (layer_norm is on autocast's float32 list:
# PyTorch docs, "Automatic Mixed Precision package", CUDA ops that can autocast to float32).
# Each linear layer then casts the fp32 norm output to 16 bits itself and autograd keeps each
# cast copy: autocast caches casts of leaf weights only (aten/src/ATen/autocast_mode.cpp
# cached_cast, "cached_casts" holds leaf tensors that require grad), so q, k and v each keep one,
# as gate and up do.
RESIDUAL_BYTES_FP32 = 4.0
# transformers' LlamaRMSNorm (models/llama/modeling_llama.py) and torchtune's RMSNorm
# (torchtune/modules/rms_norm.py @1814feb) as eager ops: `x.to(float32)`, its `pow(2).mean()`
# and the product with rsqrt save that fp32 copy of the input (4 bytes per element), and the
# product with the weight saves the normalized tensor cast back to the input's dtype: 4 + the
# residual's bytes, where one norm kernel (Liger's, Unsloth's, llm.q's, or Inductor's fusion)
# keeps its input alone.
EAGER_RMS_NORM_FP32_BYTES = 4.0
AUTOCAST_SOFTMAX_BYTES = 4.0  # an unfused attention's fp32 softmax output (score_bytes)
# The 80% interval around a training job's tensors (model states + activations), measured /
# predicted, set as the training and serving intervals are (scripts/interval_band.py): the 10th
# and 90th percentile over every peak of the memory sources constants of this module were
# chosen on (the lent H200's jobs, torch.cuda.max_memory_allocated; torchtune's README peaks,
# active; Answer.AI's fsdp_qlora peaks and torchtitan's benchmark tables, reserved; Lit-GPT's
# resource tables, allocated), each source weighing 1, widened until the sources, each left out
# in turn, have 80% of their rows inside the band the others give. bench/held_out.memory_band
# computes it, tests/model/test_memory_band.py holds this copy to it, and bench_accuracy.py and
# bench_peak_memory.py judge each calibration source by the others' band.
MEMORY_RATIO_BAND = (0.952, 1.23)


def gpu_memory_bytes(gpu: GPU) -> float:
    """The bytes on a card: its `memory_gb`, the binary GB it is sold in (dlrig.units). With ECC
    on, a data-centre GDDR card holds a sixteenth of it back (a 48 GB L40S reports 46,068 MiB,
    github.com/modal-labs/modal-client pull 2797); not counted, as Lambda's A10 and A40 rows
    ran batches that need more than the fifteen sixteenths (bench/bench_memory.py)."""
    return gib_to_bytes(gpu.memory_gb)


def capacity_gb(n_bytes: float) -> float:
    """Bytes as the GiB every memory figure is reported in (the `_gb` keys, dlrig.units)."""
    return bytes_to_gib(n_bytes)


@dataclass(frozen=True)
class MemoryLayout:
    """How the job spreads over its GPUs, as far as memory is concerned (parallelism.Layout
    says where its collectives run). `shard_ranks`: the data-parallel ranks the ZeRO
    partitions spread over; `planned`: dlrig chose the sharding because the job did not fit
    replicated; `accumulation_split`: dlrig runs each of the job's micro-batches as this many
    smaller ones, accumulating their gradients, because the whole one did not fit."""

    zero_stage: int = 0
    shard_ranks: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sequence_parallel: bool = False
    context_parallel: int = 1
    expert_parallel: int = 1
    micro_batches: int = 1
    cpu_offload: bool = False
    planned: bool = False
    accumulation_split: int = 1

    @property
    def effective_stage(self) -> int:
        """The ZeRO stage that shards anything: none on a single data-parallel rank."""
        return self.zero_stage if self.shard_ranks > 1 else 0


@dataclass(frozen=True)
class MemoryNeed:
    """Bytes one GPU holds, by part; the caching allocator adds a share on top of the tensors.
    `host_bytes`: what CPU offload keeps in the host's RAM for this GPU; `paged_bytes`: the
    part of it a paged optimizer moves to the GPU and back each step; `managed_bytes`: the
    part of the model states a paged optimizer allocates in CUDA managed memory
    (managed_state_bytes), on the GPU while it fits, which PyTorch's allocator statistics
    (torch.cuda.max_memory_allocated, the active and reserved peaks) never count."""

    model_states_bytes: float
    activation_bytes_per_sample: float
    batch: int
    context_bytes: float
    allocator_overhead_fraction: float
    host_bytes: float = 0.0
    paged_bytes: float = 0.0
    managed_bytes: float = 0.0
    backward_gradient_bytes: float = 0.0

    @property
    def activation_bytes(self) -> float:
        return self.activation_bytes_per_sample * self.batch

    @property
    def peak_tensor_bytes(self) -> float:
        """The tensors at the step's peak: the larger of the backward's start (the states
        without the gradients it makes, every saved activation) and the optimizer step (every
        gradient, the activations freed); they do not sum, as the backward frees each layer's
        activations while it makes its gradients (backward_gradient_bytes)."""
        return self.model_states_bytes + max(
            self.activation_bytes - self.backward_gradient_bytes, 0.0
        )

    @property
    def peak_states_bytes(self) -> float:
        """The model states held at the peak (peak_tensor_bytes): without the backward's
        gradients while its start binds."""
        if self.activation_bytes > self.backward_gradient_bytes:
            return self.model_states_bytes - self.backward_gradient_bytes
        return self.model_states_bytes

    @property
    def total_bytes(self) -> float:
        return (
            self.peak_tensor_bytes * (1.0 + self.allocator_overhead_fraction) + self.context_bytes
        )


# 8-bit optimizers keep each moment in one byte, block-wise quantized: blocks of 2,048 values
# share one fp32 normalisation constant (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
# Quantization", arXiv:2110.02861, sec. 2.1; bitsandbytes AdamW8bit, PagedAdamW8bit).
EIGHT_BIT_STATE_BYTES = 1.0 + 4.0 / 2048.0


def optimizer_moments(optimizer: str) -> float:
    """Moments kept per trainable parameter: two for the Adam family, one for SGD momentum."""
    return 1.0 if optimizer == "sgd" else 2.0


def moment_bytes(optimizer: str, pure_16bit: bool = False) -> float:
    """Bytes of one moment value: 1 (and its share of a block constant) for an 8-bit optimizer,
    else fp32, or 16-bit when the run keeps everything in 16 bits."""
    if optimizer == "adamw8bit":
        return EIGHT_BIT_STATE_BYTES
    return 2.0 if pure_16bit else 4.0


def optimizer_state_bytes_per_param(optimizer: str, pure_16bit: bool = False) -> float:
    """Optimizer state per trainable parameter: its moments at their width (moment_bytes)."""
    return optimizer_moments(optimizer) * moment_bytes(optimizer, pure_16bit)


def trainable_state_bytes_per_param(
    optimizer: str, sixteen_bit: bool, pure_16bit: bool = False
) -> float:
    """Weights + gradients + optimizer state per trainable parameter (16 B for Adam, both
    fp32 and mixed precision; 12 B for SGD; 8 B for Adam in pure 16-bit: 16-bit weights,
    gradients and moments, no fp32 master copy)."""
    pure = pure_16bit and sixteen_bit
    weights_and_grads = (2.0 + 2.0) if pure else (2.0 + 2.0 + 4.0) if sixteen_bit else (4.0 + 4.0)
    return weights_and_grads + optimizer_state_bytes_per_param(optimizer, pure)


def quantized_bits_per_weight(workload: Workload) -> float:
    """Bits a 4-bit base weight takes with its constants: NF4 with double quantization
    (QLORA_BITS_PER_WEIGHT), or a GPTQ/AWQ checkpoint's int4 with a scale and a zero point per
    group (GROUP_SCALE_BITS)."""
    if workload.quantized_base in (QuantizedBase.GPTQ, QuantizedBase.AWQ):
        return INT4_BITS + (GROUP_SCALE_BITS + GROUP_ZERO_BITS) / workload.quant_group_size
    return QLORA_BITS_PER_WEIGHT


def frozen_linears_keep_inputs(workload: Workload) -> bool:
    """A QLoRA job on a bitsandbytes NF4 base, whose 4-bit linears keep their inputs for the
    backward as a trained linear does: bitsandbytes' MatMul4Bit saves its input whenever the
    input or the weight needs a gradient (`if any(ctx.needs_input_grad[:2]): ctx.tensors = (A,
    B)`, bitsandbytes/autograd/_functions.py), and under LoRA the input does; PyTorch's own
    linear over a frozen weight saves none. torchao's NF4 (torchtune) saves only the weight."""
    return workload.weight_bits == 4 and workload.quantized_base in (None, QuantizedBase.NF4)


def unsharded_quant_state_bytes(workload: Workload, frozen_params: float) -> float:
    """Bytes of a bitsandbytes NF4 base's quantization constants (its absmax blocks and their
    own double quantization: QLORA_BITS_PER_WEIGHT less the 4 bits of the weight), which
    sharded data parallelism neither shards, gathers nor offloads: they live in each
    Params4bit's quant_state, an attribute, not a parameter or a buffer ("FSDP only syncs
    parameters and buffers, so the quant_state isn't copied", AnswerDotAI/fsdp_qlora@05ed9f2
    train.py load_and_quantize), so every rank holds them whole on its GPU (Llama 3 70B: 1.08
    GB). None for other bases: torchao's NF4Tensor (torchtune) hands FSDP2 its quantized
    scalers and factors with the weights to shard and gather (its fsdp_pre_all_gather), and a
    GPTQ/AWQ checkpoint's scales are tensors of the module."""
    if workload.weight_bits != 4 or workload.quantized_base not in (None, QuantizedBase.NF4):
        return 0.0
    constant_bits = quantized_bits_per_weight(workload) - INT4_BITS
    return quantized_params(workload, frozen_params) * constant_bits / BITS_PER_BYTE


def frozen_weight_bytes_per_param(
    weight_bits: int | None, sixteen_bit: bool, quantized_bits: float = QLORA_BITS_PER_WEIGHT
) -> float:
    """Storage of a weight that does not train: 4-bit QLoRA (`quantized_bits` with its
    constants: quantized_bits_per_weight), else 16 or 32 bits."""
    if weight_bits == 4:
        return quantized_bits / BITS_PER_BYTE
    if weight_bits is not None:
        return weight_bits / BITS_PER_BYTE
    return 2.0 if sixteen_bit else 4.0


def fp8_weight_bytes_per_param(workload: Workload) -> float:
    """Bytes of one weight stored in FP8 (fp8_params): its byte, and in training the transposed
    copy TE keeps for the backward (FP8_TRANSPOSE_BYTES) unless the job turns that cache off."""
    kept = workload.mode is Mode.TRAINING and workload.fp8_transpose_cache
    transpose = FP8_TRANSPOSE_BYTES if kept else 0.0
    return FP8_WEIGHT_BYTES + transpose


def fp8_weight_params(workload: Workload, params: float, trained: bool) -> float:
    """Of `params` (the frozen ones, or with `trained` the trained ones), those stored in FP8
    under fp8_params: the transformer's linear weights, which TE's modules hold; not the
    embeddings and the output projection, which Megatron builds as its own (16-bit) layers
    (VocabParallelEmbedding, ColumnParallelLinear), nor a fine-tune's adapters, which are
    Megatron linears too. Trained weights are FP8 only in full training (LoRA trains adapters
    alone)."""
    if not workload.fp8_params:
        return 0.0
    if trained and workload.finetune is not FinetuneMethod.FULL:
        return 0.0
    return max(params - embedding_params(workload), 0.0)


def embedding_params(workload: Workload) -> float:
    """Parameters of the token embedding and the output projection (one matrix when tied)."""
    if not workload.vocab_size or not workload.hidden_size:
        return 0.0
    matrices = 1 if workload.tied_embeddings else 2
    return float(workload.vocab_size * workload.hidden_size * matrices)


def quantized_params(workload: Workload, frozen_params: float) -> float:
    """Frozen parameters stored in 4 bits: under QLoRA the linear layers, not the embeddings
    (Llama 3 70B: 2.1e9 of 70.6e9 parameters stay 16-bit); none otherwise."""
    if workload.weight_bits != 4:
        return 0.0
    return frozen_params - min(embedding_params(workload), frozen_params)


def frozen_weight_bytes(workload: Workload, frozen_params: float, sixteen_bit: bool) -> float:
    """Bytes of the frozen weights: under 4-bit QLoRA the linear layers are quantized and the
    embeddings stay 16-bit (Llama 3 70B: 4.2 GB of ~40)."""
    per_param = frozen_weight_bytes_per_param(
        workload.weight_bits, sixteen_bit, quantized_bits_per_weight(workload)
    )
    quantized = quantized_params(workload, frozen_params)
    rest = 2.0 if workload.weight_bits == 4 else per_param  # QLoRA keeps embeddings 16-bit
    fp8 = fp8_weight_params(workload, frozen_params - quantized, trained=False)
    fp8_bytes = fp8 * fp8_weight_bytes_per_param(workload)
    return quantized * per_param + fp8_bytes + (frozen_params - quantized - fp8) * rest


def model_state_bytes(
    workload: Workload, sixteen_bit: bool, layout: MemoryLayout
) -> tuple[float, float]:
    """(bytes on one GPU, bytes offloaded to host RAM for it) of weights, gradients and
    optimizer state under the layout's ZeRO stage, tensor/pipeline split and CPU offload."""
    states = _model_states(workload, sixteen_bit, layout)
    return states.gpu_bytes, states.host_bytes


def backward_gradient_bytes(workload: Workload, sixteen_bit: bool, layout: MemoryLayout) -> float:
    """The part of model_state_bytes the backward creates: the gradients one GPU holds at the
    optimizer step that did not exist when the backward began (MemoryNeed.peak_tensor_bytes).
    A step frees its gradients (`zero_grad(set_to_none=True)`, PyTorch's default since 2.0,
    torch/optim/optimizer.py; torchtune's recipes @1814feb and transformers' Trainer call it),
    so they come back only as the backward makes them, layer by layer, as autograd frees each
    node's saved tensors (torch/csrc/autograd/engine.cpp releases a node's variables after its
    backward unless retain_graph). None when gradients are accumulated over micro-batches: the
    earlier ones' are held through the next forward and backward."""
    if workload.gradient_accumulation > 1 or layout.accumulation_split > 1:
        return 0.0
    return _model_states(workload, sixteen_bit, layout).gradient_bytes


@dataclass(frozen=True)
class _States:
    gpu_bytes: float
    host_bytes: float
    gradient_bytes: float  # the gradients among gpu_bytes


def _model_states(workload: Workload, sixteen_bit: bool, layout: MemoryLayout) -> _States:
    split = float(layout.tensor_parallel * layout.pipeline_parallel)
    if workload.mode is Mode.INFERENCE:
        weights = frozen_weight_bytes(workload, workload.params, sixteen_bit)
        return _States(weights / split, 0.0, 0.0)
    trainable = workload.params * workload.trainable_fraction
    weight_b, grad_b = (2.0, 2.0) if sixteen_bit else (4.0, 4.0)
    state_b = trainable_state_bytes_per_param(
        workload.optimizer.value, sixteen_bit, workload.pure_16bit
    )
    # FP8 trained weights (fp8_params) replace their 16-bit copy; the optimizer still keeps
    # its fp32 master (Megatron's distributed optimizer and NeMo's O2 keep fp32 main params
    # beside TE's FP8 ones, which it casts each step: TE's cast_master_weights_to_fp8).
    fp8_trained = fp8_weight_params(workload, trainable, trained=True)
    weights = (
        (trainable - fp8_trained) * weight_b
        + fp8_trained * fp8_weight_bytes_per_param(workload)
        + frozen_weight_bytes(workload, workload.params - trainable, sixteen_bit)
    )
    grads = trainable * grad_b
    head = head_gradient_params(workload) * grad_b
    if workload.optimizer_in_backward and workload.num_layers:
        # Each weight steps in its gradient hook and frees the gradient (torchtune's
        # OptimizerInBackward, docs/source/tutorials/memory_optimizations.rst @bd2a0fc:
        # "completely removing the buffer of gradients"): one layer's live at a time, or the
        # output projection's where it is larger (head_gradient_params).
        grads = max(grads / workload.num_layers, head)
    optimizer = trainable * (state_b - weight_b - grad_b)
    if workload.optimizer_step is OptimizerStep.NONE:  # no step: its moments are never made
        optimizer -= trainable * optimizer_state_bytes_per_param(
            workload.optimizer.value, workload.pure_16bit and sixteen_bit
        )
    ranks, stage = float(layout.shard_ranks), layout.effective_stage
    # ZeRO-3 shards (and CPU offload moves) parameters only: an NF4 base's constants stay whole
    # on every GPU.
    whole = (
        unsharded_quant_state_bytes(workload, workload.params - trainable) if stage >= 3 else 0.0
    )
    on_gpu = {
        "weights": (weights - whole) / ranks if stage >= 3 else weights,
        "grads": grads / ranks if stage >= 2 else grads,
        "optimizer": optimizer / ranks if stage >= 1 else optimizer,
    }
    host = 0.0
    if layout.cpu_offload:
        offloaded = ("optimizer", "weights", "grads") if stage >= 3 else ("optimizer",)
        host = sum(on_gpu[k] for k in offloaded)
        on_gpu.update({k: 0.0 for k in offloaded})
    gpu = sum(on_gpu.values()) + whole
    if stage >= 3:
        gpu += gathered_weight_bytes(workload, weights - whole, sixteen_bit)
    share = parallelism.expert_split_share(workload, layout.expert_parallel) / split
    # The backward makes the output projection's gradient first, while every activation is
    # still held; stepped in the backward, the gradients live only while they are made.
    made = 0.0
    if not workload.optimizer_in_backward and grads > 0:
        made = on_gpu["grads"] * max(grads - head, 0.0) / grads
    return _States(gpu * share, host * share, made * share)


def head_gradient_params(workload: Workload) -> float:
    """Parameters of the output projection whose gradient the backward holds from its first
    node on: a trained vocab x hidden matrix (full training; a fine-tune's is frozen). Its
    gradient is made at the loss's backward, when every activation is still saved; tied to the
    embedding, it waits in the AccumulateGrad node's input buffer until the embedding's part
    is added at the backward's end (torch/csrc/autograd/engine.cpp sums a tensor's gradient
    contributions before its AccumulateGrad runs), so a gradient hook (optimizer_in_backward)
    frees it only then."""
    if workload.finetune is not FinetuneMethod.FULL or not workload.hidden_size:
        return 0.0
    return float((workload.vocab_size or 0) * workload.hidden_size)


def gathered_weight_bytes(workload: Workload, weights: float, sixteen_bit: bool) -> float:
    """Whole (unsharded) weights a ZeRO-3/FSDP GPU holds while it computes, wrapping each
    transformer layer as a unit: the root unit (embeddings, output projection) stays gathered
    from the forward to the backward, and a layer's unit is gathered while the next one is
    prefetched (Llama 3 70B under QLoRA: 4.2 GB + 2 x 0.44 GB)."""
    if not workload.num_layers:
        return 0.0
    embeddings = embedding_params(workload) * (2.0 if sixteen_bit else 4.0)
    per_layer = max(weights - embeddings, 0.0) / workload.num_layers
    return min(embeddings, weights) + GATHERED_UNITS * per_layer


def transformer_layer_activation_bytes(
    seq_len: int,
    hidden_size: int,
    num_heads: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    selective_recompute: bool = False,
    *,
    kv_heads: int | None = None,
    ffn_hidden_size: int | None = None,
    gated_mlp: bool = False,
    dropout: bool = True,
    element_bytes: float = 2.0,
    key_len: int | None = None,
    experts_per_token: int = 1,
    fused_activation: bool = False,
    fp32_adapter_targets: frozenset[LoraTarget] = frozenset(),
    adapter_copy_bytes: float = FP32_ADAPTER_INPUT_BYTES,
    adapted: frozenset[LoraTarget] | None = None,
    frozen_inputs_kept: bool = False,
    activation_saved_bytes: float | None = None,
    compiled: bool = False,
    residual_bytes: float | None = None,
    eager_rms_norm: bool = False,
    autocast_softmax: bool = False,
    expanded_kv: bool = False,
) -> float:
    """Activations one transformer layer saves for the backward pass, per sample (Korthikanti
    et al. 2022, sec. 4.1). With its defaults (16-bit, MHA, a 4h GeLU MLP, dropout) this is the
    paper's s h (34 + 5 a s / h) bytes: attention 11 s h (QKV input, Q, K, V, projection input,
    dropout mask) + 5 a s^2 (softmax output, its dropout mask and output), MLP 19 s h, two
    layer norms 4 s h. Tensor parallelism over t GPUs divides all but the norms, the block inputs
    and the dropout masks after them (10 s h); sequence parallelism divides those too;
    selective recomputation, or flash attention, keeps no score matrices (flash keeps its fp32
    log-sum-exp, 4 a s bytes). Grouped-query attention shrinks K and V to kv_heads, a gated MLP
    (SwiGLU) keeps its input and four f-wide tensors (three when `fused_activation` recomputes
    the SiLU in the backward, two, the gate and up outputs, when the layer is `compiled`:
    GATED_MLP_SAVED_COMPILED), and `key_len` > s (Transformer-XL's
    memory) widens K, V and the scores. A mixture of experts keeps the MLP's tensors once per
    expert a token is routed to. With `fp32_adapter_targets` (the projections peft's fp32 LoRA
    adapts on frozen weights) each of them keeps a copy of its input of `adapter_copy_bytes` an
    element in place of the shared 16-bit one: the fp32 copy itself (FP32_ADAPTER_INPUT_BYTES) where
    the step runs without autocast, the 16-bit cast autocast makes of it under autocast. `adapted`:
    under LoRA, the projections that keep their input (a frozen linear's backward needs only its
    weight: PyTorch saves the input of a linear only for its weight's gradient), so a shared input
    no adapted projection reads is not kept, nor the down projection's (fc2's) f-wide input when it
    is frozen (None: every projection keeps its input, as full training does).
    `frozen_inputs_kept`: the frozen linears keep their inputs too (a bitsandbytes 4-bit base:
    frozen_linears_keep_inputs), so every projection keeps its input whatever `adapted` says,
    and fp32 adapter copies add to the 16-bit inputs rather than take their place.
    `activation_saved_bytes`: what an ungated MLP's activation keeps per f-wide element when it is
    not one kernel's 16-bit input (AUTOCAST_NEW_GELU_SAVED_BYTES). `residual_bytes`: the residual
    stream's width where it is not the 16-bit compute's (RESIDUAL_BYTES_FP32 under autocast over
    fp32 weights: each norm keeps an fp32 input and each projection its own 16-bit cast of it);
    `eager_rms_norm`: each norm keeps an fp32 copy of its input and its normalized output as well
    (EAGER_RMS_NORM_FP32_BYTES); `autocast_softmax`: an unfused attention's softmax runs in fp32
    under autocast (score_bytes); `expanded_kv`: grouped-query attention's K and V are copied to
    every query head before the attention kernel, which saves the copies (torchtune's
    MultiHeadAttention @1814feb, torchtune/modules/attention.py: k.unsqueeze(2).expand(...)
    .flatten(1, 2), then SDPA or flex attention, each saving its q, k, v for the backward), so K and
    V are kept at the query heads' width."""
    s, h, t, e = float(seq_len), float(hidden_size), float(tensor_parallel), element_bytes
    a = float(num_heads)
    k = float(key_len or seq_len)
    h_kv = h if expanded_kv else h * (kv_heads or num_heads) / a
    f = float(ffn_hidden_size or 4 * hidden_size)
    mask = MASK_BYTES if dropout else 0.0
    # Kept whole on each tensor-parallel rank unless sequence parallel: the two norms' inputs,
    # the attention and MLP inputs, and the masks of the dropouts after each block.
    r = residual_bytes or e
    attention_reads, mlp_reads = projection_casts(gated_mlp) if r > e else (1.0, 1.0)
    inputs = (attention_reads + mlp_reads) * e
    replicated = 2.0 * norm_saved_bytes(r, eager_rms_norm) * s * h + inputs * s * h
    replicated += 2.0 * mask * s * h
    attention = e * s * h + 2.0 * e * k * h_kv + e * s * h  # Q, K, V, projection input
    gated = (
        GATED_MLP_SAVED_COMPILED
        if compiled
        else GATED_MLP_SAVED_FUSED
        if fused_activation
        else GATED_MLP_SAVED
    )
    mlp = (gated if gated_mlp else 2.0) * e * s * f * experts_per_token
    if activation_saved_bytes is not None and not gated_mlp:
        mlp += (activation_saved_bytes - e) * s * f * experts_per_token
    if adapted is not None and not frozen_inputs_kept:
        if not adapted & ATTENTION_INPUT_TARGETS:
            replicated -= attention_reads * e * s * h
        if not adapted & mlp_input_targets(gated_mlp):
            replicated -= mlp_reads * e * s * h
        if LoraTarget.DOWN not in adapted and not (gated_mlp and compiled):
            mlp -= e * s * f * experts_per_token  # the product (fc2's input) only it reads
    scores = 0.0 if selective_recompute else a * s * k * score_bytes(e, mask, autocast_softmax)
    if fp32_adapter_targets:
        attention, mlp, replicated = _fp32_adapter_inputs(
            attention,
            mlp,
            replicated,
            s * h,
            s * f,
            e,
            gated_mlp,
            fp32_adapter_targets,
            adapter_copy_bytes,
            sixteen_bit_kept=frozen_inputs_kept,
        )
    sharded = attention + mlp + scores
    return sharded / t + replicated / (t if sequence_parallel else 1.0)


def score_bytes(element_bytes: float, mask_bytes: float, autocast_softmax: bool = False) -> float:
    """Bytes an unfused attention keeps per score: the softmax output (also the product with
    V's input), then the dropout's mask and output. Under autocast the softmax runs in fp32
    (softmax is on autocast's float32 list: PyTorch docs, "Automatic Mixed Precision package")
    and keeps its fp32 output; the dropout runs on it, and the product with V keeps its own
    16-bit cast of the result."""
    e = element_bytes
    if autocast_softmax:
        return AUTOCAST_SOFTMAX_BYTES + mask_bytes + e
    return e + (mask_bytes + e if mask_bytes else 0.0)


def norm_saved_bytes(residual_bytes: float, eager_rms_norm: bool) -> float:
    """Bytes per element a norm keeps for its backward: its input at the residual's width, or
    an eager RMSNorm's fp32 copy and normalized output (EAGER_RMS_NORM_FP32_BYTES + the
    residual's width; an fp32 input is its own copy)."""
    return EAGER_RMS_NORM_FP32_BYTES + residual_bytes if eager_rms_norm else residual_bytes


def projection_casts(gated_mlp: bool) -> tuple[float, float]:
    """(attention, MLP) linear layers that each cast a norm's fp32 output to 16 bits under
    autocast: a Llama-family layer's separate q, k, v and gate, up projections; one fused QKV
    and one fc1 otherwise (GPT-2's c_attn and c_fc)."""
    return (3.0, 2.0) if gated_mlp else (1.0, 1.0)


# The projections that read a layer's attention input (the norm's output), and its MLP's.
ATTENTION_INPUT_TARGETS = frozenset({LoraTarget.Q, LoraTarget.K, LoraTarget.V})


def mlp_input_targets(gated_mlp: bool) -> frozenset[LoraTarget]:
    """The projections that read the MLP's input: gate and up, or an ungated MLP's fc1 (up)."""
    return frozenset({LoraTarget.GATE, LoraTarget.UP} if gated_mlp else {LoraTarget.UP})


def _fp32_adapter_inputs(
    attention: float,
    mlp: float,
    replicated: float,
    sh: float,
    sf: float,
    e: float,
    gated: bool,
    targets: frozenset[LoraTarget],
    copy_bytes: float = FP32_ADAPTER_INPUT_BYTES,
    sixteen_bit_kept: bool = False,
) -> tuple[float, float, float]:
    """(attention, MLP, replicated) bytes with each adapted projection's 16-bit input swapped
    for the copy of `copy_bytes` an element its adapter keeps: Q, K and V each copy the
    attention input, the output projection its input; the MLP's input is copied by gate and up
    (fc1 alone ungated), the down projection's (fc2's) f-wide input by down. A shared input no
    adapter copies stays 16-bit, as every one does beside the copies where the frozen linears
    keep their inputs too (`sixteen_bit_kept`: frozen_linears_keep_inputs)."""
    fp32 = copy_bytes
    swapped = 0.0 if sixteen_bit_kept else e
    qkv = len(targets & ATTENTION_INPUT_TARGETS)
    mlp_in = len(targets & mlp_input_targets(gated))
    if qkv:
        attention += (qkv * fp32 - swapped) * sh
        replicated -= swapped * sh  # the attention input, now fp32 copies
    if LoraTarget.O in targets:
        attention += (fp32 - swapped) * sh
    if mlp_in:
        mlp += mlp_in * fp32 * sh
        replicated -= swapped * sh  # the MLP input, now fp32 copies
    if LoraTarget.DOWN in targets:
        mlp += (fp32 - swapped) * sf
    return attention, mlp, replicated


def cross_attention_activation_bytes(
    seq_len: int,
    key_len: int,
    hidden_size: int,
    num_heads: int,
    *,
    kv_heads: int | None = None,
    dropout: bool = True,
    element_bytes: float = 2.0,
    flash: bool = False,
) -> float:
    """What a decoder layer's cross-attention block adds, per sample: its norm input, Q and
    projection input over the s decoder positions, K and V over the encoder's key_len positions,
    the s x key_len scores (none under flash attention) and the output dropout's mask (the
    terms of Korthikanti et al.'s attention block with keys from the encoder)."""
    s, k, h, e = float(seq_len), float(key_len), float(hidden_size), element_bytes
    h_kv = h * (kv_heads or num_heads) / num_heads
    mask = MASK_BYTES if dropout else 0.0
    scores = 0.0 if flash else num_heads * s * k * score_bytes(e, mask)
    return 3.0 * e * s * h + 2.0 * e * k * h_kv + scores + mask * s * h


def _element_bytes(sixteen_bit: bool) -> float:
    return 2.0 if sixteen_bit else 4.0


def _encoder_bytes(
    workload: Workload, e: float, layout: MemoryLayout
) -> tuple[float, float, float]:
    """(encoder activations, a decoder layer's cross-attention, the largest layer recomputed)
    of an encoder-decoder model (all 0 for a decoder or encoder alone). The encoder's output
    stays for every decoder layer's cross-attention."""
    w = workload
    if not (w.encoder_layers and w.encoder_seq_len and w.hidden_size and w.num_heads):
        return 0.0, 0.0, 0.0
    t, sp = layout.tensor_parallel, layout.sequence_parallel
    full = transformer_layer_activation_bytes(
        w.encoder_seq_len, w.hidden_size, w.num_heads, t, sp, w.flash_attention,
        kv_heads=w.kv_heads, ffn_hidden_size=w.ffn_hidden_size, gated_mlp=w.gated_mlp,
        dropout=w.dropout, element_bytes=e,
    )  # fmt: skip
    kept = e * w.encoder_seq_len * w.hidden_size / (t if sp else 1)
    per_layer = kept if w.activation_checkpointing else full
    cross = cross_attention_activation_bytes(
        w.seq_len or 0, w.encoder_seq_len, w.hidden_size, w.num_heads, kv_heads=w.kv_heads,
        dropout=w.dropout, element_bytes=e, flash=w.flash_attention,
    ) / t  # fmt: skip
    return per_layer * w.encoder_layers + kept, cross, full


def _compiled(workload: Workload) -> bool:
    """The job's layers and loss run under torch.compile (Inductor)."""
    return workload.kernels in (KernelLibrary.COMPILE, KernelLibrary.COMPILE_REDUCE_OVERHEAD)


def _logit_bytes(workload: Workload, e: float) -> float:
    """Bytes per logit of the whole micro-batch at the loss's backward: the 16-bit logits and
    the fp32 log-softmax saved (Korthikanti's 4 s b v), or the 16-bit log-softmax alone where
    the model runs the loss in 16 bits, each with a gradient of its size beside it
    (LOSS_GRADIENT_COPIES); a fused loss keeps the logits and writes their gradient in place.
    A chunked loss holds 1/n of it, or, with `chunked_logits_kept`, all that is saved and 1/n
    of the gradients. Compiled, a kept chunk's upcast and cross-entropy are one graph that
    saves its 16-bit input, not its fp32 log-softmax, so only the 16-bit logits stay for every
    chunk (torchtune compiles CEWithChunkedOutputLoss.compute_cross_entropy alone, "upcasting
    only one chunk at a time": torchtune/modules/loss/ce_chunked_output_loss.py and
    training/_compile.py compile_loss @1814feb), and the graph's backward, one kernel from the
    16-bit input and its saved per-row log-sum-exp, writes the chunk's gradient in the input's
    16 bits (autograd gives a tensor's gradient its dtype): no fp32 chunk is made."""
    chunks = float(workload.loss_chunks)
    if workload.fused_loss:
        return e / chunks
    sixteen_bit_loss = not workload.fp32_loss and e < LOSS_BYTES_PER_LOGIT
    saved = e if sixteen_bit_loss else e + LOSS_BYTES_PER_LOGIT
    gradients = LOSS_GRADIENT_COPIES * saved / chunks
    if not workload.chunked_logits_kept:
        return saved / chunks + gradients
    if _compiled(workload) and chunks > 1:
        return e + LOSS_GRADIENT_COPIES * e / chunks
    return saved + gradients


def residual_bytes(
    workload: Workload, sixteen_bit: bool, layout: MemoryLayout | None = None
) -> float:
    """Bytes per element of the residual stream: fp32 (RESIDUAL_BYTES_FP32) where a 16-bit run
    computes under autocast over the fp32 weights it trains, as PyTorch AMP on one GPU or under
    DDP does. 16 bits otherwise: weights kept in 16 bits (`pure_16bit`, apex O2's model,
    `gradients_16bit`), a fine-tune's frozen base (frozen_weight_bytes), and the sharded and
    model-parallel stacks, which compute with 16-bit copies of fp32 master weights (FSDP's
    MixedPrecision param_dtype, as torchtitan and llm-foundry set it; DeepSpeed's bf16 and fp16
    modes; Megatron's 16-bit model, and the hand-fused trainers', `kernels` fused)."""
    layout = layout or MemoryLayout()
    full = workload.finetune is FinetuneMethod.FULL and workload.mode is Mode.TRAINING
    stage = max(workload.zero_stage, layout.zero_stage)
    sharded = workload.parallel is Parallelism.FSDP or stage > 0
    split = layout.tensor_parallel * layout.pipeline_parallel > 1
    fp32_model = not (sharded or split or workload.kernels is KernelLibrary.FUSED)
    if full and fp32_model and runs_autocast(workload, sixteen_bit):
        return RESIDUAL_BYTES_FP32
    return _element_bytes(sixteen_bit)


def eager_rms_norm(workload: Workload) -> bool:
    """The norms are RMSNorms run as eager PyTorch ops (EAGER_RMS_NORM_FP32_BYTES): a
    Llama-family model (gated MLP, RMSNorm) written as transformers and torchtune write it,
    without a fused norm kernel (`kernels` eager)."""
    return workload.gated_mlp and workload.kernels is KernelLibrary.EAGER


def runs_autocast(workload: Workload, sixteen_bit: bool) -> bool:
    """The 16-bit run computes under autocast: mixed precision that keeps no 16-bit model (not
    pure 16-bit, nor apex O2's, `gradients_16bit`, which casts the model and patches no op)."""
    return sixteen_bit and not (workload.pure_16bit or workload.gradients_16bit)


def _activation_saved_bytes(workload: Workload, sixteen_bit: bool) -> float | None:
    """Bytes per f-wide element an eager NewGELU keeps under autocast (16-bit compute over fp32
    weights: mixed precision that is not pure 16-bit); None where one kernel's input is kept."""
    eager = workload.kernels is KernelLibrary.EAGER
    if workload.hidden_act == "gelu_new" and eager and runs_autocast(workload, sixteen_bit):
        return AUTOCAST_NEW_GELU_SAVED_BYTES
    return None


# torchtitan's selective checkpointing by op (torchtitan/parallelisms/parallelize_llama.py
# _apply_ac_to_transformer_block, mode "selective", selective_ac_option "op", end of 2024) wraps
# each layer in a checkpoint whose policy saves the outputs of aten.mm, of the flash and
# efficient attention kernels and of the reduce-scatters, "except every second mm" (it counts
# the layer's mm calls and recomputes the even ones); everything else the backward recomputes.
# Float8 linears dispatch aten.mm under their tensor subclass, so they count alike.


def selective_layer_linears(w: Workload) -> tuple[tuple[float, float, bool], ...]:
    """A layer's linears in the order torchtitan's forward calls them, each (input width,
    output width, row parallel): wq, wk, wv, wo, then w1, w3, w2 of a gated MLP (its
    FeedForward computes w2(silu(w1(x)) * w3(x))) or the two of a plain one; an expert MLP's
    widths times the experts each token runs."""
    h = float(w.hidden_size or 0)
    kv = h * (w.kv_heads or w.num_heads or 1) / (w.num_heads or 1)
    f = float(w.ffn_hidden_size or 4 * h) * (w.experts_per_token or 1)
    attention = ((h, h, False), (h, kv, False), (h, kv, False), (h, h, True))
    mlp = (
        ((h, f, False), (h, f, False), (f, h, True))
        if w.gated_mlp
        else ((h, f, False), (f, h, True))
    )
    return attention + mlp


def selective_keeps(call: int) -> bool:
    """Whether selective checkpointing keeps the output of a layer's `call`-th linear (from 1):
    the odd ones; the policy recomputes every second mm."""
    return call % 2 == 1


def selective_gemm_recompute_share(w: Workload) -> float:
    """The share of a layer's linear FLOPs selective checkpointing computes again in the
    backward: the linears whose outputs it does not keep (selective_keeps)."""
    linears = selective_layer_linears(w)
    recomputed = sum(i * o for n, (i, o, _) in enumerate(linears, 1) if not selective_keeps(n))
    return recomputed / sum(i * o for i, o, _ in linears)


def selective_saved_bytes(
    w: Workload, element_bytes: float, residual: float, layout: MemoryLayout
) -> float:
    """Bytes per token a layer keeps under selective checkpointing: the layer's input (as a
    checkpointed layer keeps it), the outputs of its odd linears (a row-parallel one's whole,
    before its reduction), and its attention's output with the kernel's fp32 log-sum-exp per
    head."""
    t, sp = layout.tensor_parallel, layout.sequence_parallel
    h = float(w.hidden_size or 0)
    kept = residual * h / (t if sp else 1)
    for n, (_, out, row_parallel) in enumerate(selective_layer_linears(w), 1):
        if selective_keeps(n):
            kept += element_bytes * out / (1 if row_parallel else t)
    return kept + (element_bytes * h + 4.0 * (w.num_heads or 1)) / t


def transformer_activation_bytes_per_sample(
    workload: Workload, sixteen_bit: bool, layout: MemoryLayout, allocated: bool = False
) -> float:
    """Activations per sample (of one micro-batch) on the most loaded GPU of a transformer:
    its layers (each keeping only its input, e s h, under full activation checkpointing, its
    input and some matmul and attention outputs under selective checkpointing
    (selective_saved_bytes), plus one layer recomputed at a time in the backward; under
    activation offloading only the resident_layers' on the GPU), the embedding's dropout mask
    and the head
    (final norm and projection inputs, the logits and their fp32 log-softmax: Korthikanti's
    4 s b v, and their gradients at the loss's backward, _logit_bytes; a fused loss keeps the
    16-bit logits and a log-sum-exp per token; a chunked head,
    `loss_chunks`, holds 1/n of the logits at a time). The head and the recomputed layer are
    not alive at once (`allocated`, the live tensors' peak, torch.cuda.max_memory_allocated's):
    autograd frees the loss's, the output projection's and the final norm's saved tensors as
    each of their nodes' backward runs (torch/csrc/autograd/engine.cpp releases a node's saved
    variables after its backward unless retain_graph), all before the backward reaches the last
    checkpointed layer and recomputes it, which then shares the GPU only with the logits the
    training loop still holds (held_logit_bytes); the larger binds. What the caching allocator
    reserves, and a card must have room for, counts both. Pipeline
    stages under 1F1B: the first holds min(micro-batches, stages) micro-batches of its L/p
    layers, the last one micro-batch and the head. An encoder-decoder model adds its
    encoder's layers and a cross-attention block per decoder layer (not pipelined here)."""
    w, e = workload, _element_bytes(sixteen_bit)
    s, h, layers = w.seq_len or 0, w.hidden_size or 0, w.num_layers or 0
    t, sp = layout.tensor_parallel, layout.sequence_parallel
    r, eager_norm = residual_bytes(w, sixteen_bit, layout), eager_rms_norm(w)
    full = transformer_layer_activation_bytes(
        s, h, w.num_heads or 1, t, sp, w.flash_attention,
        kv_heads=w.kv_heads, ffn_hidden_size=w.ffn_hidden_size, gated_mlp=w.gated_mlp,
        dropout=w.dropout, element_bytes=e, key_len=s + (w.memory_len or 0),
        experts_per_token=w.experts_per_token or 1, fused_activation=w.fused_activation,
        fp32_adapter_targets=w.lora_targets if w.fp32_adapters else frozenset(),
        adapter_copy_bytes=e if w.adapter_autocast else FP32_ADAPTER_INPUT_BYTES,
        adapted=None if w.finetune is FinetuneMethod.FULL else w.lora_targets,
        frozen_inputs_kept=frozen_linears_keep_inputs(w),
        activation_saved_bytes=_activation_saved_bytes(w, sixteen_bit), compiled=_compiled(w),
        residual_bytes=r, eager_rms_norm=eager_norm, autocast_softmax=runs_autocast(w, sixteen_bit),
        expanded_kv=w.expanded_kv,
    )  # fmt: skip
    if w.flash_attention:
        full += 4.0 * (w.num_heads or 1) * s / t  # the kernel's fp32 log-sum-exp per row
    encoder, cross, encoder_layer = _encoder_bytes(w, e, layout)
    full += cross
    # a checkpointed layer keeps its input alone (recompute_share of them), the others all
    share = w.recompute_share
    per_layer = share * r * s * h / (t if sp else 1) + (1.0 - share) * full
    if w.selective_checkpointing:
        per_layer = selective_saved_bytes(w, e, r, layout) * s
    recompute = max(full, encoder_layer) if share > 0 or w.selective_checkpointing else 0.0
    embedding = (MASK_BYTES * s * h if w.dropout else 0.0) / (t if sp else 1)
    head = (norm_saved_bytes(r, eager_norm) + e) * s * h / (t if sp else 1)
    if w.vocab_size:
        head += _logit_bytes(w, e) * s * w.vocab_size / t
        head += FUSED_LOSS_BYTES_PER_TOKEN * s if w.fused_loss else 0.0
    p = layout.pipeline_parallel
    stage_layers = resident_layers(w, layers / p)
    if allocated:  # the recomputed layer with whatever logits the loop still holds, or the head
        backward = max(recompute + held_logit_bytes(w, e) * s * (w.vocab_size or 0) / t, head)
    else:
        # What PyTorch's caching allocator reserves over checkpointed steps is taken to hold
        # the loss's blocks and the recomputed layer's together: freed blocks stay cached, and
        # the head's logits-sized ones, once split to serve the next forward's saved tensors
        # while those live, cannot serve the next loss whole, which then maps new segments (the
        # fragmentation PYTORCH_CUDA_ALLOC_CONF expandable_segments is there to avoid: PyTorch
        # docs, "CUDA semantics", memory management). A card is sized by this reserve.
        backward = recompute + head
    if p == 1:
        return per_layer * stage_layers + backward + embedding + encoder
    first = per_layer * stage_layers * min(layout.micro_batches, p) + embedding + recompute
    last = per_layer * stage_layers + backward
    return max(first, last)


def held_logit_bytes(workload: Workload, element_bytes: float) -> float:
    """Bytes per logit the training loop keeps referenced through the backward: the model's
    16-bit logits where the loop keeps the model's output (`out = model(**batch);
    out.loss.backward()`, as fsdp_qlora's train.py @05ed9f2 and dlrig's gpu_jobs.hf_step do:
    out.logits lives until the step ends), none where it drops them first (`logits_released`:
    torchtune's recipes `del logits` before loss.backward(), lora_finetune_single_device.py
    @1814feb) or where no whole logits tensor is made (a chunked head that frees each chunk).
    transformers before 4.45 returned an fp32 copy (LlamaForCausalLM's `logits.float()`):
    counted at 16 bits, as the model's own output is."""
    w = workload
    if w.logits_released or (w.loss_chunks > 1 and not w.chunked_logits_kept):
        return 0.0
    return element_bytes


# torchtune's OffloadActivations (training/_activation_offloading.py @1814feb) copies each
# tensor the forward saves to pinned host RAM on a side stream and keeps on the GPU only the
# last max_fwd_stash_size = 5 until their copies finish; the stash is dropped when the backward
# starts, which brings each node's tensors back as it runs. The output projection is left on
# the GPU (get_act_offloading_ctx_manager), as is the loss, outside the model's forward.
OFFLOAD_FORWARD_STASH = 5


def resident_layers(workload: Workload, layers: float) -> float:
    """How many of `layers` keep their saved tensors on the GPU at the end of the forward: all,
    or under `activation_offloading` the forward stash's (OFFLOAD_FORWARD_STASH tensors: that
    many checkpointed layers' inputs, or under one whole layer's saved tensors without
    checkpointing, a layer saving more than five)."""
    if not workload.activation_offloading:
        return layers
    stash = OFFLOAD_FORWARD_STASH if workload.activation_checkpointing else 1.0
    return min(layers, stash)


def per_sample_bytes(
    workload: Workload,
    sixteen_bit: bool,
    layout: MemoryLayout | None = None,
    allocated: bool = False,
) -> float:
    """Memory that grows with the batch: saved activations (training: from the transformer
    structure when known, else the workload's 32-bit figure, halved for 16-bit) or the KV
    cache over the context plus the activations (decoding). Context parallelism keeps
    1/context of each sequence's activations on a GPU. `allocated`: the live tensors' peak
    (transformer_activation_bytes_per_sample), not the allocator's reserve."""
    measured = workload.activation_bytes_per_sample * (0.5 if sixteen_bit else 1.0)
    if workload.mode is Mode.INFERENCE:
        kv = (workload.kv_bytes_per_token or 0.0) * (workload.seq_len or 0)
        return kv + measured
    layout = layout or MemoryLayout()
    if workload.has_transformer_structure:
        whole = transformer_activation_bytes_per_sample(workload, sixteen_bit, layout, allocated)
        return whole / layout.context_parallel
    return measured / layout.context_parallel


def declared_layout(workload: Workload, gpus_per_node: int, nodes: int = 1) -> MemoryLayout:
    """The layout the workload states on `nodes` of `gpus_per_node` GPUs (data-parallel ranks:
    what tensor x pipeline leave, as parallelism.layout counts them)."""
    return MemoryLayout(
        zero_stage=workload.zero_stage,
        shard_ranks=parallelism.layout(workload, gpus_per_node, nodes).gradient_ranks,
        tensor_parallel=workload.tensor_parallel,
        pipeline_parallel=workload.pipeline_parallel,
        sequence_parallel=workload.sequence_parallel,
        context_parallel=workload.context_parallel,
        expert_parallel=workload.expert_parallel,
        micro_batches=workload.micro_batches,
        cpu_offload=workload.cpu_offload,
    )


def memory_need(
    workload: Workload,
    batch: int,
    sixteen_bit: bool,
    layout: MemoryLayout,
    cuda_context_gb: float,
    allocator_overhead_fraction: float,
    allocated: bool = False,
) -> MemoryNeed:
    """What one GPU needs at `batch` under `layout`: model states, activations (or KV cache),
    the CUDA context (GiB) and the caching allocator's fragmentation. `allocated`: the live
    tensors' peak (what torch.cuda.max_memory_allocated measures), not what the allocator
    reserves and the card must hold (per_sample_bytes)."""
    states = _model_states(workload, sixteen_bit, layout)
    return MemoryNeed(
        model_states_bytes=states.gpu_bytes,
        activation_bytes_per_sample=per_sample_bytes(workload, sixteen_bit, layout, allocated),
        batch=batch,
        context_bytes=gib_to_bytes(cuda_context_gb),
        allocator_overhead_fraction=allocator_overhead_fraction,
        host_bytes=states.host_bytes,
        managed_bytes=managed_state_bytes(workload, layout),
        backward_gradient_bytes=backward_gradient_bytes(workload, sixteen_bit, layout),
    )


def need_interval_bytes(need: MemoryNeed) -> tuple[float, float]:
    """The 80% interval of `need.total_bytes`: its tensors scaled by MEMORY_RATIO_BAND, with
    the allocator's share of them and the CUDA context as counted."""
    tensors = need.peak_tensor_bytes
    scale = 1.0 + need.allocator_overhead_fraction
    low, high = MEMORY_RATIO_BAND
    return (
        tensors * low * scale + need.context_bytes,
        tensors * high * scale + need.context_bytes,
    )


# A plan sized to the card (paged_plan) lands on it up to rounding: it fits, and holds its own
# batch (MemoryPlan.fits, max_batch_per_gpu).
FIT_SLACK_BYTES = 1.0


def max_batch_per_gpu(need: MemoryNeed, available_bytes: float) -> int:
    """The largest batch whose need fits in available_bytes (0: the model alone does not)."""
    scale = 1.0 + need.allocator_overhead_fraction
    room = available_bytes + FIT_SLACK_BYTES - need.context_bytes - need.model_states_bytes * scale
    if room < 0:
        return 0
    per_sample = need.activation_bytes_per_sample * scale
    if per_sample <= 0:
        return 1_000_000_000
    # The backward's gradients and the activations are not held at once (peak_tensor_bytes).
    return int((room + need.backward_gradient_bytes * scale) // per_sample)


@dataclass(frozen=True)
class MemoryPlan:
    """The layout a job runs under on a build and what each GPU then needs. `note` says what
    was planned (empty when the workload's own layout was kept)."""

    layout: MemoryLayout
    need: MemoryNeed
    capacity_bytes: float
    gpus_per_node: int = 1
    note: str = ""

    @property
    def fits(self) -> bool:
        return self.need.total_bytes <= self.capacity_bytes + FIT_SLACK_BYTES

    @property
    def host_gb_per_node(self) -> float:
        """What CPU offload keeps in one node's RAM for all its GPUs (0 without offload)."""
        return capacity_gb(self.need.host_bytes * self.gpus_per_node)

    @property
    def max_batch_per_gpu(self) -> int:
        return max_batch_per_gpu(self.need, self.capacity_bytes)


def memory_plan(
    workload: Workload,
    sixteen_bit: bool,
    gpus_per_node: int,
    nodes: int,
    capacity_bytes: float,
    cuda_context_gb: float,
    allocator_overhead_fraction: float,
    host_ram_gb: float | None = None,
) -> MemoryPlan:
    """The one place that decides how a training job that does not fit each GPU as written
    runs, planned as people run it: first each micro-batch split into the fewest smaller ones
    that fit, their gradients accumulated (_split_plan; on several GPUs DDP's one all-reduce
    per optimizer step costs less than sharding's gathers each micro-batch); else, on several
    data-parallel GPUs when the document did not fix its parallel layout, FSDP/ZeRO-3 over all
    of them (QLoRA's 4-bit weights included, as in Answer.AI's FSDP + QLoRA, 2024), then with
    parameters and optimizer state offloaded to the host's RAM when that holds them. When no
    layout fits, the workload's own layout is reported. `check` says when the batch as written
    does not fit (GPU.4). `capacity_bytes`: one GPU's, `gpu_memory_bytes` of the smallest."""
    capacity = capacity_bytes

    def need_under(layout: MemoryLayout) -> MemoryNeed:
        return memory_need(
            workload, workload.batch_size // layout.accumulation_split, sixteen_bit, layout,
            cuda_context_gb, allocator_overhead_fraction,
        )  # fmt: skip

    declared = declared_layout(workload, max(1, gpus_per_node), max(1, nodes))
    kept = MemoryPlan(declared, need_under(declared), capacity, gpus_per_node)
    if not kept.fits and workload.paged_optimizer and workload.mode is Mode.TRAINING:
        paged = paged_plan(kept, optimizer_state_bytes(workload, declared))
        if paged is not None:
            return paged
    if workload.mode is not Mode.TRAINING or kept.fits:
        return kept
    split = _split_plan(workload, declared, need_under, capacity, gpus_per_node)
    if split is not None:
        return split
    if workload.parallel_fixed or declared.shard_ranks <= 1:
        return kept
    sharded = dataclasses.replace(declared, zero_stage=3, planned=True)
    for layout in (sharded, dataclasses.replace(sharded, cpu_offload=True)):
        plan = MemoryPlan(layout, need_under(layout), capacity, gpus_per_node)
        host_gb = plan.host_gb_per_node
        if host_ram_gb is not None and host_gb > host_ram_gb:
            continue  # the host cannot hold what would be offloaded
        if plan.fits:
            offload = (
                f", parameters and optimizer state offloaded to host RAM ({host_gb:.0f} GiB "
                "per node)"
                if layout.cpu_offload
                else ""
            )
            note = (
                f"sharded: the job does not fit replicated on each GPU, so it runs FSDP "
                f"(ZeRO-3) over its {layout.shard_ranks} data-parallel GPUs{offload}; "
                "fix `parallel` in the workload to choose otherwise"
            )
            return dataclasses.replace(plan, note=note)
    return kept


def _split_plan(
    workload: Workload,
    declared: MemoryLayout,
    need_under: Callable[[MemoryLayout], MemoryNeed],
    capacity: float,
    gpus_per_node: int,
) -> MemoryPlan | None:
    """The job with each micro-batch run as the fewest smaller ones that fit, their gradients
    accumulated: what people do first when a batch runs out of memory (transformers'
    `gradient_accumulation_steps`), the samples per optimizer step unchanged. None when even
    one sample at a time does not fit."""
    batch = workload.batch_size
    for split in (n for n in range(2, batch + 1) if batch % n == 0):
        layout = dataclasses.replace(declared, accumulation_split=split)
        plan = MemoryPlan(layout, need_under(layout), capacity, gpus_per_node)
        if plan.fits:
            note = (
                f"micro-batch split: batch {batch} does not fit each GPU, so it runs as "
                f"{split} micro-batches of {batch // split} with their gradients accumulated "
                "(the same samples per optimizer step); set batch_size and "
                "gradient_accumulation to choose otherwise"
            )
            return dataclasses.replace(plan, note=note)
    return None


def optimizer_state_bytes(workload: Workload, layout: MemoryLayout) -> float:
    """The optimizer state one GPU holds under the layout (none when CPU offload keeps it or
    the job steps no optimizer)."""
    if layout.cpu_offload or workload.optimizer_step is OptimizerStep.NONE:
        return 0.0
    trainable = workload.params * workload.trainable_fraction
    state = trainable * optimizer_state_bytes_per_param(
        workload.optimizer.value, workload.pure_16bit
    )
    ranks = float(layout.shard_ranks) if layout.effective_stage >= 1 else 1.0
    return state / ranks / float(layout.tensor_parallel * layout.pipeline_parallel)


# bitsandbytes' paged optimizers allocate each state tensor of a parameter of 1e5 elements or
# more with F.get_paged, CUDA managed memory (cudaMallocManaged) outside PyTorch's caching
# allocator, and the smaller ones and the 8-bit block constants (absmax) with torch.zeros
# (bitsandbytes/optim/optimizer.py Optimizer8bit.get_state_buffer and init_state;
# functional.py get_paged). Every weight matrix of a transformer is over 1e5 elements; the
# norms' vectors under it are a few millionths of its parameters, counted with the rest.


def managed_state_bytes(workload: Workload, layout: MemoryLayout) -> float:
    """The optimizer state one GPU's paged optimizer keeps in CUDA managed memory: its
    moments, without the 8-bit block constants (EIGHT_BIT_STATE_BYTES' 4 / 2,048), which are
    torch tensors; 0 without a paged optimizer or under CPU offload."""
    if not workload.paged_optimizer or workload.mode is not Mode.TRAINING:
        return 0.0
    state = optimizer_state_bytes(workload, layout)
    if workload.optimizer.value == "adamw8bit":
        return state / EIGHT_BIT_STATE_BYTES
    return state


def paged_plan(plan: MemoryPlan, state_bytes: float) -> MemoryPlan | None:
    """The plan with a paged optimizer's state spilled to host RAM as far as the GPU runs
    short: bitsandbytes' paged optimizers keep it in CUDA unified memory, which "will only
    offload to CPU when there is not enough GPU available" (torchtune
    docs/source/tutorials/memory_optimizations.rst @bd2a0fc). None when even all of it in
    host RAM leaves the job too big."""
    need = plan.need
    short = (need.total_bytes - plan.capacity_bytes) / (1.0 + need.allocator_overhead_fraction)
    if short <= 0 or short > state_bytes:
        return None
    paged = dataclasses.replace(
        need,
        model_states_bytes=need.model_states_bytes - short,
        host_bytes=need.host_bytes + short,
        paged_bytes=short,
    )
    note = (
        f"paged optimizer: {capacity_gb(short):.1f} GiB of its state does not fit the GPU, "
        "lives in host RAM and pages over PCIe to the GPU and back each optimizer step"
    )
    return dataclasses.replace(plan, need=paged, note=note)


def sharded_workload(workload: Workload, layout: MemoryLayout) -> Workload:
    """The workload as the planned layout runs it (FSDP, its ZeRO stage, offload), so that the
    step's communication is that of the sharded job; a split micro-batch runs its smaller
    micro-batches, more of them per optimizer step."""
    if layout.accumulation_split > 1:
        workload = dataclasses.replace(
            workload,
            batch_size=workload.batch_size // layout.accumulation_split,
            gradient_accumulation=workload.gradient_accumulation * layout.accumulation_split,
        )
    if not layout.planned:
        return workload
    return dataclasses.replace(
        workload,
        parallel=Parallelism.FSDP,
        zero_stage=layout.zero_stage,
        cpu_offload=layout.cpu_offload,
    )
