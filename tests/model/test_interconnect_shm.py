"""Host-staged (SHM) collectives on several GPUs: every hop through host memory writes its
bytes into DRAM and reads them back, so the flows share the host's memory bandwidth."""

from __future__ import annotations

from typing import Any

import pytest
from model_fixtures import CPU_16, make_build, make_workload

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.model import estimate
from dlrig.model.interconnect import (
    host_staged_busbw_gb_s,
    host_staged_flows,
    no_p2p_busbw_gb_s,
    shm_host_memory_busbw_gb_s,
)

PCIE_SERVER = "Supermicro SYS-421GE-TNRT"  # dual-socket, 5 of its 10 GPU positions a socket


def _catalog_gpu(name: str) -> GPU:
    return load_catalog().find(GPU, name)


def test_eight_flows_share_two_sapphire_rapids_sockets_memory() -> None:
    """github.com/NVIDIA/nccl/issues/1639 (2025-03-14): 8x RTX 5090 on 2x Xeon 8480+ with 16
    DDR5 DIMMs reach 28 GB/s all-reduce bus bandwidth, "8 flows at 28GB/s in both directions"
    whose limit is "the bandwidth your CPU and memory can deliver" (NCCL's maintainer). The
    16 channels' STREAM figure, 16 x 4800 MT/s x 8 B x 0.75 = 460.8 GB/s, over 8 flows through
    DRAM twice: 28.8 GB/s, within 3% of the 28 measured. On 4 GPUs the memory would allow
    57.6 GB/s and the same system measured 35: there the PCIe links bind, not the memory."""
    stream_gb_s = 16 * 4800 * 8 / 1000 * 0.75
    assert shm_host_memory_busbw_gb_s(8, stream_gb_s) == pytest.approx(28.0, rel=0.03)
    assert shm_host_memory_busbw_gb_s(4, stream_gb_s) == pytest.approx(57.6)
    assert shm_host_memory_busbw_gb_s(4, stream_gb_s) > 35.0


def test_without_a_host_figure_the_link_alone_bounds_the_hops() -> None:
    """Gen3 x16 at the 2x RTX 2080 Ti measurement's 4.0 GB/s of 15.75 (Anthony-Hoo AutoDL
    interconnection test, 2025-06-05) whatever the GPU count, where the host is unstated."""
    assert host_staged_busbw_gb_s(3, 16, 8, 0.0) == pytest.approx(4.0, rel=1e-3)
    assert host_staged_busbw_gb_s(3, 16, 8, 0.0) == no_p2p_busbw_gb_s(3, 16)


@pytest.mark.parametrize(
    ("gpu", "flows"),
    [
        ("GeForce RTX 3090", 8),  # no P2P on the card: every hop of the ring is staged
        ("NVIDIA RTX A6000", 2),  # P2P within a socket: the two socket crossings are
    ],
)
def test_which_hops_of_an_eight_gpu_ring_are_host_staged(gpu: str, flows: int) -> None:
    build = make_build(None, name=f"8x {gpu}", gpus=[{"model": gpu, "count": 8}],
                       platform=PCIE_SERVER)  # fmt: skip
    assert host_staged_flows(build, _catalog_gpu(gpu), 8) == flows


def _eight_4090s(channels: int, sockets: int) -> Any:
    cpu = {"spec": {**CPU_16, "memory_channels": channels}, "count": sockets}
    return make_build(None, name="8x RTX 4090", gpus=[{"model": "GeForce RTX 4090", "count": 8}],
                      cpu=cpu, memory={"size_gb": 256, "speed_mt_s": 4800})  # fmt: skip


def test_a_two_channel_host_bounds_eight_geforce_cards_all_reduce() -> None:
    """8 RTX 4090 (no P2P: every hop staged) on a host of 2 DDR5-4800 channels: 2 x 4800 x 8 B
    x 0.75 = 57.6 GB/s over 8 flows through DRAM twice leaves 3.6 GB/s a hop, under the Gen4
    link's 31.5 x 4.0/15.75 = 8.0 GB/s, so the BERT step loses more to its all-reduce and the
    estimate says why; 16 channels over two sockets (460.8 GB/s, 28.8 a hop) leave the link
    to bind and say nothing of the memory."""
    job = make_workload("bert-base-squad", dataset="synthetic", precision="fp16")
    narrow = estimate(_eight_4090s(2, 1), job)
    wide = estimate(_eight_4090s(8, 2), job)
    assert narrow.samples_per_s < wide.samples_per_s
    notes = [a for a in narrow.assumptions if "host-staged flows" in a]
    assert len(notes) == 1 and "8 host-staged flows" in notes[0], notes
    assert not [a for a in wide.assumptions if "host-staged flows" in a]
    assert "3.6 GB/s" in " ".join(narrow.assumptions)


def test_an_unstated_host_leaves_the_link_to_bound_the_hops() -> None:
    """MEM.1's assumed 60 GB/s is one desktop CPU's; a server's sockets give several times
    that, so a build that does not state its host is not bounded by it (the accuracy bench's
    Lambda servers state none)."""
    job = make_workload("bert-base-squad", dataset="synthetic", precision="fp16")
    build = make_build(None, name="8x RTX 3090", gpus=[{"model": "GeForce RTX 3090", "count": 8}],
                       platform=PCIE_SERVER, cpu=None, memory=None)  # fmt: skip
    assert not [a for a in estimate(build, job).assumptions if "host-staged flows" in a]
