"""Parallel layouts through estimate(): scaling across nodes against a published measurement,
tensor/pipeline/sequence parallelism, gradient accumulation, checkpoint recompute, and the
layout checks through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from model_fixtures import CPU_16, make_build, make_workload
from test_interconnect_sync import H100_SXM

from dlrig.enums import Bottleneck
from dlrig.model import compute, estimate
from dlrig.model.calibration import default_calibration
from dlrig.model.pcie import pcie_effective_gb_s

# An A100 SXM4 40GB as NVIDIA's datasheet gives it (40 GB HBM2, 1555 GB/s, 19.5 FP32 / 156
# TF32 / 312 FP16-BF16 dense tensor TFLOPS, 400 W, 600 GB/s NVLink3 through NVSwitch).
A100_SXM_40 = {
    "name": "A100 SXM4 40GB (test)", "memory_gb": 40, "memory_bandwidth_gb_s": 1555,
    "fp32_tflops": 19.5, "tf32_tensor_tflops": 156, "fp16_tensor_tflops": 312,
    "bf16_tensor_tflops": 312, "tdp_w": 400, "pcie_gen": 4, "pcie_lanes": 16,
    "cooler": "passive", "form": "sxm", "nvlink_gb_s": 600, "interconnect": "nvswitch",
    "segment": "datacenter", "architecture": "ampere",
}  # fmt: skip
ROCE_1600 = {"kind": "roce", "gbit_s": 200, "adapters_per_node": 8}
IB_3200 = {"kind": "infiniband", "gbit_s": 400, "adapters_per_node": 8}


def _per_gpu_tokens(gpu: dict[str, Any], nodes: int, network: dict[str, Any], **job: Any) -> float:
    est = estimate(make_build(gpu, count=8, nodes=nodes, network=network),
                   make_workload("llama-3-8b", **job))  # fmt: skip
    assert est.tokens_per_s is not None
    return est.tokens_per_s / est.gpus


def test_7b_fsdp_per_gpu_throughput_from_8_to_128_gpus_matches_mosaicml() -> None:
    """MosaicML llm-foundry scripts/train/benchmarking/README.md (@061f2c7, "A100 40GB with
    1600 Gbps node-node interconnect (RoCE)"): MPT-7B, seq 2048, FSDP FULL_SHARD, activation
    checkpointing, bf16: 3679 tokens/s/GPU on 8 GPUs (micro-batch 12, 4 accumulated) and 3623
    on 128 (micro-batch 18): per-GPU throughput 0.985 of 8 GPUs'. The model's ratio within 3
    points, and below 1 (the network's cost grows with the node count)."""
    eight = _per_gpu_tokens(A100_SXM_40, 1, ROCE_1600, batch_size=12, gradient_accumulation=4,
                            activation_checkpointing=True)  # fmt: skip
    many = _per_gpu_tokens(A100_SXM_40, 16, ROCE_1600, batch_size=18,
                           activation_checkpointing=True)  # fmt: skip
    assert many / eight == pytest.approx(3623 / 3679, abs=0.03)


def test_8b_per_gpu_throughput_from_8_to_128_h100_matches_nvidia_dgx_cloud() -> None:
    """NVIDIA DGX Cloud Benchmarking, github.com/NVIDIA/dgxc-benchmarking llama3.1/README_8b.md
    (@143b90dd, NeMo 24.09): Llama 3.1 8B BF16 pre-training, TP 1, PP 1, CP 2, micro-batch 1 of
    8192 tokens, 32 accumulated, weak-scaled (128 sequences a step per node): 12.91 s a step on
    8 H100 and 13.10 s on 128, per-GPU throughput 0.9855 of 8 GPUs'. NeMo's distributed
    optimizer is ZeRO-1; context parallelism of 2 gives each GPU half of every sequence (4096
    tokens) and keeps its key/value exchange inside the node, the same on 1 node as on 16, so
    it cancels in the ratio. H100 nodes with 8x 400 Gb/s InfiniBand (DGX H100: eight ConnectX-7
    ports). The model's ratio within 1.5 points (0.9728: it keeps each GPU's clock drift
    across the 32 accumulated micro-batches, so the wait for the slowest of 128 outweighs that
    of 8 by ~2%; within 1 point only while the optimizer step was charged to every micro-batch,
    which ZeRO-1 made 16x dearer per GPU on 8 GPUs than on 128)."""
    job = {"seq_len": 4096, "batch_size": 1, "gradient_accumulation": 32, "precision": "bf16",
           "parallel": {"zero_stage": 1}}  # fmt: skip
    eight = _per_gpu_tokens(H100_SXM, 1, IB_3200, **job)
    many = _per_gpu_tokens(H100_SXM, 16, IB_3200, **job)
    assert many / eight == pytest.approx(12.91 / 13.10, abs=0.015)


def test_per_gpu_throughput_falls_with_the_node_count() -> None:
    """The same job on 1, 2, 8 and 64 nodes of 8 H100 with 8x 400 Gb/s InfiniBand: tokens/s
    per GPU falls at each step (inter-node volume 2(N-1)/N, tree latency log2 N, straggler
    wait), where the model used to stay flat."""
    rates = [_per_gpu_tokens(H100_SXM, n, IB_3200) for n in (1, 2, 8, 64)]
    assert rates == sorted(rates, reverse=True)
    assert rates[-1] < 0.99 * rates[0]


@pytest.mark.xfail(
    strict=True,
    reason="issue #10 quotes 6.3-7.1x for 8 GPUs on NVSwitch servers (no public source found: "
    "searched MLPerf, NeMo, torchtitan, MosaicML, NVIDIA dgxc-benchmarking) and a 9-12% per-GPU "
    "fall from 8 to 512 GPUs, which MosaicML's H100 tables do measure (llm-foundry "
    "scripts/train/benchmarking/README.md @4952183, 2024-01-06: MPT-7B FULL_SHARD 10,643 -> "
    "9,670 tokens/s/GPU from 8 to 512, -9.1%; MPT-1B -12.4%, MPT-3B from 16 -10.3%; rows in "
    "bench/data/external_llm.csv) while the model falls ~3% (11,811 -> 11,439 on MPT-7B); "
    "other public weak-scaling tables measure small falls: Llama 3.1 8B 1.5% from 8 to 128 "
    "H100 (dgxc-benchmarking, test above), Paxml GPT-5B FSDP 2.7% from 16 to 128 H100 "
    "(0.634 -> 0.651 s a step, dgxc-benchmarking paxml/README_5b.md @143b90dd). The model "
    "gives ~8x for an 8B FSDP job on 8 GPUs (its optimizer step is sharded 8 ways)",
)
def test_issue_10_quoted_8b_scaling_range() -> None:
    job = make_workload("llama-3-8b")
    one = estimate(make_build(H100_SXM), job)
    eight = estimate(make_build(H100_SXM, count=8), job)
    assert 6.3 <= eight.samples_per_s / one.samples_per_s <= 7.1
    fall = 1 - _per_gpu_tokens(H100_SXM, 64, IB_3200) / _per_gpu_tokens(H100_SXM, 1, IB_3200)
    assert 0.09 <= fall <= 0.12


def test_tensor_parallel_exchange_is_on_the_critical_path() -> None:
    """8 H100, tensor 2: 4 data-parallel replicas; Megatron's 4 activation all-reduces per layer
    show in full (nothing hides them) and are reported in the estimate's parallel object."""
    job = make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 2})
    est = estimate(make_build(H100_SXM, count=8), job)
    par = est.parallel
    assert par is not None
    assert (par.data, par.tensor, par.pipeline) == (4, 2, 1)
    assert par.tensor_parallel_s > 0
    assert est.exposed_s[Bottleneck.INTERCONNECT] >= par.tensor_parallel_s
    assert est.samples_per_s == pytest.approx(4 * job.batch_size / est.step_time_s)


def test_tensor_group_across_nodes_pays_the_network_on_the_critical_path() -> None:
    """Tensor 16 over two nodes of 8 H100 joined by one 100 Gb/s Ethernet port each: every
    per-layer all-reduce runs hierarchically, each GPU's 1/8 shard over its 1/8 of the port
    (1.56 GB/s, 60% achieved: ~0.94 GB/s) where tensor 8 inside the node moves 2 x 7/8 of the
    message over NVLink (~389 GB/s bus bandwidth): ~30x the time, none of it hidden, the
    network's part reported as network and said in the assumptions."""
    ethernet = {"kind": "ethernet", "gbit_s": 100, "adapters_per_node": 1}
    build = make_build(H100_SXM, count=8, nodes=2, network=ethernet)
    inside = estimate(
        build, make_workload("llama-3-70b", parallel={"strategy": "fsdp", "tensor": 8})
    )
    across = estimate(
        build, make_workload("llama-3-70b", parallel={"strategy": "fsdp", "tensor": 16})
    )
    assert inside.parallel is not None and across.parallel is not None
    assert across.parallel.tensor_parallel_s > 10 * inside.parallel.tensor_parallel_s
    assert across.exposed_s[Bottleneck.NETWORK] >= 0.9 * across.parallel.tensor_parallel_s
    assert any("spans 2 nodes" in a for a in across.assumptions)
    assert not any("spans" in a and "nodes" in a for a in inside.assumptions)


def test_sequence_parallel_moves_the_same_volume() -> None:
    """Korthikanti et al. 2022, section 4.2.2: a reduce-scatter plus an all-gather in place of
    each all-reduce, the same bytes; only a second call's latency differs."""
    plain = make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 4})
    sp = make_workload("llama-3-8b", parallel={"strategy": "fsdp", "tensor": 4, "sequence": True})
    a = estimate(make_build(H100_SXM, count=8), plain).parallel
    b = estimate(make_build(H100_SXM, count=8), sp).parallel
    assert a is not None and b is not None
    assert b.tensor_parallel_s == pytest.approx(a.tensor_parallel_s, rel=0.35)


def test_pipeline_splits_the_work_and_idles_for_its_bubble() -> None:
    """Pipeline 2 with 4 micro-batches: each GPU computes half the layers and idles (p-1)/(m+p-1)
    = 1/5 of the step, so its compute stage is (5/4)/2 of the unsplit one's (within 0.1%: the
    wait for the slowest GPU, interconnect.straggler_wait_s, is not proportional to the work)."""
    flat = make_workload("llama-3-8b")
    piped = make_workload(
        "llama-3-8b", parallel={"strategy": "fsdp", "pipeline": 2, "micro_batches": 4}
    )
    a = estimate(make_build(H100_SXM, count=8), flat)
    b = estimate(make_build(H100_SXM, count=8), piped)
    assert b.parallel is not None and b.parallel.pipeline_bubble == pytest.approx(1 / 5)
    assert b.stages_s[Bottleneck.GPU_COMPUTE] == pytest.approx(
        a.stages_s[Bottleneck.GPU_COMPUTE] * 5 / 4 / 2, rel=1e-3
    )


def test_gradient_accumulation_thins_the_all_reduce_per_micro_batch() -> None:
    """DDP BERT-large on 4 RTX A6000 over PCIe: accumulating 8 micro-batches per optimizer
    step sends the all-reduce once per 8, so each micro-batch carries an eighth of it."""
    a6000 = {"name": "RTX A6000 (test)", "memory_gb": 48, "memory_bandwidth_gb_s": 768,
             "fp32_tflops": 38.7, "tf32_tensor_tflops": 77.4, "fp16_tensor_tflops": 154.8,
             "bf16_tensor_tflops": 154.8, "tdp_w": 300, "pcie_gen": 4, "pcie_lanes": 16,
             "cooler": "blower", "segment": "workstation"}  # fmt: skip
    build = make_build(a6000, count=4)
    one = estimate(build, make_workload("bert-large-squad"))
    eight = estimate(build, make_workload("bert-large-squad", gradient_accumulation=8))
    assert one.parallel is not None and eight.parallel is not None
    assert eight.parallel.communication_s == pytest.approx(one.parallel.communication_s / 8)
    assert eight.samples_per_s > one.samples_per_s


def test_activation_checkpointing_adds_one_forward_once() -> None:
    """Full recompute re-runs the forward: 4 forward-equivalents a step instead of 3 (compute.py
    counts it; nothing else in the estimate adds it again). The recompute's launches lengthen
    the wait for the slowest GPU a little more than its work (interconnect.straggler_wait_s):
    within 0.1% of 4/3. At batch 2, which fits an H100 unsplit either way."""
    plain = make_workload("llama-3-8b", activation_checkpointing=False, batch_size=2)
    ckpt = make_workload("llama-3-8b", activation_checkpointing=True, batch_size=2)
    assert compute.training_flop_multiplier(plain) == 3.0
    assert compute.training_flop_multiplier(ckpt) == 4.0
    a = estimate(make_build(H100_SXM, count=8), plain).stages_s[Bottleneck.GPU_COMPUTE]
    b = estimate(make_build(H100_SXM, count=8), ckpt).stages_s[Bottleneck.GPU_COMPUTE]
    assert 1.25 < b / a <= 4 / 3 * 1.001  # 5/3 would count the recompute twice


BUILD_2X = """\
name: 2x RTX 3090 test box
gpus:
  - model: RTX 3090
    count: 2
memory: {size_gb: 128}
storage:
  - {kind: nvme, capacity_tb: 2, read_mb_s: 7000}
psu: {watts: 1600, efficiency: platinum}
"""


def _dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def test_tensor_wider_than_a_node_exits_2_naming_the_field(tmp_path: Path) -> None:
    build = tmp_path / "build.yaml"
    build.write_text(BUILD_2X)
    job = tmp_path / "job.yaml"
    job.write_text("name: tp4\nmodel: llama-3-8b-lora\nparallel: {strategy: ddp, tensor: 4}\n")
    out = _dlrig("estimate", str(build), "--workload", str(job))
    assert out.returncode == 2
    assert "parallel.tensor" in out.stderr
    assert "Traceback" not in out.stderr
    assert len([line for line in out.stderr.splitlines() if line.strip()]) <= 2


def test_estimate_json_has_the_parallel_object(tmp_path: Path) -> None:
    build = tmp_path / "build.yaml"
    build.write_text(BUILD_2X)
    out = _dlrig("estimate", str(build), "--workload", "llama-3-8b-lora", "--json")
    assert out.returncode == 0, out.stderr
    par = json.loads(out.stdout)["parallel"]
    assert par["data"] == 2 and par["tensor"] == 1 and par["pipeline"] == 1
    assert {"zero_stage", "pipeline_bubble", "communication_s", "communication_exposed_s"} <= set(
        par
    )


def _offload_added_s(
    parallel: dict[str, Any], host_gb_s: float = 60.0, **build: Any
) -> tuple[float, float, float, float]:
    """(communication added, its exposed part, seconds per GB of a shard at the GPU's pinned
    copy rate, the CPU's optimizer step) when the job's `parallel` block turns CPU offload on,
    8 H100, Llama 3 8B. The step streams every rank's shard through the node's RAM at
    `host_gb_s` (60: MEM.1's figure for a host whose memory speed is not given): mixed
    precision AdamW's 28 bytes a parameter (compute.optimizer_step_bytes_per_param)."""
    plain = make_workload("llama-3-8b", parallel=parallel)
    off = make_workload("llama-3-8b", parallel={**parallel, "cpu_offload": True})
    a = estimate(make_build(H100_SXM, count=8, **build), plain)
    b = estimate(make_build(H100_SXM, count=8, **build), off)
    assert a.parallel is not None and b.parallel is not None
    assert b.pcie_gen is not None and b.pcie_lanes is not None
    link = pcie_effective_gb_s(
        b.pcie_gen, b.pcie_lanes, default_calibration().pcie_pinned_efficiency
    )
    shard_s = off.params / 8 / 1e9 / link
    added = b.parallel.communication_s - a.parallel.communication_s
    exposed = b.parallel.communication_exposed_s - a.parallel.communication_exposed_s
    cpu_step_s = 28.0 * off.params / (host_gb_s * 1e9)
    return added, exposed, shard_s, cpu_step_s


def test_zero_offload_copies_gradients_down_and_parameters_back() -> None:
    """ZeRO-Offload (Ren et al. 2021, section 4.1), here under ZeRO-2: each GPU's 16-bit
    gradient shard goes to host memory during the backward and its updated 16-bit parameters
    come back after the CPU's step: 4 bytes per shard parameter over the GPU's PCIe link at
    the pinned copy rate, the return trip exposed."""
    added, exposed, shard_s, cpu_step_s = _offload_added_s({"zero_stage": 2})
    assert added == pytest.approx(4 * shard_s + cpu_step_s, rel=1e-6)
    assert exposed >= 2 * shard_s + cpu_step_s


def test_fsdp_parameter_offload_copies_each_shard_up_before_its_gathers() -> None:
    """FSDP's CPUOffload(offload_params=True) keeps parameters in host memory "when these
    parameters are not used for computation on GPUs" (PyTorch FSDP docs, CPUOffload): each
    GPU copies its 16-bit parameter shard up before every unit's gather, in the forward and
    again in the backward, and its 16-bit gradient shard down: 2 + 2 + 2 bytes per shard
    parameter. The copies ride with the prefetched gathers, so most of them hide."""
    added, exposed, shard_s, cpu_step_s = _offload_added_s({"strategy": "fsdp"})
    assert added - cpu_step_s == pytest.approx(6 * shard_s, rel=1e-6)
    assert cpu_step_s < exposed < cpu_step_s + 3 * shard_s


def test_cpu_offload_optimizer_step_streams_the_hosts_ram() -> None:
    """CPU offload's optimizer step is a pass over every rank's shard in host memory (torchtune:
    "The CPU optimizer step is often the bottleneck when optimizer CPU offload is used"), after
    the backward with nothing to hide it. Llama 3 8B (8.03e9 parameters), mixed-precision
    AdamW, 28 B a parameter: 3.75 s per step at MEM.1's 60 GB/s, 0.49 s on two sockets of
    eight DDR5-4800 channels (16 x 4800 MT/s x 8 B = 614 GB/s peak x 0.75, STREAM's share)."""
    _, exposed, _, cpu_step_s = _offload_added_s({"zero_stage": 2})
    assert cpu_step_s == pytest.approx(3.75, abs=0.01)
    server_cpu = {**CPU_16, "memory_channels": 8}
    server = {"cpu": {"spec": server_cpu, "count": 2},
              "memory": {"size_gb": 512, "speed_mt_s": 4800}}  # fmt: skip
    server_gb_s = 16 * 4800 * 8 / 1000 * 0.75
    fast, fast_exposed, fast_shard_s, host_step_s = _offload_added_s(
        {"zero_stage": 2}, server_gb_s, **server
    )
    assert host_step_s == pytest.approx(0.49, abs=0.01)
    assert fast == pytest.approx(4 * fast_shard_s + host_step_s, rel=0.01)
    assert fast_exposed < exposed - 3.0


def test_estimate_text_names_the_layout_and_its_communication(tmp_path: Path) -> None:
    build = tmp_path / "build.yaml"
    build.write_text(BUILD_2X)
    out = _dlrig("estimate", str(build), "--workload", "llama-3-8b-lora")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    # Batch 2 of Llama 3 8B LoRA does not fit a 24 GB card (23.4 GiB of tensors measured on
    # an H200): the two GPUs run DDP over two micro-batches of one, not FSDP.
    assert "parallel: data 2 x tensor 1 x pipeline 1, 2 micro-batches a step; communication" in (
        text
    )
    assert "not hidden by compute" in text
    assert "micro-batch split: batch 2 does not fit each GPU" in text


def test_offload_bound_step_is_advised_away_from_offload_not_toward_nvlink() -> None:
    # 8 H100 SXM already share NVSwitch; what holds this step back is the host's optimizer
    # step at MEM.1's 60 GB/s (3.75 s for Llama 3 8B), so NVLink is no remedy.
    job = make_workload("llama-3-8b", parallel={"zero_stage": 2, "cpu_offload": True})
    est = estimate(make_build(H100_SXM, count=8), job)
    assert est.bottleneck is Bottleneck.INTERCONNECT
    assert "no CPU offload" in est.advice and "NVLink" not in est.advice
