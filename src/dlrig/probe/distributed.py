"""`dlrig probe --distributed` under torchrun (the collectives themselves are timed in
`dlrig.hardware.torch_distributed`).

Every rank measures its share (local rank 0 of each node probes the host: RAM, disks, loader;
every rank reads its own GPU and times a matmul on its device), then all ranks time all-reduce
over a range of message sizes, and rank 0 gathers everything into one cluster report.

All-reduce figures follow nccl-tests' definitions: `time_s` is the slowest rank's mean time per
operation, algbw = bytes / time_s, and busbw = algbw x 2(n-1)/n, the rate each link must carry
in a ring all-reduce, comparable across rank counts and with a link's datasheet rate. Backend:
NCCL when every rank has a CUDA device, else gloo (CPU tensors). GB = 10^9 bytes.

A slow rank is one whose compute figure is under DCGM's pass fraction (0.75) of the median
rank's: a throttling GPU or a busy node holds every all-reduce back.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from dlrig.probe.verdicts import PASS_FRACTION
from dlrig.units import bytes_s_to_gb_s

QUICK_SIZES = tuple(4**k for k in range(5, 13))  # 1 KiB .. 16 MiB
FULL_SIZES = tuple(4**k for k in range(5, 15))  # 1 KiB .. 256 MiB
METHOD = (
    "all-reduce (sum, float32) per size after 2 warm-ups; time_s = slowest rank's mean per "
    "operation; algbw = bytes / time_s; busbw = algbw x 2(n-1)/n (nccl-tests); GB = 10^9 bytes"
)


@dataclass(frozen=True)
class AllReducePoint:
    """One message size: bytes, seconds per operation, algorithm and bus bandwidth in GB/s."""

    bytes: int
    time_s: float
    algbw_gb_s: float
    busbw_gb_s: float


def bus_bandwidth_gb_s(algbw_gb_s: float, ranks: int) -> float:
    """nccl-tests' all-reduce bus bandwidth: algbw x 2(n-1)/n (a single rank moves nothing)."""
    return algbw_gb_s * 2.0 * (ranks - 1) / ranks if ranks > 1 else 0.0


def allreduce_point(n_bytes: int, time_s: float, ranks: int) -> AllReducePoint:
    """The nccl-tests figures of one timed size."""
    algbw = bytes_s_to_gb_s(n_bytes / time_s)
    return AllReducePoint(n_bytes, time_s, algbw, bus_bandwidth_gb_s(algbw, ranks))


def slow_ranks(figures: dict[int, float | None]) -> list[int]:
    """Ranks whose figure is under the pass fraction of the median figure."""
    known = {r: f for r, f in figures.items() if f is not None}
    if len(known) < 2:
        return []
    median = statistics.median(known.values())
    return sorted(r for r, f in known.items() if f < PASS_FRACTION * median)


def _rank_probe(quick: bool, local_rank: int, host_probe: bool) -> dict[str, Any]:
    import socket

    from dlrig.catalog import load_catalog
    from dlrig.hardware.nvml import open_nvml
    from dlrig.jsonable import to_jsonable
    from dlrig.probe.document import probe_build_document
    from dlrig.probe.judge import judge
    from dlrig.probe.report import probe_report
    from dlrig.probe.run import ProbeOptions, run_probe

    out: dict[str, Any] = {"host": socket.gethostname(), "local_rank": local_rank}
    nvml = open_nvml()
    try:
        if host_probe and local_rank == 0:
            catalog = load_catalog()
            result = run_probe(ProbeOptions(quick=quick, torch=False), nvml, catalog)
            document = probe_build_document(result, catalog)
            verdicts = judge(result, catalog, document["build"])
            out["probe"] = probe_report(result, verdicts, document).model_dump(mode="json")
        if local_rank < nvml.device_count():
            out["gpu"] = to_jsonable(nvml.read_gpu(local_rank))
    finally:
        nvml.close()
    return out


def run_distributed(
    quick: bool,
    local_rank: int = 0,
    host_probe: bool = True,
    store: Any = None,
    rank: int | None = None,
    world_size: int | None = None,
) -> dict[str, Any] | None:
    """Probe every rank and time all-reduce; rank 0 gets the cluster report, others None.

    Under torchrun the process group comes from torchrun's environment; tests pass a
    `store` (a torch.distributed FileStore or TCPStore) with rank and world size."""
    from dlrig.hardware.torch_distributed import process_group

    with process_group(local_rank, store, rank, world_size) as group:
        mine = _rank_probe(quick, local_rank, host_probe)
        mine["rank"] = group.rank
        group.barrier()  # compute is timed on all ranks together, after every host probe ended
        mine["compute_tflops"], mine["compute_method"] = group.matmul_tflops(quick)
        group.barrier()
        timings = group.time_allreduce(QUICK_SIZES if quick else FULL_SIZES)
        points = [allreduce_point(n_bytes, time_s, group.world_size) for n_bytes, time_s in timings]
        gathered = group.gather(mine)
        if group.rank != 0:
            return None
        ranks = sorted(gathered, key=lambda r: r["rank"])
        return {
            "backend": group.backend,
            "world_size": len(ranks),
            "ranks": ranks,
            "allreduce": [vars(p) for p in points],
            "slow_ranks": slow_ranks({r["rank"]: r["compute_tflops"] for r in ranks}),
            "method": METHOD,
        }
