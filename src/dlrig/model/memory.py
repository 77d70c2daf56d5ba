"""GPU memory per GPU: model states (weights, gradients, optimizer), activations x batch, and
the CUDA context and allocator overhead; FSDP/ZeRO sharding, LoRA and 4-bit QLoRA.

Per trainable parameter under mixed-precision Adam: 2 B 16-bit weight + 2 B 16-bit gradient +
4 B fp32 master weight + 8 B two fp32 moments = 16 B (Rajbhandari et al. 2020, ZeRO, sec. 3.1);
in fp32: 4 + 4 + 8 = 16 B. SGD with momentum keeps one moment (4 B) instead of two.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlrig.enums import Parallelism
from dlrig.units import BITS_PER_BYTE, GB
from dlrig.workloads.model import Mode, Workload

# 4-bit NF4 with double quantization: 4 bits + 0.127 bits of constants per weight (QLoRA).
QLORA_BITS_PER_WEIGHT = 4.127


@dataclass(frozen=True)
class MemoryNeed:
    """Bytes one GPU holds, by part; the caching allocator adds a share on top of the tensors."""

    model_states_bytes: float
    activation_bytes_per_sample: float
    batch: int
    context_bytes: float
    allocator_overhead_fraction: float

    @property
    def total_bytes(self) -> float:
        tensors = self.model_states_bytes + self.activation_bytes_per_sample * self.batch
        return tensors * (1.0 + self.allocator_overhead_fraction) + self.context_bytes


def optimizer_state_bytes_per_param(optimizer: str) -> float:
    """fp32 optimizer state per trainable parameter: Adam/AdamW two moments, SGD one."""
    return 8.0 if optimizer in ("adam", "adamw") else 4.0


def trainable_state_bytes_per_param(optimizer: str, sixteen_bit: bool) -> float:
    """Weights + gradients + optimizer state per trainable parameter (16 B for Adam, both
    fp32 and mixed precision; 12 B for SGD)."""
    weights_and_grads = (2.0 + 2.0 + 4.0) if sixteen_bit else (4.0 + 4.0)
    return weights_and_grads + optimizer_state_bytes_per_param(optimizer)


def frozen_weight_bytes_per_param(weight_bits: int | None, sixteen_bit: bool) -> float:
    """Storage of a weight that does not train: 4-bit QLoRA, else 16 or 32 bits."""
    if weight_bits == 4:
        return QLORA_BITS_PER_WEIGHT / BITS_PER_BYTE
    if weight_bits is not None:
        return weight_bits / BITS_PER_BYTE
    return 2.0 if sixteen_bit else 4.0


def model_state_bytes(workload: Workload, sixteen_bit: bool, shards: int) -> float:
    """Model states on one GPU; FSDP/ZeRO-3 shards them over `shards` GPUs."""
    params = workload.params
    if workload.mode is Mode.INFERENCE:
        return params * frozen_weight_bytes_per_param(workload.weight_bits, sixteen_bit)
    trainable = params * workload.trainable_fraction
    frozen = params - trainable
    total = trainable * trainable_state_bytes_per_param(workload.optimizer.value, sixteen_bit)
    total += frozen * frozen_weight_bytes_per_param(workload.weight_bits, sixteen_bit)
    if workload.parallel is Parallelism.FSDP and shards > 1:
        total /= shards
    return total


def per_sample_bytes(workload: Workload, sixteen_bit: bool) -> float:
    """Memory that grows with the batch: saved activations (training) or the KV cache over
    the context (decoding)."""
    if workload.mode is Mode.INFERENCE:
        kv = (workload.kv_bytes_per_token or 0.0) * (workload.seq_len or 0)
        return kv + workload.activation_bytes_per_sample * (0.5 if sixteen_bit else 1.0)
    return workload.activation_bytes_per_sample * (0.5 if sixteen_bit else 1.0)


def memory_need(
    workload: Workload,
    batch: int,
    sixteen_bit: bool,
    shards: int,
    cuda_context_gb: float,
    allocator_overhead_fraction: float,
) -> MemoryNeed:
    """What one GPU needs at `batch`: model states, activations (or KV cache), the CUDA
    context and the caching allocator's fragmentation."""
    return MemoryNeed(
        model_states_bytes=model_state_bytes(workload, sixteen_bit, shards),
        activation_bytes_per_sample=per_sample_bytes(workload, sixteen_bit),
        batch=batch,
        context_bytes=cuda_context_gb * GB,
        allocator_overhead_fraction=allocator_overhead_fraction,
    )


def max_batch_per_gpu(need: MemoryNeed, available_bytes: float) -> int:
    """The largest batch whose need fits in available_bytes (0: the model alone does not)."""
    scale = 1.0 + need.allocator_overhead_fraction
    room = available_bytes - need.context_bytes - need.model_states_bytes * scale
    if room <= 0:
        return 0
    per_sample = need.activation_bytes_per_sample * scale
    if per_sample <= 0:
        return 1_000_000_000
    return int(room // per_sample)


def transformer_layer_activation_bytes(
    seq_len: int,
    hidden_size: int,
    num_heads: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    selective_recompute: bool = False,
) -> float:
    """Activations one transformer layer saves for the backward pass, per sample, at 16-bit
    (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    arXiv:2205.05198, sec. 4): s h (34 + 5 a s / h) bytes: 34 s h for the linear layers,
    norms, GeLU and dropout masks, 5 a s^2 for the attention scores, softmax and its dropout.
    Tensor parallelism over t GPUs divides the attention and MLP part (24 s h + 5 a s^2) by t;
    sequence parallelism also divides the norms and dropouts (10 s h); selective recomputation
    drops the 5 a s^2 term (what flash attention also never stores)."""
    s, h, t = float(seq_len), float(hidden_size), float(tensor_parallel)
    attention_scores = 0.0 if selective_recompute else 5.0 * num_heads * s * s / t
    sharded = 24.0 * s * h / t
    norms_dropouts = 10.0 * s * h / (t if sequence_parallel else 1.0)
    return sharded + norms_dropouts + attention_scores
