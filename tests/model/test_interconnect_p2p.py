"""PCIe peer-to-peer: GeForce cards from Turing on have none, so NCCL stages their collectives
through host memory; workstation and datacenter cards keep it; an NVLink bridge joins a pair."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from model_fixtures import make_build, make_workload

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU, Platform
from dlrig.enums import Interconnect
from dlrig.machine import load_build, resolve_build
from dlrig.machine.model import Build
from dlrig.model import estimate
from dlrig.model.interconnect import LinkClass, intra_node_link

PCIE_SERVER = "Supermicro SYS-421GE-TNRT"  # the PCIe server the accuracy bench seats 4-8 cards in


def _catalog_gpu(name: str) -> GPU:
    return load_catalog().find(GPU, name)


def _server(gpu: str, count: int) -> dict[str, Any]:
    return {"name": f"{count}x {gpu}", "gpus": [{"model": gpu, "count": count}],
            "platform": PCIE_SERVER}  # fmt: skip


@pytest.mark.parametrize(
    ("gpu", "link"),
    [
        # "the 2080ti has never supported p2p" (github.com/NVIDIA/nccl-tests/issues/117,
        # 2022-10-26, with an 8-card p2pBandwidthLatencyTest matrix of CANNOT Access Peer).
        ("GeForce RTX 2080 Ti", LinkClass.PCIE_NO_P2P),
        # "3090 does not support peer access" (github.com/efeslab/Nanoflow/issues/22, 2024-11-01).
        ("GeForce RTX 3090", LinkClass.PCIE_NO_P2P),
        ("GeForce RTX 4090", LinkClass.PCIE_NO_P2P),  # tinygrad's P2P patch exists for it
        ("GeForce GTX 1080 Ti", LinkClass.PCIE),  # Pascal GeForce: P2P on bare metal
        ("NVIDIA RTX A6000", LinkClass.PCIE),  # 26.34 GB/s P2P reads (nvbandwidth issue #50)
        ("Quadro RTX 8000", LinkClass.PCIE),
    ],
)
def test_which_pcie_cards_reach_their_peers(gpu: str, link: LinkClass) -> None:
    """Four cards: one CPU socket's share of the 10-position server (below)."""
    build = make_build(None, **_server(gpu, 4))
    assert intra_node_link(build, _catalog_gpu(gpu), 4) is link


@pytest.mark.parametrize(("count", "link"), [(5, LinkClass.PCIE), (8, LinkClass.PCIE_NO_P2P)])
def test_a_ring_across_two_cpu_sockets_passes_through_host_memory(
    count: int, link: LinkClass
) -> None:
    """The dual-socket server wires 5 of its 10 GPU positions to each CPU; NCCL uses P2P only
    within a NUMA node by default (NCCL_P2P_LEVEL, PHB vs SYS: docs.nvidia.com/deeplearning/
    nccl, env.html) and sends the hops between sockets through host memory. 8 RTX A6000 span
    both sockets, 5 do not; the estimate says why."""
    build = make_build(None, **_server("NVIDIA RTX A6000", count))
    assert intra_node_link(build, _catalog_gpu("NVIDIA RTX A6000"), count) is link
    job = make_workload("bert-base-squad", dataset="synthetic", precision="fp16")
    notes = [a for a in estimate(build, job).assumptions if "CPU sockets" in a]
    assert len(notes) == (link is LinkClass.PCIE_NO_P2P), notes


def test_a_bridged_pair_of_geforce_cards_talks_over_nvlink() -> None:
    """The bridge is the one peer path a GeForce RTX 2080 Ti or 3090 has (tensorflow issue
    #24677, 2019-01-07: "2080 Ti does not support p2p access without NVLink bridge")."""
    gpu = _catalog_gpu("GeForce RTX 3090").model_copy(
        update={"interconnect": Interconnect.NVLINK_BRIDGE}
    )
    build = make_build(None, gpus=[{"model": "GeForce RTX 3090", "count": 2}])
    assert intra_node_link(build, gpu, 2) is LinkClass.NVLINK
    assert intra_node_link(build, gpu, 4) is LinkClass.PCIE_NO_P2P  # the bridge joins pairs only


def test_rtx_2080_tis_lose_bert_throughput_to_host_staged_all_reduce() -> None:
    """Lambda's 2022 PyTorch run (github.com/lambdal/deeplearning-benchmark@ca7c1f2c,
    pytorch-train-throughput-fp16.csv; data/calibration/lambda_pytorch_train_v0_2022.csv):
    BERT-base SQuAD fp16 at 20 sequences per GPU on RTX 2080 Ti, 88 seq/s on 1 GPU, 141 on 2
    (1.60x) and 250 on 4 (2.84x). apex O2's 220 MB of 16-bit gradients (`gradient_precision`),
    staged through host memory at the measured P2P-less 4.0 GB/s and not beside the backward
    (interconnect.every_hop_host_staged): 1.55x and 2.80x. On 8 (370 and 398 seq/s, 4.2-4.5x)
    dlrig says 5.3x: that ring spans the server's two sockets, a gap the accuracy bench keeps
    in view (bench/results/accuracy.md). The job as that run's code ran it (NGC 20.01: DLE's
    BERT copying Q, K, V head-major, PyTorch 1.4 adding each bias in a kernel of its own)."""
    job = dataclasses.replace(
        make_workload(
            "bert-base-squad", dataset="synthetic", precision="fp16", batch_size=20,
            bias_epilogue=False,
        ),
        strided_heads=False,
    )  # fmt: skip
    one = estimate(make_build(None, gpus=[{"model": "GeForce RTX 2080 Ti", "count": 1}]), job)
    for count, measured in ((2, 141 / 88), (4, 250 / 88)):
        many = estimate(make_build(None, **_server("GeForce RTX 2080 Ti", count)), job)
        scaling = many.samples_per_s / one.samples_per_s
        assert abs(scaling / measured - 1) < 0.05, (count, scaling)


def test_a_geforce_pairs_all_reduce_adds_to_the_step_where_a_workstation_pairs_hides() -> None:
    """Lambda's 2024 run (lambda_pytorch_train_v1_2024.csv): BERT-large SQuAD TF32 at 16 a GPU
    on 2 RTX 4090 keeps 0.63 of one card's rate a GPU (55 seq/s on 2, 44 on 1): the 1.36 GB
    fp32 all-reduce adds to the step. An RTX A6000 pair (P2P) hides it behind the backward."""
    job = make_workload("bert-large-squad", dataset="synthetic", precision="tf32", batch_size=16)

    def per_gpu(gpu: str) -> float:
        one = estimate(make_build(None, gpus=[{"model": gpu, "count": 1}]), job)
        two = estimate(make_build(None, gpus=[{"model": gpu, "count": 2}]), job)
        return two.samples_per_s / one.samples_per_s / 2

    assert abs(per_gpu("GeForce RTX 4090") - 55 / 44 / 2) < 0.08
    assert per_gpu("NVIDIA RTX A6000") > 0.9


def test_the_estimate_says_when_collectives_pass_through_host_memory() -> None:
    """A training estimate on several GeForce RTX 3090 names the missing peer-to-peer and the
    rate it assumes (4.0 / 15.75 of PCIe 4.0 x16's 31.5 GB/s = 8.0 GB/s); one card, or
    workstation cards with P2P, carry no such line."""
    job = make_workload("resnet50", dataset="synthetic", precision="fp16")

    def notes(gpu: str, count: int) -> list[str]:
        est = estimate(make_build(None, gpus=[{"model": gpu, "count": count}]), job)
        return [a for a in est.assumptions if "peer-to-peer" in a]

    [line] = notes("GeForce RTX 3090", 2)
    assert "8.0 GB/s" in line
    assert notes("GeForce RTX 3090", 1) == []
    assert notes("NVIDIA RTX A6000", 2) == []


def test_fsdp_gathers_qlora_weights_in_their_packed_4_bits() -> None:
    """Answer.AI, github.com/AnswerDotAI/fsdp_qlora benchmarks_03_2024.md (February-March
    2024): Llama-2 7B at batch 1 under FSDP on two RTX 3090 without NVLink, 1,024 samples:
    LoRA (16-bit base weights gathered) 2,597 s at 512 tokens and 3,090 s at 2,048; QLoRA
    (the packed 4-bit base weights gathered) 1,082 s and 1,564 s, so QLoRA is 2.40x and 1.98x
    faster there: "copying parameters from one GPU to another will be slower (since there is
    more data to transfer)". The model, on Llama 3 8B (its 16-bit embeddings gathered either
    way), must find QLoRA faster by at least a quarter at both lengths and by more at the
    shorter one; gathering 16-bit copies for both, it said 1.0x."""
    build = make_build(None, gpus=[{"model": "GeForce RTX 3090", "count": 2}])

    def speedup(tokens: int) -> float:
        rates = [
            estimate(build, make_workload(name, batch_size=1, seq_len=tokens, parallel="fsdp",
                                          activation_checkpointing=True)).samples_per_s
            for name in ("llama-3-8b-qlora", "llama-3-8b-lora")
        ]  # fmt: skip
        return rates[0] / rates[1]

    short, long = speedup(512), speedup(2048)
    assert short > long >= 1.25, (short, long)


@pytest.mark.xfail(strict=True, reason="1.78x against 2.40x measured (-26%)")
def test_fsdp_qlora_speedup_at_512_tokens_within_a_quarter_of_answer_ais() -> None:
    """The same runs: 2.40x at 512 tokens. Since the kernels' GPU-side cost and the host's
    overlapped launches were refitted (compute.overlapped_s), QLoRA's 2,016 more
    dequantisation kernels a step cost it more, and the model says 1.78x: just outside."""
    build = make_build(None, gpus=[{"model": "GeForce RTX 3090", "count": 2}])
    rates = [
        estimate(build, make_workload(name, batch_size=1, seq_len=512, parallel="fsdp",
                                      activation_checkpointing=True)).samples_per_s
        for name in ("llama-3-8b-qlora", "llama-3-8b-lora")
    ]  # fmt: skip
    assert rates[0] / rates[1] == pytest.approx(2597 / 1082, rel=0.25)


def _cloud_vm(gpu: str, count: int) -> dict[str, Any]:
    """The PCIe server as a cloud instance's virtual machine: its GPUs passed through, with no
    peer-to-peer between them (Platform.peer_to_peer)."""
    server = load_catalog().find(Platform, PCIE_SERVER)
    spec = server.model_dump(exclude={"sources", "price_usd", "price_date", "aliases"})
    spec.update(name="cloud VM", peer_to_peer=False)
    return {"name": f"{count}x {gpu} VM", "gpus": [{"model": gpu, "count": count}],
            "platform": {"spec": spec}}  # fmt: skip


def test_gpus_passed_through_to_a_virtual_machine_have_no_peer_to_peer() -> None:
    """ "Within a virtual machine, information about the host PCIe bridge is lost" and "the
    NVIDIA driver does not utilize PCIe P2P unless it detects hardware support"
    (cloud-hypervisor/cloud-hypervisor PR #6235). Quadro RTX 6000s keep P2P on bare metal and
    lose it in the VM; the estimate names the platform as the reason."""
    gpu = _catalog_gpu("Quadro RTX 6000")
    assert intra_node_link(make_build(None, **_server(gpu.name, 2)), gpu, 2) is LinkClass.PCIE
    vm = make_build(None, **_cloud_vm(gpu.name, 2))
    assert intra_node_link(vm, gpu, 2) is LinkClass.PCIE_NO_P2P
    job = make_workload("gnmt", dataset="synthetic", precision="fp16")
    [line] = [a for a in estimate(vm, job).assumptions if "peer-to-peer" in a]
    assert "cloud VM gives its GPUs no PCIe peer-to-peer" in line


def test_lambdas_cloud_quadros_lose_gnmt_throughput_to_the_vm() -> None:
    """Lambda's 2022 run (lambda_pytorch_train_v0_2022.csv): GNMT in full precision at 288 a
    GPU on Quadro RTX 6000, 21,014 tok/s on one card and 61,747 on a LambdaCloud VM of 4 (its
    logs name QEMU's "AMD EPYC Processor (with IBPB)" and no motherboard,
    lambdal/deeplearning-benchmark@aa5addb6 pytorch/results/LambdaCloud_4xQuadroRTX6000/
    sys_pytorch.txt): 0.73 of one card's rate a GPU. With P2P the 640 MB of fp32 gradients hide
    behind the backward (above 0.9); staged through host memory and added to the step, the
    model says 0.81, within 0.1 of the 0.73."""
    job = make_workload("gnmt", dataset="synthetic", precision="fp32", batch_size=288)
    gpu = "Quadro RTX 6000"
    one = estimate(make_build(None, gpus=[{"model": gpu, "count": 1}]), job).samples_per_s

    def per_gpu(build_doc: dict[str, Any]) -> float:
        return estimate(make_build(None, **build_doc), job).samples_per_s / one / 4

    assert per_gpu(_server(gpu, 4)) > 0.9
    assert abs(per_gpu(_cloud_vm(gpu, 4)) - 61_747 / 21_014 / 4) < 0.1


def test_a_probe_without_peer_access_stages_the_collectives_through_the_host() -> None:
    """RTX A6000s have P2P on bare metal; a probe that found no pair with peer access
    (`measured.peer_to_peer: false`, as on a cloud VM) makes their ring host-staged, and the
    estimate names the probe as the reason."""
    gpu = _catalog_gpu("NVIDIA RTX A6000")
    probed = make_build(
        None, **_server(gpu.name, 2), measured={"taken": "2026-12-04", "peer_to_peer": False}
    )
    assert intra_node_link(probed, gpu, 2) is LinkClass.PCIE_NO_P2P
    job = make_workload("bert-base-squad", dataset="synthetic", precision="fp16")
    [line] = [a for a in estimate(probed, job).assumptions if "peer-to-peer" in a]
    assert "the probe of 2026-12-04 found no peer-to-peer between the GPUs" in line


def test_the_cloud_vm_example_adds_its_all_reduce_to_the_step() -> None:
    """examples/builds/4x-a6000-cloud-vm.yaml: the same PCIe server's 4 RTX A6000, once as a
    VM whose probe found no peer access. Bare metal hides BERT-large's all-reduce behind the
    backward; the VM stages it through host memory and adds all of it to the step."""
    vm = load_build(Path(__file__).parents[2] / "examples" / "builds" / "4x-a6000-cloud-vm.yaml")
    bare = make_build(None, **_server("NVIDIA RTX A6000", 4))
    job = make_workload("bert-large-squad", dataset="synthetic", precision="fp16")
    on_vm, on_metal = estimate(vm, job), estimate(bare, job)
    assert on_vm.parallel is not None and on_metal.parallel is not None
    exposed = on_vm.parallel.communication_exposed_s
    assert exposed == pytest.approx(on_vm.parallel.communication_s) and exposed > 0.05
    assert on_metal.parallel.communication_exposed_s < 0.05 * exposed  # the last bucket only
    assert on_vm.samples_per_s < 0.9 * on_metal.samples_per_s


def test_an_nvswitch_server_without_peer_to_peer_stages_through_the_host() -> None:
    """NCCL's NVLink traffic rides its P2P transport (NCCL_P2P_DISABLE "disables the peer to
    peer (P2P) transport, which uses CUDA direct access between GPUs, using NVLink or PCI"), so
    a DGX A100 whose GPUs reach no peer loses NVLink too: its ring runs through host memory."""
    gpu = _catalog_gpu("A100 SXM4 80GB")
    doc = {"name": "8x A100", "gpus": [{"model": gpu.name, "count": 8}],
           "platform": "NVIDIA DGX A100 (320GB)"}  # fmt: skip
    assert intra_node_link(make_build(None, **doc), gpu, 8) is LinkClass.NVLINK
    no_p2p = make_build(None, **doc, measured={"taken": "2022-11-19", "peer_to_peer": False})
    assert intra_node_link(no_p2p, gpu, 8) is LinkClass.PCIE_NO_P2P


def _board(gpu: str, count: int, board: str, cpu: str) -> Build:
    return resolve_build(
        {"name": f"{count}x {gpu} on {board}", "gpus": [{"model": gpu, "count": count}],
         "motherboard": board, "cpu": cpu, "memory": {"size_gb": 128}},
        "test",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("count", "board", "cpu", "link"),
    [
        # An Intel host: NCCL has kept P2P to GPUs under a common PCIe switch since 2.9.6.
        (2, "ASUS ProArt Z790-CREATOR WIFI", "Intel Core i7-14700K", LinkClass.PCIE_NO_P2P),
        (4, "ASUS Pro WS W790E-SAGE SE", None, LinkClass.PCIE_NO_P2P),  # LGA4677: Intel
        # "Allow P2P between pairs of GPU devices on AMD systems": two GPUs, not four.
        (2, "ASUS ProArt X670E-CREATOR WIFI", "AMD Ryzen 9 7950X", LinkClass.PCIE),
        (4, "ASUS Pro WS WRX90E-SAGE SE", None, LinkClass.PCIE_NO_P2P),
    ],
)
def test_gpus_on_a_board_meet_at_the_host_bridge_where_nccl_stops_peer_to_peer(
    count: int, board: str, cpu: str | None, link: LinkClass
) -> None:
    """NCCL 2.23.4 on (src/graph/paths.cc, ncclTopoCheckP2p: "By default don't use P2P across
    CPU Host Bridges and further apart", PATH_PXB, except an AMD host's pair of GPUs): a board
    wires its x16 slots to CPU root ports with no PCIe switch between them, so its RTX A6000s
    talk through host memory, and the estimate says why."""
    gpu = _catalog_gpu("NVIDIA RTX A6000")
    doc: dict[str, Any] = {"gpus": [{"model": gpu.name, "count": count}], "motherboard": board}
    if cpu:
        doc["cpu"] = cpu
    build = resolve_build({"name": "board build", **doc}, "test")
    assert intra_node_link(build, gpu, count) is link
    job = make_workload("bert-base-squad", dataset="synthetic", precision="fp16")
    notes = [a for a in estimate(build, job).assumptions if "host bridge" in a]
    assert len(notes) == (link is LinkClass.PCIE_NO_P2P), notes


def test_fsdp_gathers_staged_through_the_host_add_to_the_step() -> None:
    """70B QLoRA under FSDP with its parameters in host RAM on two RTX 4000 Ada: on an AMD
    board the pair keeps P2P and the gathers hide behind the layers' compute; on an Intel board
    NCCL stages them through host memory, whose kernels do not run beside the compute
    (interconnect.every_hop_host_staged), so the whole exchange adds to the step."""
    job = make_workload("llama-3-70b-qlora")
    gpu = "NVIDIA RTX 4000 Ada Generation"
    amd = estimate(_board(gpu, 2, "ASUS ProArt X670E-CREATOR WIFI", "AMD Ryzen 9 7950X"), job)
    intel = estimate(_board(gpu, 2, "ASUS ProArt Z790-CREATOR WIFI", "Intel Core i7-14700K"), job)
    assert amd.parallel is not None and intel.parallel is not None
    assert amd.parallel.communication_exposed_s < 0.1 * amd.parallel.communication_s
    assert intel.parallel.communication_exposed_s == pytest.approx(
        intel.parallel.communication_s, rel=0.01
    )
    assert intel.step_time_s > amd.step_time_s + 0.9 * intel.parallel.communication_s


def _rented(gpu: str, count: int, **extra: Any) -> Build:
    return resolve_build({"name": "rented", "gpus": [{"model": gpu, "count": count}], **extra},
                         "test")  # fmt: skip


def test_an_unstated_peer_to_peer_is_said_with_what_it_decides() -> None:
    """Four RTX A5000 with no board, platform or probe: dlrig takes them to reach each other
    peer-to-peer, which hides 70B QLoRA's FSDP gathers; the machine may be a cloud VM without
    it (Answer.AI's rented A5000s ran this job "bandwidth-bound", benchmarks_03_2024.md), so the
    estimate says what the other case adds: the step the same build gives under a probe's
    peer_to_peer false, less this one."""
    job = make_workload("llama-3-70b-qlora", parallel={"strategy": "fsdp"})
    p2p = estimate(_rented("NVIDIA RTX A5000", 4), job)
    staged = estimate(
        _rented("NVIDIA RTX A5000", 4, measured={"taken": "2024-03-01", "peer_to_peer": False}),
        job,
    )
    notes = [a for a in p2p.assumptions if "taken to reach each other peer-to-peer" in a]
    assert len(notes) == 1, p2p.assumptions
    added_ms = float(notes[0].split("the exchange adds ")[1].split(" ms")[0].replace(",", ""))
    assert added_ms == pytest.approx((staged.step_time_s - p2p.step_time_s) * 1e3, rel=0.02)
    assert added_ms > 0.3 * p2p.step_time_s * 1e3  # the gathers of 70B decide a third or more
    assert not [a for a in staged.assumptions if "taken to reach each other" in a]


def test_no_peer_to_peer_note_where_the_build_settles_it() -> None:
    """A motherboard says where the slots meet (an AMD host keeps P2P for 2 GPUs), GeForce
    cards have none to assume, and an NVLink server has its own link: none of them gets it."""
    job = make_workload("llama-3-70b-qlora", parallel={"strategy": "fsdp"})
    amd = _board("NVIDIA RTX 4000 Ada Generation", 2, "ASUS ProArt X670E-CREATOR WIFI",
                 "AMD Ryzen 9 7950X")  # fmt: skip
    for build in (amd, _rented("GeForce RTX 4090", 2), _rented("A100 SXM4 40GB", 4)):
        notes = [a for a in estimate(build, job).assumptions if "taken to reach each other" in a]
        assert not notes, build.name
