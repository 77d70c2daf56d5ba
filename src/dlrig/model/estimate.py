"""`estimate(build, workload)`: the step time by stage, the bottleneck, memory, power and the
run's totals. Composes the one-quantity functions of the sibling modules; cheap enough for the
planner to call per candidate (no pydantic, no I/O after the first call).

Step composition. The GPU's own work (compute, memory-bound kernels) and what cannot overlap
with it run in series; the input pipeline runs beside it when loading is asynchronous
(DISK.2), and copies do when they come from pinned memory (PCIE.1); gradient exchange overlaps
with the backward pass. The step lasts as long as the slower of the serial chain and each
parallel stage (dlrig.model.step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dlrig.enums import (
    Bottleneck,
    CoolerType,
    Modifier,
    Parallelism,
    Precision,
    PreprocessingStrategy,
)
from dlrig.machine.model import Build
from dlrig.machine.topology import topology
from dlrig.model import compute, interconnect, memory, parallelism, pcie, pipeline, served
from dlrig.model.calibration import Calibration, default_calibration
from dlrig.model.checkpoint import job_io
from dlrig.model.device import (
    DEFAULT_CPU,
    Device,
    attention_as_run,
    busbw_gb_s,
    measured_busbw_notes,
    pcie_link,
    pick_device,
)
from dlrig.model.energy import co2_kg, energy_cost, run_time_h, wall_energy_kwh
from dlrig.model.host import host_memory_bandwidth
from dlrig.model.layers import LayerWork, layer_work
from dlrig.model.power import size_build_psu
from dlrig.model.power_limit import power_limit_factor
from dlrig.model.rates import (
    ComputePath,
    is_16bit,
    matmul_peak,
    measured_rate_notes,
    shader_issue_rate,
    sustained_bandwidth_factor,
    sustained_clock_notes,
    sustained_rate_factor,
)
from dlrig.model.result import (
    Estimate,
    MemoryEstimate,
    ParallelEstimate,
    PowerEstimate,
    RunEstimate,
)
from dlrig.model.serving import (
    TOKENS_PER_MILLION,
    ServingEstimate,
    cards,
    compute_precision,
    serving_estimate,
    serving_ratio_band,
    with_engine_budget,
)
from dlrig.model.serving_batch import batch_layout, batch_run
from dlrig.model.serving_load import serving_load
from dlrig.model.step import compose_step
from dlrig.model.thermal import thermal_factor
from dlrig.model.wall import wall_draw
from dlrig.units import MIB, gbit_s_to_gb_s
from dlrig.workloads.model import Mode, QuantizedBase, Workload
from dlrig.workloads.serving import ServeSpec

DEFAULT_READ_MB_S = 3500.0  # a PCIe 3.0 NVMe SSD, when the build names no storage
DEFAULT_NETWORK_GBIT_S = 10.0  # 10 GbE, when nodes > 1 and the build names no network
DEFAULT_PSU_TIER = "gold"
BACKWARD_SHARE = 2.0 / 3.0  # backward = 2 of the 3 forward-equivalents of a training step
DEFAULT_RUN_STEPS = 1000
# Who dequantizes a QLoRA base, for the assumption that says so (compute.dequantize_bytes).
_BASE_KERNELS = {
    QuantizedBase.NF4: "bitsandbytes NF4",
    QuantizedBase.TORCHAO_NF4: "torchao NF4",
    QuantizedBase.GPTQ: "a GPTQ checkpoint, int4 with fp16 scales",
    QuantizedBase.AWQ: "an AWQ checkpoint, int4 with fp16 scales",
}


@dataclass(frozen=True)
class _Job:
    """What every stage reads: the build, the workload, the device and the counts."""

    build: Build
    workload: Workload
    cal: Calibration
    dev: Device
    work: LayerWork
    n_node: int
    n_total: int
    batch: int
    sixteen: bool
    training: bool
    trainable: float
    shards: int
    lay: parallelism.Layout
    paged_bytes: float = 0.0


def _gpu_work_s(job: _Job, mods: list[Modifier], assumed: list[str]) -> tuple[float, float, str]:
    """(compute seconds incl. kernel launches, memory-bound seconds, path) of one step on one
    device by layer class (dlrig.model.compute), slowed by thermal throttling (COOL.1)."""
    w, cal, batch = job.workload, job.cal, job.batch
    peak, path = job.dev.peak_flops_s, job.dev.path
    measured = job.build.measured  # the machine's own probe, in place of achievable rates
    if job.dev.group is not None:
        peak *= sustained_rate_factor(job.dev.group.gpu, w.precision, measured)
        limited, note = power_limit_factor(job.dev.group, w.precision, measured)
        peak *= limited
        assumed.extend([note] if note else [])
        assumed.extend(measured_rate_notes(measured, job.dev.group.gpu, w.precision))
        assumed.extend(sustained_clock_notes(job.dev.group.gpu, w.precision, measured))
    bw = job.dev.bandwidth_gb_s
    if job.dev.group is not None:
        bw *= sustained_bandwidth_factor(job.dev.group.gpu, measured)
    if job.training and job.work.expert_gemm_flops > 0:
        # Megatron-Bridge's published MoE pre-training (docs/performance-summary.md, NeMo 25.09
        # and 25.11: Qwen3-30B-A3B on 8 B200, EP 8, 18,066 and 9,299 tokens/s a GPU with the
        # same layout) shows how much of an MoE step lies outside its matmuls and copies.
        assumed.append(
            "mixture of experts: the expert GEMMs, their tokens' copies and all-to-alls are "
            "counted; the router, top-k and token-sorting kernels and any imbalance between "
            "experts are not, so the step is a lower bound (published MoE runs vary 2x "
            "between framework releases)"
        )
    operand = compute.operand_bytes(path.value)
    if _nchw_transposes(job.work, w, path.value):
        which = "16-bit" if operand == 2.0 else "TF32"
        moves = compute.nchw_transpose_moves(operand, _tf32_nhwc_convolutions(job.dev))
        what = "its input and output" if moves == compute.NCHW_TRANSPOSE_MOVES else "its input"
        assumed.append(
            f"tensors in PyTorch's default NCHW layout: each {which} tensor-core convolution "
            f"transposes {what} (cuDNN's NHWC kernels; memory_format: channels_last avoids it)"
        )
    if compute.unaligned_extra_flops(job.work, operand, job.dev.unaligned_share) > 0:
        width = f"{job.work.lm_head_width:,}"
        assumed.append(
            f"the {width}-wide output projection is not a multiple of 8: "
            + (
                f"it keeps {job.dev.unaligned_share:.0%} of the tensor cores' efficiency"
                if w.unaligned_tensor_cores
                else "cuBLAS before 11.0 runs it on the CUDA cores at the FP32 rate"
            )
            + " (a vocabulary padded to a multiple of 64 runs at full speed)"
        )
    weight_bytes = 0.0
    if not job.training and w.fp8_params:  # FP8 linear weights, 16-bit embeddings
        weight_bytes = memory.frozen_weight_bytes(w, w.params, job.sixteen)
    elif not job.training:
        weight_bytes = w.params * memory.frozen_weight_bytes_per_param(
            w.weight_bits, job.sixteen, memory.quantized_bits_per_weight(w)
        )
    issue = shader_issue_rate(job.dev.group.gpu) if job.dev.group is not None else 0.0
    quantized = memory.quantized_params(w, w.params) / job.lay.replica_gpus
    rates = compute.Rates(
        peak, path.value, bw, _l2_bytes(job.dev), job.dev.unaligned_share,
        unaligned_on_cuda_cores=not w.unaligned_tensor_cores,
        attention_share=job.dev.attention_share, issue_rate=issue,
        shader_flops_s=_shader_fp32_flops_s(job, path),
        tf32_nhwc_convolutions=_tf32_nhwc_convolutions(job.dev),
    )  # fmt: skip
    if job.work.winograd_share > 0 and compute.shaders_win_3x3(rates, cal.compute):
        assumed.append(
            f"TF32: the 3x3 convolutions ({job.work.winograd_share:.0%} of the convolution "
            f"FLOPs) run as FP32 Winograd on the shader cores ({rates.shader_flops_s / 1e12:.1f} "
            f"TFLOPS sustained, 2.25x fewer multiplications), faster here than the TF32 tensor "
            f"cores ({peak / 1e12:.1f} TFLOPS)"
        )
    t_mm, t_mem = compute.gpu_step_s(
        job.work, w, batch, rates, cal.compute,
        optimizer_params=0.0 if w.cpu_offload else job.trainable / job.shards,
        sixteen_bit=job.sixteen,
        weight_bytes=weight_bytes,
        quantized_params=quantized,
    )  # fmt: skip
    if compute.dequantizes(w) and quantized > 0:
        assumed.append(
            f"QLoRA: each 4-bit weight is dequantized to 16-bit before every matmul pass "
            f"({_BASE_KERNELS[w.quantized_base or QuantizedBase.NF4]}): "
            f"{compute.dequantize_bytes(w, quantized) / 1e9:.1f} GB and "
            f"{compute.dequantize_kernels(job.work, w):,.0f} kernels a step"
        )
    if job.work.adapter_fp32_elems > 0:
        moved = compute.adapter_fp32_bytes(job.work, w, batch)
        spent = compute.bandwidth_time_s(moved, bw, cal.compute.memory_efficiency)
        how = (
            "under torch.autocast (Hugging Face's Trainer, TRL, accelerate) each adapted linear "
            "casts its input to fp32 and autocast casts it back for the 16-bit adapter matmul"
            if w.adapter_autocast
            else "without autocast (finetune.autocast: false) each adapted linear casts its "
            "input to fp32 and its fp32 update back"
        )
        assumed.append(
            f"LoRA adapters in fp32, as peft keeps them: {how}, {moved / 1e9:.1f} GB of fp32 "
            f"moved a step ({spent * 1e3:,.0f} ms at {bw:,.0f} GB/s); peft's "
            "get_peft_model(..., autocast_adapter_dtype=False) keeps them in 16 bits "
            "(finetune.adapter_precision: 16bit, as torchtune and NeMo run them)"
        )
    if w.cuda_graphs and not compute.decoding(w):
        kernels = compute.step_kernels(job.work, w, batch, mixed_precision=job.sixteen)
        assumed.append(
            f"CUDA graphs: the host launches each step's {kernels:,.0f} kernels in one call, "
            f"where eager it spends {cal.compute.host_kernel_s * 1e6:.0f} us on each beside "
            f"the GPU's {cal.compute.gpu_kernel_s * 1e6:.0f} us"
        )
    throttle = 1.0
    if job.dev.group is not None:
        throttle = _throttle(job, job.dev.group.cooler, assumed)
        if throttle < 1.0:
            mods.append(Modifier.THERMAL_THROTTLE)
    t_mm, t_mem = t_mm / throttle, t_mem / throttle
    gpus = job.n_node * job.build.nodes
    if job.training and gpus > 1:  # data-parallel GPUs wait at each all-reduce for the slowest
        launch = compute.launch_s(job.work, w, batch, cal.compute, sixteen_bit=job.sixteen)
        kernels = compute.step_kernels(job.work, w, batch, mixed_precision=job.sixteen)
        wait = interconnect.straggler_wait_s(
            gpus, t_mm + t_mem, launch, w.gradient_accumulation, kernels
        )
        if wait > 0:
            share = 1.0 + wait / (t_mm + t_mem)
            t_mm, t_mem = t_mm * share, t_mem * share
        copies = interconnect.ddp_bucket_copy_bytes(w, job.lay, job.sixteen)
        t_mem += compute.bandwidth_time_s(copies, bw, cal.compute.memory_efficiency) / max(
            1, w.gradient_accumulation
        )
    return t_mm, t_mem, path.value


def _throttle(job: _Job, cooler: CoolerType, assumed: list[str]) -> float:
    """Share of full speed the node's cards keep under sustained load (thermal_factor), by what
    the build says of their chassis: a server platform's fan wall cools them; a desktop case
    or a motherboard puts them side by side in a case (COOL.3). Three or more cards in a build
    naming none of these sit in a chassis dlrig cannot see (a rented or borrowed machine, a
    server): they are not assumed to throttle, and the estimate says what a desktop case
    would cost. A pair without a board is assumed a slot apart (COOL.3: "air is safe")."""
    build, factors = job.build, job.cal.thermal_factor
    server = build.platform is not None
    unseen = not server and build.case is None and build.motherboard is None
    if unseen and job.n_node >= 3:
        packed = thermal_factor(cooler, job.n_node, factors)
        if packed < 1.0:
            assumed.append(
                f"no case, motherboard or server platform given: the chassis is unknown, so "
                f"its {job.n_node} {cooler.value} cards are not assumed to throttle; side by "
                f"side in a desktop case they would run about {1.0 - packed:.0%} slower "
                "(COOL.1, COOL.3)"
            )
        return 1.0
    # None: no board named, so the pair's seating is unknown; assumed a slot apart.
    seating = _pair_spaced(build) if job.n_node == 2 else False
    if seating is None and thermal_factor(cooler, 2, factors, forced_airflow=server) < 1.0:
        assumed.append("no motherboard given: the two cards assumed seated a slot apart (COOL.3)")
    return thermal_factor(cooler, job.n_node, factors, seating is not False, forced_airflow=server)


def _launches(job: _Job, compute_s: float) -> tuple[float, float, float]:
    """(kernels a step launches, the share of the device's compute seconds the host spends
    launching them, how much faster a GPU twice as fast would run the compute); (0, 0, 2) for
    the CPU and for decoding (its launches queue behind the weight reads), a share of 0 for a
    step replayed as a CUDA graph (compute.launch_s). The GPU's own seconds are what the
    overlap leaves of the compute seconds beside the host's (compute.overlapped_s)."""
    w = job.workload
    if job.dev.is_cpu or compute.decoding(w) or compute_s <= 0:
        return 0.0, 0.0, 2.0
    kernels = compute.step_kernels(job.work, w, job.batch, mixed_precision=job.sixteen)
    factors = job.cal.compute
    host_s = compute.launch_s(job.work, w, job.batch, factors, sixteen_bit=job.sixteen)
    p = factors.host_overlap_exponent
    if math.isinf(p):
        gpu_s = compute_s if compute_s > host_s else 0.0
    else:
        gpu_s = max(compute_s**p - host_s**p, 0.0) ** (1.0 / p)
    faster = compute.overlapped_s(gpu_s / 2.0, host_s, p)
    # The compute seconds leave out the memory-bound ones the host's launches also overlap,
    # so a host-bound step's launches can outlast them: all of it, and no faster on a faster GPU.
    share = min(1.0, host_s / compute_s)
    return kernels, share, max(1.0, compute_s / faster) if faster > 0 else 2.0


def _shader_fp32_flops_s(job: _Job, path: ComputePath) -> float:
    """The sustained FP32 shader rate a TF32 run's 3x3 convolutions may take instead of the
    tensor cores (compute.tf32_conv_s); 0 on another path, without a GPU or on an architecture
    whose cuDNN keeps them on the tensor cores (compute.SHADER_WINOGRAD_ARCHITECTURES)."""
    if path is not ComputePath.TENSOR_TF32 or job.dev.group is None:
        return 0.0
    gpu, measured = job.dev.group.gpu, job.build.measured
    if gpu.architecture not in compute.SHADER_WINOGRAD_ARCHITECTURES:
        return 0.0
    peak, _, _ = matmul_peak(gpu, Precision.FP32)
    limited, _ = power_limit_factor(job.dev.group, Precision.FP32, measured)
    return peak * sustained_rate_factor(gpu, Precision.FP32, measured) * limited


def _l2_bytes(dev: Device) -> float:
    """The GPU's L2 cache in bytes; 0 for the CPU or a GPU the catalog gives none."""
    gpu = dev.group.gpu if dev.group is not None else None
    return (gpu.l2_cache_mb or 0.0) * MIB if gpu is not None else 0.0


def _pair_spaced(build: Build) -> bool | None:
    """Two cards on the board with at least one free slot between their coolers (the seating
    the rules compute from the motherboard's slot positions and the cards' widths); None when
    no board is given, so the seating is unknown."""
    if build.platform is not None:
        return False
    if build.motherboard is None:
        return None
    placement = topology(build).placement
    if placement is None or len(placement.seats) != 2:
        return False
    return placement.free_slots_below(0) >= 1


def _input_pipeline_s(
    job: _Job, gen: int, lanes: int, assumed: list[str]
) -> tuple[float, float, float]:
    """(pcie, storage, cpu_preprocessing) seconds per step; all 0 with synthetic data."""
    w, build, cal, ds = job.workload, job.build, job.cal, job.workload.dataset
    if ds is None:
        return 0.0, 0.0, 0.0
    t_pcie = 0.0
    if not job.dev.is_cpu:
        eff = cal.pcie_pinned_efficiency if w.pin_memory else cal.pcie_pageable_efficiency
        copy = None
        if build.measured is not None and job.dev.group is not None:
            copy = build.measured.h2d_gb_s(job.dev.group.gpu.name, w.pin_memory)
            if copy is not None:
                kind = "pinned" if w.pin_memory else "pageable"
                assumed.append(
                    f"host-to-device {kind} copies from probe measurement "
                    f"{build.measured.date}: {copy:g} GB/s"
                )
        rate = pcie.host_copy_gb_s(gen, lanes, eff, copy)
        t_pcie = pcie.copy_time_s(job.batch * w.input_bytes_per_sample, rate)
    store = build.dataset_storage
    # Identical drives holding the dataset are read together (striped), as the rules assume.
    read_mb_s = build.storage_read_mb_s(store) if store else DEFAULT_READ_MB_S
    disk = build.measured.disk(store.device.name) if build.measured and store else None
    if disk is not None and build.measured is not None:
        assumed.append(
            f"disk read from probe measurement {build.measured.date}: {disk.read_mb_s:g} MB/s "
            f"at queue depth {disk.read_queue_depth}"
        )
    if store is None:
        assumed.append(f"no storage given: a {DEFAULT_READ_MB_S:.0f} MB/s NVMe SSD assumed")
    samples = job.batch * job.n_node
    first = pipeline.storage_read_time_s(samples * ds.bytes_per_sample, read_mb_s)
    if store is not None and disk is None and ds.files_per_sample > 0:
        # a probe's deep-queue read already holds the drive's access time; else a file read at
        # random costs the drive one access (DISK.1, small files)
        per_s = pipeline.random_reads_per_s(store.device)
        seek_s = pipeline.file_access_time_s(samples * ds.files_per_sample, per_s)
        if seek_s > 0:
            first += seek_s
            assumed.append(
                f"{ds.files:,} files read in random order: {store.device.name} opens "
                f"{per_s:,.0f} a second, {seek_s * 1000:,.0f} ms a step before the bytes stream"
            )
    ram_gb = build.memory.size_gb if build.memory else 0.0
    if not ram_gb:
        assumed.append("RAM size not given: the dataset is read from storage every epoch")
    cached = bool(ram_gb) and pipeline.dataset_fits_page_cache(ds.total_gb, ram_gb)
    t_storage = pipeline.amortized_storage_time_s(first, w.epochs or 1.0, cached)
    if build.cpu is None and not job.dev.is_cpu:
        assumed.append("no CPU given: 8 cores assumed for preprocessing")
    cores = (build.cpu or DEFAULT_CPU).cores * (build.cpu_count if build.cpu else 1)
    online = w.preprocessing_strategy is PreprocessingStrategy.ONLINE
    ms = w.cpu_ms_per_sample if online else w.offline_cpu_ms_per_sample
    workers = pipeline.preprocessing_workers_per_gpu(
        w.loader_workers, cores, job.n_node, w.async_loading
    )
    return t_pcie, t_storage, pipeline.cpu_time_s(job.batch, ms, workers)


def _exchange_s(
    job: _Job, gen: int, lanes: int, step_s: tuple[float, float, float], assumed: list[str]
) -> tuple[float, float, float, float, float]:
    """(interconnect, its exposed part, network, its exposed part, tensor-parallel) seconds
    per micro-batch (dlrig.model.interconnect.training_exchange); `step_s`: the micro-batch's
    forward, backward and attention seconds on one GPU."""
    w, build, cal, group = job.workload, job.build, job.cal, job.dev.group
    forward_s, backward_s, attention_s = step_s
    if not job.training or group is None:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    if w.parallel is Parallelism.HOST_PS:
        link = pcie.pcie_effective_gb_s(gen, lanes, cal.pcie_pinned_efficiency)
        ram = host_memory_bandwidth(build, cal.host_memory_bandwidth_gb_s)
        if ram.assumed:
            assumed.append(ram.assumed)
        t_ic = interconnect.host_parameter_server_time_s(
            job.trainable * 4.0, job.n_node, link, ram.gb_s
        )
        return t_ic, t_ic, 0.0, 0.0, 0.0  # DP.1's server waits for every GPU's gradients
    busbw = busbw_gb_s(build, group.gpu, job.n_node, gen, lanes, cal)
    notes = measured_busbw_notes(build, job.n_node, busbw)
    assumed.extend(notes)
    kind = interconnect.intra_node_link(build, group.gpu, job.n_node)
    ram = host_memory_bandwidth(build, cal.host_memory_bandwidth_gb_s)
    # host-staged flows share the host's RAM only where the build says what it is: MEM.1's
    # assumed figure is one desktop CPU's, where a server's sockets give several times that
    staged_ram_gb_s = ram.gb_s if ram.assumed is None else 0.0
    if kind is interconnect.LinkClass.PCIE_NO_P2P and not notes:
        flows = interconnect.host_staged_flows(build, group.gpu, job.n_node)
        staged_gb_s = interconnect.host_staged_busbw_gb_s(gen, lanes, flows, staged_ram_gb_s)
        if staged_gb_s < min(busbw, interconnect.no_p2p_busbw_gb_s(gen, lanes)):
            assumed.append(
                f"{flows} host-staged flows share the host's {ram.gb_s:.0f} GB/s of memory "
                f"bandwidth ({ram.provenance}), each through DRAM twice"
            )
        busbw = min(busbw, staged_gb_s)
        reason = interconnect.host_staged_reason(build, group.gpu, job.n_node)
        if job.n_node > 1 and reason:
            assumed.append(
                f"{group.gpu.name}: {reason}, so the GPUs' collectives pass through host "
                f"memory at {busbw:.1f} GB/s"
            )
    nic_gb_s = 0.0
    if build.nodes > 1:
        net = build.network
        gbit_s = net.gbit_s * net.adapters_per_node if net else DEFAULT_NETWORK_GBIT_S
        if net is None:
            assumed.append(f"nodes > 1 without a network: {DEFAULT_NETWORK_GBIT_S:.0f} GbE assumed")
        nic_gb_s = gbit_s_to_gb_s(gbit_s) * cal.network_efficiency / job.n_node
    host_gb_s = pcie.pcie_effective_gb_s(gen, lanes, cal.pcie_pinned_efficiency)
    fabric = interconnect.Fabric(
        kind, busbw, interconnect.collective_latency_s(kind, cal.collective_latency_s),
        nic_gb_s, host_gb_s,
        overlaps_compute=not (
            kind is interconnect.LinkClass.PCIE_NO_P2P
            and interconnect.every_hop_host_staged(build, group.gpu, job.n_node)
        ),
    )  # fmt: skip
    host = None
    if w.cpu_offload:
        assumed.append(
            ram.assumed
            or f"CPU offload: the optimizer step streams the host's RAM at "
            f"{ram.gb_s:.0f} GB/s ({ram.provenance})"
        )
        host = interconnect.HostStep(ram.gb_s, job.n_node)
    ex = interconnect.training_exchange(
        w, job.lay, fabric, job.sixteen, cal.bucket_bytes, forward_s, backward_s, host,
        job.paged_bytes, attention_s,
    )  # fmt: skip
    if kind is interconnect.LinkClass.PCIE and interconnect.peer_to_peer_unstated(build):
        staged = interconnect.host_staged_fabric(fabric, gen, lanes, job.n_node, staged_ram_gb_s)
        _p2p_note(job, staged, host, ex, step_s, assumed)
    if job.lay.gradient_ranks > 1:
        per_param, why = parallelism.gradient_exchange_bytes(w, job.sixteen)
        grads = parallelism.replica_gradient_bytes(w, job.lay, job.sixteen)
        assumed.append(
            f"gradients exchanged at {per_param:.0f} bytes a parameter ({why}): "
            f"{grads / 1e9:.2f} GB of them on each GPU a step"
        )
    tp_net = ex.tensor_parallel_network_s
    if tp_net > 0:
        assumed.append(
            f"the tensor-parallel group of {job.lay.tensor} spans "
            f"{job.lay.tensor // job.lay.gpus_per_node} nodes: its per-layer all-reduces cross "
            f"the network on the critical path ({tp_net * 1e3:.1f} ms a micro-batch; Megatron "
            "keeps tensor groups inside a node)"
        )
    if ex.context.total_s > 0:
        assumed.append(
            f"context parallelism over {job.lay.context} GPUs: each passes its keys and values "
            f"around the ring, {ex.context.total_s * 1e3:.2f} ms a micro-batch, "
            f"{ex.exposed_context.total_s * 1e3:.2f} ms of it beyond the attention it overlaps"
        )
    if ex.expert.total_s > 0:
        assumed.append(
            f"expert parallelism over {job.lay.expert} GPUs: the tokens' all-to-alls to and "
            f"from their experts take {ex.expert.total_s * 1e3:.2f} ms a micro-batch on the "
            "critical path (no overlap with compute assumed; routing taken as balanced)"
        )
    return (
        ex.interconnect_s, ex.exposed_interconnect_s,
        ex.data.inter_s + ex.model_parallel_network_s,
        ex.data.exposed_inter_s + ex.exposed_model_parallel_network_s,
        ex.tensor_parallel_s + tp_net,
    )  # fmt: skip


def _p2p_note(
    job: _Job,
    staged: interconnect.Fabric,
    host: interconnect.HostStep | None,
    ex: interconnect.TrainingExchange,
    step_s: tuple[float, float, float],
    assumed: list[str],
) -> None:
    """Say so where the unstated peer-to-peer decides a part of the step: the exchange the
    same job makes with every hop through host memory, when it exposes at least 5% of the
    micro-batch's compute more than the P2P one (Answer.AI's rented RTX A5000 and RTX 6000 Ada
    machines ran FSDP + QLoRA "bandwidth-bound", where P2P hides the gathers:
    bench/bench_fsdp_qlora.py)."""
    forward_s, backward_s, attention_s = step_s
    alt = interconnect.training_exchange(
        job.workload, job.lay, staged, job.sixteen, job.cal.bucket_bytes, forward_s, backward_s,
        host, job.paged_bytes, attention_s,
    )  # fmt: skip
    more = alt.exposed_interconnect_s - ex.exposed_interconnect_s
    if more < 0.05 * (forward_s + backward_s):
        return
    assumed.append(
        f"the {job.n_node} GPUs are taken to reach each other peer-to-peer over PCIe (no "
        f"motherboard, platform or probe says otherwise), hiding all but "
        f"{ex.exposed_interconnect_s * 1e3:,.0f} ms of their {ex.interconnect_s * 1e3:,.0f} ms "
        f"exchange a micro-batch; without it (a cloud VM's GPUs, cards meeting at an Intel "
        f"host bridge) every hop passes through host memory at {staged.busbw_gb_s:.1f} GB/s "
        f"and the exchange adds {more * 1e3:,.0f} ms more (a probe's measured.peer_to_peer, "
        "or the motherboard, settles it)"
    )


def _attention_share(work: LayerWork) -> float:
    """The attention's share of the compute, by its FLOPs (it runs at a lower efficiency than
    the GEMMs, so its share of the time is larger: what this leaves to hide behind it is a
    lower bound)."""
    total = work.gemm_flops + work.conv_flops + work.attention_flops
    return work.attention_flops / total if total > 0 else 0.0


def _memory(plan: memory.MemoryPlan) -> MemoryEstimate:
    """GPU memory (or RAM on a CPU-only build) at the batch, and the largest batch that fits,
    in GB as cards are labelled (memory.capacity_gb), under the layout memory_plan chose."""
    need = plan.need
    # The parts as the step's peak holds them (MemoryNeed.peak_tensor_bytes): the backward's
    # gradients are not there while every activation is, and the activations are gone by the
    # optimizer step.
    states = need.peak_states_bytes
    activations = need.peak_tensor_bytes - states
    low, high = (memory.capacity_gb(b) for b in memory.need_interval_bytes(need))
    return MemoryEstimate(
        gpu_required_gb=memory.capacity_gb(need.total_bytes),
        gpu_available_gb=memory.capacity_gb(plan.capacity_bytes),
        fits=plan.fits,
        max_batch_per_gpu=plan.max_batch_per_gpu,
        model_states_gb=memory.capacity_gb(states),
        activations_gb=memory.capacity_gb(activations),
        overhead_gb=memory.capacity_gb(need.total_bytes - need.peak_tensor_bytes),
        gpu_required_gb_low=low,
        gpu_required_gb_high=high,
    )


def _power(build: Build, cal: Calibration, assumed: list[str]) -> PowerEstimate:
    """PSU.1 sizing, the average draw while training, and the PSU's efficiency."""
    sizing = size_build_psu(build)
    if build.cpu is None:
        assumed.append("no CPU given: 150 W counted for PSU sizing (PSU.1's example CPU)")
    tier = None
    if build.psu is not None:
        tier = build.psu.efficiency
    elif build.platform is not None:
        tier = build.platform.psu_efficiency
    psu_eff = cal.psu_efficiency.get(str(tier).lower()) if tier else None
    if psu_eff is None:
        psu_eff = cal.psu_efficiency[DEFAULT_PSU_TIER]
        assumed.append("PSU efficiency unknown: 80 PLUS Gold (90% at half load) assumed")
    draw = wall_draw(build)
    return PowerEstimate(
        system_peak_w=sizing.subtotal_w,
        psu_recommended_w=sizing.recommended_w,
        psu_installed_w=build.psu_watts,
        average_w=sizing.subtotal_w * cal.gpu_average_power_fraction,
        psu_efficiency=psu_eff,
        wall_w=draw.wall_w,
        per_circuit_w=draw.per_circuit_w,
        circuit=draw.mains.name,
        circuit_origin=draw.mains.origin,
        circuit_continuous_w=draw.continuous_w,
        circuit_headroom_w=draw.headroom_w,
    )


def _run_samples(workload: Workload, global_batch: int, assumed: list[str]) -> float:
    if workload.tokens and workload.seq_len:
        if workload.mode is Mode.INFERENCE:
            return workload.tokens
        return workload.tokens / workload.seq_len
    if workload.steps:
        return float(workload.steps * global_batch)
    if workload.dataset is not None:
        epochs = workload.epochs or 1.0
        if workload.epochs is None:
            assumed.append("run length not given: 1 epoch assumed")
        return epochs * workload.dataset.samples
    if workload.epochs is not None:
        assumed.append(
            f"epochs given but the data is synthetic (no dataset size): {DEFAULT_RUN_STEPS} "
            "steps assumed"
        )
    else:
        assumed.append(f"run length not given: {DEFAULT_RUN_STEPS} steps assumed")
    return float(DEFAULT_RUN_STEPS * global_batch)


def _run(
    build: Build,
    workload: Workload,
    global_batch: int,
    rate_per_s: float,
    power: PowerEstimate,
    prices: tuple[float | None, float | None],
    assumed: list[str],
) -> RunEstimate:
    """The whole run on every node: time, wall energy, its cost and CO2 (PSU.3, CO2.1).
    `global_batch`: the samples one step takes on all replicas."""
    samples = _run_samples(workload, global_batch, assumed)
    hours = run_time_h(samples, rate_per_s)
    io = job_io(build, workload, hours)
    if io is not None and io.total_s > 0:  # loading the weights, saving checkpoints (DISK.job)
        hours += io.total_s / 3600.0
        assumed.append(
            f"job files on {io.drive}: weights load in {io.load_s:,.0f} s, {io.saves} checkpoint "
            f"save(s) of {io.save_s:,.0f} s at {io.write_mb_s:,.0f} MB/s add to the run"
        )
    price = build.prices.electricity_per_kwh if prices[0] is None else prices[0]
    intensity = build.prices.co2_kg_per_kwh if prices[1] is None else prices[1]
    kwh = wall_energy_kwh(power.average_w * build.nodes, hours, power.psu_efficiency)
    return RunEstimate(
        samples=samples,
        steps=math.ceil(samples / global_batch),  # a partial last step is still a step
        time_h=hours,
        energy_kwh=kwh,
        energy_cost=energy_cost(kwh, price),
        currency=build.prices.currency,
        co2_kg=co2_kg(kwh, intensity),
        electricity_per_kwh=price,
        co2_kg_per_kwh=intensity,
    )


def _tf32_nhwc_convolutions(dev: Device) -> bool:
    """The device's cuDNN runs TF32 convolutions on NHWC kernels
    (compute.NHWC_TF32_CONVOLUTION_ARCHITECTURES); False on a CPU."""
    return (
        dev.group is not None
        and dev.group.gpu.architecture in compute.NHWC_TF32_CONVOLUTION_ARCHITECTURES
    )


def _nchw_transposes(work: LayerWork, workload: Workload, path: str) -> bool:
    return compute.nchw_transposes(
        work, workload, compute.operand_bytes(path), on_shader_cores=path.startswith("simt")
    )


# The host's kernel launches are most of the compute stage from this share on: a faster GPU
# then barely shortens the step.
LAUNCH_BOUND_SHARE = 0.5


def advice(
    bottleneck: Bottleneck,
    workload: Workload,
    path: str,
    dev: Device,
    work: LayerWork,
    launches: tuple[float, float, float] = (0.0, 0.0, 2.0),
) -> str:
    """What would move the bottleneck, given what the workload already does. `launches`: the
    kernels one step launches, the share of the compute stage the host spends launching them
    (compute.launch_s) and how much faster a GPU twice as fast would then run it (_launches)."""
    w = workload
    if bottleneck is Bottleneck.STORAGE:
        return (
            "a faster drive (NVMe), enough RAM for the page cache to hold the dataset, or a "
            "smaller stored sample (DISK.1, DISK.3)"
        )
    if bottleneck is Bottleneck.CPU_PREPROCESSING:
        if w.preprocessing_strategy is PreprocessingStrategy.ONLINE:
            return (
                "preprocess once before training, or more CPU cores and loader workers per GPU "
                "(CPU.1)"
            )
        return "more loader workers or CPU cores per GPU (CPU.1)"
    if bottleneck is Bottleneck.PCIE:
        if not pcie.pcie_overlapped(w.pin_memory, w.async_loading):
            return "pin memory and load asynchronously: the copy then hides behind compute (PCIE.1)"
        return "more PCIe lanes or a newer generation, or send smaller inputs (uint8 images)"
    if bottleneck is Bottleneck.GPU_COMPUTE:
        if dev.is_cpu:
            return "a GPU: the CPU computes at a small fraction of a GPU's rate (MEM.1)"
        gpu = dev.group.gpu if dev.group is not None else None
        kernels, share, twice = launches
        if share >= LAUNCH_BOUND_SHARE:
            return (
                f"the CPU launching {kernels:,.0f} kernels one by one is {share:.0%} of the "
                f"compute (CPU.2): a GPU twice as fast would run it only {twice:.2f}x faster. "
                "Replay the step as a CUDA graph (torch.compile mode='reduce-overhead'; "
                "workload key cuda_graphs), launch fewer, larger kernels (a larger batch, "
                "torch.compile), or use a CPU with faster cores"
            )
        if path.startswith("simt") and gpu is not None and gpu.has_tensor_cores:
            return "train in 16-bit (bf16/fp16) on the GPU's tensor cores (GPU.3)"
        if _nchw_transposes(work, w, path):
            # The transposes are memory time that adds to the compute's (the classes add).
            return (
                "a GPU with more TFLOPS at this precision (GPU.1), or more GPUs; "
                "memory_format: channels_last also saves the convolutions' NCHW transposes"
            )
        return "a GPU with more TFLOPS at this precision (GPU.1), or more GPUs"
    if bottleneck is Bottleneck.GPU_MEMORY_BANDWIDTH:
        if _nchw_transposes(work, w, path):
            return (
                "memory_format: channels_last (the convolutions then skip their NCHW "
                "transposes), or a GPU with more memory bandwidth (GPU.1)"
            )
        return "a GPU with more memory bandwidth (GPU.1); larger batches or fused kernels help"
    if bottleneck is Bottleneck.INTERCONNECT:
        if w.cpu_offload:
            # The offload's copies and the CPU's optimizer step run once per optimizer step.
            return (
                "no CPU offload (more GPUs or a smaller optimizer state), more micro-batches "
                "per optimizer step (gradient_accumulation), or host RAM with more channels"
            )
        if w.paged_optimizer:
            return (
                "a GPU with more memory, or a smaller optimizer state (adamw8bit, "
                "optimizer_in_backward, LoRA), so that the paged optimizer stops paging"
            )
        return "NVLink/NVSwitch between the GPUs (DP.2), fewer GPUs, or larger batches per GPU"
    return "a faster network between the nodes (InfiniBand), or larger batches per GPU"


def estimate(
    build: Build,
    workload: Workload,
    *,
    calibration: Calibration | None = None,
    electricity_per_kwh: float | None = None,
    co2_kg_per_kwh: float | None = None,
    arrivals: bool = False,
) -> Estimate:
    """Predict one training (or inference) step of `workload` on `build`, and the whole run.
    `arrivals`: for a serving workload that asks about Poisson arrivals, simulate them
    (dlrig.model.serving_load, a few tenths of a second: `dlrig estimate` asks, the
    planner's and the rules' many estimates do not)."""
    cal = calibration or default_calibration()
    assumed: list[str] = [*workload.assumptions, *build.assumed_fields]
    mods: list[Modifier] = []
    dev = pick_device(build, workload, cal, assumed)
    spec = workload.serve
    served_assumed = [*workload.assumptions, *build.assumed_fields]
    group = None if spec is None or dev.is_cpu else cards(build, cal)
    if spec is not None and group is not None:
        # Memory and layout sized as the engine sizes them: its budget on these cards, then the
        # batch's layout.
        spec = with_engine_budget(spec, group)
        name = workload.model_name or workload.name
        spec = _batch_spec(build, spec, name, cal, served_assumed)
    serving = None if spec is None or dev.is_cpu else serving_estimate(
        build, spec, workload.model_name or workload.name, cal
    )  # fmt: skip
    if spec is not None and serving is not None:
        return _served_estimate(
            build, workload, spec, serving, cal, served_assumed,
            (electricity_per_kwh, co2_kg_per_kwh), arrivals=arrivals,
        )  # fmt: skip
    workload = attention_as_run(workload, dev, assumed)
    if dev.is_cpu:
        assumed.append("no GPU in the build: the device computing is the CPU")
    n_node = 1 if dev.is_cpu else build.gpu_count
    training = workload.mode is Mode.TRAINING
    if training and not dev.is_cpu:
        parallelism.check_layout(workload, n_node, build.nodes, workload.source or workload.name)
    plan = memory.memory_plan(
        workload, is_16bit(workload.precision), n_node, build.nodes, dev.memory_bytes,
        0.0 if dev.is_cpu else cal.cuda_context_gb, cal.allocator_overhead_fraction,
        build.memory.size_gb if build.memory else None,
    )  # fmt: skip
    if plan.note:
        assumed.append(plan.note)
    workload = memory.sharded_workload(workload, plan.layout)  # what the step then runs
    lay = parallelism.layout(workload, n_node, build.nodes)
    job = _Job(
        build=build, workload=workload, cal=cal, dev=dev,
        work=layer_work(workload),
        n_node=n_node, n_total=n_node * build.nodes, batch=workload.batch_size,
        sixteen=is_16bit(workload.precision), training=training,
        trainable=workload.params * workload.trainable_fraction if training else 0.0,
        shards=lay.gradient_ranks if parallelism.is_sharded(workload) else 1,  # ZeRO: 1/ranks
        lay=lay, paged_bytes=plan.need.paged_bytes,
    )  # fmt: skip

    t_compute, t_mem, path = _gpu_work_s(job, mods, assumed)
    device_compute_s = t_compute
    gen, lanes = pcie_link(build, dev.group, mods) if dev.group is not None else (3, 16)
    t_pcie, t_storage, t_cpu = _input_pipeline_s(job, gen, lanes, assumed)
    # Each GPU computes its 1/(tensor x pipeline x context) of the micro-batch's work, and a
    # pipeline idles for its bubble (parallelism.pipeline_time_factor).
    share = parallelism.pipeline_time_factor(lay.pipeline, workload.micro_batches)
    t_compute, t_mem = (t * share / lay.replica_gpus for t in (t_compute, t_mem))
    backward_s = (t_compute + t_mem) * BACKWARD_SHARE
    forward_s = t_compute + t_mem - backward_s
    t_ic, exposed_ic, t_net, exposed_net, t_tp = _exchange_s(
        job, gen, lanes, (forward_s, backward_s, t_compute * _attention_share(job.work)), assumed
    )
    stages = {
        Bottleneck.STORAGE: t_storage,
        Bottleneck.CPU_PREPROCESSING: t_cpu,
        Bottleneck.PCIE: t_pcie,
        Bottleneck.GPU_COMPUTE: t_compute,
        Bottleneck.GPU_MEMORY_BANDWIDTH: t_mem,
        Bottleneck.INTERCONNECT: t_ic,
        Bottleneck.NETWORK: t_net,
    }
    serial = {**stages, Bottleneck.INTERCONNECT: exposed_ic, Bottleneck.NETWORK: exposed_net}
    parallel: list[Bottleneck] = []
    if workload.async_loading:
        parallel.extend(b for b in (Bottleneck.STORAGE, Bottleneck.CPU_PREPROCESSING) if stages[b])
    if t_pcie > 0 and pcie.pcie_overlapped(workload.pin_memory, workload.async_loading):
        parallel.append(Bottleneck.PCIE)
    step = compose_step(stages, serial, parallel)
    hidden = list(step.hidden)
    hidden += [b for b in (Bottleneck.INTERCONNECT, Bottleneck.NETWORK) if stages[b] > serial[b]]

    samples_per_s = job.batch * lay.data / step.time_s  # data-parallel replicas
    tokens_per_s: float | None = None
    decoding = not training and workload.kv_bytes_per_token is not None
    if workload.seq_len and workload.is_language_model:
        tokens_per_s = samples_per_s if decoding else samples_per_s * workload.seq_len
    power = _power(build, cal, assumed)
    rate = tokens_per_s if decoding and tokens_per_s else samples_per_s
    run = _run(
        build, workload, job.batch * lay.data, rate, power, (electricity_per_kwh, co2_kg_per_kwh),
        assumed,
    )  # fmt: skip
    open_air = dev.group is not None and dev.group.cooler is CoolerType.OPEN_AIR
    if Modifier.THERMAL_THROTTLE in mods and open_air and n_node >= 3:
        assumed.append("open-air coolers side by side throttle (COOL.3): speed reduced")

    par = None
    if training and not dev.is_cpu:
        par = ParallelEstimate(
            data=lay.data, tensor=lay.tensor, pipeline=lay.pipeline, context=lay.context,
            expert=lay.expert,
            sequence=workload.sequence_parallel, zero_stage=parallelism.zero_stage(workload),
            micro_batches=workload.micro_batches,
            gradient_accumulation=workload.gradient_accumulation,
            pipeline_bubble=parallelism.pipeline_bubble_fraction(
                lay.pipeline, workload.micro_batches
            ),
            tensor_parallel_s=t_tp, communication_s=t_ic + t_net,
            communication_exposed_s=exposed_ic + exposed_net,
        )  # fmt: skip
    fitted = dev.is_cpu or cal.fitted_gpu(dev.name)
    band = cal.throughput_band(1 if dev.is_cpu else job.n_total, fitted)
    if not fitted:
        assumed.append(
            f"no measured training row of the {dev.name} is in the fit: its efficiencies are "
            "those fitted on other GPUs, and its interval the wider one the fit's rows give "
            "such GPUs"
        )
    launches = (0.0, 0.0, 2.0)
    if step.bottleneck is Bottleneck.GPU_COMPUTE:  # only its advice reads the launches
        launches = _launches(job, device_compute_s)
    return Estimate(
        build=build.name,
        workload=workload.name,
        compute_device=dev.name,
        device_is_cpu=dev.is_cpu,
        gpus=job.n_total,
        batch_per_gpu=job.batch,
        precision=workload.precision,
        compute_path=path,
        pcie_gen=None if dev.is_cpu else gen,
        pcie_lanes=None if dev.is_cpu else lanes,
        step_time_s=step.time_s,
        bottleneck=step.bottleneck,
        stages_s=stages,
        exposed_s=step.exposed_s,
        hidden=tuple(dict.fromkeys(hidden)),
        modifiers=tuple(dict.fromkeys(mods)),
        advice=advice(step.bottleneck, workload, path, dev, job.work, launches),
        next_bottleneck=step.next_bottleneck,
        speedup_if_removed=step.speedup_if_removed,
        samples_per_s=samples_per_s,
        tokens_per_s=tokens_per_s,
        memory=_memory(plan),
        power=power,
        run=run,
        assumptions=tuple(dict.fromkeys(assumed)),
        throughput_ratio_low=band[0],
        throughput_ratio_high=band[1],
        parallel=par,
    )


def _batch_spec(
    build: Build, spec: ServeSpec, model_name: str, cal: Calibration, assumed: list[str]
) -> ServeSpec:
    """An offline batch (serve.requests) on a batched server without serve.tensor_parallel
    runs on the layout that finishes it first (serving_batch.batch_layout), said in the
    assumptions; any other serving workload as written."""
    if spec.requests is None or spec.tensor_parallel is not None or not spec.engine.is_batched:
        return spec
    degree = batch_layout(build, spec, spec.requests, model_name, cal)
    if degree is None:
        return spec
    copies = build.gpu_count // degree * build.nodes
    assumed.append(
        f"layout chosen for the batch of {spec.requests:,} requests: {copies} "
        f"cop{'ies' if copies > 1 else 'y'} of {degree} GPU{'s' * (degree > 1)}, the one that "
        "finishes it first (serve.tensor_parallel to choose)"
    )
    return replace(spec, tensor_parallel=degree)


def _served_estimate(
    build: Build,
    workload: Workload,
    spec: ServeSpec,
    serving: ServingEstimate,
    cal: Calibration,
    assumed: list[str],
    prices: tuple[float | None, float | None],
    *,
    arrivals: bool,
) -> Estimate:
    """A serving workload's estimate, every figure from its serving figures
    (dlrig.model.served): the step per output token, the output tokens/s of all users, one
    card's share of the served model, and the run and its energy at that rate."""
    layout = served.served_layout(build, spec, cal)
    if arrivals:
        serving = replace(serving, load=serving_load(build, spec, serving, cal))
    if spec.requests is not None and serving.fits:
        run_batch = batch_run(build, spec, spec.requests, serving.model, cal)
        serving = replace(serving, batch=run_batch)
    card = next(g for g in build.gpus if g.gpu.name == serving.gpu)
    step = served.served_step(serving)
    precision = compute_precision(spec)
    _, path, note = matmul_peak(card.gpu, precision)
    assumed.extend([note] if note else [])
    assumed.extend(n for n in serving.notes if n not in assumed)
    power = _power(build, cal, assumed)
    rate = serving.tokens_per_s_total
    band = serving_ratio_band(spec)
    run_workload = workload
    if serving.batch is not None:  # the run is the batch: its output tokens at its own rate
        batch = serving.batch
        run_workload = replace(workload, tokens=float(batch.requests * spec.output_tokens))
        rate = batch.tokens_per_s_total
    run = _run(build, run_workload, spec.users, rate, power, prices, assumed)
    gen, lanes = pcie_link(build, card, [])
    return Estimate(
        build=build.name,
        workload=workload.name,
        compute_device=serving.gpu,
        device_is_cpu=False,
        gpus=build.gpu_count * build.nodes,
        batch_per_gpu=layout.users_per_copy,
        precision=precision,
        compute_path=path.value,
        pcie_gen=gen,
        pcie_lanes=lanes,
        step_time_s=step.time_s,
        bottleneck=step.bottleneck,
        stages_s=step.stages_s,
        exposed_s=step.exposed_s,
        hidden=step.hidden,
        modifiers=(),
        advice=served.served_advice(serving),
        next_bottleneck=step.next_bottleneck,
        speedup_if_removed=step.speedup_if_removed,
        samples_per_s=rate,
        tokens_per_s=rate,
        memory=served.served_memory(serving, spec, layout, memory.gpu_memory_bytes(card.gpu)),
        power=power,
        run=run,
        assumptions=tuple(dict.fromkeys(assumed)),
        throughput_ratio_low=band[0],
        throughput_ratio_high=band[1],
        serving=serving,
        kwh_per_million_tokens=wall_energy_kwh(
            power.average_w * build.nodes,
            run_time_h(TOKENS_PER_MILLION, rate),
            power.psu_efficiency,
        ),
    )


def workload_memory_gb(workload: Workload, *, calibration: Calibration | None = None) -> float:
    """GPU memory one GPU needs for `workload` at its own batch (no sharding), in GB as cards are
    labelled; a serving workload's is one model copy's (dlrig.model.served.served_copy_gb):
    its weights in their stored format, every asked user's KV cache and the prefill."""
    if workload.serve is not None:
        return served.served_copy_gb(workload.serve)
    cal = calibration or default_calibration()
    need = memory.memory_need(
        workload,
        workload.batch_size,
        is_16bit(workload.precision),
        memory.declared_layout(workload, 1),
        cal.cuda_context_gb,
        cal.allocator_overhead_fraction,
    )
    return memory.capacity_gb(need.total_bytes)
