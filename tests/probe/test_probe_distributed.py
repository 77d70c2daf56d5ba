"""`probe --distributed`: nccl-tests' busbw formula, slow ranks, and a real 2-process gloo run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlrig.probe.distributed import allreduce_point, bus_bandwidth_gb_s, slow_ranks


@pytest.mark.parametrize(("ranks", "factor"), [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_is_algbw_times_2_n_minus_1_over_n(ranks: int, factor: float) -> None:
    # nccl-tests doc/PERFORMANCE.md: all-reduce busbw = algbw * 2(n-1)/n.
    assert bus_bandwidth_gb_s(10.0, ranks) == pytest.approx(10.0 * factor)


def test_allreduce_point_from_bytes_and_time() -> None:
    point = allreduce_point(64 * 10**6, 0.01, 4)
    assert point.algbw_gb_s == pytest.approx(6.4)
    assert point.busbw_gb_s == pytest.approx(9.6)


def test_slow_rank_is_under_three_quarters_of_the_median() -> None:
    assert slow_ranks({0: 100.0, 1: 98.0, 2: 70.0, 3: 101.0}) == [2]
    assert slow_ranks({0: 100.0, 1: 76.0}) == []
    assert slow_ranks({0: 100.0, 1: None}) == []


def _rank(rank: int, store_path: str, queue: Any) -> None:
    import torch.distributed as dist

    from dlrig.probe.distributed import run_distributed

    store = dist.FileStore(store_path, 2)
    queue.put(
        (
            rank,
            run_distributed(
                quick=True, local_rank=rank, host_probe=False, store=store, rank=rank, world_size=2
            ),
        )
    )


@pytest.mark.slow
def test_two_gloo_processes_measure_allreduce(tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue = context.Queue()
    store = str(tmp_path / "store")
    procs = [context.Process(target=_rank, args=(r, store, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    assert results[1] is None  # only rank 0 reports
    report = results[0]
    assert report["backend"] == "gloo" and report["world_size"] == 2
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    sizes = [p["bytes"] for p in report["allreduce"]]
    assert sizes[0] == 1024 and sizes[-1] == 16 * 2**20
    for point in report["allreduce"]:
        assert point["time_s"] > 0
        assert point["busbw_gb_s"] == pytest.approx(point["algbw_gb_s"])  # n = 2: factor 1
    assert isinstance(report["slow_ranks"], list)
