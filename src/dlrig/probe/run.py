"""MEASURING (touches the machine): run every probe stage in order and collect a ProbeResult.

Each stage catches what the hardware may refuse (a disk without a writable directory, no NVML,
no CUDA) and records it in `notes`, so a missing piece never stops the probe. The NVML backend
is passed in (the real one, or a replay in tests); progress is reported through a callback so
the command can draw bars while this module prints nothing.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dlrig.catalog.loader import Catalog
from dlrig.errors import HardwareError, InputFileError
from dlrig.hardware import host, torch_cuda
from dlrig.hardware.disk import measure_disk
from dlrig.hardware.nvml import GpuReading, NvmlBackend
from dlrig.probe.match import match_gpu
from dlrig.probe.measure_loader import logical_cpus, measure_loader, worker_counts
from dlrig.probe.measure_memory import (
    MemoryBandwidth,
    measure_memory_bandwidth,
    stream_array_bytes,
)
from dlrig.probe.result import DiskProbe, GpuProbe, ProbeResult
from dlrig.units import MIB

_MIB = MIB

Progress = Callable[[str], None]
"""Called with each stage's label as it starts ("memory bandwidth", "disk /", ...)."""


@dataclass(frozen=True)
class ProbeOptions:
    """What to measure and how hard. `quick` keeps the whole probe under 20 s on 2 cores."""

    quick: bool = False
    paths: tuple[Path, ...] = ()
    torch: bool = True
    disk_bytes: int | None = None
    memory_array_bytes: int | None = None
    loader_window_s: float | None = None
    nccl_p2p_disabled: bool = False

    @property
    def disk_file_bytes(self) -> int:
        """The probe file's size: 256 MiB quick, 1 GiB full (bounded by free space later)."""
        return self.disk_bytes or (256 if self.quick else 1024) * _MIB

    @property
    def disk_time_limit_s(self) -> float:
        """Each disk phase stops after this long, whatever the size read."""
        return 3.0 if self.quick else 10.0


def _writable_dir(fs: host.Filesystem, candidates: tuple[Path, ...]) -> Path | None:
    """A directory on fs where the probe may create its temp dir (tmp, home, cwd, the mount)."""
    for directory in (*candidates, Path(fs.mountpoint)):
        on_fs = host.filesystem_of(directory, (fs,)) is fs
        if on_fs and directory.is_dir() and os.access(directory, os.W_OK | os.X_OK):
            return directory
    return None


def disk_targets(
    filesystems: tuple[host.Filesystem, ...], options: ProbeOptions
) -> list[tuple[host.Filesystem, Path | None]]:
    """Which filesystems to measure, each with the directory to measure in (None: none found).

    With --path: those paths' filesystems, in those paths. Quick: the filesystem of the current
    directory. Full: every data filesystem.
    """
    if options.paths:
        targets: list[tuple[host.Filesystem, Path | None]] = []
        for path in options.paths:
            if not path.is_dir():
                raise InputFileError(f"--path {path}: not a directory")
            fs = host.filesystem_of(path, filesystems)
            if fs is None:
                raise HardwareError(f"{path} is on no filesystem dlrig can measure")
            targets.append((fs, path))
        return targets
    candidates = (Path(tempfile.gettempdir()), Path.home(), Path.cwd())
    chosen = filesystems
    if options.quick:
        here = host.filesystem_of(Path.cwd(), filesystems)
        chosen = (here,) if here else filesystems[:1]
    return [(fs, _writable_dir(fs, candidates)) for fs in chosen]


def _memory_stage(
    cpu: host.CpuInfo, mem: host.MemoryInfo, options: ProbeOptions
) -> tuple[MemoryBandwidth, ...]:
    size = options.memory_array_bytes or stream_array_bytes(
        cpu.llc_bytes, mem.available_bytes, options.quick
    )
    threads = logical_cpus()
    counts = (threads,) if options.quick or threads == 1 else (1, threads)
    repeats = 3 if options.quick else 5
    return tuple(measure_memory_bandwidth(size, t, repeats) for t in counts)


def _reader(nvml: NvmlBackend, index: int) -> Callable[[], GpuReading]:
    return lambda: nvml.read_gpu(index)


def _gpu_stage(
    nvml: NvmlBackend, catalog: Catalog, options: ProbeOptions, notes: list[str], progress: Progress
) -> tuple[tuple[GpuProbe, ...], torch_cuda.CudaStatus, tuple[tuple[float | None, ...], ...]]:
    readings = nvml.read_gpus()
    cuda = (
        torch_cuda.cuda_status()
        if options.torch
        else torch_cuda.CudaStatus(False, "torch measurements not asked for", None, None, 0)
    )
    if not cuda.available:
        notes.append(f"no torch GPU measurements: {cuda.reason}")
    report = torch_cuda.TorchCudaReport(cuda)
    if cuda.available:
        progress("GPU bandwidth and matmul (torch)")
        report = torch_cuda.measure_all(quick=options.quick)
    by_index = {g.index: g for g in report.gpus}
    probes = []
    for reading in readings:
        loaded: GpuReading | None = None
        # torch and NVML number GPUs alike only under CUDA_DEVICE_ORDER=PCI_BUS_ID; matching by
        # index is right on the common single-type box and is stated as an assumption otherwise.
        if cuda.available and not reading.lost and reading.index < cuda.device_count:
            loaded = torch_cuda.read_while_busy(reading.index, _reader(nvml, reading.index))
        part = match_gpu(catalog, reading.name)
        probes.append(
            GpuProbe(
                reading=reading,
                loaded=loaded,
                torch=by_index.get(reading.index),
                catalog_name=part.name if part else None,
            )
        )
    if cuda.available and cuda.device_count != len(readings):
        notes.append(
            f"torch sees {cuda.device_count} GPUs, NVML {len(readings)}: CUDA_VISIBLE_DEVICES "
            "narrows torch; GPUs matched by index"
        )
    return tuple(probes), cuda, report.p2p_gb_s


def run_probe(
    options: ProbeOptions,
    nvml: NvmlBackend,
    catalog: Catalog,
    progress: Progress = lambda _: None,
) -> ProbeResult:
    """Measure this machine: host, memory, disks, loader, GPUs. Never stops for a missing part."""
    began = time.perf_counter()
    stage_s: dict[str, float] = {}
    notes: list[str] = []

    def timed(label: str, start: float) -> None:
        stage_s[label] = round(time.perf_counter() - start, 3)

    progress("CPU, RAM, filesystems")
    t = time.perf_counter()
    cpu = host.read_cpu()
    mem = host.read_memory()
    filesystems = host.read_filesystems()
    timed("host", t)

    progress("memory bandwidth")
    t = time.perf_counter()
    bandwidth = _memory_stage(cpu, mem, options)
    timed("memory", t)

    disks = []
    for fs, directory in disk_targets(filesystems, options):
        progress(f"disk {fs.mountpoint}")
        t = time.perf_counter()
        if directory is None:
            disks.append(DiskProbe(fs, None, "no writable directory on it"))
            notes.append(f"disk {fs.mountpoint}: not measured (no writable directory)")
            continue
        try:
            speed = measure_disk(
                directory,
                options.disk_file_bytes,
                options.disk_time_limit_s,
                1.0 if options.quick else 3.0,
            )
            disks.append(DiskProbe(fs, speed))
        except (HardwareError, OSError) as exc:
            disks.append(DiskProbe(fs, None, str(exc)))
            notes.append(f"disk {fs.mountpoint}: not measured ({exc})")
        timed(f"disk {fs.mountpoint}", t)

    progress("input pipeline workers")
    t = time.perf_counter()
    window = options.loader_window_s or (0.5 if options.quick else 1.5)
    loader = measure_loader(worker_counts(logical_cpus()), window)
    timed("loader", t)

    progress("GPUs (NVML)")
    t = time.perf_counter()
    system = nvml.system()
    if not system.available:
        notes.append(f"no NVML: {system.error}")
    gpus, cuda, p2p = _gpu_stage(nvml, catalog, options, notes, progress)
    topology = nvml.topology() if len(gpus) > 1 else ()
    if options.nccl_p2p_disabled and len(gpus) > 1:
        notes.append(
            "NCCL_P2P_DISABLE is set here: NCCL sends every collective of the jobs started "
            "from this environment through host memory, NVLink included, so the build records "
            "no peer-to-peer; unset it unless it works around a hang"
        )
    timed("gpus", t)

    return ProbeResult(
        host=socket.gethostname(),
        time_utc=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        quick=options.quick,
        cpu=cpu,
        memory=mem,
        memory_bandwidth=bandwidth,
        disks=tuple(disks),
        loader=loader,
        nvml=system,
        gpus=gpus,
        topology=topology,
        cuda=cuda,
        p2p_gb_s=p2p,
        nccl_p2p_disabled=options.nccl_p2p_disabled,
        notes=tuple(notes),
        stage_s=stage_s,
        elapsed_s=round(time.perf_counter() - began, 3),
    )
