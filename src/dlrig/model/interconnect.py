"""Gradient exchange: ring all-reduce inside a node (DP.1/DP.2), the host parameter server of
DP.1, and the network between nodes."""

from __future__ import annotations

import math

from dlrig.units import gb_s_to_bytes_s


def ring_allreduce_bus_factor(n: int) -> float:
    """Bytes each GPU sends per byte of gradient in a ring all-reduce: 2(n-1)/n."""
    return 2.0 * (n - 1) / n if n > 1 else 0.0


def allreduce_time_s(
    n_bytes: float, n: int, busbw_gb_s: float, latency_s: float, bucket_bytes: float
) -> float:
    """Ring all-reduce of n_bytes among n GPUs: 2(n-1)/n x bytes over the achievable bus
    bandwidth, plus a fixed latency per bucket (PyTorch DDP sends gradients in buckets)."""
    if n <= 1 or n_bytes <= 0:
        return 0.0
    buckets = max(1, math.ceil(n_bytes / bucket_bytes))
    return (
        ring_allreduce_bus_factor(n) * n_bytes / gb_s_to_bytes_s(busbw_gb_s) + buckets * latency_s
    )


def fsdp_traffic_bytes(param_bytes: float, grad_bytes: float) -> float:
    """Bytes FSDP/ZeRO-3 exchanges per step and GPU-equivalent: parameters all-gathered for
    the forward and again for the backward, gradients reduce-scattered (each a half ring)."""
    return param_bytes + param_bytes + grad_bytes


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


def exposed_after_backward_s(comm_s: float, backward_s: float, bucket_s: float) -> float:
    """Communication left after overlapping with the backward pass: buckets go out while
    later layers still compute, so only what outlasts the backward, and the last bucket,
    shows."""
    if comm_s <= 0:
        return 0.0
    return max(comm_s - backward_s, 0.0) + min(bucket_s, comm_s)


def hierarchical_network_time_s(
    n_bytes: float, nodes: int, node_network_gb_s: float, latency_s: float
) -> float:
    """Between nodes: after a reduce inside each node, the nodes run a ring all-reduce of the
    gradient over their network adapters: 2(N-1)/N x bytes per node."""
    if nodes <= 1 or n_bytes <= 0:
        return 0.0
    return (
        ring_allreduce_bus_factor(nodes) * n_bytes / gb_s_to_bytes_s(node_network_gb_s) + latency_s
    )


# Step-to-step spread of one GPU's compute time (coefficient of variation): clocks, power and
# kernel scheduling jitter. Chosen from 0, 0.01, 0.015, 0.02, 0.025 as the value with the
# lowest scaling error on the 2-8 GPU rows of Lambda's 2022 and 2024 runs (in-sample, not yet
# leave-one-architecture-out): 8-GPU rows scale 7.4-7.9x measured, a 2-7% loss that the
# gradient exchange alone does not explain.
STEP_TIME_CV = 0.02


def straggler_factor(n_gpus: int, cv: float = STEP_TIME_CV) -> float:
    """Per-step synchronisation cost: data-parallel GPUs wait at every all-reduce for the
    slowest of them, and the expected maximum of n step times with spread cv lies about
    cv x sqrt(2 ln n) above their mean (extreme-value bound for n samples), so the cost grows
    with the GPU count: 1.024x at 2 GPUs, 1.033x at 4, 1.041x at 8, 1.071x at 512."""
    if n_gpus <= 1:
        return 1.0
    return 1.0 + cv * math.sqrt(2.0 * math.log(n_gpus))
