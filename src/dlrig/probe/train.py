"""`probe --train WORKLOAD`: how a workload stands in for a short real training loop, and the
loop's measured step against the model's estimate of the same work on this machine. Pure: the
loop itself runs in `dlrig.hardware.torch_train`.

How a workload stands in. The real network is not built (dlrig has no torchvision and no model
code); a network with the workload's parameter count and forward FLOPs per sample is:

- language models: a stack of transformer encoder blocks (pre-norm, 4x MLP) at the workload's
  width, heads, layer count and sequence length, over embeddings made on the device (no token
  embedding table, no output head);
- every other kind: `CONV_LAYERS` 3x3 convolutions (batch norm, ReLU) of C channels on an S x S
  input, pooled into a 1000-way linear head, with C chosen for the parameters (9 C^2 per layer)
  and S for the FLOPs per parameter (2 S^2): a ResNet-50 becomes 8 layers of 596 channels at
  13 x 13. It computes what the model computes, but moves less memory (no high-resolution
  early layers).

The stand-in is capped at `max_params` (what fits the device) by dropping layers. The estimate
compares like with like: it is the model's estimate of the stand-in's own parameters, FLOPs and
activations (the workload's fitted efficiencies kept), at the loop's batch and precision, with
synthetic data, on this machine's build (one GPU, or the CPU when the loop ran there).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from dlrig.catalog.loader import Catalog
from dlrig.enums import Bottleneck, Optimizer, Precision
from dlrig.hardware.host import CpuInfo, MemoryInfo
from dlrig.hardware.nvml import GpuReading, NvmlSystem
from dlrig.hardware.torch_cuda import CudaStatus
from dlrig.hardware.torch_train import TrainSpec, TrainTiming
from dlrig.jsonable import to_jsonable
from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.model.estimate import estimate
from dlrig.model.layers import STAND_IN_CONV
from dlrig.model.result import Estimate
from dlrig.probe.document import probe_build_document
from dlrig.probe.result import GpuProbe, ProbeResult
from dlrig.workloads.model import FinetuneMethod, Mode, Workload

CONV_LAYERS = 8
CONV_CLASSES = 1000
_MIN_WIDTH = 8
BYTES_PER_PARAM = 32.0
"""Device memory a trained parameter takes in the loop: fp32 weights, gradients and Adam's two
moments are 16 bytes; as much again is left for activations."""
CPU_BATCH = 8
"""The default batch on a CPU (a workload's GPU batch would take minutes a step there)."""
_TOKENS_IF_UNKNOWN = 512
_LAYERS_IF_UNKNOWN = 12
_FP32_BYTES = 4.0
# Korthikanti et al. 2022 (Reducing Activation Recomputation, eq. 2): a transformer layer saves
# s*b*h*(34 + 5*a*s/h) bytes in 16-bit; the workload counts activations in fp32 (twice that).
_KORTHIKANTI_BYTES = 34.0
_KORTHIKANTI_ATTENTION = 5.0


@dataclass(frozen=True)
class StandIn:
    """The network that stands in for the workload, its counts, and how it stands in."""

    spec: TrainSpec
    params: float
    forward_flops_per_sample: float
    activation_bytes_per_sample: float
    description: str


def runnable(optimizer: Optimizer) -> Optimizer:
    """The optimizer the stand-in trains with: torch's own, so an 8-bit AdamW (bitsandbytes,
    torchao: not dependencies) runs as AdamW, and the estimate beside it counts the same."""
    return Optimizer.ADAMW if optimizer is Optimizer.ADAMW_8BIT else optimizer


def _aligned(channels: float) -> int:
    """Channels in multiples of 8, as real convnets have them and as 16-bit tensor-core
    convolutions take them (NVIDIA Deep Learning Performance guide, "Channels In And Out");
    the first stand-in's 596 ran its H200 step at 19.1 ms where dlrig estimates 14.9."""
    return max(_MIN_WIDTH, _MIN_WIDTH * round(channels / _MIN_WIDTH))


def _conv(workload: Workload, batch: int, precision: Precision, max_params: float) -> StandIn:
    target = min(workload.params, max_params)
    width = _aligned(math.sqrt(target / (9 * CONV_LAYERS)))
    size = max(1, round(math.sqrt(workload.forward_flops_per_sample / (2 * workload.params))))
    conv_params = CONV_LAYERS * 9 * width**2
    params = conv_params + CONV_LAYERS * 2 * width + width * CONV_CLASSES + CONV_CLASSES
    flops = 2 * conv_params * size**2 + 2 * width * CONV_CLASSES
    # each layer saves its convolution's and its batch norm's outputs for the backward pass
    activations = CONV_LAYERS * 2 * width * size**2 * _FP32_BYTES
    spec = TrainSpec(
        "conv", CONV_LAYERS, width, size, batch, precision, runnable(workload.optimizer),
        classes=CONV_CLASSES, input_bytes=workload.input_bytes_per_sample,
        pin_memory=workload.pin_memory,
    )  # fmt: skip
    text = (
        f"{CONV_LAYERS} 3x3 conv layers of {width} channels at {size}x{size} (batch norm, ReLU), "
        f"{CONV_CLASSES}-way head: {params / 1e6:.1f} M params, {flops / 1e9:.2f} GFLOPs forward "
        f"per sample (the workload: {workload.params / 1e6:.1f} M, "
        f"{workload.forward_flops_per_sample / 1e9:.2f} GFLOPs)"
    )
    return StandIn(spec, params, flops, activations, text)


def _transformer(
    workload: Workload, batch: int, precision: Precision, max_params: float
) -> StandIn:
    layers = workload.num_layers or _LAYERS_IF_UNKNOWN
    width = workload.hidden_size or max(
        _MIN_WIDTH, round(math.sqrt(workload.params / (12 * layers)))
    )
    heads = workload.num_heads or max(1, width // 64)
    width = max(heads, heads * round(width / heads))  # the heads share the width evenly
    tokens = workload.seq_len or _TOKENS_IF_UNKNOWN
    per_layer = 12 * width**2 + 13 * width  # attention 4h^2+4h, MLP 8h^2+5h, two norms 4h
    kept = max(1, min(layers, math.floor(max_params / per_layer)))
    params = kept * per_layer
    flops = kept * (2 * 12 * width**2 * tokens + 4 * tokens**2 * width)
    saved = tokens * width * (_KORTHIKANTI_BYTES + _KORTHIKANTI_ATTENTION * heads * tokens / width)
    activations = kept * saved * 2.0
    spec = TrainSpec(
        "transformer", kept, width, tokens, batch, precision, runnable(workload.optimizer),
        heads=heads,
        input_bytes=workload.input_bytes_per_sample, pin_memory=workload.pin_memory,
    )  # fmt: skip
    cut = f" ({kept} of its {layers} layers: what fits this device)" if kept < layers else ""
    text = (
        f"{kept} transformer blocks, width {width}, {heads} heads, {tokens} tokens{cut}, no "
        f"embedding table or output head: {params / 1e6:.1f} M params, {flops / 1e9:.1f} GFLOPs "
        f"forward per sample (the workload: {workload.params / 1e6:.1f} M, "
        f"{workload.forward_flops_per_sample / 1e9:.1f} GFLOPs)"
    )
    return StandIn(spec, params, flops, activations, text)


def stand_in(workload: Workload, batch: int, on_cpu: bool, max_params: float) -> StandIn:
    """The stand-in of `workload` at `batch`. On the CPU it trains in fp32: the model's CPU
    rate is an FP32 rate, and CPU autocast would measure something else."""
    precision = Precision.FP32 if on_cpu else workload.precision
    if workload.is_language_model:
        return _transformer(workload, batch, precision, max_params)
    return _conv(workload, batch, precision, max_params)


def stand_in_workload(workload: Workload, standin: StandIn, synthetic: bool) -> Workload:
    """The workload as the loop ran it: the stand-in's counts, its batch and precision, all
    weights trained, one GPU, eager (no CUDA graph); with synthetic data, or (`synthetic`
    False) the workload's."""
    spec = standin.spec
    ran = dataclasses.replace(
        workload,
        name=f"{workload.name} (stand-in)",
        mode=Mode.TRAINING,
        params=standin.params,
        forward_flops_per_sample=standin.forward_flops_per_sample,
        activation_bytes_per_sample=standin.activation_bytes_per_sample,
        batch_size=spec.batch,
        precision=spec.precision,
        dataset=workload.dataset if not synthetic else None,
        finetune=FinetuneMethod.FULL,
        trainable_fraction=1.0,
        weight_bits=None,
        tensor_parallel=1,
        pipeline_parallel=1,
        micro_batches=1,
        gradient_accumulation=1,
        zero_stage=0,
        cpu_offload=False,
        activation_checkpointing=False,
        optimizer=spec.optimizer,
        optimizer_in_backward=False,
        paged_optimizer=False,
        cuda_graphs=False,
        serve=None,
    )
    if spec.kind != "transformer":
        return dataclasses.replace(ran, model_name=STAND_IN_CONV)
    return dataclasses.replace(
        ran, num_layers=spec.layers, hidden_size=spec.width, num_heads=spec.heads,
        kv_heads=spec.heads, ffn_hidden_size=4 * spec.width, gated_mlp=False, seq_len=spec.size,
        experts=None, experts_per_token=None,
    )  # fmt: skip


def machine_build(
    host: str,
    time_utc: str,
    cpu: CpuInfo,
    memory: MemoryInfo,
    gpus: tuple[GpuReading, ...],
    catalog: Catalog,
    on_cpu: bool,
) -> Build:
    """This machine as the loop used it, read as `probe` reads it (no measurement): the CPU
    alone, or its first GPU alone."""
    result = ProbeResult(
        host=host, time_utc=time_utc, quick=True, cpu=cpu, memory=memory, memory_bandwidth=(),
        disks=(), loader=None, nvml=NvmlSystem(bool(gpus), None, None, None, len(gpus)),
        gpus=tuple(GpuProbe(r) for r in gpus), topology=(),
        cuda=CudaStatus(not on_cpu, None, None, None, 0),
    )  # fmt: skip
    build = resolve_build(probe_build_document(result, catalog)["build"], "this machine", catalog)
    return single_device_build(build, on_cpu)


def single_device_build(build: Build, on_cpu: bool) -> Build:
    """The build as a one-device loop uses it: the CPU alone, or the first GPU alone."""
    if on_cpu or not build.gpus:
        return dataclasses.replace(build, gpus=())
    return dataclasses.replace(build, gpus=(dataclasses.replace(build.gpus[0], count=1),))


@dataclass(frozen=True)
class StageRow:
    """One stage, measured and estimated (seconds per step)."""

    stage: str
    measured_s: float
    estimated_s: float

    @property
    def ratio(self) -> float:
        """Measured over estimated."""
        return self.measured_s / self.estimated_s


@dataclass(frozen=True)
class TrainComparison:
    """`probe --train`'s result: the loop, the estimate of the same work, stage by stage."""

    workload: str
    stand_in: str
    build: str
    compute_device: str
    batch: int
    timing: TrainTiming
    rows: tuple[StageRow, ...]
    most_different: str | None
    assumptions: tuple[str, ...]

    @property
    def estimated_step_s(self) -> float:
        """The model's step time of the stand-in with synthetic data."""
        return self.rows[0].estimated_s


def compare(
    workload: Workload, standin: StandIn, timing: TrainTiming, build: Build
) -> TrainComparison:
    """The measured loop against the model's estimate of the same stand-in on `build`."""
    synthetic = estimate(build, stand_in_workload(workload, standin, synthetic=True))
    rows = [
        StageRow(
            "step, synthetic data (forward, backward, optimizer)",
            timing.step_s,
            synthetic.step_time_s,
        )
    ]
    assumptions = list(synthetic.assumptions)
    if timing.copy_s is not None and workload.dataset is not None:
        loaded: Estimate = estimate(build, stand_in_workload(workload, standin, synthetic=False))
        pcie = loaded.stages_s.get(Bottleneck.PCIE, 0.0)
        if pcie > 0:
            kind = "pinned" if standin.spec.pin_memory else "pageable"
            rows.append(StageRow(f"pcie (one batch of inputs, {kind})", timing.copy_s, pcie))
    valid = [r for r in rows if r.measured_s > 0 and r.estimated_s > 0]
    worst = max(valid, key=lambda r: abs(math.log(r.ratio)), default=None)
    return TrainComparison(
        workload=workload.name,
        stand_in=standin.description,
        build=build.name,
        compute_device=synthetic.compute_device,
        batch=standin.spec.batch,
        timing=timing,
        rows=tuple(rows),
        most_different=worst.stage if worst else None,
        assumptions=tuple(dict.fromkeys(assumptions)),
    )


def comparison_json(comparison: TrainComparison) -> dict[str, Any]:
    """What `probe --train --json` prints: the comparison, each row's ratio, and the stage."""
    out: dict[str, Any] = to_jsonable(comparison)
    for row, data in zip(comparison.rows, out["rows"], strict=True):
        data["ratio"] = row.ratio
    out["estimated_step_s"] = comparison.estimated_step_s
    return out
