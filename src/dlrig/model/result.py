"""What an estimate returns: frozen values, rendered by dlrig.report.estimate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlrig.enums import Bottleneck, Modifier, Precision

if TYPE_CHECKING:
    from dlrig.model.serving import ServingEstimate


@dataclass(frozen=True)
class MemoryEstimate:
    """GPU memory on one GPU (GiB, dlrig.units) at the workload's batch, and the largest batch that
    fits. On a build without a GPU, the figures are the CPU's RAM. `gpu_required_gb_low/high`:
    the 80% interval of a training job's need (memory.MEMORY_RATIO_BAND on its tensors; None
    where the figure carries none, as a serving job's)."""

    gpu_required_gb: float
    gpu_available_gb: float
    fits: bool
    max_batch_per_gpu: int
    model_states_gb: float
    activations_gb: float
    overhead_gb: float
    gpu_required_gb_low: float | None = None
    gpu_required_gb_high: float | None = None


@dataclass(frozen=True)
class PowerEstimate:
    """PSU.1 for one node: the parts' peak draw and the PSU size it needs."""

    system_peak_w: float
    psu_recommended_w: int
    psu_installed_w: float | None
    average_w: float
    psu_efficiency: float
    # At the wall against the circuit (PSU.6, model/wall.py): the sustained draw through the
    # PSU, the circuit it is judged on (how it was chosen) and what that leaves for hours.
    wall_w: float = 0.0
    per_circuit_w: float = 0.0
    circuit: str = ""
    circuit_origin: str = ""
    circuit_continuous_w: float = 0.0
    circuit_headroom_w: float = 0.0

    @property
    def average_wall_w(self) -> float:
        """The average draw at the wall (energy's): the parts' average over the PSU's
        efficiency; `wall_w` is the sustained draw the circuit must carry."""
        return self.average_w / self.psu_efficiency


@dataclass(frozen=True)
class RunEstimate:
    """The whole run (epochs, tokens or steps) on all nodes."""

    samples: float
    steps: float
    time_h: float
    energy_kwh: float
    energy_cost: float
    currency: str
    co2_kg: float
    electricity_per_kwh: float
    co2_kg_per_kwh: float


@dataclass(frozen=True)
class ParallelEstimate:
    """How a training job splits over its GPUs (data x tensor x pipeline x context, experts
    over `expert` GPUs, ZeRO stage, micro-batches) and what its communication costs per step on
    one GPU: `communication_s`
    all of it (node link and network), `communication_exposed_s` what the compute does not
    hide; `tensor_parallel_s` the part on the critical path by construction."""

    data: int
    tensor: int
    pipeline: int
    sequence: bool
    zero_stage: int
    micro_batches: int
    gradient_accumulation: int
    pipeline_bubble: float
    tensor_parallel_s: float
    communication_s: float
    communication_exposed_s: float
    context: int = 1
    expert: int = 1


@dataclass(frozen=True)
class Estimate:
    """One workload on one build: the step, its stages, what holds it back, and the run.

    `stages_s` holds every stage's time per step; `hidden` lists the stages that overlap with
    the GPU's work (asynchronous loading, pinned copies, all-reduce during the backward pass);
    `exposed_s` is what each stage adds to the step after overlap. The bottleneck is the stage
    with the largest exposed time.
    """

    build: str
    workload: str
    compute_device: str
    device_is_cpu: bool
    gpus: int
    batch_per_gpu: int
    precision: Precision
    compute_path: str
    pcie_gen: int | None  # the link the GPUs' inputs cross (machine topology); None on a CPU
    pcie_lanes: int | None
    step_time_s: float
    bottleneck: Bottleneck
    stages_s: dict[Bottleneck, float]
    exposed_s: dict[Bottleneck, float]
    hidden: tuple[Bottleneck, ...]
    modifiers: tuple[Modifier, ...]
    advice: str
    next_bottleneck: Bottleneck | None
    speedup_if_removed: float
    samples_per_s: float
    tokens_per_s: float | None
    memory: MemoryEstimate
    power: PowerEstimate
    run: RunEstimate
    assumptions: tuple[str, ...]
    # Measured / predicted throughput bounds from the model's leave-one-architecture-out
    # residuals (10th and 90th percentile), or for serving the engine profiles' residuals
    # (serving.SERVING_RATIO_BAND): the interval around every figure; [1, 1] is none.
    throughput_ratio_low: float = 1.0
    throughput_ratio_high: float = 1.0
    parallel: ParallelEstimate | None = None  # training on GPUs only
    # A serving workload on GPUs (dlrig.model.served): the step is then the time per output
    # token, samples/s and tokens/s the output tokens/s of all users, memory one card's share
    # of the served model, and the run that many output tokens.
    serving: ServingEstimate | None = None
    kwh_per_million_tokens: float | None = None  # serving: wall energy per million output

    @property
    def runs(self) -> bool:
        """The job fits the memory it needs: a job that does not has no throughput or run."""
        return self.memory.fits

    @property
    def has_interval(self) -> bool:
        """The figures carry an interval (a band wider than [1, 1])."""
        return self.throughput_ratio_low < self.throughput_ratio_high

    @property
    def samples_per_s_low(self) -> float:
        return self.samples_per_s * self.throughput_ratio_low

    @property
    def samples_per_s_high(self) -> float:
        return self.samples_per_s * self.throughput_ratio_high

    @property
    def step_time_s_low(self) -> float:
        return self.step_time_s / self.throughput_ratio_high

    @property
    def step_time_s_high(self) -> float:
        return self.step_time_s / self.throughput_ratio_low
