"""torch.distributed (NCCL or gloo) for `dlrig probe --distributed`: the process group, the
timed collectives and a rank's matmul rate. Pure figures from these timings are computed in
`dlrig.probe.distributed`.

Backend: NCCL when this rank has a CUDA device, else gloo (CPU tensors). Under torchrun the group
comes from torchrun's environment; tests pass a store (FileStore or TCPStore) with rank and size.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dlrig.units import flops_to_tflops


def _iterations(n_bytes: int) -> int:
    # Small messages are latency-bound and fast: more of them for a stable mean.
    return max(3, min(50, (8 * 1024 * 1024) // max(n_bytes, 1)))


def _sync(device: Any) -> None:
    import torch

    if getattr(device, "type", "cpu") == "cuda":
        torch.cuda.synchronize(device)


class ProcessGroup:
    """This rank in an initialised process group, on its device."""

    def __init__(self, backend: str, device: Any) -> None:
        self.backend = backend
        self.device = device

    @property
    def rank(self) -> int:
        """This process's global rank."""
        import torch.distributed as dist

        return int(dist.get_rank())

    @property
    def world_size(self) -> int:
        """The number of ranks."""
        import torch.distributed as dist

        return int(dist.get_world_size())

    def barrier(self) -> None:
        """Wait for every rank."""
        import torch.distributed as dist

        dist.barrier()

    def gather(self, mine: Any) -> list[Any]:
        """Every rank's object, indexed by rank (on every rank)."""
        import torch.distributed as dist

        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, mine)
        return gathered

    def time_allreduce(self, sizes: tuple[int, ...]) -> list[tuple[int, float]]:
        """(bytes, seconds per operation) of all-reduce (sum of float32) at each size, after 2
        warm-ups; the slowest rank's mean time counts (nccl-tests' definition)."""
        import torch
        import torch.distributed as dist

        timings = []
        for n_bytes in sizes:
            tensor = torch.ones(n_bytes // 4, dtype=torch.float32, device=self.device)
            for _ in range(2):
                dist.all_reduce(tensor)
            iterations = _iterations(n_bytes)
            _sync(self.device)
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iterations):
                dist.all_reduce(tensor)
            _sync(self.device)
            mean_s = (time.perf_counter() - start) / iterations
            elapsed = torch.tensor([mean_s], dtype=torch.float64).to(self.device)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            timings.append((n_bytes, float(elapsed.item())))
        return timings

    def matmul_tflops(self, quick: bool) -> tuple[float, str]:
        """This rank's matmul rate in TFLOPS (fp16 on a GPU, fp32 on the CPU), with its method."""
        import torch

        on_gpu = getattr(self.device, "type", "cpu") == "cuda"
        n = (4096 if quick else 8192) if on_gpu else 512
        dtype = torch.float16 if on_gpu else torch.float32
        a = torch.randn(n, n, device=self.device, dtype=dtype)
        iterations = 10 if on_gpu else 5
        torch.mm(a, a)
        _sync(self.device)
        start = time.perf_counter()
        for _ in range(iterations):
            torch.mm(a, a)
        _sync(self.device)
        seconds = (time.perf_counter() - start) / iterations
        method = f"torch.mm {n}x{n} {str(dtype).removeprefix('torch.')}"
        return flops_to_tflops(2.0 * n**3 / seconds), method


@contextmanager
def process_group(
    local_rank: int, store: Any = None, rank: int | None = None, world_size: int | None = None
) -> Iterator[ProcessGroup]:
    """Join the process group on this rank's device (torchrun's environment, or `store` with
    `rank` and `world_size`); leave it on exit."""
    import torch
    import torch.distributed as dist

    use_cuda = torch.cuda.is_available() and local_rank < torch.cuda.device_count()
    backend = "nccl" if use_cuda else "gloo"
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if store is not None:
        dist.init_process_group(backend, store=store, rank=rank or 0, world_size=world_size or 1)
    else:
        dist.init_process_group(backend)
    try:
        yield ProcessGroup(backend, device)
    finally:
        dist.destroy_process_group()
