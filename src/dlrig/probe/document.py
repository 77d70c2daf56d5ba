"""The probed machine as a build file (design.md's format), so that `check`, `estimate` and
`upgrade` take `probe:latest`. Pure: a ProbeResult and the catalog in, a plain dict out
(resolved by the build loader, then written by `dlrig.machine.document.build_to_document`).

Parts the catalog knows are named; the others are inline specs of what was measured. A part
the probe cannot see (PSU, case, motherboard) is left out, as a build file allows, and every
guess (a virtual disk's kind) is stated in `assumptions`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from dlrig.catalog.loader import Catalog
from dlrig.enums import Precision, StorageKind
from dlrig.hardware.host import CpuInfo
from dlrig.machine import resolve_build
from dlrig.machine.document import build_to_document
from dlrig.probe.match import match_cpu, match_gpu, match_storage
from dlrig.probe.result import DiskProbe, GpuProbe, ProbeResult
from dlrig.units import bytes_to_gib, bytes_to_tb

# A virtual disk (virtio, Xen) hides the device's kind; its measured rate then decides, at the
# rates that separate the kinds in the catalog: HDDs read under ~300 MB/s, SATA under ~600.
_HDD_MAX_MB_S = 300.0
_SATA_MAX_MB_S = 600.0


def inferred_kind(read_mb_s: float) -> StorageKind:
    """A disk's kind from its measured sequential read, for disks that hide it."""
    if read_mb_s <= _HDD_MAX_MB_S:
        return StorageKind.HDD
    if read_mb_s <= _SATA_MAX_MB_S:
        return StorageKind.SATA_SSD
    return StorageKind.NVME


def _gpu_entries(gpus: tuple[GpuProbe, ...], catalog: Catalog, assumed: list[str]) -> list[Any]:
    groups: Counter[tuple[str, int | None, int | None]] = Counter()
    inline: list[dict[str, Any]] = []
    for gpu in gpus:
        r = gpu.reading
        if r.lost:
            assumed.append(f"GPU {r.index} is lost: left out of the build")
            continue
        part = match_gpu(catalog, r.name)
        if part is not None:
            gen = r.pcie_gen_max if r.pcie_gen_max and r.pcie_gen_max < part.pcie_gen else None
            lanes = (
                r.pcie_width_max
                if r.pcie_width_max and r.pcie_width_max < part.pcie_lanes
                else None
            )
            groups[(part.name, gen, lanes)] += 1
            continue
        spec = _inline_gpu(gpu)
        if spec is None:
            assumed.append(f"GPU {r.index} ({r.name}) is not in the catalog and was not measured")
        else:
            inline.append({"spec": spec})
            assumed.append(f"GPU {r.index} ({r.name}) is not in the catalog: inline measured spec")
    entries: list[Any] = []
    for (name, gen, lanes), count in groups.items():
        entry: dict[str, Any] = {"model": name, "count": count}
        if gen or lanes:
            entry["pcie"] = {k: v for k, v in (("gen", gen), ("lanes", lanes)) if v}
        entries.append(entry)
    return entries + inline


def _inline_gpu(gpu: GpuProbe) -> dict[str, Any] | None:
    r, t = gpu.reading, gpu.torch
    if t is None or r.memory_total_gb is None or r.power_limit_w is None:
        return None
    fp32 = next((m.tflops for m in t.matmul if m.precision is Precision.FP32 and m.tflops), None)
    if fp32 is None or t.device_memory_gb_s is None:
        return None
    spec: dict[str, Any] = {
        "name": r.name or f"GPU {r.index}",
        "memory_gb": round(r.memory_total_gb, 1),
        "memory_bandwidth_gb_s": round(t.device_memory_gb_s, 1),
        "fp32_tflops": round(fp32, 1),
        "tdp_w": round(r.power_limit_w),
    }
    if r.pcie_gen_max:
        spec["pcie_gen"] = r.pcie_gen_max
    if r.pcie_width_max:
        spec["pcie_lanes"] = r.pcie_width_max
    return spec


def _storage_entry(disk: DiskProbe, catalog: Catalog, assumed: list[str]) -> dict[str, Any] | None:
    fs, speed = disk.filesystem, disk.speed
    if speed is None:
        return None
    block = fs.disk
    part = match_storage(catalog, block.model if block else None)
    if part is not None:
        return {"model": part.name}
    kind = block.kind if block and block.kind else None
    if kind is None:
        kind = inferred_kind(speed.read_mb_s)
        assumed.append(
            f"{fs.device} hides its kind (virtual disk): taken as {kind.value} from its measured "
            f"{speed.read_mb_s:.0f} MB/s (queue depth {speed.read_queue_depth})"
        )
    capacity_bytes = block.size_bytes if block and block.size_bytes else fs.total_bytes
    label = block.model if block and block.model else fs.device
    return {
        "name": f"{label} ({fs.mountpoint})",
        "kind": kind.value,
        "capacity_tb": round(bytes_to_tb(capacity_bytes), 3),
        "read_mb_s": round(speed.read_mb_s, 1),
    }


def host_pcie_gen(gpus: tuple[GpuProbe, ...]) -> int | None:
    """The PCIe generation the host's root ports reach, read through its GPUs: NVML's maximum
    link generation is "possible with this device and system" (nvmlDeviceGetMaxPcieLinkGeneration),
    the lower of the card's and the host's, so a card that reads Gen5 sits on a Gen5 port."""
    gens = [g.reading.pcie_gen_max for g in gpus if g.reading.pcie_gen_max and not g.reading.lost]
    return max(gens) if gens else None


def _inline_cpu(cpu: CpuInfo, pcie_gen: int | None) -> dict[str, Any]:
    """A partial inline CPU spec (one socket's share) from what the host reports, and the PCIe
    generation its GPUs' links show (host_pcie_gen)."""
    sockets = cpu.sockets or 1
    spec: dict[str, Any] = {"name": cpu.model}
    if pcie_gen:
        spec["pcie_gen"] = pcie_gen
    if cpu.cores:
        spec["cores"] = max(1, cpu.cores // sockets)
    if cpu.threads:
        spec["threads"] = max(1, cpu.threads // sockets)
    if cpu.base_mhz:
        spec["base_ghz"] = round(cpu.base_mhz / 1e3, 2)
    if cpu.max_mhz:
        spec["boost_ghz"] = round(cpu.max_mhz / 1e3, 2)
    entry: dict[str, Any] = {"spec": spec}
    if sockets > 1:
        entry["count"] = sockets
    return entry


def _gpu_name(gpu: GpuProbe, catalog: Catalog) -> str | None:
    """The name the build gives this GPU: its catalog part's, or its inline spec's."""
    part = match_gpu(catalog, gpu.reading.name)
    if part is not None:
        return part.name
    spec = _inline_gpu(gpu)
    return str(spec["name"]) if spec is not None else None


def _measured_gpu(gpu: GpuProbe, catalog: Catalog) -> dict[str, Any] | None:
    t, name = gpu.torch, _gpu_name(gpu, catalog)
    if t is None or name is None or gpu.reading.lost:
        return None
    entry: dict[str, Any] = {"model": name, "index": gpu.index}
    matmul = {m.precision.value: round(m.tflops, 2) for m in t.matmul if m.tflops}
    if matmul:
        entry["matmul_tflops"] = matmul
    for key, value in (
        ("memory_bandwidth_gb_s", t.device_memory_gb_s),
        ("h2d_pinned_gb_s", t.h2d_pinned_gb_s),
        ("h2d_pageable_gb_s", t.h2d_pageable_gb_s),
    ):
        if value:
            entry[key] = round(value, 2)
    return entry if len(entry) > 2 else None


def _measured_block(
    result: ProbeResult, storage: list[tuple[DiskProbe, dict[str, Any]]], catalog: Catalog
) -> dict[str, Any]:
    """The `measured:` block: what this probe measured, in the build file's words."""
    block: dict[str, Any] = {
        "taken": result.time_utc,
        "source": f"dlrig probe{' --quick' if result.quick else ''} on {result.host}",
    }
    if result.memory_bandwidth:
        widest = max(result.memory_bandwidth, key=lambda b: b.threads)
        block["ram_bandwidth_gb_s"] = round(widest.triad_gb_s, 2)  # every thread, STREAM triad
    if result.loader is not None:
        block["loader_ms_per_sample_per_core"] = round(result.loader.ms_per_sample, 3)
    disks = []
    for disk, entry in storage:
        speed = disk.speed
        if speed is None:
            continue
        found: dict[str, Any] = {
            "model": entry.get("model") or entry["name"],
            "read_mb_s": round(speed.read_mb_s, 1),
            "read_queue_depth": speed.read_queue_depth,
        }
        if speed.cold_direct_mb_s is not None:
            found["read_mb_s_qd1"] = round(speed.cold_direct_mb_s, 1)
        disks.append(found)
    if disks:
        block["storage"] = disks
    gpus = [e for g in result.gpus if (e := _measured_gpu(g, catalog)) is not None]
    if gpus:
        block["gpus"] = gpus
    p2p = [x for row in result.p2p_gb_s for x in row if x]
    if p2p:
        block["p2p_gb_s"] = round(min(p2p), 2)  # a ring runs at its slowest link
    elif len(result.p2p_gb_s) > 1:
        block["peer_to_peer"] = False  # every pair off: NCCL stages every hop through the host
    if result.nccl_p2p_disabled and len(result.gpus) > 1:
        # The cards can reach their peers, NCCL is told not to: the rate stays as measured,
        # the jobs get none of it (Lambda's 2022 runs under NCCL_P2P_DISABLE=1: GNMT on two
        # NVSwitch-joined A100s kept 0.60 of its one-GPU rate a GPU).
        block["peer_to_peer"] = False
    return block


def probe_build_document(result: ProbeResult, catalog: Catalog) -> dict[str, Any]:
    """The build file of the probed machine (design.md), with `assumptions` beside it."""
    assumed: list[str] = []
    doc: dict[str, Any] = {"name": f"{result.host} (probed {result.time_utc})"}
    gpus = _gpu_entries(result.gpus, catalog, assumed)
    if gpus:
        doc["gpus"] = gpus
    cpu = match_cpu(catalog, result.cpu.model)
    if cpu is not None:
        doc["cpu"] = (
            cpu.name
            if (result.cpu.sockets or 1) == 1
            else {
                "model": cpu.name,
                "count": result.cpu.sockets,
            }
        )
    elif result.cpu.model:
        pcie_gen = host_pcie_gen(result.gpus)
        doc["cpu"] = _inline_cpu(result.cpu, pcie_gen)
        read = f", and its PCIe Gen{pcie_gen} as its GPUs' links read" if pcie_gen else ""
        assumed.append(
            f"CPU '{result.cpu.model}' is not in the catalog: an inline spec of what /proc "
            f"gives (cores, threads, clocks){read}; its PCIe lanes, memory channels, TDP and "
            "socket are unknown, and the rules that need them say so"
        )
    if result.memory.total_bytes:
        doc["memory"] = {"size_gb": round(bytes_to_gib(result.memory.total_bytes), 1)}
    measured_disks = [
        (d, e) for d in result.disks if (e := _storage_entry(d, catalog, assumed)) is not None
    ]
    if measured_disks:
        doc["storage"] = [e for _, e in measured_disks]
    doc["measured"] = _measured_block(result, measured_disks, catalog)
    assumed.append("PSU, case and motherboard cannot be probed: left out")
    # Through the build loader and back: the document is validated, and written the way every
    # other dlrig document is (H3's build_to_document), so probe:latest reads like a build file.
    build = resolve_build(doc, "probe", catalog)
    return {"build": build_to_document(build, catalog), "assumptions": assumed}
