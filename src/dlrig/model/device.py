"""Which device computes, at what rate, and over which links (PCIe, NVLink) it talks."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from dlrig.catalog.schema import CPU, GPU
from dlrig.enums import Interconnect, Modifier, Precision
from dlrig.machine.model import Build, GPUGroup
from dlrig.machine.topology import topology
from dlrig.model import compute, pcie
from dlrig.model.calibration import Calibration
from dlrig.model.host import host_memory_bandwidth
from dlrig.model.interconnect import infinity_fabric_busbw_gb_s, infinity_fabric_mesh
from dlrig.model.layers import FLASH_ATTENTION_SHARE
from dlrig.model.memory import gpu_memory_bytes
from dlrig.model.rates import (
    ComputePath,
    achievable_matmul_tflops,
    cpu_peak_flops_s,
    flash_attention_share,
    matmul_peak,
)
from dlrig.units import TFLOPS, gib_to_bytes
from dlrig.workloads.model import Workload

DEFAULT_CPU = CPU(
    name="assumed 8-core CPU", family="assumed", cores=8, threads=16, base_ghz=3.0,
    pcie_lanes=24, pcie_gen=4, memory_channels=2, memory_type="DDR5", tdp_w=105, socket="any",
)  # fmt: skip
DEFAULT_RAM_GB = 32.0


@dataclass(frozen=True)
class Device:
    """The compute device of a build: a GPU group (paced by its slowest card) or the CPU, and
    the shares of the GEMM efficiency its unaligned 16-bit GEMMs and its fused attention keep
    (compute.unaligned_gemm_share or compute.cuda_core_gemm_share, rates.flash_attention_share)."""

    name: str
    is_cpu: bool
    peak_flops_s: float
    path: ComputePath
    bandwidth_gb_s: float
    memory_bytes: float  # one GPU's, the smallest card's (memory.gpu_memory_bytes); RAM's on a CPU
    group: GPUGroup | None
    unaligned_share: float = compute.UNALIGNED_GEMM_SHARE
    attention_share: float = FLASH_ATTENTION_SHARE


def pick_device(build: Build, workload: Workload, cal: Calibration, assumed: list[str]) -> Device:
    """The GPUs (the slowest group when they are mixed), else the CPU."""
    if build.gpus:
        group = min(build.gpus, key=lambda g: g.gpu.fp32_tflops)
        if len(build.gpus) > 1:
            assumed.append(f"mixed GPUs: all paced by the slowest, {group.gpu.name}")
        gpu = group.gpu
        peak, path, note = matmul_peak(gpu, workload.precision)
        if note:
            assumed.append(note)
        # An FP8 run keeps its LM head in 16-bit (compute.FP8_PER_16BIT_RATE): its alignment
        # share is the 16-bit path's.
        sixteen = peak / compute.FP8_PER_16BIT_RATE if path is ComputePath.TENSOR_FP8 else peak
        if workload.unaligned_tensor_cores:
            share = compute.unaligned_gemm_share(sixteen, gpu.fp32_tflops * TFLOPS)
        else:  # cuBLAS 10 had no bf16: its 16-bit GEMMs are fp16
            share = compute.cuda_core_gemm_share(
                achievable_matmul_tflops(gpu, Precision.FP32, build.measured),
                achievable_matmul_tflops(gpu, Precision.FP16, build.measured),
            )
        # Memory binds at the smallest card, whichever card paces the compute.
        memory = min(gpu_memory_bytes(g.gpu) for g in build.gpus)
        return Device(
            gpu.name, False, peak, path, gpu.memory_bandwidth_gb_s, memory, group, share,
            flash_attention_share(gpu, workload.native_attention),
        )  # fmt: skip
    cpu = build.cpu or DEFAULT_CPU
    if build.cpu is None:
        assumed.append("no GPU and no CPU given: an 8-core 3 GHz CPU assumed")
    ram_gb = build.memory.size_gb if build.memory else 0.0
    if not ram_gb:
        ram_gb = DEFAULT_RAM_GB
        assumed.append(f"RAM size not given: {DEFAULT_RAM_GB:.0f} GiB assumed")
    peak = cpu_peak_flops_s(cpu, build.cpu_count, cal.cpu_flops_per_cycle)
    ram = host_memory_bandwidth(build, cal.host_memory_bandwidth_gb_s)
    assumed.append(ram.assumed or f"RAM bandwidth {ram.gb_s:.0f} GB/s ({ram.provenance})")
    return Device(
        f"CPU: {cpu.name}", True, peak, ComputePath.CPU, ram.gb_s, gib_to_bytes(ram_gb), None,
    )  # fmt: skip


# PyTorch on ROCm turns its fused SDPA kernels (flash and memory-efficient, from AOTriton) off on
# RDNA 3 (gfx1100) unless TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 is set: "Flash attention
# support on Navi31 GPU is still experimental" (pytorch/pytorch PR #134498, 2024-09-10,
# sdp_utils.cpp check_flash_attention_hardware_support; still experimental in ROCm/TheRock PR
# #1437, 2025-09-09), and FlashAttention-2's ROCm build targets the Instinct cards. Attention
# then runs SDPA's math path: the score matrices are written, kept and read like eager ones
# (ROCm/aotriton issue 16, 2024-04-19: a 7900 XTX at 1.6 it/s where a 4090 runs 3, "the lack
# of memory efficient flash attention is hindering").
NO_FUSED_ATTENTION_ARCHITECTURES = frozenset({"RDNA 3"})


def attention_as_run(workload: Workload, dev: Device, assumed: list[str]) -> Workload:
    """The workload as the device runs its attention: a fused kernel asked of a GPU without
    one in its default PyTorch build runs eager (NO_FUSED_ATTENTION_ARCHITECTURES), said so."""
    gpu = dev.group.gpu if dev.group is not None else None
    if gpu is None or gpu.architecture not in NO_FUSED_ATTENTION_ARCHITECTURES:
        return workload
    if not workload.flash_attention:
        return workload
    assumed.append(
        f"{gpu.name} ({gpu.architecture}): PyTorch's ROCm build has no fused attention kernel "
        "for it by default, so attention runs eager, its score matrices kept in GPU memory "
        "(TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 tries the experimental one)"
    )
    return dataclasses.replace(workload, flash_attention=False, native_attention=False)


def pcie_link(build: Build, group: GPUGroup, mods: list[Modifier]) -> tuple[int, int]:
    """(gen, lanes) the group's slowest card trains at, as the machine's topology seats it
    (PCIE.2, PCIE.3); a link narrower or older than the card is `pcie_downgraded`."""
    topo = topology(build)
    index = build.gpus.index(group)
    link = topo.group_link(index)
    if topo.downgraded(index):
        mods.append(Modifier.PCIE_DOWNGRADED)
    return link.gen, link.lanes


def busbw_gb_s(build: Build, gpu: GPU, n: int, gen: int, lanes: int, cal: Calibration) -> float:
    """Achievable all-reduce bus bandwidth per GPU: NVLink/NVSwitch (one direction's share of
    the card's NVLink bandwidth; a bridge joins pairs only), AMD Infinity Fabric (the links n
    GPUs use, interconnect.infinity_fabric_busbw_gb_s), else the PCIe link. A build's
    probe of its own all-reduce across n GPUs replaces the model; a measured peer-to-peer rate
    caps it (a ring's bus bandwidth is its slowest link's) unless NCCL was told not to use it
    (`peer_to_peer: false` beside a rate: NCCL_P2P_DISABLE)."""
    measured = build.measured
    if measured is not None and (own := measured.allreduce_gb_s(n)) is not None:
        return own
    cap = _p2p_cap_gb_s(build)
    return min(cap or math.inf, _modelled_busbw_gb_s(build, gpu, n, gen, lanes, cal))


def _p2p_cap_gb_s(build: Build) -> float | None:
    m = build.measured
    if m is None or not m.p2p_gb_s or m.peer_to_peer is False:
        return None
    return m.p2p_gb_s


def measured_busbw_notes(build: Build, n: int, busbw: float) -> tuple[str, ...]:
    """The estimate's assumption when `busbw_gb_s` took the build's probe figures."""
    m = build.measured
    if m is None:
        return ()
    if m.allreduce_gb_s(n) is not None:
        return (
            f"all-reduce bus bandwidth from probe measurement {m.date}: {busbw:g} GB/s across "
            f"{n} GPUs",
        )
    if _p2p_cap_gb_s(build) == busbw:
        return (
            f"all-reduce bus bandwidth capped at the probe's peer-to-peer measurement "
            f"{m.date}: {busbw:g} GB/s",
        )
    return ()


def _modelled_busbw_gb_s(
    build: Build, gpu: GPU, n: int, gen: int, lanes: int, cal: Calibration
) -> float:
    kind = build.platform.interconnect if build.platform else gpu.interconnect
    nvlink = gpu.nvlink_gb_s
    full_mesh = kind in (Interconnect.NVSWITCH, Interconnect.NVLINK)
    if nvlink and (full_mesh or (kind is Interconnect.NVLINK_BRIDGE and n == 2)):
        return nvlink / 2.0 * cal.nvlink_busbw_efficiency
    if infinity_fabric_mesh(build, gpu):
        return infinity_fabric_busbw_gb_s(gpu, n)
    return pcie.pcie_theoretical_gb_s(gen, lanes) * cal.pcie_busbw_efficiency
