"""The host as Linux describes it: CPU (/proc/cpuinfo, /sys), RAM, filesystems and block devices,
and the scheduler's statistics of a task (/proc/PID/schedstat).

Every reader has a pure parser beside it (`parse_*` on text) so that the parsing is tested on
recorded text from any machine; the `read_*` functions only open the files. A file that is absent
(another OS, a container hiding /sys) gives None fields, never an exception.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from dlrig.enums import StorageKind
from dlrig.units import GIB, KIB, MIB, ns_to_s

ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "amx_bf16")
"""The ISA features that matter to deep learning on the CPU: wide vectors, bf16 and AMX tiles."""

_VIRTUAL_DISK_PREFIXES = ("vd", "xvd")  # virtio and Xen: the rotational flag says nothing


@dataclass(frozen=True)
class CpuInfo:
    """The CPU: model, topology, clocks, NUMA nodes, ISA features, last-level cache."""

    model: str | None
    sockets: int | None
    cores: int | None
    threads: int | None
    base_mhz: float | None
    max_mhz: float | None
    numa_nodes: int | None
    flags: tuple[str, ...]
    llc_bytes: int | None

    @property
    def avx512(self) -> bool:
        """AVX-512 foundation instructions present."""
        return "avx512f" in self.flags

    @property
    def amx(self) -> bool:
        """AMX tile instructions present (Sapphire Rapids and later)."""
        return "amx_tile" in self.flags


@dataclass(frozen=True)
class MemoryInfo:
    """RAM: total and available now, in bytes."""

    total_bytes: int | None
    available_bytes: int | None


@dataclass(frozen=True)
class BlockDevice:
    """A whole disk from /sys/block: its kind as the kernel tells it."""

    name: str
    kind: StorageKind | None
    rotational: bool | None
    virtual: bool
    size_bytes: int | None
    model: str | None


@dataclass(frozen=True)
class Filesystem:
    """A mounted filesystem the user's data could be on, and the disk under it."""

    mountpoint: str
    device: str
    fstype: str
    total_bytes: int
    free_bytes: int
    disk: BlockDevice | None


def parse_cpuinfo(
    text: str,
) -> tuple[str | None, int | None, int | None, int, float | None, tuple[str, ...]]:
    """/proc/cpuinfo -> (model, sockets, physical cores, logical CPUs, MHz now, ISA flags)."""
    model = None
    mhz = None
    flags: tuple[str, ...] = ()
    packages: set[str] = set()
    cores: set[tuple[str, str]] = set()
    threads = 0
    physical = "0"
    for block in text.strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if "processor" not in fields:
            continue
        threads += 1
        model = model or fields.get("model name") or fields.get("Processor")
        if mhz is None and "cpu MHz" in fields:
            mhz = float(fields["cpu MHz"])
        if not flags and "flags" in fields:
            present = set(fields["flags"].split())
            flags = tuple(f for f in ISA_FLAGS if f in present)
        physical = fields.get("physical id", physical)
        packages.add(physical)
        cores.add((physical, fields.get("core id", fields["processor"])))
    if threads == 0:
        return None, None, None, 0, None, ()
    return model, len(packages), len(cores), threads, mhz, flags


def parse_cache_size(text: str) -> int | None:
    """A /sys cache `size` ("491520K", "32M") in bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if match is None:
        return None
    scale = {"": 1, "K": KIB, "M": MIB, "G": GIB}[match.group(2)]
    return int(match.group(1)) * scale


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _llc_bytes(sys_cpu: Path) -> int | None:
    best_level, best_size = 0, None
    for index in sorted(sys_cpu.glob("cpu0/cache/index*")):
        level_text = _read(index / "level")
        size_text = _read(index / "size")
        if level_text is None or size_text is None:
            continue
        level = int(level_text.strip())
        if level >= best_level:
            best_level, best_size = level, parse_cache_size(size_text)
    return best_size


def _khz_file(path: Path) -> float | None:
    text = _read(path)
    return None if text is None else int(text.strip()) / 1000.0


def read_cpu(proc: Path = Path("/proc"), sys_root: Path = Path("/sys")) -> CpuInfo:
    """The host CPU from /proc/cpuinfo and /sys/devices/system (None where absent)."""
    sys_cpu = sys_root / "devices/system/cpu"
    text = _read(proc / "cpuinfo") or ""
    model, sockets, cores, threads, mhz, flags = parse_cpuinfo(text)
    max_mhz = _khz_file(sys_cpu / "cpu0/cpufreq/cpuinfo_max_freq")
    base_mhz = _khz_file(sys_cpu / "cpu0/cpufreq/base_frequency") or mhz
    nodes = sorted((sys_root / "devices/system/node").glob("node[0-9]*"))
    return CpuInfo(
        model=model,
        sockets=sockets,
        cores=cores,
        threads=threads or os.cpu_count(),
        base_mhz=base_mhz,
        max_mhz=max_mhz,
        numa_nodes=len(nodes) or None,
        flags=flags,
        llc_bytes=_llc_bytes(sys_cpu),
    )


def read_memory() -> MemoryInfo:
    """Total and available RAM through psutil."""
    import psutil

    vm = psutil.virtual_memory()
    return MemoryInfo(total_bytes=int(vm.total), available_bytes=int(vm.available))


def classify_disk(name: str, rotational: bool | None) -> StorageKind | None:
    """NVMe from the device name; otherwise the kernel's rotational flag (1 = HDD, 0 = SSD).

    A virtual disk (virtio `vd*`, Xen `xvd*`) gives None: its flag describes nothing physical.
    """
    if name.startswith("nvme"):
        return StorageKind.NVME
    if name.startswith(_VIRTUAL_DISK_PREFIXES) or rotational is None:
        return None
    return StorageKind.HDD if rotational else StorageKind.SATA_SSD


def read_block_device(name: str, sys_root: Path = Path("/sys")) -> BlockDevice:
    """A whole disk by its /sys/block name."""
    base = sys_root / "block" / name
    rot_text = _read(base / "queue/rotational")
    rotational = None if rot_text is None else rot_text.strip() == "1"
    size_text = _read(base / "size")  # in 512-byte sectors, whatever the device's sector size
    model = _read(base / "device/model")
    return BlockDevice(
        name=name,
        kind=classify_disk(name, rotational),
        rotational=rotational,
        virtual=name.startswith(_VIRTUAL_DISK_PREFIXES),
        size_bytes=None if size_text is None else int(size_text.strip()) * 512,
        model=model.strip() if model else None,
    )


def disk_of_device(device: str, sys_root: Path = Path("/sys")) -> str | None:
    """The /sys/block disk under a /dev node: a partition's parent, a dm/md device's first slave."""
    name = Path(os.path.realpath(device)).name if device.startswith("/dev/") else None
    if not name:
        return None
    for _ in range(4):  # dm-on-md-on-partition chains are short
        if (sys_root / "block" / name).is_dir():
            slaves = sorted((sys_root / "block" / name / "slaves").glob("*"))
            if not slaves:
                return name
            name = slaves[0].name
            continue
        part = sys_root / "class/block" / name
        if not part.exists():
            return None
        name = Path(os.path.realpath(part)).parent.name
    return name if (sys_root / "block" / name).is_dir() else None


_DATA_FSTYPES = frozenset(
    {
        "ext2",
        "ext3",
        "ext4",
        "xfs",
        "btrfs",
        "zfs",
        "f2fs",
        "nfs",
        "nfs4",
        "ntfs",
        "vfat",
        "exfat",
        "lustre",
        "gpfs",
        "cifs",
        "fuseblk",
    }
)


def read_filesystems(sys_root: Path = Path("/sys")) -> tuple[Filesystem, ...]:
    """Mounted filesystems that can hold datasets (no tmpfs, proc, overlay), with their disk."""
    import psutil

    seen: set[str] = set()
    result = []
    for part in psutil.disk_partitions(all=False):
        if part.fstype not in _DATA_FSTYPES or part.mountpoint in seen:
            continue
        seen.add(part.mountpoint)
        try:
            usage = psutil.disk_usage(part.mountpoint)
        except OSError:
            continue  # a mount we may not stat (permissions, a dead network share)
        disk_name = disk_of_device(part.device, sys_root)
        result.append(
            Filesystem(
                mountpoint=part.mountpoint,
                device=part.device,
                fstype=part.fstype,
                total_bytes=int(usage.total),
                free_bytes=int(usage.free),
                disk=read_block_device(disk_name, sys_root) if disk_name else None,
            )
        )
    return tuple(result)


def filesystem_of(path: Path, filesystems: tuple[Filesystem, ...]) -> Filesystem | None:
    """The filesystem a path lives on: the longest mountpoint that is a prefix of it."""
    resolved = str(path.resolve())
    best = None
    for fs in filesystems:
        mount = fs.mountpoint.rstrip("/") or "/"
        inside = resolved == mount or resolved.startswith(mount if mount == "/" else mount + "/")
        if inside and (best is None or len(mount) > len(best.mountpoint)):
            best = fs
    return best


# On a shared machine a process's CPU time alone undercounts how much it wants to compute: a busy
# loop that shares a core with another gets half of it. The scheduler's run-queue wait adds the
# time it was ready to run but waited, so `(on CPU + waiting) / wall` is the share of time it was
# computing or wanted to (1.0 for a busy loop, contended or not; near 0 for one blocked on I/O or
# a queue). Linux only (kernels with CONFIG_SCHED_INFO); None elsewhere.


def schedstat_s(pid: int, tid: int | None = None) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting) of a task: a process's main thread, or
    thread `tid` of it; None where the kernel does not say."""
    path = f"/proc/{pid}/schedstat" if tid is None else f"/proc/{pid}/task/{tid}/schedstat"
    try:
        with open(path, encoding="ascii") as fh:
            fields = fh.read().split()
    except OSError:
        return None
    if len(fields) < 2:
        return None
    return ns_to_s(int(fields[0])), ns_to_s(int(fields[1]))


def demand_s(pid: int, tid: int | None = None) -> float | None:
    """Seconds a task ran or was ready to run (see the comment above `schedstat_s`)."""
    stat = schedstat_s(pid, tid)
    return None if stat is None else stat[0] + stat[1]
