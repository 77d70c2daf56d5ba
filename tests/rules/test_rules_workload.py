"""Workload-aware rules: storage feed and capacity (DISK.*), GPU memory (GPU.4), 16-bit
(GPU.3), loading (DISK.2), the host parameter server (DP.1). Zoo workloads from dlrig.workloads,
varied with dataclasses.replace."""

from __future__ import annotations

import dataclasses

from rules_fixtures import check, desktop, gpu

from dlrig.enums import Parallelism, Precision, PreprocessingStrategy, Severity
from dlrig.workloads import load_workload
from dlrig.workloads.model import Dataset

HDD = {"kind": "hdd", "capacity_tb": 8, "read_mb_s": 150}


def test_resnet50_on_four_gpus_from_a_150mb_s_hdd_fails_disk3() -> None:
    """DISK.3: ImageNet (~110 KB a JPEG) at thousands of images/s outruns a 150 MB/s disk,
    and 64 GB of RAM cannot cache the 138 GB dataset."""
    w = load_workload("resnet50")
    assert w.dataset is not None and w.dataset.total_gb > 0.7 * 64
    doc = desktop(storage=[HDD], memory={"size_gb": 64, "type": "DDR5"})
    finding = check(doc, w).by_rule("DISK.3")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["need_mb_s"] > 150
    assert "SSD is required" in finding.message


def test_the_same_dataset_cached_in_ram_keeps_up_from_the_hdd() -> None:
    w = load_workload("resnet50")
    doc = desktop(storage=[HDD], memory={"size_gb": 512, "type": "DDR5"})
    finding = check(doc, w).by_rule("DISK.3")[0]
    assert finding.severity is Severity.INFO
    assert finding.evidence["dataset_cached_in_ram"] is True


def test_an_hdd_without_a_workload_is_information() -> None:
    assert check(desktop(storage=[HDD])).by_rule("DISK.3")[0].severity is Severity.INFO


def test_disk4_a_dataset_larger_than_every_drive_fails() -> None:
    w = dataclasses.replace(
        load_workload("resnet50"), dataset=Dataset(samples=100_000_000, bytes_per_sample=110_000)
    )  # 11 TB
    finding = check(desktop(), w).by_rule("DISK.4")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["dataset_gb"] == 11_000


def test_disk4_dataset_drive_without_room_warns() -> None:
    """DISK.4: the SSD should hold the dataset plus some tens of GB (50 GB here)."""
    w = dataclasses.replace(
        load_workload("resnet50"), dataset=Dataset(samples=1_000_000, bytes_per_sample=1_000_000)
    )  # 1000 GB on a 1 TB SSD, with an 8 TB HDD beside it
    doc = desktop(
        storage=[{"kind": "nvme", "capacity_tb": 1, "read_mb_s": 7000, "holds_dataset": True}, HDD]
    )
    finding = check(doc, w).by_rule("DISK.4")[0]
    assert finding.severity is Severity.WARNING
    assert finding.evidence["needed_gb"] == 1050


def test_gpu4_llama_8b_full_training_does_not_fit_a_24gb_card() -> None:
    w = load_workload("llama-3-8b")
    finding = check(desktop(), w).by_rule("GPU.4")[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["gpu_memory_gb"] == 24


def test_gpu4_fix_leaves_out_what_the_job_already_does() -> None:
    """The fix names only what the job does not do yet: a mixed-precision bf16 job is already
    16-bit (pure 16-bit drops its fp32 master copy); an fp32 job hears 16-bit (GPU.3)."""
    w = load_workload("llama-3-8b")
    fix = check(desktop(), w).by_rule("GPU.4")[0].fix
    assert "16-bit training (GPU.3)" not in fix and "pure 16-bit" in fix
    pure = dataclasses.replace(w, pure_16bit=True)
    assert "pure 16-bit" not in check(desktop(), pure).by_rule("GPU.4")[0].fix
    fp32 = dataclasses.replace(w, precision=Precision.FP32)
    assert "16-bit training (GPU.3)" in check(desktop(), fp32).by_rule("GPU.4")[0].fix


def test_gpu4_points_a_selective_job_to_the_full_recompute() -> None:
    """Selective checkpointing keeps every second matmul's output; the full recompute keeps
    each layer's input alone, so a selective job that does not fit hears the full one."""
    w = dataclasses.replace(
        load_workload("llama-3-8b"), activation_checkpointing=False, selective_checkpointing=True
    )
    fix = check(desktop(), w).by_rule("GPU.4")[0].fix
    assert "full activation checkpointing (in place of selective_checkpointing)" in fix
    none = dataclasses.replace(w, selective_checkpointing=False)
    assert "full activation" not in check(desktop(), none).by_rule("GPU.4")[0].fix


def test_gpu4_resnet50_fits_a_24gb_card() -> None:
    finding = check(desktop(), load_workload("resnet50")).by_rule("GPU.4")[0]
    assert finding.severity is Severity.INFO


def test_gpu3_16bit_training_on_a_card_without_tensor_cores_warns() -> None:
    """GPU.3: GTX 10-series cards should run 32-bit models."""
    w = dataclasses.replace(load_workload("resnet50"), precision=Precision.FP16)
    old = desktop(gpu_fields=gpu(fp16_tensor_tflops=None))
    assert check(old, w).by_rule("GPU.3")[0].severity is Severity.WARNING
    assert check(desktop(), w).by_rule("GPU.3") == ()


def test_disk2_loading_in_the_training_loop_warns_for_online_preprocessing() -> None:
    w = dataclasses.replace(load_workload("resnet50"), loader_workers=0)
    assert w.preprocessing_strategy is PreprocessingStrategy.ONLINE
    assert check(desktop(), w).by_rule("DISK.2")[0].severity is Severity.WARNING


def test_dp1_host_parameter_server_is_reported() -> None:
    w = dataclasses.replace(load_workload("resnet50"), parallel=Parallelism.HOST_PS)
    assert check(desktop(), w).by_rule("DP.1")[0].severity is Severity.INFO


def test_synthetic_data_skips_the_storage_rules() -> None:
    w = dataclasses.replace(load_workload("resnet50"), dataset=None)
    result = check(desktop(storage=[HDD]), w)
    assert result.by_rule("DISK.1") == () and result.by_rule("DISK.4") == ()


def test_disk1_worked_example_32_imagenet_images_from_a_100_mb_s_disk_take_185_ms() -> None:
    """DISK.1: a 32-image mini-batch of 225x225x3 float32 images (19.44 MB) read from a
    "100 MB/s" hard disk takes 185 ms; the source's MB is 2**20 bytes (19.44e6 / 104.86e6 s).
    ResNet-152 needs about 200 ms of compute per mini-batch (PCIE.1: ~216 ms forward+backward
    in the original), so asynchronous loading hides the read entirely."""
    w = dataclasses.replace(
        load_workload("resnet152"),
        batch_size=32,
        precision=Precision.FP32,
        dataset=Dataset(samples=1_281_167, bytes_per_sample=225 * 225 * 3 * 4),
    )
    doc = {
        "gpus": ["GeForce GTX 1080 Ti"],  # the source's generation of card, fp32
        "memory": {"size_gb": 32},
        "storage": [{"kind": "hdd", "capacity_tb": 4, "read_mb_s": 100 * 2**20 / 1e6}],
    }
    result = check(doc, w)
    disk1 = result.by_rule("DISK.1")[0]
    assert disk1.evidence["read_ms_per_step"] == 185.4
    assert disk1.evidence["mb_per_step"] == 19.44
    # The model's compute bound for the step is of the source's ~200 ms order, and above 185.
    assert 185.4 < disk1.evidence["compute_ms_per_step_min"] < 300
    assert disk1.severity is Severity.INFO
    assert result.by_rule("DISK.3")[0].severity is Severity.INFO  # the disk keeps up
