"""Parsing /proc and /sys: recorded text in, CPU topology, caches and disk kinds out."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlrig.enums import StorageKind
from dlrig.hardware import host

# Two sockets of 2 cores with 2 threads each (8 logical CPUs), in /proc/cpuinfo's layout.
_BLOCK = """processor\t: {p}
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Gold 6430
cpu MHz\t\t: 2100.000
physical id\t: {s}
core id\t\t: {c}
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16
"""
TWO_SOCKETS = "\n".join(_BLOCK.format(p=i, s=i // 4, c=(i // 2) % 2) for i in range(8))


def test_cpuinfo_counts_sockets_cores_threads_and_isa() -> None:
    model, sockets, cores, threads, mhz, flags = host.parse_cpuinfo(TWO_SOCKETS)
    assert model == "Intel(R) Xeon(R) Gold 6430"
    assert (sockets, cores, threads) == (2, 4, 8)
    assert mhz == 2100.0
    assert flags == ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")


def test_cpuinfo_of_nothing_is_unknown() -> None:
    assert host.parse_cpuinfo("") == (None, None, None, 0, None, ())


@pytest.mark.parametrize(
    ("text", "size"), [("491520K", 491520 * 1024), ("32M", 32 * 2**20), ("512", 512), ("x", None)]
)
def test_cache_size_units(text: str, size: int | None) -> None:
    assert host.parse_cache_size(text) == size


@pytest.mark.parametrize(
    ("name", "rotational", "kind"),
    [
        ("nvme0n1", False, StorageKind.NVME),
        ("sda", True, StorageKind.HDD),
        ("sdb", False, StorageKind.SATA_SSD),
        ("vda", True, None),  # virtio: the flag describes nothing physical
        ("sdc", None, None),
    ],
)
def test_disk_kind_from_name_and_rotational_flag(
    name: str, rotational: bool | None, kind: StorageKind | None
) -> None:
    assert host.classify_disk(name, rotational) is kind


def _fake_sys(root: Path) -> Path:
    disk = root / "block" / "sda"
    (disk / "queue").mkdir(parents=True)
    (disk / "queue" / "rotational").write_text("1\n")
    (disk / "size").write_text("7814037168\n")  # 512-byte sectors of an 4 TB drive
    (disk / "device").mkdir()
    (disk / "device" / "model").write_text("ST4000DM004-2CV1\n")
    (disk / "sda1").mkdir()
    (root / "class" / "block").mkdir(parents=True)
    (root / "class" / "block" / "sda1").symlink_to(disk / "sda1")
    return root


def test_partition_resolves_to_its_disk(tmp_path: Path) -> None:
    sys_root = _fake_sys(tmp_path / "sys")
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "sda1").touch()
    assert host.disk_of_device(str(dev / "sda1"), sys_root) is None  # not under /dev
    assert host.disk_of_device("/dev/sda1", sys_root) == "sda"
    disk = host.read_block_device("sda", sys_root)
    assert disk.kind is StorageKind.HDD
    assert disk.size_bytes == 7814037168 * 512
    assert disk.model == "ST4000DM004-2CV1"


def test_filesystem_of_takes_the_longest_mountpoint() -> None:
    root = host.Filesystem("/", "/dev/vda", "ext4", 10, 5, None)
    data = host.Filesystem("/data", "/dev/sdb1", "xfs", 10, 5, None)
    assert host.filesystem_of(Path("/data/imagenet"), (root, data)) is data
    assert host.filesystem_of(Path("/database"), (root, data)) is root


def test_this_machine_reads_without_errors() -> None:
    cpu = host.read_cpu()
    assert cpu.threads is not None and cpu.threads >= 1
    memory = host.read_memory()
    assert memory.total_bytes is not None and memory.total_bytes > 0
    assert isinstance(host.read_filesystems(), tuple)


def test_missing_proc_and_sys_give_unknowns(tmp_path: Path) -> None:
    cpu = host.read_cpu(tmp_path / "proc", tmp_path / "sys")
    assert (cpu.model, cpu.sockets, cpu.numa_nodes, cpu.llc_bytes) == (None, None, None, None)
