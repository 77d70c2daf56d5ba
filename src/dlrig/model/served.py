"""A serving workload's estimate told in the estimate's own terms (issue 39): the step is the
time per output token a user sees, its stages are the decode step's parts, the throughput is
the output tokens/s of all users, and the memory is what one card holds of the weights in
their stored format and of the users' KV cache. Built from dlrig.model.serving's figures
alone, so that `estimate`, its JSON, `plan` and every page show one figure for each.

Memory here is in serving's units, GiB like every memory figure (dlrig.units;
dlrig.model.serving_memory), so that `fits` and the figures beside it agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlrig.enums import Bottleneck
from dlrig.machine.model import Build
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import Calibration
from dlrig.model.result import MemoryEstimate
from dlrig.model.serving import (
    SERIAL_LIMITS,
    ServingEstimate,
    ServingLimit,
    binding_limit,
    cards,
    tensor_parallel_degree,
)
from dlrig.units import bytes_to_gib
from dlrig.workloads.serving import Engine, ServeSpec, WeightFormat

# The bottleneck vocabulary (design.md) for each serving limit; a memory limit names the
# stage that binds once it is lifted, decoding being a read of the weights.
LIMIT_STAGE = {
    ServingLimit.WEIGHT_MEMORY: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.KV_MEMORY: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.DECODE_BANDWIDTH: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.DECODE_ATTENTION: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.DECODE_COMPUTE: Bottleneck.GPU_COMPUTE,
    ServingLimit.PREFILL_COMPUTE: Bottleneck.GPU_COMPUTE,
    ServingLimit.INTERCONNECT: Bottleneck.INTERCONNECT,
    ServingLimit.OFFLOAD: Bottleneck.PCIE,
    ServingLimit.ENGINE_OVERHEAD: Bottleneck.GPU_COMPUTE,
    ServingLimit.HOST: Bottleneck.CPU_PREPROCESSING,
}

# Weights that do not fit have their own, by the estimate's format (WEIGHT_MEMORY_ADVICE).
ADVICE = {
    ServingLimit.KV_MEMORY: (
        "fewer users, shorter contexts, an 8-bit KV cache (serve.kv_precision: fp8), or more "
        "GPU memory"
    ),
    ServingLimit.DECODE_BANDWIDTH: (
        "a GPU with more memory bandwidth (GPU.1) or a smaller weight format; more users per "
        "step raise the total, each step reading the weights once for all of them"
    ),
    ServingLimit.DECODE_ATTENTION: (
        "shorter contexts or fewer users per model copy (attention reads every user's KV "
        "cache each step), an 8-bit KV cache (serve.kv_precision: fp8), or a GPU with more "
        "memory bandwidth (GPU.1)"
    ),
    ServingLimit.DECODE_COMPUTE: (
        "a GPU with more TFLOPS at this precision (GPU.1), or fewer users per model copy"
    ),
    ServingLimit.PREFILL_COMPUTE: (
        "a GPU with more TFLOPS (prefill is compute-bound), shorter prompts, or fewer users "
        "per model copy (each prompt stalls the others' decoding)"
    ),
    ServingLimit.INTERCONNECT: "NVLink between the GPUs (DP.2), or fewer GPUs per model copy",
    ServingLimit.OFFLOAD: "more GPU memory or a smaller weight format: no layer left in RAM",
    ServingLimit.ENGINE_OVERHEAD: (
        "a batched engine with CUDA graphs (serve.engine: batched), or more users per step"
    ),
    ServingLimit.HOST: (
        "a host CPU with faster cores (the engine's scheduler and sampler run on one core per "
        "GPU), or fewer requests per scheduler: serve.max_batch, more copies of the model, or "
        "attention data parallelism for a mixture of experts"
    ),
}


@dataclass(frozen=True)
class ServedStep:
    """The time per output token a user sees, by stage: `stages_s` each stage's time,
    `exposed_s` what it adds after the decode step's overlap (the GEMMs' reading and
    computing overlap; attention's KV read, offloaded layers, all-reduces, launches and the
    other users' prefills do not)."""

    time_s: float
    stages_s: dict[Bottleneck, float]
    exposed_s: dict[Bottleneck, float]
    hidden: tuple[Bottleneck, ...]
    bottleneck: Bottleneck
    next_bottleneck: Bottleneck | None
    speedup_if_removed: float


def served_step(s: ServingEstimate) -> ServedStep:
    """The decode step's parts (dlrig.model.serving.decode_parts_s) as the estimate's stages:
    the weights' and the KV cache's reads are gpu_memory_bandwidth; FLOPs, per-layer launches
    and the prefills that stall each user's answer are gpu_compute; all-reduces and pipeline
    hops interconnect; layers read from host RAM pcie (the serving limit `offload`). They add
    up to `tpot_s`. The engine's CPU time an iteration is cpu_preprocessing: it overlaps the
    GPU's and shows only by what the GPU waits on it (serving.host_step_s)."""
    parts = s.decode_parts_s
    bandwidth = parts[ServingLimit.DECODE_BANDWIDTH.value]
    flops = parts[ServingLimit.DECODE_COMPUTE.value]
    attention = parts[ServingLimit.DECODE_ATTENTION.value]
    # the other users' prefills
    stalls = max(s.tpot_s - s.host_wait_s - s.decode_step_s, 0.0)
    serial = {
        Bottleneck.GPU_MEMORY_BANDWIDTH: attention,
        Bottleneck.GPU_COMPUTE: parts[ServingLimit.ENGINE_OVERHEAD.value] + stalls,
        Bottleneck.INTERCONNECT: parts[ServingLimit.INTERCONNECT.value],
        Bottleneck.PCIE: parts[ServingLimit.OFFLOAD.value],
    }
    stages = {b: 0.0 for b in Bottleneck}
    stages.update(serial)
    stages[Bottleneck.GPU_COMPUTE] += flops
    stages[Bottleneck.GPU_MEMORY_BANDWIDTH] += bandwidth
    stages[Bottleneck.CPU_PREPROCESSING] = s.host_step_s
    exposed = dict(stages)
    exposed[Bottleneck.CPU_PREPROCESSING] = s.host_wait_s
    hidden: list[Bottleneck] = []
    # The host's time blends with the step's (serving.with_host_s): hidden while the GPU waits
    # on less than half of it.
    if s.host_step_s > 0.0 and 2.0 * s.host_wait_s < s.host_step_s:
        hidden.append(Bottleneck.CPU_PREPROCESSING)
    # The GEMMs' read and FLOPs overlap (serving.decode_step_s): the slower side shows whole,
    # the other only by what the overlap leaves of it.
    step_parts = sum(parts[k.value] for k in SERIAL_LIMITS)
    unhidden = max(s.decode_step_s - step_parts - max(bandwidth, flops), 0.0)
    if bandwidth >= flops:
        exposed[Bottleneck.GPU_COMPUTE] = serial[Bottleneck.GPU_COMPUTE] + unhidden
    else:
        exposed[Bottleneck.GPU_MEMORY_BANDWIDTH] = attention + unhidden
        if attention + unhidden == 0.0:
            hidden.append(Bottleneck.GPU_MEMORY_BANDWIDTH)
    # Users queued for the KV cache (kv_memory) leave the running ones' step to its own
    # stage; the other limits name theirs.
    limit = (
        binding_limit(parts, stalls)
        if s.binding is ServingLimit.KV_MEMORY and s.fits
        else s.binding
    )
    bottleneck = LIMIT_STAGE[limit]

    def without(stage: Bottleneck) -> float:
        # The step were the stage free: the roofline's other side shows, the rest stays; the
        # host's time still bounds it unless the host is the stage.
        read = 0.0 if stage is Bottleneck.GPU_MEMORY_BANDWIDTH else bandwidth
        compute = 0.0 if stage is Bottleneck.GPU_COMPUTE else flops
        gpu = max(read, compute) + sum(v for b, v in serial.items() if b is not stage)
        return gpu if stage is Bottleneck.CPU_PREPROCESSING else max(gpu, s.host_step_s)

    step_s = sum(exposed.values())
    left = without(bottleneck)
    rest = {b: v for b, v in stages.items() if b is not bottleneck and v > 0}
    return ServedStep(
        time_s=step_s,
        stages_s=stages,
        exposed_s=exposed,
        hidden=tuple(hidden),
        bottleneck=bottleneck,
        next_bottleneck=max(rest, key=lambda b: rest[b]) if rest else None,
        speedup_if_removed=step_s / left if left > 0 else math.inf,
    )


@dataclass(frozen=True)
class ServedLayout:
    """How the cards serve: GPUs a model copy spans, the copies, and the users one copy
    batches (the asked users spread evenly, dlrig.model.serving.serving_estimate)."""

    gpus_per_copy: int
    copies: int
    users_per_copy: int


def served_layout(build: Build, spec: ServeSpec, cal: Calibration) -> ServedLayout:
    """The layout serving_estimate times, from the same card group and the same rule."""
    group = cards(build, cal)
    if group is None:
        return ServedLayout(1, 1, spec.users)
    tp = tensor_parallel_degree(spec, group.count, group.memory_bytes, nodes=build.nodes)
    copies = max(group.count // tp, 1) * build.nodes
    return ServedLayout(tp, copies, math.ceil(spec.users / copies))


def served_memory(
    s: ServingEstimate, spec: ServeSpec, layout: ServedLayout, card_bytes: float
) -> MemoryEstimate:
    """What one card holds: its share of a copy's weights (those not left in RAM), its share
    of the KV cache of the users the copy runs at once (those queued past it hold none), and
    the engine's reserve with the prefill's activations. `fits` is the serving answer itself;
    the figures add up to it. `max_batch_per_gpu` is the users one copy can hold."""
    ways = layout.gpus_per_copy
    weights = mem.copy_weight_bytes(spec, ways) * (1.0 - s.offloaded_fraction) / ways
    held = layout.users_per_copy if not s.fits else min(layout.users_per_copy, s.running_per_copy)
    kv = mem.kv_cache_bytes(spec, held) / ways
    reserve = mem.reserve_bytes_per_gpu(spec, card_bytes, ways)
    return MemoryEstimate(
        gpu_required_gb=bytes_to_gib(weights + kv + reserve),
        gpu_available_gb=bytes_to_gib(card_bytes),
        fits=s.fits,
        max_batch_per_gpu=s.max_users_fit // layout.copies,
        model_states_gb=bytes_to_gib(weights),
        activations_gb=bytes_to_gib(kv),
        overhead_gb=bytes_to_gib(reserve),
    )


# An offline batch (serve.requests) runs as many requests as the build holds, whatever the
# user count: where the advice above is about users, a batch's is about requests running at once.
BATCH_ADVICE = {
    ServingLimit.DECODE_BANDWIDTH: (
        "more requests running at once (more GPU memory, an 8-bit KV cache: serve.kv_precision: "
        "fp8), each step reading the weights once for all of them, or a GPU with more memory "
        "bandwidth (GPU.1)"
    ),
    ServingLimit.DECODE_ATTENTION: (
        "an 8-bit KV cache (serve.kv_precision: fp8) or shorter contexts (attention reads every "
        "running request's KV cache each step), or a GPU with more memory bandwidth (GPU.1)"
    ),
    ServingLimit.DECODE_COMPUTE: "a GPU with more TFLOPS at this precision (GPU.1), or more GPUs",
    ServingLimit.PREFILL_COMPUTE: (
        "a GPU with more TFLOPS (prefill is compute-bound), more GPUs, or shorter prompts"
    ),
    ServingLimit.ENGINE_OVERHEAD: (
        "a batched engine with CUDA graphs (serve.engine: batched), or more requests running at "
        "once (more GPU memory)"
    ),
}

# An engine that already replays its steps as CUDA graphs (TensorRT-LLM-like) pays its fixed
# time a layer once a step however many run in it: only more of them dilute it.
BATCHED_ENGINE_OVERHEAD_ADVICE = (
    "more users per step: the engine's fixed time a layer (its launches; a mixture of experts' "
    "routing, copies and combining) is paid once a step for all of them"
)
BATCHED_ENGINE_OVERHEAD_BATCH_ADVICE = (
    "more requests running at once (more GPU memory): the engine's fixed time a layer is paid "
    "once a step for all of them"
)

# A KV cache that cannot hold even one request: fewer users would not start the engine.
NO_CONTEXT_ADVICE = (
    "shorter contexts, an 8-bit KV cache (serve.kv_precision: fp8), {smaller}more GPU memory"
)
# Weights that do not fit: the smaller formats named are those with fewer bits than the
# estimate's own (smaller_format_clause).
WEIGHT_MEMORY_ADVICE = (
    "more or larger GPUs, {smaller}a local runner that keeps some layers in RAM "
    "(serve.engine: local)"
)
SMALLER_FORMATS = (WeightFormat.FP8, WeightFormat.INT4)


def served_advice(s: ServingEstimate) -> str:
    """What would move a serving build, by the limit that binds (an offline batch's in its own
    words: BATCH_ADVICE)."""
    if s.binding is ServingLimit.KV_MEMORY and not s.fits:
        return NO_CONTEXT_ADVICE.format(smaller=smaller_format_clause(s.quantization))
    if s.binding is ServingLimit.WEIGHT_MEMORY:
        return WEIGHT_MEMORY_ADVICE.format(smaller=smaller_format_clause(s.quantization))
    if s.binding is ServingLimit.ENGINE_OVERHEAD and s.engine == Engine.BATCHED.value:
        if s.batch is not None:
            return BATCHED_ENGINE_OVERHEAD_BATCH_ADVICE
        return BATCHED_ENGINE_OVERHEAD_ADVICE
    if s.batch is not None:
        return BATCH_ADVICE.get(s.binding, ADVICE[s.binding])
    return ADVICE[s.binding]


def smaller_format_clause(quantization: str) -> str:
    """'a smaller weight format (serve.quantization: ...), ' naming the SMALLER_FORMATS with
    fewer bits a weight than `quantization`; empty where none has."""
    bits = mem.BATCHED_WEIGHT_BITS
    current = bits[WeightFormat(quantization)]
    smaller = [f.value for f in SMALLER_FORMATS if bits[f] < current]
    if not smaller:
        return ""
    return f"a smaller weight format (serve.quantization: {' or '.join(smaller)}), "


def served_copy_gb(spec: ServeSpec) -> float:
    """GiB one model copy holds, on however many cards: the weights in their stored format,
    the KV cache of every asked user and one card's running reserve (its prefill's activations,
    on TensorRT-LLM its profiling pass's peak: serving_memory.activation_bytes), before the
    engine keeps the rest of its reserve on each card."""
    gpus = spec.tensor_parallel or 1
    held = mem.copy_weight_bytes(spec, gpus)
    held += mem.kv_cache_bytes(spec, spec.users)
    return bytes_to_gib(held + mem.activation_bytes(spec, gpus))
