"""Collectives between GPUs: what one all-reduce, reduce-scatter or all-gather costs on a
node's link class and over the network, how much of it hides behind compute, and the host
parameter server of DP.1.

The NCCL algorithm modelled: ring for bandwidth (each GPU sends 2(n-1)/n of an all-reduced
buffer, (n-1)/n of a gathered or scattered one), and for the latency between nodes NCCL's
double binary tree, 2 log2(N) hops over N nodes (NCCL 2.4 chose trees for their logarithmic
latency at scale: Jeaugey, "Massively Scale Your Deep Learning Training with NCCL 2.4",
developer.nvidia.com/blog/massively-scale-deep-learning-training-nccl-2-4/). Across nodes
the collective is hierarchical (what NCCL does with NVLink inside and the network between
nodes): a reduce-scatter inside each node, an all-reduce of each GPU's shard between the
nodes, an all-gather inside each node.

Inside a node the achievable bus bandwidth depends on the message size. The curve measured
on NVLink/NVSwitch nodes is interpolated in log size; PCIe links, for which only saturated
rates were published, follow a latency + size/bandwidth law with the fitted per-call latency,
and AMD's Infinity Fabric mesh the same law with the latency its measured curve shows.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from dlrig.catalog.schema import GPU
from dlrig.enums import Interconnect, Parallelism, Segment, Vendor
from dlrig.machine.model import Build
from dlrig.model import memory, parallelism, pcie
from dlrig.model.compute import optimizer_bytes
from dlrig.model.parallelism import DataParallelTraffic, Layout
from dlrig.units import gb_s_to_bytes_s
from dlrig.workloads.model import Workload


class LinkClass(StrEnum):
    """How the GPUs of a node reach each other for a collective (between nodes: the network,
    hierarchical_time)."""

    NVLINK = "nvlink"  # NVLink/NVSwitch mesh, or a bridged pair
    INFINITY_FABRIC = "infinity-fabric"  # AMD xGMI links, one per peer on an 8-OAM board
    PCIE = "pcie"  # PCIe with peer-to-peer transfers
    PCIE_NO_P2P = "pcie-no-p2p"  # PCIe with a hop through host memory (no P2P)


# All-reduce bus bandwidth over its large-message plateau against the payload (bytes), inside
# one 8-GPU NVLink/NVSwitch node: at each size the median of three measured curves, each
# divided by its own 16 GiB figure (data/calibration/nccl_collective_busbw.csv: 8x A100 SXM
# nccl-tests, 8x H200 SXM and 8x B200 SXM all_reduce_bench.py; ml-engineering@744d01e
# network/README.md L1222-1241, L1257-1276, L1404-1423). Small messages are latency-bound:
# a 25 MiB bucket reaches about half the plateau.
NVLINK_ALLREDUCE_CURVE: tuple[tuple[float, float], ...] = (
    (32768, 0.0030), (65536, 0.0061), (131072, 0.0119), (262144, 0.0243), (524288, 0.0486),
    (1048576, 0.0766), (2097152, 0.1338), (4194304, 0.2222), (8388608, 0.3225),
    (16777216, 0.4520), (33554432, 0.5720), (67108864, 0.7185), (134217728, 0.7532),
    (268435456, 0.8262), (536870912, 0.9337), (1073741824, 0.9613), (2147483648, 0.9729),
    (4294967296, 0.9810), (8589934592, 0.9922), (17179869184, 1.0),
)  # fmt: skip
# Fixed cost of the inter-node phase across 4 nodes: the 4-node all-reduce (32x B200, EFA v4,
# 8x 50 GB/s per node) minus the same system's 1-node all-reduce, each less its bandwidth time
# at its plateau; flat at 0.31-0.34 ms from 256 KiB to 64 MiB (nccl_collective_busbw.csv,
# ml-engineering@744d01e network/README.md L1404-1423), so a latency: 320 us over a tree's
# 2 log2(4) = 4 hops is 80 us a hop (EFA through torch.distributed; InfiniBand is lower,
# unmeasured here).
NETWORK_HOP_LATENCY_S = 320e-6 / 4.0
# All-reduce bus bandwidth over the PCIe link rate with peer-to-peer off (staged through host
# memory): 2x RTX 2080 Ti on Gen3 x16, 4.0 GB/s of 15.75 GB/s (data/calibration/
# achievable_rates.csv, Anthony-Hoo AutoDL interconnection test, 2025-06-05).
PCIE_NO_P2P_BUSBW_EFFICIENCY = 4.0 / 15.75
# All-reduce bus bandwidth over the one-direction rate of the Infinity Fabric links a GPU uses:
# 8x MI300X (7 links of 64 GB/s a direction each, 448 GB/s) reach 312.912 GB/s at 4 GiB
# (all_reduce_bench.py with RCCL; data/calibration/nccl_collective_busbw.csv,
# ml-engineering@744d01e network/README.md L232). Checked on what was not used to set it: 2
# of those GPUs (one link) measured 47.671 GB/s where this gives 44.7, and Azure's ND MI300X
# v5 rccl-tests 316.82 GB/s at 8 GiB (achievable_rates.csv).
XGMI_BUSBW_EFFICIENCY = 312.912 / 448.0
# Fixed cost of one all-reduce over the 8-GPU Infinity Fabric mesh: Azure's rccl-tests curve on
# ND MI300X v5 (achievable_rates.csv) at 8 MiB, 131.57 GB/s busbw, is 111.6 us where its
# 1.75 x 8 MiB at the 312.9 GB/s plateau take 46.9 us: 64.7 us of latency, which then gives
# 288 GB/s at 128 MiB against the 290.81 measured, and 313 at 1 GiB against 313.92.
XGMI_COLLECTIVE_LATENCY_S = 64.7e-6


def ring_allreduce_bus_factor(n: int) -> float:
    """Bytes each GPU sends per byte of an all-reduced buffer in a ring: 2(n-1)/n."""
    return 2.0 * (n - 1) / n if n > 1 else 0.0


def ring_gather_bus_factor(n: int) -> float:
    """Bytes each GPU sends per byte of an all-gathered or reduce-scattered buffer: (n-1)/n."""
    return (n - 1) / n if n > 1 else 0.0


# GeForce generations whose driver offers no PCIe peer-to-peer, so that NCCL stages every
# transfer through host memory: Turing ("the 2080ti has never supported p2p", with its
# p2pBandwidthLatencyTest matrix of 8 cards: github.com/NVIDIA/nccl-tests/issues/117,
# 2022-10-26; "2080 Ti does not support p2p access without NVLink bridge":
# github.com/tensorflow/tensorflow/issues/24677, 2019-01-07), Ampere ("3090 does not support
# peer access": github.com/efeslab/Nanoflow/issues/22, 2024-11-01; the driver blocks it on the
# RTX 3090, 4090 and 5090: smcleod.net/2026/02/patching-nvidias-driver-and-vllm-to-enable-p2p-
# on-consumer-gpus), Ada and Blackwell (tinygrad's P2P-patched open kernel module exists for
# the 4090 for that reason, achievable_rates.csv). Pascal GeForce cards have it on bare metal
# (NCCL loses it only inside a VM: github.com/NVIDIA/nccl/issues/175). Lambda's 2022 runs agree:
# on 8 RTX 2080 Ti, BERT, GNMT and WaveGlow lose 30-170 ms a step more than P2P's 10 GB/s
# explains, an all-reduce at about 4-6 GB/s (the measured P2P-less 4.0 GB/s,
# PCIE_NO_P2P_BUSBW_EFFICIENCY); their Transformer-XL rows scale to 7.5x either way, which no
# link explains (768 MB of fp32 gradients against 170 ms steps).
NO_P2P_GEFORCE_ARCHITECTURES = frozenset({"Turing", "Ampere", "Ada Lovelace", "Blackwell"})


def intra_node_link(build: Build, gpu: GPU, n: int) -> LinkClass:
    """The link class n GPUs of a node all-reduce over: NVLink where the platform or the card
    gives a mesh (a bridge joins a pair only) and the machine has peer-to-peer, which NCCL's
    NVLink traffic rides on (NCCL_P2P_DISABLE "disables the peer to peer (P2P) transport, which
    uses CUDA direct access between GPUs, using NVLink or PCI"); AMD's Infinity Fabric where
    the platform or the module joins the GPUs by it (`infinity_fabric_mesh`); else PCIe,
    through host memory where a ring hop has no peer-to-peer (`host_staged_reason`)."""
    kind = build.platform.interconnect if build.platform else gpu.interconnect
    mesh = kind in (Interconnect.NVSWITCH, Interconnect.NVLINK)
    nvlink = gpu.nvlink_gb_s and (mesh or (kind is Interconnect.NVLINK_BRIDGE and n == 2))
    if nvlink and _machine_without_p2p(build) is None:
        return LinkClass.NVLINK
    if infinity_fabric_mesh(build, gpu) and _machine_without_p2p(build) is None:
        return LinkClass.INFINITY_FABRIC
    if host_staged_reason(build, gpu, n) is not None:
        return LinkClass.PCIE_NO_P2P
    return LinkClass.PCIE


def infinity_fabric_mesh(build: Build, gpu: GPU) -> bool:
    """The node's GPUs reach each other over AMD Infinity Fabric (xGMI): the platform (or,
    without one, the module) says so and the GPU has the links."""
    kind = build.platform.interconnect if build.platform else gpu.interconnect
    links = gpu.infinity_fabric_links and gpu.infinity_fabric_gb_s
    return kind is Interconnect.INFINITY_FABRIC and bool(links)


def infinity_fabric_busbw_gb_s(gpu: GPU, n: int) -> float:
    """All-reduce bus bandwidth of n GPUs on an Infinity Fabric mesh: each link carries
    `infinity_fabric_gb_s` / links / 2 a direction, and a GPU reaches each peer by its own
    link, so a collective over n GPUs drives n-1 of them (at most all): AMD's MI300X board
    joins 8 OAMs with 7 links each, "a fully connected 8-GPU system" (ROCm docs, MI300
    microarchitecture), and 2 of its GPUs measure 47.7 GB/s where 8 measure 312.9
    (XGMI_BUSBW_EFFICIENCY). MI250/MI250X nodes join 4 modules with several links a pair, so
    for them this is a lower bound."""
    links = gpu.infinity_fabric_links or 0
    if n <= 1 or links <= 0 or not gpu.infinity_fabric_gb_s:
        return 0.0
    per_direction = gpu.infinity_fabric_gb_s / links / 2.0
    return min(n - 1, links) * per_direction * XGMI_BUSBW_EFFICIENCY


def collective_latency_s(link: LinkClass, fitted_latency_s: float) -> float:
    """Fixed time of one intra-node collective on a link without a measured size curve: the
    Infinity Fabric mesh's measured latency, else the fitted one (calibration.toml)."""
    if link is LinkClass.INFINITY_FABRIC:
        return XGMI_COLLECTIVE_LATENCY_S
    return fitted_latency_s


def host_staged_reason(build: Build, gpu: GPU, n: int) -> str | None:
    """Why n PCIe GPUs' ring passes through host memory, or None where every hop is
    peer-to-peer: a machine without P2P (a virtual machine's platform, Platform.peer_to_peer,
    or its probe's finding, Measured.peer_to_peer), GeForce cards without it
    (NO_P2P_GEFORCE_ARCHITECTURES), GPUs spread over two CPU sockets, where NCCL's default
    P2P level stops short of the SMP interconnect (NCCL_P2P_LEVEL,
    docs.nvidia.com/deeplearning/nccl env.html: "SYS : Use P2P between NUMA nodes, potentially
    crossing the SMP interconnect (e.g. QPI/UPI)" is opt-in) and sends those hops through host
    memory (its SHM transport, "used between devices when peer-to-peer cannot happen"), or GPUs
    on a motherboard, which meet only at the CPU's host bridge (`board_host_bridge_reason`): a
    ring is as fast as its slowest hop."""
    if (why := _machine_without_p2p(build)) is not None:
        return why
    if _geforce_without_p2p(gpu):
        return "no PCIe peer-to-peer on this GeForce generation"
    if build.topology.spans_cpu_sockets(n):
        return f"{n} GPUs span two CPU sockets and NCCL has no peer-to-peer between them"
    return board_host_bridge_reason(build, n)


# NCCL's default peer-to-peer level (ncclTopoCheckP2p, src/graph/paths.cc): "By default don't
# use P2P across CPU Host Bridges and further apart" (PATH_PXB: GPUs under a common PCIe
# switch), except "Allow P2P between pairs of GPU devices on AMD systems" (an x86 AMD host
# with at most 2 GPUs: PATH_SYS). NCCL 2.23.4-1 (NVIDIA/nccl@68b5423, 2024-09-16) made it the
# default on every CPU; Intel hosts had PATH_PXB since 2.9.6-1 (@a46ea10, 2021-04-12).
# PyTorch's wheels carry it: torch 2.7.1 installs nvidia-nccl-cu12==2.26.2. A pair of GPUs
# whose path crosses the host bridge (nvidia-smi topo's PHB) then talks through host memory,
# NCCL's SHM transport.
AMD_HOST_P2P_MAX_GPUS = 2


def amd_socket(socket: str) -> bool:
    """The board's socket takes AMD CPUs (AM5, sTR5, sWRX8, SP3, SP5); Intel's are LGA."""
    return not socket.upper().startswith("LGA")


def board_host_bridge_reason(build: Build, n: int) -> str | None:
    """Why n GPUs seated on a motherboard reach each other only through host memory, or None:
    a desktop or workstation board wires each x16 slot to a CPU root port or to the chipset,
    with no PCIe switch between two slots (every board of the catalog: no PLX bridge on any),
    so every pair of its GPUs meets at the CPU's host bridge, past NCCL's default P2P level
    (AMD_HOST_P2P_MAX_GPUS) unless the host is AMD with at most two GPUs. A server platform
    keeps its own word (Platform.peer_to_peer): its GPUs may sit under PCIe switches."""
    board = build.motherboard
    if board is None or build.platform is not None or n <= 1:
        return None
    amd = amd_socket(board.socket)
    if amd and n <= AMD_HOST_P2P_MAX_GPUS:
        return None
    host = "an AMD host with more than 2 GPUs" if amd else "an Intel host"
    return (
        f"{n} GPUs on {board.name} meet only at the CPU's host bridge (no PCIe switch "
        f"between its slots), where NCCL (2.23.4 on) uses no peer-to-peer on {host}"
    )


def every_hop_host_staged(build: Build, gpu: GPU, n: int) -> bool:
    """Cards with no peer-to-peer path at all (NO_P2P_GEFORCE_ARCHITECTURES), n GPUs of a board
    that all meet at the host bridge (board_host_bridge_reason), or any card of a machine
    without it (a virtual machine's platform, Platform.peer_to_peer, or a probe that
    found no pair with peer access or ran under NCCL_P2P_DISABLE, Measured.peer_to_peer): NCCL
    stages every byte of every hop through host memory, and its kernels hold their SMs while the
    bytes cross PCIe twice, so the collectives do not run beside the backward. Lambda's GeForce
    rows show the whole all-reduce added to the step: 2 RTX 4090 keep 0.63 of their per-GPU rate
    on BERT-large (TF32: 1.36 GB of fp32 gradients, 0.22 s more a step, 6 GB/s) and 0.56 on
    GNMT, 2 RTX 2080 Ti 0.71 on GNMT, where an overlapped exchange says 0.93-0.96; a server
    whose ring keeps P2P on every hop keeps it hidden: 8 RTX 6000 Ada on two EPYC 7302 sockets
    (Supermicro H12DSG-O-CPU, NCCL 2.7-2.15 allow P2P across an AMD host's sockets) scale
    ResNet-50 8.04x (data/calibration, v1; its sys_pytorch.txt). llm.q moves its collectives
    with cudaMemcpy, which "does not consume SM resources" (IST-DASLab/llmq README,
    --memcpy-all-gather)."""
    return (
        _machine_without_p2p(build) is not None
        or _geforce_without_p2p(gpu)
        or board_host_bridge_reason(build, n) is not None
    )


def _machine_without_p2p(build: Build) -> str | None:
    """Why none of the machine's GPUs reach a peer, by its platform's word or its probe's."""
    if build.platform is not None and not build.platform.peer_to_peer:
        return f"{build.platform.name} gives its GPUs no PCIe peer-to-peer"
    measured = build.measured
    if measured is not None and measured.peer_to_peer is False:
        if measured.p2p_gb_s:  # the cards reach their peers; NCCL was told not to use it
            return (
                f"the probe of {measured.date} measured peer-to-peer but recorded it off for "
                "NCCL (NCCL_P2P_DISABLE)"
            )
        return f"the probe of {measured.date} found no peer-to-peer between the GPUs"
    return None


def _geforce_without_p2p(gpu: GPU) -> bool:
    return (
        gpu.vendor is Vendor.NVIDIA
        and gpu.segment is Segment.CONSUMER
        and gpu.architecture in NO_P2P_GEFORCE_ARCHITECTURES
    )


def peer_to_peer_unstated(build: Build) -> bool:
    """Nothing in the build says whether its GPUs reach each other peer-to-peer: no
    motherboard (whose slots say where they meet, board_host_bridge_reason), no platform (its
    own word) and no probe finding. A rented machine is the usual case: its GPUs may be a
    virtual machine's passthrough devices, without P2P (github.com/NVIDIA/nccl/issues/175)."""
    measured = build.measured
    return (
        build.motherboard is None
        and build.platform is None
        and (measured is None or measured.peer_to_peer is None)
    )


def host_staged_fabric(
    fabric: Fabric, gen: int, lanes: int, n: int, host_memory_gb_s: float
) -> Fabric:
    """The same node's fabric with every hop of its n GPUs' ring through host memory
    (host_staged_busbw_gb_s, n flows) and no overlap with the compute (every_hop_host_staged)."""
    busbw = min(fabric.busbw_gb_s, host_staged_busbw_gb_s(gen, lanes, n, host_memory_gb_s))
    return replace(fabric, link=LinkClass.PCIE_NO_P2P, busbw_gb_s=busbw, overlaps_compute=False)


def no_p2p_busbw_gb_s(gen: int, lanes: int) -> float:
    """All-reduce bus bandwidth of a PCIe link with peer-to-peer off."""
    return pcie.pcie_theoretical_gb_s(gen, lanes) * PCIE_NO_P2P_BUSBW_EFFICIENCY


# Passes through host DRAM of each byte a host-staged ring hop carries: NCCL's SHM transport
# has the sending GPU write each chunk into a host buffer over PCIe and the receiving GPU read
# it back ("SHM is primarily used when GPUs are on different CPUs": github.com/NVIDIA/nccl/
# issues/406, 2020-10-15), so every flow moves its bus bandwidth through DRAM twice and n
# host-staged flows share the host's memory bandwidth: "On PCI systems, the performance you
# get is usually determined by the bandwidth your CPU and memory can deliver. In your case,
# with 8 GPUs, that's 8 flows at 28GB/s in both directions" (github.com/NVIDIA/nccl/issues/
# 1639, 2025-03-14: 8x RTX 5090, 2x Xeon 8480+ with 16 DDR5 DIMMs; 28 GB/s on 8 GPUs, 35 on
# 4). Checked there, nothing fitted: 8 x 28 x 2 = 448 GB/s against the 16 channels' STREAM
# figure, 16 x 4800 MT/s x 8 B x 0.75 = 461 GB/s (host.STREAM_SHARE); on 4 GPUs the memory
# would allow 58 GB/s and the PCIe link binds instead.
SHM_HOST_MEMORY_PASSES = 2


def shm_host_memory_busbw_gb_s(flows: int, host_memory_gb_s: float) -> float:
    """The bus bandwidth the host's memory leaves each of `flows` host-staged ring hops, each
    through DRAM twice (SHM_HOST_MEMORY_PASSES); unbounded (inf) without a host figure."""
    if flows <= 0 or host_memory_gb_s <= 0:
        return math.inf
    return host_memory_gb_s / (SHM_HOST_MEMORY_PASSES * flows)


def host_staged_busbw_gb_s(gen: int, lanes: int, flows: int, host_memory_gb_s: float) -> float:
    """All-reduce bus bandwidth of a ring with `flows` hops through host memory: the PCIe
    link's P2P-less rate (no_p2p_busbw_gb_s), or the host memory's share per flow
    (shm_host_memory_busbw_gb_s) where that is less."""
    link = no_p2p_busbw_gb_s(gen, lanes)
    return min(link, shm_host_memory_busbw_gb_s(flows, host_memory_gb_s))


# Host-staged hops of a ring whose GPUs reach each other peer-to-peer within a CPU socket:
# the ring leaves each socket once, so two of its hops cross through host memory.
SOCKET_CROSSING_FLOWS = 2


def host_staged_flows(build: Build, gpu: GPU, n: int) -> int:
    """How many hops of n GPUs' ring pass through host memory: all n where every hop does
    (every_hop_host_staged), else the two that cross between CPU sockets."""
    if every_hop_host_staged(build, gpu, n):
        return n
    return min(n, SOCKET_CROSSING_FLOWS)


def curve_fraction(curve: Sequence[tuple[float, float]], payload_bytes: float) -> float:
    """A measured curve's value at `payload_bytes`, linear in log size between its points and
    held flat beyond its ends."""
    sizes = [s for s, _ in curve]
    if payload_bytes <= sizes[0]:
        return curve[0][1]
    if payload_bytes >= sizes[-1]:
        return curve[-1][1]
    i = bisect.bisect_right(sizes, payload_bytes)
    (s0, f0), (s1, f1) = curve[i - 1], curve[i]
    t = (math.log(payload_bytes) - math.log(s0)) / (math.log(s1) - math.log(s0))
    return f0 + t * (f1 - f0)


@dataclass(frozen=True)
class Fabric:
    """What the collectives of one job run on: the node's link class, its large-message bus
    bandwidth, the fixed time of one collective on a curve-less link, each GPU's share of its
    node's network (0 on one node), and each GPU's pinned copy rate to host memory (for CPU
    offload); `overlaps_compute` False where the node's collectives cannot run beside the
    compute (`every_hop_host_staged`)."""

    link: LinkClass
    busbw_gb_s: float
    latency_s: float
    nic_gb_s_per_gpu: float = 0.0
    host_link_gb_s: float = 0.0
    overlaps_compute: bool = True


def intra_collective_time_s(payload_bytes: float, bus_factor: float, fabric: Fabric) -> float:
    """One collective inside a node: bus_factor x payload over the bus bandwidth the payload
    reaches (the NVLink curve), or over the plateau plus a fixed latency (PCIe, Infinity
    Fabric)."""
    if payload_bytes <= 0 or bus_factor <= 0:
        return 0.0
    if fabric.link is LinkClass.NVLINK:
        return nvlink_ring_s(payload_bytes, bus_factor, fabric.busbw_gb_s)
    return bus_factor * payload_bytes / gb_s_to_bytes_s(fabric.busbw_gb_s) + fabric.latency_s


def nvlink_ring_s(payload_bytes: float, bus_factor: float, busbw_gb_s: float) -> float:
    """NCCL's ring over NVLink: bus_factor x payload over the bus bandwidth NCCL reaches at the
    payload's size (NVLINK_ALLREDUCE_CURVE x the link's large-message plateau)."""
    plateau = gb_s_to_bytes_s(busbw_gb_s)
    return (
        bus_factor
        * payload_bytes
        / (plateau * curve_fraction(NVLINK_ALLREDUCE_CURVE, payload_bytes))
    )


def network_latency_s(nodes: int) -> float:
    """Fixed time of one inter-node collective: 2 log2(N) tree hops (up and down the tree)."""
    if nodes <= 1:
        return 0.0
    return 2.0 * math.log2(nodes) * NETWORK_HOP_LATENCY_S


@dataclass(frozen=True)
class CollectiveTime:
    """One collective split by where its time goes: inside the node, between nodes."""

    intra_s: float
    inter_s: float

    @property
    def total_s(self) -> float:
        return self.intra_s + self.inter_s


def hierarchical_time(
    payload_bytes: float, all_reduce: bool, ranks_in_node: int, nodes: int, fabric: Fabric
) -> CollectiveTime:
    """An all-reduce (else an all-gather or reduce-scatter) of `payload_bytes` over
    ranks_in_node x nodes GPUs. On one node: a ring over the node's link. Across nodes: a
    reduce-scatter inside the node, an all-reduce of each GPU's 1/g shard over its share of the
    node's network (ring: 2(N-1)/N of the shard, tree latency), an all-gather inside the node;
    a gather or scatter has one intra-node half and an (N-1)/N inter-node phase. NCCL
    pipelines the phases chunk by chunk, so the slower of the node's and the network's
    transfers sets the time, and the network's latency adds to it: `inter_s` is what the
    network adds beyond the node's own time, growing with the node count through 2(N-1)/N and
    log2 N. (Checked against the 4-node B200 curve: 16 MiB within 20%, nccl_collective_busbw.csv.)
    """
    g = max(1, ranks_in_node)
    if nodes <= 1:
        factor = ring_allreduce_bus_factor(g) if all_reduce else ring_gather_bus_factor(g)
        return CollectiveTime(intra_collective_time_s(payload_bytes, factor, fabric), 0.0)
    halves = 2 if all_reduce else 1
    intra = halves * intra_collective_time_s(payload_bytes, ring_gather_bus_factor(g), fabric)
    factor = ring_allreduce_bus_factor(nodes) if all_reduce else ring_gather_bus_factor(nodes)
    network_s = factor * (payload_bytes / g) / gb_s_to_bytes_s(fabric.nic_gb_s_per_gpu)
    return CollectiveTime(intra, max(network_s - intra, 0.0) + network_latency_s(nodes))


def bucket_payloads(total_bytes: float, bucket_bytes: float) -> list[float]:
    """A buffer sent in buckets of `bucket_bytes` (PyTorch DDP's bucket_cap_mb, 25 MiB by
    default: torch.nn.parallel.DistributedDataParallel documentation), the last one partial."""
    if total_bytes <= 0:
        return []
    full = int(total_bytes // bucket_bytes)
    rest = total_bytes - full * bucket_bytes
    return [bucket_bytes] * full + ([rest] if rest > 0 else [])


def exposed_after_producer_s(compute_s: float, comm_s: Sequence[float]) -> float:
    """Communication left after the compute that produces it: chunk i of k is ready when
    (i+1)/k of the compute is done (gradients fill buckets evenly through the backward pass),
    the chunks go out one after another on one stream, and what has not finished when the
    compute ends is exposed: at least the last chunk, more when a chunk outlasts the compute
    left after it is ready."""
    k = len(comm_s)
    end = 0.0
    for i, t in enumerate(comm_s):
        end = max(end, compute_s * (i + 1) / k) + t
    return max(end - compute_s, 0.0)


def exposed_before_consumer_s(compute_s: float, comm_s: Sequence[float]) -> float:
    """Communication that holds up the compute needing it: chunk i (a layer's gathered
    weights) must arrive before compute chunk i starts; gathers are prefetched back to back,
    so the first is always waited for, later ones only when they outrun the compute."""
    k = len(comm_s)
    if k == 0:
        return 0.0
    arrived = done = 0.0
    for t in comm_s:
        arrived += t
        done = max(done, arrived) + compute_s / k
    return max(done - compute_s, 0.0)


@dataclass(frozen=True)
class Exchange:
    """A micro-batch's data-parallel exchange: its time inside the node and between nodes,
    and what of each the compute does not hide."""

    intra_s: float
    inter_s: float
    exposed_intra_s: float
    exposed_inter_s: float


def _split(times: Sequence[CollectiveTime], exposed_s: float) -> tuple[float, float, float, float]:
    """(intra, inter, exposed intra, exposed inter): the exposed time shared in proportion."""
    intra = sum(t.intra_s for t in times)
    inter = sum(t.inter_s for t in times)
    total = intra + inter
    if total <= 0:
        return 0.0, 0.0, 0.0, 0.0
    exposed = min(exposed_s, total)
    return intra, inter, exposed * intra / total, exposed * inter / total


def data_parallel_exchange(
    traffic: DataParallelTraffic,
    ranks_in_node: int,
    nodes: int,
    fabric: Fabric,
    chunk_bytes: float,
    forward_s: float,
    backward_s: float,
    gradient_accumulation: int = 1,
    params_in_host_memory: bool = False,
) -> Exchange:
    """Per micro-batch: the exchanges of `traffic` in chunks of `chunk_bytes` (DDP's buckets,
    or FSDP's per-layer units), overlapped with the compute as far as it goes. Gradient
    all-reduces and reduce-scatters go out during the backward as their buckets fill
    (exposed_after_producer_s); ZeRO-3's gathers are prefetched ahead of the layers that need
    them (exposed_before_consumer_s), in the backward sharing the stream with the scatters;
    ZeRO-2's gather of the updated parameters follows the optimizer step, with nothing to hide
    behind. Once-per-step exchanges count 1/k on each of k accumulated micro-batches.
    `params_in_host_memory`: FSDP parameter offload keeps each GPU's shard in host memory
    "when these parameters are not used for computation" (PyTorch FSDP CPUOffload docs), so
    before each unit's gather, forward and backward, the GPU copies its shard of the unit up
    over its PCIe link at the fabric's host rate, on the same stream."""
    k = max(1, gradient_accumulation)

    def timed(total: float, all_reduce: bool) -> list[CollectiveTime]:
        return [
            hierarchical_time(b, all_reduce, ranks_in_node, nodes, fabric)
            for b in bucket_payloads(total, chunk_bytes)
        ]

    def gathered(total: float) -> list[CollectiveTime]:
        times = timed(total, False)
        if not params_in_host_memory or fabric.host_link_gb_s <= 0:
            return times
        shard_rate = gb_s_to_bytes_s(fabric.host_link_gb_s) * max(1, ranks_in_node) * nodes
        payloads = bucket_payloads(total, chunk_bytes)
        return [
            CollectiveTime(t.intra_s + b / shard_rate, t.inter_s)
            for t, b in zip(times, payloads, strict=True)
        ]

    parts: list[tuple[list[CollectiveTime], float]] = []  # (collectives, exposed), per micro-batch
    reduce = timed(traffic.all_reduce_bytes, True)
    if reduce:
        exposed = exposed_after_producer_s(backward_s, [t.total_s for t in reduce])
        parts.append(([_scaled(t, 1.0 / k) for t in reduce], exposed / k))
    scatter = timed(traffic.reduce_scatter_bytes, False)
    gather = gathered(traffic.gather_bytes_per_micro_batch / 2.0)
    if gather:  # ZeRO-3: forward gathers, then backward gathers beside the scatters
        fwd = exposed_before_consumer_s(forward_s, [t.total_s for t in gather])
        back = [g.total_s + s.total_s for g, s in zip(gather, scatter, strict=False)]
        bwd = gather[0].total_s + exposed_after_producer_s(backward_s, back)
        parts.append((gather + gather + scatter, fwd + bwd))
    elif scatter:
        parts.append((scatter, exposed_after_producer_s(backward_s, [t.total_s for t in scatter])))
    after_step = timed(traffic.gather_bytes_per_step, False)
    if after_step:
        parts.append(
            ([_scaled(t, 1.0 / k) for t in after_step], sum(t.total_s for t in after_step) / k)
        )
    intra = inter = exposed_intra = exposed_inter = 0.0
    for times, exposed in parts:
        a, b, ea, eb = _split(times, exposed)
        intra, inter = intra + a, inter + b
        exposed_intra, exposed_inter = exposed_intra + ea, exposed_inter + eb
    if not fabric.overlaps_compute:
        exposed_intra = intra
    return Exchange(intra, inter, exposed_intra, exposed_inter)


def _scaled(t: CollectiveTime, share: float) -> CollectiveTime:
    return CollectiveTime(t.intra_s * share, t.inter_s * share)


def tensor_parallel_time(
    message_bytes: float,
    collectives: int,
    tensor: int,
    gpus_per_node: int,
    fabric: Fabric,
    sequence_parallel: bool,
) -> CollectiveTime:
    """Megatron's per-layer activation exchange, on the critical path: each of `collectives`
    all-reduces of `message_bytes` over `tensor` GPUs; with sequence parallelism a
    reduce-scatter plus an all-gather of the same bytes (the same volume, two calls). A group
    wider than a node runs them hierarchically (hierarchical_time), its network part on the
    critical path too: why Megatron keeps the group inside a node where it can (Narayanan et
    al. 2021, section 3.3), and what a group that must span nodes pays."""
    if tensor <= 1 or collectives <= 0:
        return CollectiveTime(0.0, 0.0)
    in_node = min(tensor, gpus_per_node)
    nodes = max(1, tensor // in_node)
    calls = collectives * (2 if sequence_parallel else 1)
    one = hierarchical_time(message_bytes, not sequence_parallel, in_node, nodes, fabric)
    return CollectiveTime(calls * one.intra_s, calls * one.inter_s)


def context_parallel_time(
    step_bytes: float,
    steps: int,
    in_node: int,
    context: int,
    fabric: Fabric,
    attention_s: float,
) -> tuple[CollectiveTime, CollectiveTime]:
    """(all, exposed) of context parallelism's ring per micro-batch: `steps` point-to-point
    steps of `step_bytes`, every rank sending to the next at once, so a step takes its slowest
    hop: the node's link, or the network where the ring leaves the node. Each step's transfer
    runs beside the attention of the block before it (Megatron-Core overlaps them), so only
    what exceeds the attention's `attention_s` is exposed."""
    if context <= 1 or steps <= 0 or step_bytes <= 0:
        return CollectiveTime(0.0, 0.0), CollectiveTime(0.0, 0.0)
    intra = intra_collective_time_s(step_bytes, 1.0, fabric)
    inter = 0.0
    if context > in_node and fabric.nic_gb_s_per_gpu > 0:
        network = step_bytes / gb_s_to_bytes_s(fabric.nic_gb_s_per_gpu) + network_latency_s(2)
        inter = max(network - intra, 0.0)
    whole = CollectiveTime(steps * intra, steps * inter)
    if whole.total_s <= 0:
        return whole, whole
    exposed_share = max(whole.total_s - attention_s, 0.0) / whole.total_s
    return whole, _scaled(whole, exposed_share)


def expert_all_to_all_time(
    send_bytes: float, calls: int, in_node: int, expert: int, fabric: Fabric
) -> CollectiveTime:
    """Expert parallelism's token all-to-alls per micro-batch, on the critical path (the
    experts wait for their tokens): of each GPU's `send_bytes`, (in_node - 1)/expert go to
    GPUs of its node over the node's link and (expert - in_node)/expert over its share of
    the network, both at once."""
    if expert <= 1 or calls <= 0 or send_bytes <= 0:
        return CollectiveTime(0.0, 0.0)
    local = min(in_node, expert)
    intra = intra_collective_time_s(send_bytes, (local - 1) / expert, fabric)
    inter = 0.0
    if expert > local and fabric.nic_gb_s_per_gpu > 0:
        remote = send_bytes * (expert - local) / expert
        network = remote / gb_s_to_bytes_s(fabric.nic_gb_s_per_gpu)
        inter = max(network - intra, 0.0) + network_latency_s(expert // local)
    return CollectiveTime(calls * intra, calls * inter)


@dataclass(frozen=True)
class TrainingExchange:
    """A training micro-batch's communication on one GPU: the tensor-parallel activations
    and expert parallelism's token all-to-alls (on the critical path), context parallelism's
    ring (hidden behind the attention as far as it can be) and the data-parallel exchange
    (partly hidden), and how they fall on the node's link and on the network."""

    tensor_parallel_s: float
    data: Exchange
    offload_s: float = 0.0
    exposed_offload_s: float = 0.0
    tensor_parallel_network_s: float = 0.0  # a tensor group wider than a node: its network part
    context: CollectiveTime = CollectiveTime(0.0, 0.0)
    exposed_context: CollectiveTime = CollectiveTime(0.0, 0.0)
    expert: CollectiveTime = CollectiveTime(0.0, 0.0)

    @property
    def interconnect_s(self) -> float:
        """Inside the node: tensor-parallel collectives, the context ring, the experts'
        all-to-alls, the data-parallel exchange's intra-node part and CPU offload's copies over
        each GPU's PCIe link."""
        model_parallel = self.tensor_parallel_s + self.context.intra_s + self.expert.intra_s
        return model_parallel + self.data.intra_s + self.offload_s

    @property
    def exposed_interconnect_s(self) -> float:
        model_parallel = self.tensor_parallel_s + self.exposed_context.intra_s + self.expert.intra_s
        return model_parallel + self.data.exposed_intra_s + self.exposed_offload_s

    @property
    def model_parallel_network_s(self) -> float:
        """Network time of the groups that split the model or the sequence across nodes."""
        return self.tensor_parallel_network_s + self.context.inter_s + self.expert.inter_s

    @property
    def exposed_model_parallel_network_s(self) -> float:
        return self.tensor_parallel_network_s + self.exposed_context.inter_s + self.expert.inter_s


def offload_copy_s(
    shard_params: float,
    host_link_gb_s: float,
    backward_s: float,
    chunk_bytes: float,
    upload: bool = True,
) -> tuple[float, float]:
    """(time, exposed time) of ZeRO-Offload's copies per optimizer step: the 16-bit gradients
    of the GPU's shard go to host memory as the backward produces them, and the updated 16-bit
    parameters come back after the CPU's optimizer step, with nothing to hide behind: 2 + 2
    bytes per parameter (Ren et al. 2021, arXiv:2101.06840, section 4.1). Without `upload`
    the parameters stay in host memory and reach the GPU with each unit's gather
    (data_parallel_exchange's params_in_host_memory)."""
    if shard_params <= 0 or host_link_gb_s <= 0:
        return 0.0, 0.0
    rate = gb_s_to_bytes_s(host_link_gb_s)
    down = [b / rate for b in bucket_payloads(2.0 * shard_params, chunk_bytes)]
    up = 2.0 * shard_params / rate if upload else 0.0
    return sum(down) + up, exposed_after_producer_s(backward_s, down) + up


def gathered_param_bytes(
    workload: Workload, stage: int, trainable_params: float, sixteen_bit: bool
) -> float:
    """Bytes of parameters a data-parallel group all-gathers for one replica. ZeRO-3 gathers
    every weight as it is stored: a QLoRA base model's packed 4-bit weights, not 16-bit copies
    (FSDP shards and gathers the quantized storage: Answer.AI, "Enabling 70B Finetuning on
    Consumer GPUs", 2024-03-14), without their constants (memory.unsharded_quant_state_bytes),
    beside the trainable weights in the training precision. ZeRO-2 gathers only what the
    optimizer step updated: the trainable weights."""
    value_bytes = 2.0 if sixteen_bit else 4.0
    trained = trainable_params * value_bytes
    if stage < 3:
        return trained
    frozen = max(workload.params - trainable_params, 0.0)
    stored = memory.frozen_weight_bytes(workload, frozen, sixteen_bit)
    return stored - memory.unsharded_quant_state_bytes(workload, frozen) + trained


def training_exchange(
    workload: Workload,
    lay: Layout,
    fabric: Fabric,
    sixteen_bit: bool,
    bucket_bytes: float,
    forward_s: float,
    backward_s: float,
    host: HostStep | None = None,
    paged_bytes: float = 0.0,
    attention_s: float = 0.0,
) -> TrainingExchange:
    """Everything one GPU exchanges per micro-batch under the job's layout: Megatron's
    activation collectives over the tensor group, the data-parallel exchange of its
    1/(tensor x pipeline) of the model over the data-parallel group, in DDP buckets or, under
    ZeRO-3, per layer (FSDP wraps each transformer block), and under CPU offload the copies of
    its optimizer shard's gradients and parameters to and from host memory and the CPU's
    optimizer step between them (`host`: the node's RAM and GPUs; none given, no step timed),
    and a paged optimizer's `paged_bytes` of state brought to the GPU for its step and sent
    back (paged_copy_s); context parallelism's ring behind the micro-batch's `attention_s`
    and expert parallelism's token all-to-alls (model_parallel_exchange)."""
    w = workload
    value_bytes = 2.0 if sixteen_bit else 4.0
    tp = CollectiveTime(0.0, 0.0)
    if lay.tensor > 1 and w.seq_len and w.hidden_size and w.num_layers:
        message = parallelism.tensor_parallel_message_bytes(
            w.batch_size, w.seq_len // lay.context, w.hidden_size, value_bytes
        )  # a context rank's tensor group exchanges its part of the sequence
        per_layer = parallelism.tensor_parallel_collectives_per_layer(w.recompute_share)
        layers = w.num_layers / lay.pipeline
        tp = tensor_parallel_time(
            message, round(per_layer * layers), lay.tensor, lay.gpus_per_node, fabric,
            w.sequence_parallel,
        )  # fmt: skip
    tp_s = tp.intra_s
    context, exposed_context, expert = model_parallel_exchange(
        w, lay, fabric, value_bytes, attention_s
    )
    split = lay.weight_split
    trainable = w.params * w.trainable_fraction * parallelism.expert_split_share(w, lay.expert)
    stage = parallelism.zero_stage(w)
    data = Exchange(0.0, 0.0, 0.0, 0.0)
    if lay.gradient_ranks > 1:
        grad_bytes = parallelism.replica_gradient_bytes(w, lay, sixteen_bit)
        param_bytes = gathered_param_bytes(w, stage, trainable, sixteen_bit) / split
        traffic = parallelism.data_parallel_traffic(stage, grad_bytes, param_bytes)
        chunk = bucket_bytes
        if stage == 3 and w.num_layers:
            chunk = param_bytes / max(1.0, w.num_layers / lay.pipeline)
        data = data_parallel_exchange(
            traffic, lay.data_in_node, lay.data_nodes, fabric, chunk, forward_s, backward_s,
            w.gradient_accumulation, params_in_host_memory=w.cpu_offload and stage >= 3,
        )  # fmt: skip
    k = max(1, w.gradient_accumulation)  # the optimizer step runs once per k micro-batches
    paging = paged_copy_s(paged_bytes, fabric.host_link_gb_s) / k
    splits = {"context": context, "exposed_context": exposed_context, "expert": expert}
    if not w.cpu_offload:
        return TrainingExchange(tp_s, data, paging, paging, tp.inter_s, **splits)
    shard = trainable / split / (lay.gradient_ranks if stage >= 1 else 1)
    off, off_exposed = offload_copy_s(
        shard, fabric.host_link_gb_s, backward_s, bucket_bytes, upload=stage < 3
    )
    cpu_step = host.optimizer_step_s(workload, shard) if host is not None else 0.0
    extra = cpu_step + paging
    return TrainingExchange(
        tp_s, data, off / k + extra, off_exposed / k + extra, tp.inter_s, **splits
    )


def model_parallel_exchange(
    workload: Workload, lay: Layout, fabric: Fabric, value_bytes: float, attention_s: float
) -> tuple[CollectiveTime, CollectiveTime, CollectiveTime]:
    """(context ring, its exposed part, expert all-to-alls) of one micro-batch on one GPU,
    for a transformer whose structure is known (none otherwise)."""
    w, none = workload, CollectiveTime(0.0, 0.0)
    if not (w.seq_len and w.hidden_size and w.num_layers and w.num_heads):
        return none, none, none
    layers = w.num_layers / lay.pipeline
    context, exposed_context = none, none
    if lay.context > 1:
        step = parallelism.context_parallel_kv_bytes(
            w.batch_size, w.seq_len, w.kv_heads or w.num_heads, w.hidden_size // w.num_heads,
            lay.tensor, lay.context, value_bytes,
        )  # fmt: skip
        steps = parallelism.context_parallel_ring_steps_per_layer(lay.context, w.recompute_share)
        context, exposed_context = context_parallel_time(
            step, round(steps * layers), lay.context_in_node, lay.context, fabric, attention_s
        )
    expert = none
    if lay.expert > 1 and w.experts_per_token:
        send = parallelism.expert_all_to_all_bytes(
            w.batch_size, w.seq_len, w.hidden_size, w.experts_per_token, lay.context,
            lay.tensor, w.sequence_parallel, value_bytes,
        )  # fmt: skip
        calls = parallelism.expert_all_to_alls_per_layer(w.recompute_share)
        expert = expert_all_to_all_time(
            send, round(calls * layers), lay.data_in_node, lay.expert, fabric
        )
    return context, exposed_context, expert


def paged_copy_s(paged_bytes: float, host_link_gb_s: float) -> float:
    """Seconds a paged optimizer's spilled state takes to reach the GPU for its step and go
    back to make room for the next step's activations: twice its bytes over the GPU's host
    link, on the step's critical path (the step reads every page it updates)."""
    if paged_bytes <= 0 or host_link_gb_s <= 0:
        return 0.0
    return 2.0 * paged_bytes / gb_s_to_bytes_s(host_link_gb_s)


@dataclass(frozen=True)
class HostStep:
    """Where CPU offload's optimizer step runs: the node's RAM bandwidth (GB/s), shared by
    the `node_gpus` ranks that step their shards at the same time."""

    memory_gb_s: float
    node_gpus: int

    def optimizer_step_s(self, workload: Workload, shard_params: float) -> float:
        """Seconds per micro-batch of the CPU's optimizer step: a memory-bound pass over
        every rank's shard (weights, gradients and moments read, weights and moments written:
        compute.optimizer_bytes), after the backward with nothing beside it; torchtune: "The
        CPU optimizer step is often the bottleneck when optimizer CPU offload is used"
        (docs/source/tutorials/memory_optimizations.rst @bd2a0fc)."""
        if self.memory_gb_s <= 0 or shard_params <= 0:
            return 0.0
        moved = optimizer_bytes(workload, shard_params) * self.node_gpus
        return moved / gb_s_to_bytes_s(self.memory_gb_s)


# PyTorch DDP without `gradient_as_bucket_view` (its default: False) copies each gradient into
# its bucket before the all-reduce and the reduced bucket back into the gradient after it
# (torch.nn.parallel.DistributedDataParallel docs, gradient_as_bucket_view: with it
# "gradients will be views pointing to different offsets of allreduce communication buckets
# ... Moreover, it avoids the overhead of copying between gradients and allreduce
# communication buckets"): a read and a write each way.
DDP_BUCKET_COPY_MOVES = 4.0


def ddp_bucket_copy_bytes(workload: Workload, lay: Layout, sixteen_bit: bool) -> float:
    """GPU-memory bytes one GPU's DDP moves per optimizer step copying gradients into and out of
    its all-reduce buckets; none on one replica or under sharding (FSDP/ZeRO reduce-scatter
    in place)."""
    ddp = workload.parallel is Parallelism.DDP and not parallelism.is_sharded(workload)
    if lay.gradient_ranks <= 1 or not ddp:
        return 0.0
    return DDP_BUCKET_COPY_MOVES * parallelism.replica_gradient_bytes(workload, lay, sixteen_bit)


def host_parameter_server_time_s(
    grad_bytes: float, n: int, pcie_gb_s: float, host_memory_gb_s: float
) -> float:
    """DP.1 on the host: each GPU sends its gradients over PCIe and receives the parameters
    back (concurrently on their own links), and the CPU sums n gradients and updates the
    parameters through its memory (n + 2 passes over the bytes)."""
    if n < 1 or grad_bytes <= 0:
        return 0.0
    links = 2.0 * grad_bytes / gb_s_to_bytes_s(pcie_gb_s)
    host = (n + 2) * grad_bytes / gb_s_to_bytes_s(host_memory_gb_s)
    return links + host


# Step-to-step spread (coefficient of variation) of the two parts of one GPU's step: its own
# work (clocks, power), and the host's kernel launches (the launching thread preempted by the
# OS or by loader workers competing for cores, Python's garbage collector, the core's clock).
# Data-parallel ranks wait for the slowest at every all-reduce ("DDP is highly sensitive to
# stragglers -- the allreduce-based gradient synchronization has to wait for the slowest
# process at every iteration": github.com/pytorch/pytorch/issues/71303, 2022-01-14), and host
# noise is paid at each synchronisation, more of it the more processes wait (Hoefler,
# Schneider, Lumsdaine, "Characterizing the Influence of System Noise on Large-Scale
# Applications by Simulation", SC10, doi:10.1109/SC.2010.12). The GPU's 0.02 was chosen
# earlier from 0-0.025 on Lambda's 2-8 GPU rows; the launches' 0.2 is, with it, the value of
# 0-0.4 with the lowest mean scaling error on the same rows (1,241 with a 1-GPU row of the
# same job; the pair chosen with each architecture held out stays at 0.025-0.04 and
# 0.12-0.18). The rows show why launches matter: per-GPU scaling efficiency is 0.98-0.99 for
# ResNet-50, SSD and NCF (100-700 kernels a step), 0.90-0.95 for BERT, GNMT and WaveGlow
# (1,000-3,200) and 0.86-0.93 for Mask R-CNN (about 15,000), where a spread of the GPU's work
# alone said 0.97 for all.
STEP_TIME_CV = 0.02
LAUNCH_TIME_CV = 0.2
# The launches' spread is LAUNCH_TIME_CV of their time over a run of this many launches, whose
# delays share the host's state (one preemption, one garbage collection, one clock step), and
# runs further apart are independent: a step of K launches spreads by LAUNCH_TIME_CV x
# sqrt(run / K) of its launch time, the 1/sqrt(count) of a sum of independent delays. A step
# of tens of thousands of launches does not spread by a fifth: Lambda's logs of Tacotron2
# (77,000 kernels a step, host-bound; lambdal/deeplearning-benchmark@aa5addb6
# pytorch/results/*/PyTorch_tacotron2_FP*/*.txt, `train_iter_time` past each epoch's first
# iteration) show one GPU's iterations within a few percent of each other (1cc H100 SXM5 at
# batch 256: 1.56-1.59 s; RTX 3090 at 88: 1.90-2.06 s over 24 iterations), and its 2-8 GPU
# rows on the RTX A4500, A5500, A6000 and A100 40GB (batch 128) machines keep 0.92-1.05 of one
# GPU's rate per GPU (data/calibration/lambda_pytorch_train_v0_2022.csv; 8 RTX A4500 7.67x at
# batch 48), where 0.2 of the whole launch time said 0.72-0.82. The run length is chosen on
# Lambda's multi-GPU rows (bench/provenance.toml): the logs alone (a fully independent launch
# past ~800, 2% of Tacotron2's step) would also take away the lost scaling of GNMT and Mask
# R-CNN, which their batches' varying sentence lengths and object counts likely cause rather
# than their launches, and which the launch term stands for.
LAUNCH_NOISE_RUN_KERNELS = 10000.0


def launch_noise_cv(kernels: float) -> float:
    """Step-to-step spread of a step's launch time, as a share of it: LAUNCH_TIME_CV up to a
    run of LAUNCH_NOISE_RUN_KERNELS launches, falling as 1/sqrt(kernels) beyond (independent
    runs)."""
    if kernels <= LAUNCH_NOISE_RUN_KERNELS:
        return LAUNCH_TIME_CV
    return LAUNCH_TIME_CV * math.sqrt(LAUNCH_NOISE_RUN_KERNELS / kernels)


def straggler_wait_s(
    n_gpus: int,
    gpu_s: float,
    launch_s: float,
    micro_batches: int,
    kernels: float,
    cv: float = STEP_TIME_CV,
) -> float:
    """Per-micro-batch synchronisation cost: how long the average data-parallel GPU waits for
    the slowest at the step's all-reduce, shared over the step's micro-batches. One GPU's
    micro-batch of `gpu_s` seconds, `launch_s` of them spent launching its `kernels` kernels
    (compute.launch_s, compute.step_kernels), spreads by sqrt((cv x gpu_s)^2 + (launch cv x
    launch_s)^2), the launches' cv falling past a run of shared host state (launch_noise_cv);
    the expected maximum of n such GPUs lies about sd x sqrt(2 ln n) above their mean
    (extreme-value bound for n samples), so the wait grows with the GPU count and with the
    launches. With k `micro_batches` accumulated between two all-reduces the GPU's slow drift
    (clocks, heat) adds up over the step, while each micro-batch's launches meet their own
    host noise, so the launches' share of the wait falls as 1/sqrt(k)."""
    if n_gpus <= 1:
        return 0.0
    launches = launch_noise_cv(kernels) * max(launch_s, 0.0) / math.sqrt(max(1, micro_batches))
    return math.hypot(cv * gpu_s, launches) * math.sqrt(2.0 * math.log(n_gpus))
