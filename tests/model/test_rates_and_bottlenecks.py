"""GPU.3 peak rates, and which stage the model names as the bottleneck."""

from __future__ import annotations

import pytest
from model_fixtures import GTX_1080_TI, RTX_3090, RTX_A6000, make_build, make_workload

from dlrig.catalog.schema import GPU
from dlrig.enums import Bottleneck, Modifier, Precision
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.rates import ComputePath, matmul_peak


def test_gpu3_16bit_without_tensor_cores_runs_at_the_non_tensor_rate() -> None:
    """GPU.3: a GTX 1080 Ti has no fast 16-bit: fp16 matmuls run at its FP32 shader rate
    (11.34 TFLOPS, not its 1/64-rate FP16 and not a tensor rate); TF32 falls back to FP32."""
    pascal = GPU.model_validate(GTX_1080_TI)
    ampere = GPU.model_validate(RTX_3090)
    peak, path, note = matmul_peak(pascal, Precision.FP16)
    assert (peak, path) == (11.34e12, ComputePath.SIMT_16BIT) and note
    assert matmul_peak(pascal, Precision.TF32)[:2] == (11.34e12, ComputePath.SIMT_FP32)
    assert matmul_peak(ampere, Precision.FP16)[:2] == (71e12, ComputePath.TENSOR_16BIT)
    assert matmul_peak(ampere, Precision.TF32)[:2] == (35.6e12, ComputePath.TENSOR_TF32)
    peak8, path8, note8 = matmul_peak(ampere, Precision.FP8)
    assert (peak8, path8) == (71e12, ComputePath.TENSOR_16BIT) and note8


def test_gpu3_16bit_speeds_up_tensor_core_gpus_far_more() -> None:
    """GPU.3: 16-bit pays on tensor cores, not on a GTX 10-series card. Lambda measured
    ResNet-50 fp16 over fp32 at 1.17x on a GTX 1080 Ti and 1.77x on an RTX A6000 (TF32)."""

    def ratio(spec: dict[str, object]) -> float:
        build = make_build(spec)
        fast = estimate(build, make_workload("resnet50", dataset="synthetic", precision="fp16"))
        slow = estimate(build, make_workload("resnet50", dataset="synthetic", precision="tf32"))
        return fast.samples_per_s / slow.samples_per_s

    assert ratio(GTX_1080_TI) < 1.1 < 1.25 < ratio(RTX_3090)
    assert ratio(RTX_A6000) > 1.5


def test_slow_hdd_makes_storage_the_bottleneck() -> None:
    """Two RTX 3090s eat ~1600 ImageNet JPEGs (110 KB) a second: 176 MB/s, more than a
    100 MB/s hard disk gives (DISK.3); the 138 GB dataset does not fit 32 GB of page cache."""
    hdd = [{"kind": "hdd", "capacity_tb": 8, "read_mb_s": 100}]
    build = make_build(RTX_3090, count=2, storage=hdd, memory={"size_gb": 32})
    est = estimate(build, make_workload("resnet50"))
    assert est.bottleneck is Bottleneck.STORAGE
    assert "NVMe" in est.advice


def test_one_core_with_online_preprocessing_makes_the_cpu_the_bottleneck() -> None:
    one_core = {"spec": {"name": "1 core", "family": "t", "cores": 1, "threads": 1,
                "base_ghz": 3.0, "pcie_lanes": 16, "pcie_gen": 3, "memory_channels": 1,
                "memory_type": "DDR4", "tdp_w": 35, "socket": "t"}}  # fmt: skip
    est = estimate(make_build(RTX_3090, cpu=one_core), make_workload("resnet50"))
    assert est.bottleneck is Bottleneck.CPU_PREPROCESSING
    offline = make_workload("resnet50", preprocessing={"strategy": "offline"})
    assert estimate(make_build(RTX_3090, cpu=one_core), offline).bottleneck is not (
        Bottleneck.CPU_PREPROCESSING
    )


def test_synthetic_data_has_no_storage_cpu_or_pcie_stage() -> None:
    est = estimate(make_build(RTX_3090), make_workload("resnet50", dataset="synthetic"))
    for stage in (Bottleneck.STORAGE, Bottleneck.CPU_PREPROCESSING, Bottleneck.PCIE):
        assert est.stages_s[stage] == 0.0
    assert est.bottleneck in (Bottleneck.GPU_COMPUTE, Bottleneck.GPU_MEMORY_BANDWIDTH)


def test_eight_gpus_over_pcie_with_a_big_model_are_interconnect_bound() -> None:
    """1.5e9 parameters of fp16 gradients (3 GB) per step over PCIe 3.0 x8 among 8 GPUs."""
    gpus = [{"spec": RTX_3090, "count": 8, "pcie": {"gen": 3, "lanes": 8}}]
    big = {"params": 1.5e9, "forward_flops_per_sample": 3e11, "activation_bytes_per_sample": 1e8}
    job = make_workload(big, batch_size=4, precision="fp16", dataset="synthetic")
    est = estimate(make_build(RTX_3090, gpus=gpus), job)
    assert est.bottleneck is Bottleneck.INTERCONNECT
    assert Modifier.PCIE_DOWNGRADED in est.modifiers
    nvlink = dict(RTX_3090, nvlink_gb_s=600, interconnect="nvswitch")
    fast = estimate(make_build(nvlink, gpus=[{"spec": nvlink, "count": 8}]), job)
    assert fast.stages_s[Bottleneck.INTERCONNECT] < est.stages_s[Bottleneck.INTERCONNECT] / 10


def test_nodes_add_a_network_stage() -> None:
    job = make_workload("bert-large-squad", dataset="synthetic")
    one = estimate(make_build(RTX_3090, count=4), job)
    two = estimate(make_build(RTX_3090, count=4, nodes=2, network={"gbit_s": 10}), job)
    assert one.stages_s[Bottleneck.NETWORK] == 0.0
    assert two.stages_s[Bottleneck.NETWORK] > 0.1  # 0.67 GB of gradients over 10 GbE
    assert two.samples_per_s < 2 * one.samples_per_s


def test_host_parameter_server_crosses_pcie_every_step() -> None:
    """DP.1: gradients to the host and parameters back, not overlapped."""
    build = make_build(RTX_3090, count=2)
    ddp = estimate(build, make_workload("bert-base-squad", dataset="synthetic"))
    ps = estimate(build, make_workload("bert-base-squad", dataset="synthetic", parallel="host-ps"))
    assert ps.stages_s[Bottleneck.INTERCONNECT] > ddp.stages_s[Bottleneck.INTERCONNECT]
    assert ps.step_time_s > ddp.step_time_s


def test_open_air_cards_side_by_side_throttle() -> None:
    """COOL.1/COOL.3: several open-air cards in a desktop case heat each other; one card does
    not throttle."""
    job = make_workload("resnet50", dataset="synthetic")
    one = estimate(make_build(RTX_3090), job)
    four = estimate(make_build(RTX_3090, count=4, case="Fractal Design Define 7 XL"), job)
    assert Modifier.THERMAL_THROTTLE not in one.modifiers
    assert Modifier.THERMAL_THROTTLE in four.modifiers
    assert four.samples_per_s / 4 < one.samples_per_s * 0.95
    water = [{"spec": RTX_3090, "count": 4, "cooler": "water"}]
    cool = estimate(make_build(RTX_3090, gpus=water, case="Fractal Design Define 7 XL"), job)
    assert Modifier.THERMAL_THROTTLE not in cool.modifiers


def test_cpu_only_build_computes_on_the_cpu() -> None:
    build = make_build(None)
    est = estimate(build, make_workload("resnet50", dataset="synthetic", batch_size=8))
    assert est.device_is_cpu and est.compute_device.startswith("CPU")
    assert est.bottleneck is Bottleneck.GPU_COMPUTE
    assert any("CPU" in a for a in est.assumptions)
    assert est.stages_s[Bottleneck.PCIE] == 0.0
    gpu = estimate(make_build(RTX_3090), make_workload("resnet50", dataset="synthetic"))
    assert gpu.samples_per_s > 20 * est.samples_per_s


def test_missing_parts_are_listed_as_assumptions() -> None:
    bare = resolve_build({"gpus": [{"spec": RTX_3090}]}, "bare")
    est = estimate(bare, make_workload("resnet50"))
    text = " ".join(est.assumptions)
    assert "no CPU given" in text and "no storage given" in text and "PSU efficiency" in text


def test_inference_is_memory_bandwidth_bound_and_reports_tokens() -> None:
    est = estimate(make_build(RTX_3090), make_workload("llama-3-8b-inference"))
    assert est.bottleneck is Bottleneck.GPU_MEMORY_BANDWIDTH
    assert est.tokens_per_s == pytest.approx(est.samples_per_s)
    # Each step reads 16 GB of weights and 4.3 GB of KV cache: at most 936/20.3 = 46 steps/s.
    assert est.tokens_per_s < 8 * 936 / 20.3


def test_cpu_lanes_shared_by_the_gpus_narrow_each_link() -> None:
    """PCIE.2/PCIE.3: a 20-lane desktop CPU gives two GPUs x8 each (20 // 2 = 10 -> x8)."""
    desktop = {"spec": {"name": "20-lane CPU", "family": "t", "cores": 8, "threads": 16,
               "base_ghz": 3.5, "pcie_lanes": 20, "pcie_gen": 4, "memory_channels": 2,
               "memory_type": "DDR5", "tdp_w": 105, "socket": "t"}}  # fmt: skip
    job = make_workload("resnet50")
    narrow = estimate(make_build(RTX_3090, count=2, cpu=desktop), job)
    wide = estimate(make_build(RTX_3090, count=2), job)  # a 64-lane CPU
    assert Modifier.PCIE_DOWNGRADED in narrow.modifiers
    assert Modifier.PCIE_DOWNGRADED not in wide.modifiers
    assert narrow.stages_s[Bottleneck.PCIE] == pytest.approx(2 * wide.stages_s[Bottleneck.PCIE])


def test_big_inputs_over_a_narrow_link_make_pcie_the_bottleneck() -> None:
    """A 3D volume of 256^3 float32 (67 MB) per sample over PCIe 3.0 x4 (PCIE.1): pinned,
    asynchronous copies hide it only while it is shorter than the compute."""
    volume = {"params": 1e7, "forward_flops_per_sample": 1e9, "activation_bytes_per_sample": 1e8}
    keys = {
        "batch_size": 4, "precision": "fp16", "input": {"shape": [256, 256, 256]},
        "dataset": {"samples": 1000, "bytes_per_sample": 1e6},
        "preprocessing": {"strategy": "offline", "offline_cpu_ms_per_sample": 0.0},
    }  # fmt: skip
    narrow = [{"spec": RTX_3090, "pcie": {"gen": 3, "lanes": 4}}]
    build = make_build(RTX_3090, gpus=narrow)
    sync = estimate(
        build, make_workload(volume, loader={"workers": 0, "pin_memory": False}, **keys)
    )
    pinned = estimate(build, make_workload(volume, **keys))
    assert sync.bottleneck is Bottleneck.PCIE and "pin memory" in sync.advice
    assert pinned.bottleneck is Bottleneck.PCIE and "lanes" in pinned.advice
    assert pinned.step_time_s < sync.step_time_s


def test_two_open_air_cards_with_a_free_slot_between_do_not_throttle() -> None:
    """COOL.3: with space between the GPUs (2 GPUs on a 3-4 slot board), air is safe; packed
    side by side they heat each other (COOL.1)."""

    def board(second_slot: int) -> dict[str, object]:
        return {"spec": {"name": "test board", "socket": "t", "memory_type": "DDR5",
                "memory_slots": 4, "max_memory_gb": 192,
                "x16_slots": [{"position": 1, "lanes": 16, "gen": 4},
                              {"position": second_slot, "lanes": 16, "gen": 4}]}}  # fmt: skip

    card = dict(RTX_3090, slots=2)
    job = make_workload("resnet50", dataset="synthetic")
    spaced = estimate(make_build(card, count=2, motherboard=board(4)), job)
    packed = estimate(make_build(card, count=2, motherboard=board(3)), job)
    assert Modifier.THERMAL_THROTTLE not in spaced.modifiers
    assert Modifier.THERMAL_THROTTLE in packed.modifiers
    assert packed.samples_per_s < spaced.samples_per_s
