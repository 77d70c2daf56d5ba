"""What a training job reads from disk: the feed rate DISK.3 compares a measured disk against.

The job's samples per second come from the performance model (`dlrig.model.estimate`) run with
a disk that never limits: the rate the GPUs (and the CPU's preprocessing) would consume if the
disk kept up; the model's assumptions (a CPU it had to assume, say) travel with the figure.
Pure: a build document and a workload in, MB/s out.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from dlrig.catalog.loader import Catalog
from dlrig.errors import DlrigError
from dlrig.units import bytes_s_to_mb_s

REFERENCE_WORKLOAD = "resnet50"
REFERENCE_GPU = "GeForce RTX 4090"
REFERENCE_GPU_COUNT = 4
"""The job a disk is judged by on a machine without GPUs: the guide's 4-GPU workstation."""

_FAST_DISK_MB_S = 1e6  # a disk that never limits: the model then shows the other stages


@dataclass(frozen=True)
class FeedNeed:
    """The read rate a job needs, and the job in words ("a 4-GPU ResNet-50 job")."""

    job: str
    need_mb_s: float
    samples_per_s: float
    assumptions: tuple[str, ...] = ()


def feed_need(
    build_doc: dict[str, Any], catalog: Catalog, workload_ref: str = REFERENCE_WORKLOAD
) -> FeedNeed | None:
    """MB/s the workload reads on this build with an infinitely fast disk; None when the model
    cannot say (no dataset on disk, the build unresolvable)."""
    from dlrig.machine import resolve_build
    from dlrig.model import estimate
    from dlrig.workloads import load_workload

    doc = copy.deepcopy(build_doc)
    gpu_count = sum(int(g.get("count", 1)) for g in doc.get("gpus", []) if isinstance(g, dict))
    if gpu_count == 0:
        doc["gpus"] = [{"model": REFERENCE_GPU, "count": REFERENCE_GPU_COUNT}]
        gpu_count = REFERENCE_GPU_COUNT
        on = f" on {REFERENCE_GPU}s"
    else:
        on = ""
    doc["storage"] = [{"kind": "nvme", "capacity_tb": 100, "read_mb_s": _FAST_DISK_MB_S}]
    try:
        workload = load_workload(workload_ref)
        if workload.dataset is None:
            return None
        build = resolve_build(doc, "probe", catalog)
        result = estimate(build, workload)
    except DlrigError:
        return None
    # The disk above never limits, so the step time is what the rest of the machine allows.
    if result.step_time_s <= 0:
        return None
    samples_per_s = result.batch_per_gpu * result.gpus / result.step_time_s
    need = bytes_s_to_mb_s(samples_per_s * workload.dataset.bytes_per_sample)
    label = _pretty(workload.name)
    return FeedNeed(
        f"a {gpu_count}-GPU {label} job{on}", need, samples_per_s, tuple(result.assumptions)
    )


def _pretty(name: str) -> str:
    return {"resnet50": "ResNet-50", "resnet152": "ResNet-152"}.get(name, name)
