"""Workload-aware GPU rules: 16-bit support (GPU.3), memory (GPU.4), weights that only fit by
streaming them from host RAM (GPU.offload) and the host parameter server (DP.1)."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

from dlrig.enums import Parallelism, Precision
from dlrig.rules.engine import Judgement, error, info, rule, warning
from dlrig.rules.facts import Facts
from dlrig.workloads.serving import Engine

if TYPE_CHECKING:
    from dlrig.catalog.schema import GPU
    from dlrig.model.memory import MemoryPlan
    from dlrig.workloads.model import Workload


@rule("GPU.3")
def sixteen_bit(f: Facts) -> Iterator[Judgement]:
    """A GPU with tensor cores trains well in 16-bit (about 2x the model in the same memory);
    older cards without fast 16-bit (GTX 10-series) should run 32-bit."""
    w = f.workload
    if w is None or w.precision in (Precision.FP32,):
        return
    from dlrig.model.rates import matmul_peak

    notes = {}
    for card in f.cards:
        _, _, note = matmul_peak(card.gpu, w.precision)
        if note:
            notes[card.gpu.name] = note
    if notes:
        yield warning(
            "; ".join(notes.values()),
            {"precision": w.precision.value, "gpus": sorted(notes)},
            "train in fp32 on these cards, or pick GPUs with tensor cores for this precision",
        )


# GPU.4 and RAM.total read the same memory plan of a build: computed once per Facts.
_PLANS: weakref.WeakKeyDictionary[Facts, MemoryPlan] = weakref.WeakKeyDictionary()


def training_memory_plan(f: Facts) -> MemoryPlan | None:
    """The estimate's own memory decision for the build's training or inference job (sharded,
    offloaded or not: model.memory.memory_plan), so that check and plan agree with it; None
    without a workload or GPUs, and for serving jobs (GPU.4 judges those by their format)."""
    w = f.workload
    if w is None or not f.cards or w.serve is not None:
        return None
    if f not in _PLANS:
        from dlrig.model.calibration import default_calibration
        from dlrig.model.memory import gpu_memory_bytes, memory_plan
        from dlrig.model.rates import is_16bit

        cal = default_calibration()
        smallest = min(f.cards, key=lambda c: gpu_memory_bytes(c.gpu)).gpu
        _PLANS[f] = memory_plan(
            w, is_16bit(w.precision), f.n_gpus, f.build.nodes, gpu_memory_bytes(smallest),
            cal.cuda_context_gb, cal.allocator_overhead_fraction, f.ram_gb,
        )  # fmt: skip
    return _PLANS[f]


@rule("GPU.4", reads=("gpu.memory_gb",))
def gpu_memory(f: Facts) -> Iterator[Judgement]:
    """Too little memory is the second most costly GPU mistake (GPU.2); the workload's need is
    computed from the model (weights, gradients, optimizer state, activations x batch)."""
    w = f.workload
    if w is None or not f.cards:
        return
    if w.serve is not None:  # serving: weights in their format, split over the cards
        yield from _serving_memory(f)
        return
    from dlrig.model.memory import capacity_gb

    smallest = min(f.cards, key=lambda c: c.gpu.memory_gb).gpu
    plan = training_memory_plan(f)
    if plan is None:
        return
    need_gb = capacity_gb(plan.need.total_bytes)
    has_gb = capacity_gb(plan.capacity_bytes)
    batch = plan.need.batch  # a split plan runs smaller micro-batches (memory_plan)
    evidence = {
        "needed_gb": round(need_gb, 2),
        "gpu_memory_gb": round(has_gb, 2),
        "batch_per_gpu": batch,
        "shards": plan.layout.shard_ranks if plan.layout.effective_stage >= 3 else 1,
    }
    host_gb = plan.host_gb_per_node
    if plan.layout.cpu_offload and f.ram_gb is not None and host_gb > f.ram_gb:
        yield error(
            f"{w.name} offloads {host_gb:.0f} GiB of weights and optimizer state per node to "
            f"host RAM; the build has {f.ram_gb:g} GiB",
            {**evidence, "host_offload_gb": round(host_gb, 1), "ram_gb": f.ram_gb},
            f"buy >= {host_gb:.0f} GiB of RAM, or more GPUs to shard the state over",
        )
        return
    if plan.layout.accumulation_split > 1:
        yield _split_warning(w, plan, smallest)
        return
    if plan.fits:
        yield info(
            f"{w.name} needs {need_gb:.1f} GiB per GPU at batch {batch}; "
            f"{smallest.name} has {has_gb:g} GiB" + (f" ({plan.note})" if plan.note else ""),
            evidence,
        )
        return
    max_batch = plan.max_batch_per_gpu
    evidence["max_batch_per_gpu"] = max_batch
    message = (
        f"{w.name} needs {need_gb:.1f} GiB per GPU at batch {w.batch_size}; "
        f"{smallest.name} has {has_gb:g} GiB"
    )
    if max_batch < 1:
        yield error(
            message + ": it does not fit even at batch 1",
            evidence,
            _memory_fixes(w, plan.layout.effective_stage, plan.layout.cpu_offload),
        )
    else:
        yield warning(
            message + f": at most batch {max_batch} per GPU fits",
            evidence,
            f"batch {max_batch} with gradient accumulation, or GPUs with more memory",
        )


@rule("GPU.offload", reads=("gpu.memory_gb",), bar=True)
def weights_in_gpu_memory(f: Facts) -> Iterator[Judgement]:
    """A training job's weights, as it stores them, should fit in its GPUs' memory together:
    Answer.AI's FSDP + QLoRA recipe trains a 70B model on two 24 GB GPUs (2024-03-06), and
    below that every step streams the weights in from host RAM."""
    w = f.workload
    if w is None:
        return
    from dlrig.workloads.model import Mode  # loaded with the workload

    if not f.cards or w.serve is not None or w.mode is not Mode.TRAINING:
        return
    from dlrig.model.checkpoint import job_files
    from dlrig.model.memory import capacity_gb
    from dlrig.units import GB

    weights_gb = capacity_gb(job_files(w).weights_gb * GB)
    total_gb = sum(c.gpu.memory_gb for c in f.cards) * f.build.nodes
    evidence = {
        "weights_gb": round(weights_gb, 1),
        "gpu_memory_total_gb": total_gb,
        "gpus": f.n_gpus * f.build.nodes,
    }
    what = f"{w.name}'s weights as it stores them ({weights_gb:.1f} GiB)"
    if weights_gb > total_gb:
        yield warning(
            f"{what} exceed the GPUs' {total_gb:g} GiB together: the job trains only by keeping "
            "them in host RAM and streaming them in every step (FSDP CPU offload), far slower "
            "than sharding them over GPUs that hold them (Answer.AI: 70B QLoRA on 2x 24 GB)",
            evidence,
            f"GPUs with >= {weights_gb:.0f} GiB of memory together (e.g. 2x 24 GB for a 70B "
            "model in 4 bits)",
        )
    else:
        yield info(f"{what} fit in the GPUs' {total_gb:g} GiB together", evidence)


def _split_warning(w: Workload, plan: MemoryPlan, smallest: GPU) -> Judgement:
    """GPU.4 for a batch that fits only split into accumulated micro-batches (memory_plan):
    the batch as written does not fit, and dlrig estimates the job as it would then run."""
    from dlrig.model.memory import capacity_gb

    need_gb = capacity_gb(dataclasses.replace(plan.need, batch=w.batch_size).total_bytes)
    has_gb = capacity_gb(plan.capacity_bytes)
    split, batch = plan.layout.accumulation_split, plan.need.batch
    return warning(
        f"{w.name} needs {need_gb:.1f} GiB per GPU at batch {w.batch_size}; {smallest.name} has "
        f"{has_gb:g} GiB: at most batch {plan.max_batch_per_gpu} per GPU fits, so it "
        f"runs as {split} micro-batches of {batch} with their gradients accumulated",
        {
            "needed_gb": round(need_gb, 2),
            "gpu_memory_gb": round(has_gb, 2),
            "batch_per_gpu": w.batch_size,
            "max_batch_per_gpu": plan.max_batch_per_gpu,
            "micro_batches": split,
        },
        f"batch {plan.max_batch_per_gpu} with gradient accumulation, or GPUs with more memory",
    )


def _memory_fixes(w: Workload, stage: int, offloaded: bool) -> str:
    """What would make a job fit, leaving out what it already does."""
    from dlrig.workloads.model import FinetuneMethod, Mode

    fixes = ["GPUs with more memory"]
    if w.precision is Precision.FP32:
        fixes.append("16-bit training (GPU.3)")
    elif w.mode is Mode.TRAINING and not w.pure_16bit and w.finetune is FinetuneMethod.FULL:
        fixes.append("pure 16-bit training (no fp32 master copy)")
    if w.mode is Mode.TRAINING and w.has_transformer_structure and not w.activation_checkpointing:
        # selective checkpointing keeps more than the full recompute's layer inputs
        full = "full activation checkpointing (in place of selective_checkpointing)"
        fixes.append(full if w.selective_checkpointing else "activation checkpointing")
    if stage < 3:
        fixes.append("sharding (fsdp)")
    elif not offloaded:
        fixes.append("CPU offload of the sharded state")
    return ", ".join(fixes[:-1]) + f", or {fixes[-1]}" if len(fixes) > 1 else fixes[0]


@rule("DP.1")
def host_parameter_server(f: Facts) -> Iterator[Judgement]:
    """Data parallelism averages gradients each step: on a host parameter server they cross
    PCIe to the CPU and back; an all-reduce among the GPUs (NCCL) avoids the host."""
    w = f.workload
    if w is None or f.n_gpus < 2 or w.parallel is not Parallelism.HOST_PS:
        return
    yield info(
        f"{w.name} averages gradients on the CPU: {w.params / 1e6:,.0f} M parameters cross PCIe "
        f"to the host and back every step, for each of {f.n_gpus} GPUs",
        {"params": w.params, "gpus": f.n_gpus},
        "DDP's all-reduce among the GPUs (parallel: ddp)",
    )


def _serving_memory(f: Facts) -> Iterator[Judgement]:
    """GPU.4 for a serving workload (issue 14): the weights in their stored format, split over
    the cards, must fit, and on a batched engine one request's whole context beside them (vLLM
    will not start otherwise), else error; the asked users' KV cache should fit at once, else
    a warning that the engine queues the users past it (a batched engine admits a request
    only when the cache has room for it) and what that adds to their first token; a batch sent
    at once (serve.requests) is meant to queue, its waves timed by the estimate."""
    from dlrig.model.serving import ServingLimit, serving_estimate

    w = f.workload
    if w is None or w.serve is None:
        return
    est = serving_estimate(f.build, w.serve, w.name)
    if est is None:
        return
    evidence = {
        "weights_gb": round(est.weights_gb, 2),
        "kv_per_user_gb": round(est.kv_per_user_gb, 3),
        "kv_shared_gb": round(est.kv_shared_gb, 3),
        "available_gb": round(est.memory_available_gb, 2),
        "users": est.users,
        "max_users_fit": est.max_users_fit,
        "offloaded_fraction": round(est.offloaded_fraction, 3),
    }
    shared = f", {est.kv_shared_gb:.2f} GiB shared prefix held once" if est.kv_shared_gb else ""
    message = (
        f"{w.name} in {est.quantization}: {est.weights_gb:.1f} GiB of weights and "
        f"{est.kv_per_user_gb:.2f} GiB of KV cache per user{shared} on {est.gpus} x {est.gpu} "
        f"({est.memory_available_gb:.0f} GiB usable, {est.parallelism})"
    )
    if est.binding is ServingLimit.WEIGHT_MEMORY or (not est.fits and est.engine == "local"):
        yield error(
            message + ": the weights do not fit",
            evidence,
            "more or larger GPUs, a smaller format (--set serve.quantization=int4), or a local "
            "runner that offloads to RAM (serve.engine=local)",
        )
    elif not est.fits:
        yield error(
            message + f": not even one request's {est.prompt_tokens + est.output_tokens:,}-token "
            "context fits the KV cache beside the weights, so the engine cannot start",
            evidence,
            "shorter contexts, an fp8 KV cache (--set serve.kv_precision=fp8), a smaller weight "
            "format, or more GPU memory",
        )
    elif est.users > est.max_users_fit and est.engine != "local" and w.serve.requests is None:
        engine = Engine(est.engine).display_name
        yield warning(
            message + f": only {est.max_users_fit} of {est.users} users' contexts fit at once; "
            f"{engine} runs those and queues the other {est.users - est.max_users_fit}: "
            f"each request waits {est.queue_wait_s:.1f} s for a slot before its prompt starts",
            evidence,
            "to serve them all at once: fewer users, shorter contexts, an fp8 KV cache, or "
            "more GPU memory",
        )
    else:
        yield info(message + f": fits, up to {est.max_users_fit} users at once", evidence)
