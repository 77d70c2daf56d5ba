"""How a training job is laid out over its GPUs (data, tensor, pipeline parallel; ZeRO stages;
gradient accumulation) and what each layout sends per step: one function per fact.

Sources: Megatron-LM (Shoeybi et al. 2019, arXiv:1909.08053, section 3: two all-reduces of the
activations per transformer layer in the forward pass and two in the backward); sequence
parallelism (Korthikanti et al. 2022, arXiv:2205.05198, section 4.2.2: each all-reduce becomes
a reduce-scatter plus an all-gather of the same total volume); the pipeline bubble (Huang et
al. 2019 GPipe, arXiv:1811.06965; Narayanan et al. 2021, arXiv:2104.04473, section 2.2: 1F1B
keeps GPipe's bubble of (p-1)/(m+p-1) of the step); ZeRO (Rajbhandari et al. 2020,
arXiv:1910.02054, section 7: stages 1 and 2 move what data-parallel all-reduce moves, stage 3
moves 1.5x as much).
"""

from __future__ import annotations

from dataclasses import dataclass

from dlrig.enums import Parallelism
from dlrig.errors import ValidationError
from dlrig.model.layers import expert_params
from dlrig.workloads.model import Workload


@dataclass(frozen=True)
class Layout:
    """How `gpus` GPUs (`gpus_per_node` in each of `nodes`) split one job: `tensor` x
    `pipeline` GPUs hold one copy of the weights, `context` of those copies split each
    micro-batch's sequences, `data` replicas train side by side, and `expert` GPUs of the
    data x context ranks split each mixture-of-experts layer's experts."""

    gpus: int
    gpus_per_node: int
    nodes: int
    data: int
    tensor: int
    pipeline: int
    context: int = 1
    expert: int = 1

    @property
    def weight_split(self) -> int:
        """GPUs one copy of the weights spans (tensor x pipeline)."""
        return self.tensor * self.pipeline

    @property
    def replica_gpus(self) -> int:
        """GPUs one micro-batch's work splits over (tensor x pipeline x context)."""
        return self.weight_split * self.context

    @property
    def gradient_ranks(self) -> int:
        """Ranks that hold the same weights and reduce their gradients together: the data
        replicas and the context ranks within each (Megatron-Core reduces over its
        data-parallel-with-context group)."""
        return self.data * self.context

    @property
    def data_in_node(self) -> int:
        """Ranks of one gradient group inside one node: tensor ranks sit next to each other in
        a node (Megatron's order: tensor, context, data, then pipeline), so a node holds
        gpus_per_node / (tensor x pipeline) of the group, or part of one rank."""
        return max(1, min(self.gradient_ranks, self.gpus_per_node // self.weight_split))

    @property
    def data_nodes(self) -> int:
        """Nodes a gradient group spans."""
        return max(1, self.gradient_ranks // self.data_in_node)

    @property
    def context_in_node(self) -> int:
        """Context ranks of one group inside one node (they follow the tensor ranks)."""
        return max(1, min(self.context, self.gpus_per_node // self.tensor))


def check_layout(workload: Workload, gpus_per_node: int, nodes: int, source: str) -> None:
    """Tensor x pipeline x context must divide the build's GPU count, a tensor-parallel group
    wider than a node must span whole nodes: its per-layer all-reduces are on the critical path
    (Megatron-LM keeps tensor groups within a node where it can, Narayanan et al. 2021, section
    3.3; a group across nodes pays the network, interconnect.tensor_parallel_time), and the
    expert-parallel degree must divide the ranks that hold the same weights (Megatron-Core
    carves expert groups out of its data-parallel-with-context group)."""
    tp, pp = workload.tensor_parallel, workload.pipeline_parallel
    cp, ep = workload.context_parallel, workload.expert_parallel
    total = gpus_per_node * nodes
    if tp > total or (tp > gpus_per_node and tp % gpus_per_node):
        raise ValidationError(
            f"{source}: parallel.tensor = {tp} does not fit the build's {nodes} node(s) of "
            f"{gpus_per_node} GPUs (a tensor-parallel group sits inside a node or spans whole "
            "nodes)",
            field="parallel.tensor",
            reason=f"a divisor of {gpus_per_node}, or a multiple of it up to {total}",
            hint=f"set parallel.tensor to a divisor of {gpus_per_node}",
        )
    if total % (tp * pp * cp):
        named = "tensor x pipeline x context" if cp > 1 else "tensor x pipeline"
        raise ValidationError(
            f"{source}: parallel.{named.replace(' x ', ' x parallel.')} = {tp * pp * cp} does "
            f"not divide the build's {total} GPUs",
            field="parallel.context" if cp > 1 else "parallel.pipeline",
            reason=f"{named} must divide {total}",
            hint=f"pick degrees whose product divides {total}",
        )
    ranks = total // (tp * pp)
    if ep > 1 and ranks % ep:
        raise ValidationError(
            f"{source}: parallel.expert = {ep} does not divide the {ranks} GPUs that hold the "
            f"same weights ({total} GPUs / tensor x pipeline {tp * pp})",
            field="parallel.expert",
            reason=f"a divisor of {ranks}",
            hint=f"set parallel.expert to a divisor of {ranks}",
        )


def layout(workload: Workload, gpus_per_node: int, nodes: int) -> Layout:
    """The job's layout on the build (check_layout first)."""
    tp, pp, cp = workload.tensor_parallel, workload.pipeline_parallel, workload.context_parallel
    gpus = gpus_per_node * nodes
    data = max(1, gpus // (tp * pp * cp))
    return Layout(gpus, gpus_per_node, nodes, data, tp, pp, cp, workload.expert_parallel)


def pipeline_bubble_fraction(stages: int, micro_batches: int) -> float:
    """Share of a pipelined step the GPUs sit idle: (p-1)/(m+p-1) for GPipe and 1F1B with m
    micro-batches over p stages (Narayanan et al. 2021, section 2.2.1)."""
    if stages <= 1:
        return 0.0
    return (stages - 1) / (micro_batches + stages - 1)


def pipeline_time_factor(stages: int, micro_batches: int) -> float:
    """Step time over the time the micro-batches' work takes without a bubble:
    (m+p-1)/m = 1 / (1 - bubble)."""
    return 1.0 / (1.0 - pipeline_bubble_fraction(stages, micro_batches))


def tensor_parallel_collectives_per_layer(recompute_share: float) -> float:
    """All-reduces (or, with sequence parallelism, reduce-scatter + all-gather pairs) of the
    layer's activations per transformer layer and micro-batch: 2 in the forward (after the
    attention and after the MLP), 2 in the backward (Shoeybi et al. 2019, figure 4); the
    layers activation checkpointing recomputes (Workload.recompute_share) repeat the forward's
    2 during recompute."""
    return 4.0 + 2.0 * recompute_share


def tensor_parallel_message_bytes(
    batch: int, seq_len: int, hidden_size: int, bytes_per_value: float
) -> float:
    """Bytes of one tensor-parallel all-reduce: the layer's output activations, batch x
    sequence x hidden values (Shoeybi et al. 2019, section 3)."""
    return float(batch) * seq_len * hidden_size * bytes_per_value


def gradient_exchange_bytes(workload: Workload, sixteen_bit: bool) -> tuple[float, str]:
    """(bytes per trainable parameter in the gradient exchange, why). DDP under automatic
    mixed precision keeps fp32 parameters, so its gradients and their all-reduce are fp32
    (PyTorch AMP: "parameters ... remain float32"); sharded data parallelism (FSDP, ZeRO)
    reduces in the 16-bit training precision (FSDP MixedPrecision reduce_dtype, DeepSpeed's
    fp16/bf16 gradients); pure 16-bit training has no fp32 copy to reduce, and a 16-bit model
    with fp32 master weights (apex amp O2: `gradients_16bit`) reduces its own 16-bit
    gradients."""
    if not sixteen_bit:
        return 4.0, "fp32 training"
    if is_sharded(workload):
        return 2.0, "sharded data parallelism reduces in the 16-bit precision"
    if workload.pure_16bit:
        return 2.0, "pure 16-bit training keeps no fp32 copy"
    # Only here does the workload's own `gradient_precision` decide, so the reasons name it.
    if workload.gradients_16bit:
        return 2.0, (
            "a 16-bit model beside fp32 master weights, as apex amp O2 trains; "
            "workload field gradient_precision"
        )
    return 4.0, (
        "autocast keeps the parameters, so the gradients, in fp32; workload field "
        "gradient_precision"
    )


def gradient_bytes_per_param(workload: Workload, sixteen_bit: bool) -> float:
    """Bytes per trainable parameter in the gradient exchange (gradient_exchange_bytes)."""
    return gradient_exchange_bytes(workload, sixteen_bit)[0]


def replica_gradient_bytes(workload: Workload, lay: Layout, sixteen_bit: bool) -> float:
    """Gradient bytes one GPU produces a step: its 1/(tensor x pipeline) of the trainable
    parameters (of the experts, 1/expert more) at gradient_bytes_per_param."""
    trainable = (
        workload.params * workload.trainable_fraction * expert_split_share(workload, lay.expert)
    )
    return trainable * gradient_bytes_per_param(workload, sixteen_bit) / lay.weight_split


def expert_split_share(workload: Workload, expert: int) -> float:
    """Share of the model's parameters one GPU keeps when `expert` GPUs split each layer's
    experts: the dense part whole, the experts' 1/expert."""
    if expert <= 1 or workload.params <= 0:
        return 1.0
    routed = expert_params(workload) / workload.params
    return 1.0 - routed + routed / expert


def context_parallel_kv_bytes(
    batch: int,
    seq_len: int,
    kv_heads: int,
    head_dim: int,
    tensor: int,
    context: int,
    bytes_per_value: float,
) -> float:
    """Bytes of one ring step of context parallelism: a GPU's keys and values, its 1/context
    of the sequence and 1/tensor of the KV heads, passed to the next rank (Liu et al. 2023,
    Ring Attention, arXiv:2310.01889; Megatron-Core's context parallelism sends them
    point-to-point around the group)."""
    kv_per_rank = max(1.0, kv_heads / tensor)
    return float(batch) * seq_len / context * 2.0 * kv_per_rank * head_dim * bytes_per_value


def context_parallel_ring_steps_per_layer(context: int, recompute_share: float) -> float:
    """Point-to-point ring steps per layer and micro-batch: context - 1 in the forward, twice
    that in the backward (the keys and values again, and their gradients), and the forward's
    again in the layers activation checkpointing recomputes (Workload.recompute_share;
    Megatron-Core transformer_engine/pytorch/attention.py's AttnFuncWithCPAndKVP2P)."""
    if context <= 1:
        return 0.0
    return (3.0 + recompute_share) * (context - 1)


def expert_all_to_all_bytes(
    batch: int,
    seq_len: int,
    hidden_size: int,
    experts_per_token: int,
    context: int,
    tensor: int,
    sequence_parallel: bool,
    bytes_per_value: float,
) -> float:
    """Bytes one GPU sends in one token all-to-all of expert parallelism: each of its tokens
    goes to the GPUs holding its k experts, hidden values each (Lepikhin et al. 2020, GShard,
    arXiv:2006.16668; Megatron-Core's MoEAlltoAllTokenDispatcher); a rank holds the micro-
    batch's 1/context of the sequence, and under sequence parallelism 1/tensor of that."""
    tokens = float(batch) * seq_len / context / (tensor if sequence_parallel else 1)
    return tokens * experts_per_token * hidden_size * bytes_per_value


def expert_all_to_alls_per_layer(recompute_share: float) -> float:
    """Token all-to-alls per mixture-of-experts layer and micro-batch: dispatch and combine in
    the forward, their gradients in the backward, and the forward's pair again in the layers
    activation checkpointing recomputes (Workload.recompute_share)."""
    return 4.0 + 2.0 * recompute_share


def is_sharded(workload: Workload) -> bool:
    """Data-parallel ranks shard model states (ZeRO stage >= 1 or FSDP)."""
    return workload.parallel is Parallelism.FSDP or workload.zero_stage >= 1


@dataclass(frozen=True)
class DataParallelTraffic:
    """What data-parallel ranks exchange, as payloads of whole collectives over the group
    (bytes of the full tensor, not of a rank's shard), and how often."""

    all_reduce_bytes: float  # gradients all-reduced once per optimizer step (DDP, ZeRO-1)
    reduce_scatter_bytes: float  # gradients reduce-scattered every micro-batch (ZeRO-2/3)
    gather_bytes_per_micro_batch: float  # ZeRO-3: parameters for the forward and the backward
    gather_bytes_per_step: float  # ZeRO-2: the updated parameters after the optimizer step

    def ring_volume_bytes(self, ranks: int, gradient_accumulation: int = 1) -> float:
        """Bytes each rank sends per micro-batch in rings over `ranks` ranks: 2(n-1)/n per
        all-reduced byte, (n-1)/n per reduce-scattered or all-gathered byte; once-per-step
        exchanges shared among the step's micro-batches."""
        if ranks <= 1:
            return 0.0
        k = max(1, gradient_accumulation)
        share = (ranks - 1) / ranks
        per_step = 2.0 * self.all_reduce_bytes + self.gather_bytes_per_step
        return share * (
            per_step / k + self.reduce_scatter_bytes + self.gather_bytes_per_micro_batch
        )


def zero_stage(workload: Workload) -> int:
    """The ZeRO stage the job runs: its own, else 3 under FSDP (FULL_SHARD), else 0 (DDP)."""
    if workload.zero_stage:
        return workload.zero_stage
    return 3 if workload.parallel is Parallelism.FSDP else 0


def data_parallel_traffic(stage: int, grad_bytes: float, param_bytes: float) -> DataParallelTraffic:
    """For the replica's gradients and 16-bit parameters. DDP and ZeRO-1 all-reduce the
    gradients once per optimizer step (DDP's no_sync skips the accumulating micro-batches).
    ZeRO-2 reduce-scatters the gradients every micro-batch (no rank keeps a whole gradient) and
    all-gathers the updated parameters once per step: together an all-reduce's volume. ZeRO-3
    all-gathers the parameters for the forward and again for the backward of every micro-batch
    and reduce-scatters its gradients: 3 half-rings against the all-reduce's 2, 1.5x DDP
    (Rajbhandari et al. 2020, section 7.2)."""
    if stage <= 1:
        return DataParallelTraffic(grad_bytes, 0.0, 0.0, 0.0)
    if stage == 2:
        return DataParallelTraffic(0.0, grad_bytes, 0.0, param_bytes)
    return DataParallelTraffic(0.0, grad_bytes, 2.0 * param_bytes, 0.0)
