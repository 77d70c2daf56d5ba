"""A disk is judged against its datasheet only at a comparable queue depth (issue #12): a
healthy NVMe drive read one request at a time is reported, never called faulty."""

from __future__ import annotations

from probe_helpers import scenario_result

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import Storage
from dlrig.enums import Severity, StorageKind
from dlrig.hardware.disk import DiskSpeed
from dlrig.hardware.host import BlockDevice, Filesystem
from dlrig.probe import verdicts as v
from dlrig.probe.judge import judge
from dlrig.probe.result import DiskProbe

CATALOG = load_catalog()
SN850X = CATALOG.find(Storage, "WD_BLACK SN850X 2TB")  # datasheet 7,300 MB/s (catalog source)


def _nvme(qd1_mb_s: float, deep_mb_s: float | None, depth: int | None) -> DiskProbe:
    block = BlockDevice(
        "nvme0n1", StorageKind.NVME, False, False, 2 * 10**12, "WD_BLACK SN850X 2TB"
    )
    fs = Filesystem("/data", "/dev/nvme0n1p1", "ext4", 2 * 10**12, 10**12, block)
    speed = DiskSpeed(
        "/data", 2**30, 3000.0, qd1_mb_s, qd1_mb_s, 9000.0, 15000.0, True, 5.0, "test",
        deep_mb_s, depth,
    )  # fmt: skip
    return DiskProbe(fs, speed)


def test_datasheet_figure_of_the_drive() -> None:
    assert SN850X.read_mb_s == 7300


def test_qd1_read_is_reported_not_judged() -> None:
    # 2,100 MB/s is 29% of 7,300: a fault by DCGM's 0.75 rule, were it judged at QD1.
    found = v.disk_datasheet_verdict("/data", 2100.0, SN850X, queue_depth=1)
    assert found is not None and found.severity is Severity.INFO
    assert "queue depth 1: not judged" in found.message
    assert found.evidence["queue_depth"] == 1


def test_deep_queue_read_under_three_quarters_is_a_fault() -> None:
    slow = v.disk_datasheet_verdict("/data", 3000.0, SN850X, queue_depth=32)
    assert slow is not None and slow.severity is Severity.WARNING
    assert "41% of the WD_BLACK SN850X 2TB's 7300 MB/s" in slow.message  # 3000/7300 = 41%
    assert v.disk_datasheet_verdict("/data", 6900.0, SN850X, queue_depth=32) is None
    # depth 8 (the threaded read) counts as comparable: CrystalDiskMark's SEQ1M Q8T1
    assert v.disk_datasheet_verdict("/data", 6900.0, SN850X, queue_depth=8) is None


def test_judge_calls_a_healthy_nvme_fine_when_only_qd1_was_measured() -> None:
    result = scenario_result("laptop_without_gpu", disks=(_nvme(2100.0, None, None),))
    found = judge(result, CATALOG, {}, feed=lambda doc, cat: None)
    disk = [f for f in found if f.evidence.get("disk") == "/data"]
    assert [f.severity for f in disk] == [Severity.INFO]


def test_judge_uses_the_deep_figure_when_there_is_one() -> None:
    healthy = scenario_result("laptop_without_gpu", disks=(_nvme(2100.0, 6900.0, 32),))
    found = judge(healthy, CATALOG, {}, feed=lambda doc, cat: None)
    assert not [f for f in found if f.evidence.get("disk") == "/data"]
    slow = scenario_result("laptop_without_gpu", disks=(_nvme(2100.0, 3000.0, 32),))
    found = judge(slow, CATALOG, {}, feed=lambda doc, cat: None)
    warned = [f for f in found if f.severity is Severity.WARNING]
    assert len(warned) == 1 and warned[0].evidence["queue_depth"] == 32
