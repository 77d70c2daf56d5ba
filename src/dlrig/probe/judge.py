"""All verdicts on one probe, in report order. Pure: a ProbeResult, the catalog and the probe's
build document in, verdicts out (the rules themselves are in probe/verdicts.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlrig.catalog.loader import Catalog
from dlrig.probe import verdicts as v
from dlrig.probe.feed import FeedNeed, feed_need
from dlrig.probe.match import match_gpu, match_storage
from dlrig.probe.result import GpuProbe, ProbeResult

FeedFunction = Callable[[dict[str, Any], Catalog], FeedNeed | None]
"""What a job reads from disk on this build; a parameter so that tests can pin the need."""


def _gpu_verdicts(gpu: GpuProbe, catalog: Catalog) -> list[v.Verdict | None]:
    part = match_gpu(catalog, gpu.reading.name)
    link = gpu.link_reading
    out: list[v.Verdict | None] = [
        v.lost_gpu_verdict(gpu.reading),
        v.pcie_link_verdict(link, v.is_loaded(link, gpu.loaded is not None)),
        v.thermal_verdict(link),
        v.power_cap_verdict(link),
        v.power_limit_verdict(gpu.reading, part),
        v.unsupported_verdict(gpu.reading),
    ]
    if gpu.torch is not None:
        t = gpu.torch
        out.extend(v.matmul_verdict(gpu.index, m, part) for m in t.matmul)
        out.append(
            v.bandwidth_verdict(
                gpu.index,
                "device memory copy",
                t.device_memory_gb_s,
                part.memory_bandwidth_gb_s if part else None,
            )
        )
        out.append(
            v.bandwidth_verdict(
                gpu.index,
                "pinned host-to-device copy",
                t.h2d_pinned_gb_s,
                v.h2d_reference_gb_s(gpu.reading),
            )
        )
    return out


def judge(
    result: ProbeResult,
    catalog: Catalog,
    build_doc: dict[str, Any],
    feed: FeedFunction = feed_need,
) -> tuple[v.Verdict, ...]:
    """Every verdict on the probe: GPUs first (faults matter most), then disks, then NVML."""
    found: list[v.Verdict | None] = []
    for gpu in result.gpus:
        found.extend(_gpu_verdicts(gpu, catalog))
    need = feed(build_doc, catalog) if any(d.speed for d in result.disks) else None
    for disk in result.disks:
        if disk.speed is None:
            continue
        label = disk.filesystem.mountpoint
        model = disk.filesystem.disk.model if disk.filesystem.disk else None
        speed = disk.speed
        found.append(
            v.disk_datasheet_verdict(
                label, speed.read_mb_s, match_storage(catalog, model), speed.read_queue_depth
            )
        )
        if need is not None:
            # A loader's workers keep several reads in flight: the deep-queue figure feeds it.
            found.append(
                v.disk_feed_verdict(
                    label, speed.read_mb_s, need.need_mb_s, need.job, need.assumptions
                )
            )
    found.append(v.nvml_verdict(result.nvml, result.cuda))
    return tuple(x for x in found if x is not None)
