"""How far the host runs ahead of the GPU when nothing makes it wait, and so what a timer on
the host's clock reads when it stops without synchronizing the GPU.

Kernel launches are asynchronous: the host queues them on a stream and returns while the GPU
runs the earlier ones. The queue is bounded, at about a thousand launches: a host launching a
190 us kernel in a loop "launched very fast [4-5 us each] when launching the first 1000
kernels", after which each launch took the kernel's own 190 us, waiting for the GPU to take
one from "the buffer size [of] about 1000 kernels" (NVIDIA developer forums, "CUDA stream are
blocked when luanch lots of kernels (>1000)", forums.developer.nvidia.com/t/68937, and Stack
Overflow question 53970187, both 2018-12; raising cudaLimitDevRuntimePendingLaunchCount,
a limit for device-side launches, did not change it).

So a loop of `steps` steps, each `gpu_step_s` on the GPU and `host_step_s` of the host's
launching, returns to the host after the longer of its own launching and the GPU's work less
what is still queued when the last launch goes in: the last PENDING_LAUNCHES launches.
"""

from __future__ import annotations

from dlrig.model.compute import HOST_DISPATCH_S, ComputeFactors, launch_s
from dlrig.model.layers import layer_work
from dlrig.model.rates import is_16bit
from dlrig.workloads.model import Workload

PENDING_LAUNCHES = 1000.0


def host_step_s(workload: Workload, factors: ComputeFactors) -> float:
    """Seconds the host spends launching one training step of `workload` at its batch
    (compute.launch_s: the step's kernels at the fitted host seconds per kernel)."""
    sixteen = is_16bit(workload.precision)
    work = layer_work(workload)
    return launch_s(work, workload, workload.batch_size, factors, sixteen_bit=sixteen)


def queued_steps(host_step_s: float) -> float:
    """Steps the launch queue holds: PENDING_LAUNCHES over the launches a step makes, counted
    as the host's seconds a step over HOST_DISPATCH_S, one eager launch's dispatch (the fitted
    per-kernel cost also carries autograd's work and kernels the layer counts leave out, so
    it is the host's time, not its launch count, that the count is taken from); a step
    launches at least once (a CUDA graph's replay is one launch)."""
    return PENDING_LAUNCHES / max(host_step_s / HOST_DISPATCH_S, 1.0)


def unsynchronized_loop_s(steps: int, gpu_step_s: float, host_step_s: float) -> float:
    """Seconds from the first launch of `steps` steps until the host has queued the last one,
    with nothing in them waiting for the GPU: the host's own launching, or, where the queue
    fills, the GPU's work less the queued steps still ahead of it (module docstring)."""
    ahead = min(float(steps), queued_steps(host_step_s))
    return max(steps * host_step_s, (steps - ahead) * gpu_step_s)
