"""GPU compute per step: a roofline per layer class.

Two classes of work make up a step. Matrix multiplications and convolutions (the counted FLOPs)
run at the precision's peak times an achievable efficiency, unless reading their weights takes
longer (decoding: every weight once per generated token). Everything else (norms, activations,
element-wise ops, softmax, the optimizer step) is bound by memory bandwidth: bytes moved over
the achievable bandwidth. The two classes run as separate kernels, so their times add; a fixed
per-step time covers launches and sequential work that neither class explains.
"""

from __future__ import annotations

from dlrig.units import gb_s_to_bytes_s
from dlrig.workloads.model import FinetuneMethod, Mode, Workload

# Optimizer-step bytes moved per trainable parameter (read + write of weights, gradient and
# state): SGD momentum reads w, g, m and writes w, m (5 x 4 B); Adam adds the second moment
# (7 x 4 B). The 16-bit working copy adds a 2-byte write under mixed precision.
OPTIMIZER_STEP_BYTES = {"sgd": 20.0, "adam": 28.0, "adamw": 28.0}


def training_flop_multiplier(workload: Workload) -> float:
    """FLOPs of a step per forward FLOP: forward 1 + backward 2 (activation and weight
    gradients); frozen weights (LoRA/QLoRA) skip the weight gradients; activation
    checkpointing recomputes the forward once. Inference runs the forward only."""
    if workload.mode is Mode.INFERENCE:
        return 1.0
    backward = 2.0 if workload.finetune is FinetuneMethod.FULL else 1.0
    recompute = 1.0 if workload.activation_checkpointing else 0.0
    return 1.0 + backward + recompute


def matmul_time_s(flops: float, peak_flops_s: float, efficiency: float) -> float:
    """Time of the matmul-heavy class when compute-bound: FLOPs / (peak x efficiency)."""
    return flops / (peak_flops_s * efficiency)


def bandwidth_time_s(n_bytes: float, bandwidth_gb_s: float, efficiency: float) -> float:
    """Time to move n_bytes through memory at the achievable share of its bandwidth."""
    return n_bytes / (gb_s_to_bytes_s(bandwidth_gb_s) * efficiency)


def activation_bytes_per_sample(workload: Workload, sixteen_bit: bool) -> float:
    """Saved activation bytes per sample at the run's precision: the 32-bit figure halved when
    activations are stored in 16 bits (mixed precision keeps a few in fp32; absorbed by the
    fitted memory passes)."""
    return workload.activation_bytes_per_sample * (0.5 if sixteen_bit else 1.0)


def moves_16bit_activations(sixteen_bit: bool, path: str) -> bool:
    """Whether the memory-bound kernels move 16-bit tensors. Not on a GPU without fast 16-bit
    (GPU.3): there every op computes in fp32, and autocast's conversions around each one eat
    the saving (Lambda measured only 1.17x from fp16 on a GTX 1080 Ti)."""
    return sixteen_bit and path != "simt_16bit"


def memory_bound_bytes(workload: Workload, batch: int, sixteen_bit: bool, passes: float) -> float:
    """Bytes the memory-bound class moves in one step: `passes` x saved activations x batch
    (written in the forward, read back and their gradients written in the backward)."""
    if workload.mode is Mode.INFERENCE:
        passes = passes / 3.0  # forward only: a third of the training traffic
    return passes * activation_bytes_per_sample(workload, sixteen_bit) * batch


def optimizer_bytes(workload: Workload, trainable_params: float) -> float:
    """Bytes the optimizer step moves (0 for inference)."""
    if workload.mode is Mode.INFERENCE:
        return 0.0
    return OPTIMIZER_STEP_BYTES[workload.optimizer.value] * trainable_params


def decode_bytes_per_step(workload: Workload, weight_bytes: float, batch: int) -> float:
    """Bytes read per decoding step of a language model: every weight once, plus each
    sequence's KV cache over its context."""
    kv = (workload.kv_bytes_per_token or 0.0) * (workload.seq_len or 0) * batch
    return weight_bytes + kv


def inference_flops_per_step(workload: Workload, batch: int) -> float:
    """Forward FLOPs of one inference step: one token per sequence when decoding a language
    model with a KV cache, else one forward pass per sample."""
    if workload.kv_bytes_per_token is not None and workload.seq_len:
        return workload.forward_flops_per_sample / workload.seq_len * batch
    return workload.forward_flops_per_sample * batch
