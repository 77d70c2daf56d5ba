"""The verdict on GPU hosts from replayed NVML traces and host samples set by hand: which input
stage the idle GPU waited on, and the utilization figure."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest
from watch_helpers import fixture, idle_host, light_job, replayed_samples

from dlrig.enums import Bottleneck, Modifier
from dlrig.report.watch import summary_json, summary_text
from dlrig.watch.detectors import detect_all
from dlrig.watch.host import NvmlGpuSampler
from dlrig.watch.runner import run_watch
from dlrig.watch.samples import DiskSample, Sample
from dlrig.watch.summary import watch_summary
from dlrig.watch.verdict import judge, pcie_ratio
from support.nvml_fakes import replay_nvml


def _idle_gpu_samples(count: int = 4) -> list[Sample]:
    # four_gpu_box: 4x RTX 3090 at 0% utilization.
    return replayed_samples("four_gpu_box", count)


def test_idle_gpus_and_a_serial_loader_thread_is_cpu_preprocessing() -> None:
    # The training process's busiest thread at a full core while the GPUs idle: a loader
    # running in series with the step (num_workers=0), though the host's CPUs are mostly free.
    job = dataclasses.replace(light_job(), main_busiest_thread_cores=1.0)
    samples = [dataclasses.replace(s, job=job) for s in _idle_gpu_samples()]
    alarms = detect_all(samples)
    verdict = judge(samples, alarms)
    assert verdict.bottleneck is Bottleneck.CPU_PREPROCESSING
    assert verdict.utilization == 0.0 and not verdict.device_is_cpu
    assert any(a.rule == "CPU.1" for a in alarms)


def _busy_disk_samples(job_read_mb_s: float) -> list[Sample]:
    host = dataclasses.replace(
        idle_host(), disks=(DiskSample("sda", read_mb_s=160.0, write_mb_s=0.0, busy_ratio=0.99),)
    )
    job = dataclasses.replace(light_job(), read_mb_s=job_read_mb_s, main_busiest_thread_cores=0.1)
    return [dataclasses.replace(s, host=host, job=job) for s in _idle_gpu_samples()]


def test_idle_gpus_and_a_disk_busy_with_the_jobs_reads_is_storage() -> None:
    # A 160 MB/s hard disk (DISK.3: 100-150 MB/s disks can starve a GPU) busy 99% of the
    # time, all of it the job's reads.
    samples = _busy_disk_samples(job_read_mb_s=160.0)
    alarms = detect_all(samples)
    verdict = judge(samples, alarms)
    assert verdict.bottleneck is Bottleneck.STORAGE
    assert verdict.evidence["disk"] == "sda" and verdict.evidence["disk_read_mb_s"] == 160.0
    (disk,) = [a for a in alarms if a.rule == "DISK.3"]
    assert disk.bottleneck is Bottleneck.STORAGE and "160 MB/s" in disk.message


def test_a_disk_kept_busy_by_another_process_is_not_the_jobs_bottleneck() -> None:
    samples = _busy_disk_samples(job_read_mb_s=0.0)
    alarms = detect_all(samples)
    (disk,) = [a for a in alarms if a.rule == "DISK.3"]
    assert disk.bottleneck is None and "other processes" in disk.message
    assert judge(samples, alarms).bottleneck is None


def test_idle_gpu_on_a_full_x4_link_is_pcie() -> None:
    data = fixture("link_trained_at_x4")
    gpu = data["gpus"][2]
    gpu["nvmlDeviceGetUtilizationRates"] = {"gpu": 30, "memory": 10}
    gpu["nvmlDeviceGetPcieThroughput:RX_BYTES"] = 3_700_000  # KB/s, near Gen3 x4's 3.94 GB/s
    data["gpus"] = [gpu]
    samples = replayed_samples(data, 3)
    reading = samples[0].gpus[0]
    # Gen3 lane: 8 GT/s x 128b/130b / 8 bits = 0.985 GB/s (PCI-SIG Base Spec 3.0)
    assert pcie_ratio(reading) == pytest.approx(3.7e9 / (4 * 0.98462e9), rel=1e-4)
    verdict = judge(samples, detect_all(samples))
    assert verdict.bottleneck is Bottleneck.PCIE
    assert Modifier.PCIE_DOWNGRADED in verdict.modifiers


def test_busy_gpu_with_memory_always_busy_is_memory_bandwidth_bound() -> None:
    data = fixture("gpu_throttling_for_heat")
    data["gpus"][0]["nvmlDeviceGetUtilizationRates"] = {"gpu": 99, "memory": 92}
    samples = replayed_samples(data, 3)
    assert judge(samples, detect_all(samples)).bottleneck is Bottleneck.GPU_MEMORY_BANDWIDTH


def test_real_job_on_a_replayed_box_that_lost_a_gpu() -> None:
    result = run_watch(
        [sys.executable, "-c", "import time; time.sleep(0.6)"],
        gpus=NvmlGpuSampler(replay_nvml("lost_gpu")),
        interval_s=0.2,
    )
    assert [a.rule for a in result.alarms if a.gpu == 1] == ["WATCH.4"]
    # GPU 0 idles and nothing else is saturated: no stage is blamed, the summary says so.
    assert result.verdict.bottleneck is None and result.verdict.device_is_cpu is False
    assert result.verdict.evidence["gpu_utilization_pct"] == {"0": 0.0, "1": None}
    summary = watch_summary(result, db=None, run_id=None, interval_s=0.2)
    text = summary_text(summary)
    assert "bottleneck: none found" in text
    assert "[error] WATCH.4" in text and "GPU 1 was lost" in text
    # The alarm's JSON keys (design.md's watch contract), every one present and in this order.
    alarm = json.loads(summary_json(summary))["alarms"][0]
    assert list(alarm) == [
        "rule", "name", "severity", "start_s", "end_s", "gpu", "message", "modifier",
        "bottleneck", "fix", "evidence",
    ]  # fmt: skip


def test_a_disk_reading_at_its_measured_rate_is_saturated_however_busy_it_looks() -> None:
    # An NVMe SSD measured by `dlrig probe` at 3000 MB/s, reading 2900 MB/s for the job while
    # the kernel's busy share says 40% (parallel queues make %util misleading on SSDs).
    host = dataclasses.replace(
        idle_host(),
        disks=(DiskSample("nvme0n1", 2900.0, 0.0, busy_ratio=0.4, limit_read_mb_s=3000.0),),
    )
    job = dataclasses.replace(light_job(), read_mb_s=2900.0, main_busiest_thread_cores=0.1)
    samples = [dataclasses.replace(s, host=host, job=job) for s in _idle_gpu_samples()]
    verdict = judge(samples, detect_all(samples))
    assert verdict.bottleneck is Bottleneck.STORAGE
    assert verdict.evidence["disk_load_ratio"] == 2900.0 / 3000.0
    assert verdict.evidence["disk_measured_read_mb_s"] == 3000.0


def test_a_saturated_main_thread_beside_idle_workers_is_not_told_to_add_workers() -> None:
    """Seen on a lent H200 (scripts/gpu-check, `dlrig watch` over scripts/gpu_jobs.py): the GPU
    computed 25% of 90 s while the main thread built models at a full core and the job's 4
    DataLoader workers used 0.02 cores. More workers would not help: the fix names the main
    thread. A serial loader (num_workers=0) keeps the workers fix (the test above)."""
    job = dataclasses.replace(
        light_job(), main_busiest_thread_cores=1.0, workers=4, workers_cpu_cores=0.02
    )
    samples = [dataclasses.replace(s, job=job) for s in _idle_gpu_samples()]
    alarms = detect_all(samples)
    verdict = judge(samples, alarms)
    assert verdict.bottleneck is Bottleneck.CPU_PREPROCESSING
    assert verdict.fix is not None and verdict.fix.startswith("the training process's main thread")
    (alarm,) = [a for a in alarms if a.rule == "CPU.1"]
    assert "main thread is saturated" in alarm.message and alarm.fix == verdict.fix
    serial = dataclasses.replace(light_job(), main_busiest_thread_cores=1.0)
    samples = [dataclasses.replace(s, job=serial) for s in _idle_gpu_samples()]
    fix = judge(samples, detect_all(samples)).fix
    assert fix is not None and fix.startswith("more DataLoader workers")
