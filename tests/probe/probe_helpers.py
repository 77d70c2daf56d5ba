"""Builders of probe results from NVML scenarios, for the probe tests (no measuring)."""

from __future__ import annotations

from dataclasses import replace

from dlrig.hardware.disk import DiskSpeed
from dlrig.hardware.host import BlockDevice, CpuInfo, Filesystem, MemoryInfo
from dlrig.hardware.torch_cuda import CudaStatus
from dlrig.probe.result import DiskProbe, GpuProbe, ProbeResult
from support.nvml_fakes import replay_nvml

CPU = CpuInfo(
    "AMD Ryzen Threadripper 7960X 24-Cores",
    1,
    24,
    48,
    4200.0,
    5300.0,
    1,
    ("avx2", "avx512f"),
    128 * 2**20,
)
MEMORY = MemoryInfo(128 * 2**30, 120 * 2**30)  # 128 GiB of RAM (dlrig.units)


def disk(read_mb_s: float, kind_name: str = "sda", rotational: bool | None = True) -> DiskProbe:
    """A measured disk whose cold direct read is read_mb_s."""
    from dlrig.hardware.host import classify_disk

    block = BlockDevice(
        kind_name,
        classify_disk(kind_name, rotational),
        rotational,
        kind_name.startswith("vd"),
        4 * 10**12,
        None,
    )
    fs = Filesystem("/data", f"/dev/{kind_name}1", "ext4", 4 * 10**12, 2 * 10**12, block)
    speed = DiskSpeed(
        "/data", 2**30, 150.0, read_mb_s, read_mb_s * 0.9, 8000.0, 300.0, True, 5.0, "test"
    )
    return DiskProbe(fs, speed)


def scenario_result(
    scenario: str, loaded: bool = False, disks: tuple[DiskProbe, ...] = ()
) -> ProbeResult:
    """A probe of a host with the scenario's GPUs; `loaded`: the readings count as under load."""
    backend = replay_nvml(scenario)
    readings = backend.read_gpus()
    gpus = tuple(GpuProbe(r, loaded=r if loaded and not r.lost else None) for r in readings)
    return ProbeResult(
        host="testbox",
        time_utc="2026-01-01T00:00:00+00:00",
        quick=True,
        cpu=CPU,
        memory=MEMORY,
        memory_bandwidth=(),
        disks=disks,
        loader=None,
        nvml=backend.system(),
        gpus=gpus,
        topology=backend.topology() if len(readings) > 1 else (),
        cuda=CudaStatus(False, "no CUDA: test", None, None, 0),
    )


__all__ = ["disk", "replace", "scenario_result"]
