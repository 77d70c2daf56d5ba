"""Issue 35: random-read rates for small-file datasets on disks. A file read in random order
costs the drive one random access before its bytes stream: a 7,200 rpm hard disk manages 75-100
a second (Wikipedia "IOPS", examples; up to ~2x with deep queues: the model takes 100), an SSD's
random reads at a loader's queue depth run at 1e5-1e6 a second (left out). ImageNet's training set
is 1,281,167 JPEG files, one a sample."""

from __future__ import annotations

import dataclasses

import pytest

from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.pipeline import HDD_RANDOM_READS_PER_S, file_access_time_s, storage_read_time_s
from dlrig.rules import check_build
from dlrig.workloads import load_workload


def build_on(drive: dict[str, object]) -> object:
    doc = {
        "name": "1x 3090 on one drive",
        "gpus": [{"model": "GeForce RTX 3090"}],
        "cpu": "AMD Ryzen 9 7950X",
        "motherboard": "ASUS ProArt X670E-CREATOR WIFI",
        "memory": {"size_gb": 64},
        "storage": [drive],
    }
    return resolve_build(doc, "test")


def test_a_hard_disk_reaches_100_files_a_second() -> None:
    assert HDD_RANDOM_READS_PER_S == 100.0
    # 256 ImageNet JPEGs (107,700 B each) from a 150 MB/s hard disk: 2.56 s of seeks before
    # the 27.6 MB stream in 0.18 s
    assert file_access_time_s(256, HDD_RANDOM_READS_PER_S) == pytest.approx(2.56)
    assert storage_read_time_s(256 * 107_700, 150) == pytest.approx(0.1838, abs=1e-4)
    assert file_access_time_s(256, None) == 0.0  # an SSD's per-file cost is left out


def test_imagenet_from_a_hard_disk_is_storage_bound_by_its_seeks() -> None:
    w = load_workload("resnet50")
    assert w.dataset is not None and w.dataset.files == 1_281_167
    hdd = build_on("Western Digital Blue 1TB (WD10EZEX)")
    est = estimate(hdd, w)
    per_step = w.batch_size
    seeks = per_step / HDD_RANDOM_READS_PER_S
    stream = storage_read_time_s(per_step * w.dataset.bytes_per_sample, 150)
    # the dataset (138 GB) does not fit 64 GB of RAM: every epoch reads the disk
    assert est.stages_s[est.bottleneck] == pytest.approx(seeks + stream, rel=1e-6)
    assert est.bottleneck.value == "storage"
    assert any("files read in random order" in a for a in est.assumptions)
    result = check_build(hdd, w)
    (disk3,) = result.by_rule("DISK.3")
    assert disk3.severity.value == "error"
    assert "read in random order" in disk3.message


def test_the_same_data_as_sequential_shards_reads_at_the_disks_rate() -> None:
    w = load_workload("resnet50")
    assert w.dataset is not None
    packed = dataclasses.replace(w, dataset=dataclasses.replace(w.dataset, files=None))
    hdd = build_on("Western Digital Blue 1TB (WD10EZEX)")
    est = estimate(hdd, packed)
    stream = storage_read_time_s(w.batch_size * w.dataset.bytes_per_sample, 150)
    assert est.stages_s[est.bottleneck.__class__("storage")] == pytest.approx(stream, rel=1e-6)


def test_an_nvme_drive_pays_no_per_file_cost() -> None:
    w = load_workload("resnet50")
    assert w.dataset is not None
    nvme = build_on("Samsung 990 Pro 2TB")
    est = estimate(nvme, w)
    stream = storage_read_time_s(w.batch_size * w.dataset.bytes_per_sample, 7450)
    assert est.stages_s[est.bottleneck.__class__("storage")] == pytest.approx(stream, rel=1e-6)
