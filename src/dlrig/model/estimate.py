"""`estimate(build, workload)`: the step time by stage, the bottleneck, memory, power and the
run's totals. Composes the one-quantity functions of the sibling modules; cheap enough for the
planner to call per candidate (no pydantic, no I/O after the first call).

Step composition. The GPU's own work (compute, memory-bound kernels) and what cannot overlap
with it run in series; the input pipeline runs beside it when loading is asynchronous
(DISK.2), and copies do when they come from pinned memory (PCIE.1); gradient exchange overlaps
with the backward pass. The step lasts as long as the slower of the serial chain and each
parallel stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlrig.build.model import Build, GPUGroup
from dlrig.catalog.schema import CPU, GPU
from dlrig.enums import (
    Bottleneck,
    CoolerType,
    Interconnect,
    Modifier,
    Parallelism,
    PreprocessingStrategy,
)
from dlrig.model import compute, interconnect, memory, pcie, pipeline
from dlrig.model.calibration import Calibration, default_calibration
from dlrig.model.energy import co2_kg, energy_cost, run_time_h, wall_energy_kwh
from dlrig.model.power import size_build_psu
from dlrig.model.rates import ComputePath, cpu_peak_flops_s, is_16bit, matmul_peak
from dlrig.model.result import Estimate, MemoryEstimate, PowerEstimate, RunEstimate
from dlrig.model.step import compose_step
from dlrig.model.thermal import thermal_factor
from dlrig.units import GB, TFLOPS
from dlrig.workloads.model import Mode, Workload

DEFAULT_CPU = CPU(
    name="assumed 8-core CPU", family="assumed", cores=8, threads=16, base_ghz=3.0,
    pcie_lanes=24, pcie_gen=4, memory_channels=2, memory_type="DDR5", tdp_w=105, socket="any",
)  # fmt: skip
DEFAULT_READ_MB_S = 3500.0  # a PCIe 3.0 NVMe SSD, when the build names no storage
DEFAULT_NETWORK_GBIT_S = 10.0  # 10 GbE, when nodes > 1 and the build names no network
DEFAULT_PSU_TIER = "gold"
BACKWARD_SHARE = 2.0 / 3.0  # backward = 2 of the 3 forward-equivalents of a training step
DEFAULT_RUN_STEPS = 1000


@dataclass(frozen=True)
class _Device:
    name: str
    is_cpu: bool
    peak_flops_s: float
    efficiency: float
    path: ComputePath
    bandwidth_gb_s: float
    memory_gb: float
    group: GPUGroup | None


def _pick_device(build: Build, workload: Workload, cal: Calibration, assumed: list[str]) -> _Device:
    if build.gpus:
        group = min(build.gpus, key=lambda g: g.gpu.fp32_tflops)
        if len(build.gpus) > 1:
            assumed.append(f"mixed GPUs: all paced by the slowest, {group.gpu.name}")
        gpu = group.gpu
        peak, path, note = matmul_peak(gpu, workload.precision)
        if note:
            assumed.append(note)
        return _Device(
            gpu.name, False, peak, cal.matmul_efficiency[path.value], path,
            gpu.memory_bandwidth_gb_s, gpu.memory_gb, group,
        )  # fmt: skip
    cpu = build.cpu or DEFAULT_CPU
    if build.cpu is None:
        assumed.append("no GPU and no CPU given: an 8-core 3 GHz CPU assumed")
    peak = cpu_peak_flops_s(cpu, build.cpu_count, cal.cpu_flops_per_cycle)
    ram_gb = build.memory.size_gb if build.memory else 0.0
    if not ram_gb:
        ram_gb = 32.0
        assumed.append("RAM size not given: 32 GB assumed")
    return _Device(
        f"CPU: {cpu.name}", True, peak, cal.cpu_efficiency, ComputePath.CPU,
        cal.host_memory_bandwidth_gb_s, ram_gb, None,
    )  # fmt: skip


def _link_width(lanes: int) -> int:
    """The widest PCIe link (x16, x8, x4, x2, x1) that `lanes` lanes can make."""
    return next((w for w in (16, 8, 4, 2, 1) if w <= lanes), 1)


def _link(build: Build, group: GPUGroup, mods: list[Modifier]) -> tuple[int, int]:
    """(gen, lanes) of the group's links: what the build says the slot gives, else the card's
    own, limited by the board's slots (widest first) and the CPU's lanes shared by all GPUs."""
    gpu = group.gpu
    gen = group.pcie_gen or gpu.pcie_gen
    lanes = group.pcie_lanes or gpu.pcie_lanes
    if group.pcie_lanes is None and build.platform is None:
        board = build.motherboard
        if board is not None and board.x16_slots:
            slots = sorted(board.x16_slots, key=lambda sl: -sl.lanes)
            first = sum(g.count for g in build.gpus[: build.gpus.index(group)])
            mine = slots[first : first + group.count] or slots[-1:]
            lanes = min(lanes, min(sl.lanes for sl in mine))
            if group.pcie_gen is None:
                gen = min(gen, min(sl.gen for sl in mine))
        if build.cpu is not None and build.gpu_count:
            lanes = min(
                lanes, _link_width(build.cpu.pcie_lanes * build.cpu_count // build.gpu_count)
            )
    if group.pcie_gen is None and build.cpu is not None:
        gen = min(gen, build.cpu.pcie_gen)
    if gen < gpu.pcie_gen or lanes < gpu.pcie_lanes:
        mods.append(Modifier.PCIE_DOWNGRADED)
    return gen, lanes


def _busbw_gb_s(build: Build, gpu: GPU, n: int, gen: int, lanes: int, cal: Calibration) -> float:
    kind = build.platform.interconnect if build.platform else gpu.interconnect
    nvlink = gpu.nvlink_gb_s
    full_mesh = kind in (Interconnect.NVSWITCH, Interconnect.NVLINK)
    if nvlink and (full_mesh or (kind is Interconnect.NVLINK_BRIDGE and n == 2)):
        return nvlink / 2.0 * cal.nvlink_busbw_efficiency
    return pcie.pcie_theoretical_gb_s(gen, lanes) * cal.pcie_busbw_efficiency


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
    assumed.append(f"run length not given: {DEFAULT_RUN_STEPS} steps assumed")
    return float(DEFAULT_RUN_STEPS * global_batch)


ADVICE: dict[Bottleneck, str] = {
    Bottleneck.STORAGE: "a faster drive (NVMe), more RAM so the dataset stays in the page cache, "
    "or a compressed/preprocessed dataset (DISK.1, DISK.3)",
    Bottleneck.CPU_PREPROCESSING: "more CPU cores or loader workers per GPU, or preprocess once "
    "before training (CPU.1)",
    Bottleneck.PCIE: "pinned memory with asynchronous loading hides the copy (PCIE.1); more lanes "
    "only shorten it",
    Bottleneck.GPU_COMPUTE: "a GPU with more TFLOPS at this precision, or 16-bit on tensor cores "
    "(GPU.3)",
    Bottleneck.GPU_MEMORY_BANDWIDTH: "a GPU with more memory bandwidth; larger batches or fused "
    "kernels raise arithmetic intensity",
    Bottleneck.INTERCONNECT: "NVLink/NVSwitch between the GPUs (DP.2), fewer GPUs, or larger "
    "batches per GPU",
    Bottleneck.NETWORK: "a faster network between nodes (InfiniBand), or larger batches per GPU",
}


def estimate(
    build: Build,
    workload: Workload,
    *,
    calibration: Calibration | None = None,
    electricity_per_kwh: float | None = None,
    co2_kg_per_kwh: float | None = None,
) -> Estimate:
    """Predict one training (or inference) step of `workload` on `build`, and the whole run."""
    cal = calibration or default_calibration()
    assumed: list[str] = list(workload.assumptions)
    mods: list[Modifier] = []
    dev = _pick_device(build, workload, cal, assumed)
    if dev.is_cpu:
        assumed.append("no GPU in the build: the device computing is the CPU")
    n_node = build.gpu_count if not dev.is_cpu else 1
    n_total = n_node * build.nodes
    batch = workload.batch_size
    sixteen = is_16bit(workload.precision)
    factors = cal.workload(workload.model_name or workload.name)
    peak, path, efficiency = dev.peak_flops_s, dev.path, dev.efficiency
    simt_eff = factors.simt_efficiency or cal.matmul_efficiency[ComputePath.SIMT_FP32.value]
    if path in (ComputePath.SIMT_FP32, ComputePath.SIMT_16BIT):
        efficiency = simt_eff
    elif path is ComputePath.TENSOR_16BIT and factors.tensor_efficiency is not None:
        efficiency = factors.tensor_efficiency
    elif path is ComputePath.TENSOR_TF32 and dev.group is not None:
        # cuDNN/cuBLAS pick the fastest algorithm: on cards whose TF32 tensor rate barely
        # beats FP32 (GeForce Ampere: equal), FP32 Winograd convolutions can win.
        simt_peak = dev.group.gpu.fp32_tflops * TFLOPS
        if simt_peak * simt_eff > peak * efficiency:
            peak, path, efficiency = simt_peak, ComputePath.SIMT_FP32, simt_eff
    training = workload.mode is Mode.TRAINING
    trainable = workload.params * workload.trainable_fraction if training else 0.0
    shards = n_total if workload.parallel is Parallelism.FSDP else 1

    # GPU compute and memory-bound work (roofline per layer class).
    throttle = 1.0
    if dev.group is not None:
        throttle = thermal_factor(dev.group.cooler, n_node, cal.thermal_factor)
        if throttle < 1.0:
            mods.append(Modifier.THERMAL_THROTTLE)
    mem_rate = dev.bandwidth_gb_s
    if training:
        flops = compute.training_flop_multiplier(workload) * workload.forward_flops_per_sample
        t_mm = compute.matmul_time_s(flops * batch, peak, efficiency)
        t_weights = 0.0
    else:
        flops_step = compute.inference_flops_per_step(workload, batch)
        t_mm = compute.matmul_time_s(flops_step, peak, efficiency)
        weight_bytes = workload.params * memory.frozen_weight_bytes_per_param(
            workload.weight_bits, sixteen
        )
        read = compute.decode_bytes_per_step(workload, weight_bytes, batch)
        t_weights = compute.bandwidth_time_s(read, mem_rate, cal.memory_efficiency)
    sixteen_traffic = compute.moves_16bit_activations(sixteen, path.value)
    moved = compute.memory_bound_bytes(workload, batch, sixteen_traffic, factors.memory_passes)
    moved += compute.optimizer_bytes(workload, trainable / shards)
    t_mem = compute.bandwidth_time_s(moved, mem_rate, cal.memory_efficiency)
    if t_weights > t_mm:  # decoding: the matmuls wait on their weights
        t_mem += t_weights
        t_mm = 0.0
    overhead_s = factors.step_overhead_s if training else factors.step_overhead_s / 3.0
    t_compute = (t_mm + overhead_s) / throttle
    t_mem /= throttle
    t_device = t_compute + t_mem

    # PCIe, storage and CPU (the input pipeline); none with synthetic data or on the CPU.
    stages = dict.fromkeys(Bottleneck, 0.0)
    stages[Bottleneck.GPU_COMPUTE] = t_compute
    stages[Bottleneck.GPU_MEMORY_BANDWIDTH] = t_mem
    async_loading = workload.async_loading
    gen, lanes = (3, 16)
    if dev.group is not None:
        gen, lanes = _link(build, dev.group, mods)
    ds = workload.dataset
    if ds is not None:
        if not dev.is_cpu:
            eff = (
                cal.pcie_pinned_efficiency if workload.pin_memory else cal.pcie_pageable_efficiency
            )
            rate = pcie.pcie_effective_gb_s(gen, lanes, eff)
            stages[Bottleneck.PCIE] = pcie.copy_time_s(
                batch * workload.input_bytes_per_sample, rate
            )
        store = build.dataset_storage
        # Identical drives holding the dataset are read together (striped), as the rules assume.
        read_mb_s = store.device.read_mb_s * store.count if store else DEFAULT_READ_MB_S
        if store is None:
            assumed.append(f"no storage given: a {DEFAULT_READ_MB_S:.0f} MB/s NVMe SSD assumed")
        first = pipeline.storage_read_time_s(batch * n_node * ds.bytes_per_sample, read_mb_s)
        ram_gb = build.memory.size_gb if build.memory else 0.0
        if not ram_gb:
            assumed.append("RAM size not given: the dataset is read from storage every epoch")
        cached = bool(ram_gb) and pipeline.dataset_fits_page_cache(ds.total_gb, ram_gb)
        epochs = workload.epochs or 1.0
        stages[Bottleneck.STORAGE] = pipeline.amortized_storage_time_s(first, epochs, cached)
        cpu = build.cpu or DEFAULT_CPU
        if build.cpu is None and not dev.is_cpu:
            assumed.append("no CPU given: 8 cores assumed for preprocessing")
        cores = cpu.cores * (build.cpu_count if build.cpu else 1)
        online = workload.preprocessing_strategy is PreprocessingStrategy.ONLINE
        ms = workload.cpu_ms_per_sample if online else workload.offline_cpu_ms_per_sample
        workers = pipeline.preprocessing_workers_per_gpu(
            workload.loader_workers, cores, n_node, async_loading
        )
        stages[Bottleneck.CPU_PREPROCESSING] = pipeline.cpu_time_s(batch, ms, workers)

    # Gradient exchange inside the node, then between nodes.
    grad_bytes = trainable * (2.0 if sixteen else 4.0)
    comm_bytes = grad_bytes
    if workload.parallel is Parallelism.FSDP:
        param_bytes = workload.params * (2.0 if sixteen else 4.0)
        comm_bytes = interconnect.fsdp_traffic_bytes(param_bytes, grad_bytes) / 2.0
    backward_s = t_device * BACKWARD_SHARE
    exposed_ic = 0.0
    if training and dev.group is not None and workload.parallel is Parallelism.HOST_PS:
        link = pcie.pcie_effective_gb_s(gen, lanes, cal.pcie_pinned_efficiency)
        stages[Bottleneck.INTERCONNECT] = interconnect.host_parameter_server_time_s(
            trainable * 4.0, n_node, link, cal.host_memory_bandwidth_gb_s
        )
        exposed_ic = stages[Bottleneck.INTERCONNECT]  # DP.1's server waits for every GPU
    elif training and dev.group is not None and n_node > 1:
        busbw = _busbw_gb_s(build, dev.group.gpu, n_node, gen, lanes, cal)
        t_ic = interconnect.allreduce_time_s(
            comm_bytes, n_node, busbw, cal.collective_latency_s, cal.bucket_bytes
        )
        bucket_s = t_ic * min(1.0, cal.bucket_bytes / max(comm_bytes, 1.0))
        stages[Bottleneck.INTERCONNECT] = t_ic
        exposed_ic = interconnect.exposed_after_backward_s(t_ic, backward_s, bucket_s)
    exposed_net = 0.0
    if training and build.nodes > 1 and grad_bytes > 0:
        net = build.network
        gbit_s = net.gbit_s * net.adapters_per_node if net else DEFAULT_NETWORK_GBIT_S
        if net is None:
            assumed.append(f"nodes > 1 without a network: {DEFAULT_NETWORK_GBIT_S:.0f} GbE assumed")
        node_gb_s = gbit_s / 8.0 * cal.network_efficiency
        t_net = interconnect.hierarchical_network_time_s(
            comm_bytes, build.nodes, node_gb_s, cal.collective_latency_s
        )
        stages[Bottleneck.NETWORK] = t_net
        left = max(backward_s - stages[Bottleneck.INTERCONNECT], 0.0)
        exposed_net = interconnect.exposed_after_backward_s(t_net, left, 0.0)

    # Compose the step.
    serial = {
        Bottleneck.GPU_COMPUTE: t_compute,
        Bottleneck.GPU_MEMORY_BANDWIDTH: t_mem,
        Bottleneck.INTERCONNECT: exposed_ic,
        Bottleneck.NETWORK: exposed_net,
        Bottleneck.PCIE: stages[Bottleneck.PCIE],
        Bottleneck.STORAGE: stages[Bottleneck.STORAGE],
        Bottleneck.CPU_PREPROCESSING: stages[Bottleneck.CPU_PREPROCESSING],
    }
    parallel: list[Bottleneck] = []
    if async_loading:
        pipeline_stages = (Bottleneck.STORAGE, Bottleneck.CPU_PREPROCESSING)
        parallel.extend(b for b in pipeline_stages if stages[b] > 0)
    if stages[Bottleneck.PCIE] > 0 and pcie.pcie_overlapped(workload.pin_memory, async_loading):
        parallel.append(Bottleneck.PCIE)
    composed = compose_step(stages, serial, parallel)
    step_s = composed.time_s
    hidden = list(composed.hidden)
    for b, exposed_b in ((Bottleneck.INTERCONNECT, exposed_ic), (Bottleneck.NETWORK, exposed_net)):
        if stages[b] > exposed_b:
            hidden.append(b)

    # Throughput.
    samples_per_s = batch * n_total / step_s
    tokens_per_s: float | None = None
    if workload.seq_len and workload.is_language_model:
        decoding = not training and workload.kv_bytes_per_token is not None
        tokens_per_s = samples_per_s if decoding else samples_per_s * workload.seq_len

    # Memory.
    context_gb = 0.0 if dev.is_cpu else cal.cuda_context_gb
    need = memory.memory_need(
        workload, batch, sixteen, shards, context_gb, cal.allocator_overhead_fraction
    )
    available = dev.memory_gb * GB
    mem = MemoryEstimate(
        gpu_required_gb=need.total_bytes / GB,
        gpu_available_gb=dev.memory_gb,
        fits=need.total_bytes <= available,
        max_batch_per_gpu=memory.max_batch_per_gpu(need, available),
        model_states_gb=need.model_states_bytes / GB,
        activations_gb=need.activation_bytes_per_sample * batch / GB,
        overhead_gb=(need.total_bytes - need.model_states_bytes
                     - need.activation_bytes_per_sample * batch) / GB,
    )  # fmt: skip

    # Power and the run.
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
    average_w = sizing.subtotal_w * cal.gpu_average_power_fraction
    power = PowerEstimate(
        system_peak_w=sizing.subtotal_w,
        psu_recommended_w=sizing.recommended_w,
        psu_installed_w=build.psu_watts,
        average_w=average_w,
        psu_efficiency=psu_eff,
    )
    samples = _run_samples(workload, batch * n_total, assumed)
    if not training and workload.kv_bytes_per_token is not None and tokens_per_s:
        hours = run_time_h(samples, tokens_per_s)
    else:
        hours = run_time_h(samples, samples_per_s)
    price = build.prices.electricity_per_kwh if electricity_per_kwh is None else electricity_per_kwh
    intensity = build.prices.co2_kg_per_kwh if co2_kg_per_kwh is None else co2_kg_per_kwh
    kwh = wall_energy_kwh(average_w * build.nodes, hours, psu_eff)
    run = RunEstimate(
        samples=samples,
        steps=samples / (batch * n_total),
        time_h=hours,
        energy_kwh=kwh,
        energy_cost=energy_cost(kwh, price),
        currency=build.prices.currency,
        co2_kg=co2_kg(kwh, intensity),
        electricity_per_kwh=price,
        co2_kg_per_kwh=intensity,
    )
    if dev.group is not None and dev.group.cooler is CoolerType.OPEN_AIR and n_node >= 3:
        assumed.append("open-air coolers side by side throttle (COOL.3): speed reduced")

    return Estimate(
        build=build.name,
        workload=workload.name,
        compute_device=dev.name,
        device_is_cpu=dev.is_cpu,
        gpus=n_total,
        batch_per_gpu=batch,
        precision=workload.precision,
        compute_path=path.value,
        step_time_s=step_s,
        bottleneck=composed.bottleneck,
        stages_s=stages,
        exposed_s=composed.exposed_s,
        hidden=tuple(dict.fromkeys(hidden)),
        modifiers=tuple(dict.fromkeys(mods)),
        advice=ADVICE[composed.bottleneck],
        next_bottleneck=composed.next_bottleneck,
        speedup_if_removed=composed.speedup_if_removed,
        samples_per_s=samples_per_s,
        tokens_per_s=tokens_per_s,
        memory=mem,
        power=power,
        run=run,
        assumptions=tuple(dict.fromkeys(assumed)),
    )


def workload_memory_gb(workload: Workload, *, calibration: Calibration | None = None) -> float:
    """GPU memory one GPU needs for `workload` at its own batch (no sharding), decimal GB."""
    cal = calibration or default_calibration()
    need = memory.memory_need(
        workload,
        workload.batch_size,
        is_16bit(workload.precision),
        1,
        cal.cuda_context_gb,
        cal.allocator_overhead_fraction,
    )
    return need.total_bytes / GB
