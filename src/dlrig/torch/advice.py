"""The verdict of a timed training loop: which stage held it back and what to change.

Pure functions over the times `StepTimer` measured and the DataLoader settings it read; no torch
import, so the reasoning is tested without a model. Stage names are the one vocabulary
(`dlrig.enums.Bottleneck`); the advice cites the guide's rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dlrig.enums import Bottleneck

# A loader that waits while its CPUs are under half busy is mostly waiting on reads (I/O), not
# preprocessing: half a core per loading process splits the two cases with a wide margin on
# both sides (a CPU-bound worker measures ~1.0, one blocked on a disk well under 0.2).
CPU_BOUND_LOADER_BUSY = 0.5

# A stage that takes more than this share of the loop is worth a line of advice even when it is
# not the bottleneck (DISK.2: 5-10% lost to synchronous loading is already "noticeable").
NOTABLE_SHARE = 0.10


@dataclass(frozen=True)
class LoaderSettings:
    """The DataLoader settings that decide whether loading overlaps the step (DISK.2, PCIE.1)."""

    num_workers: int
    pin_memory: bool
    prefetch_factor: int | None
    persistent_workers: bool
    batch_size: int | None = None


@dataclass(frozen=True)
class StepVerdict:
    """The bottleneck of a loop, the share of each stage and the advice, most useful first."""

    bottleneck: Bottleneck
    shares: dict[str, float]
    advice: tuple[str, ...] = field(default_factory=tuple)


def stage_shares(data_wait_s: float, h2d_s: float, compute_s: float) -> dict[str, float]:
    """Each measured stage's share of the loop time (0 when nothing was measured)."""
    total_s = data_wait_s + h2d_s + compute_s
    if total_s <= 0:
        return {"data_wait": 0.0, "h2d": 0.0, "compute": 0.0}
    return {
        "data_wait": data_wait_s / total_s,
        "h2d": h2d_s / total_s,
        "compute": compute_s / total_s,
    }


def data_stage(loader_cpu_busy: float | None) -> Bottleneck:
    """Which stage a data wait belongs to: CPU preprocessing, or storage when the CPUs idle.

    Without a CPU reading, the wait is taken as preprocessing: that is the common case the guide
    describes (CPU.1: the CPU mostly preprocesses data).
    """
    if loader_cpu_busy is not None and loader_cpu_busy < CPU_BOUND_LOADER_BUSY:
        return Bottleneck.STORAGE
    return Bottleneck.CPU_PREPROCESSING


def judge_loop(
    *,
    data_wait_s: float,
    h2d_s: float,
    compute_s: float,
    loader: LoaderSettings | None,
    loader_cpu_busy: float | None,
    device_is_cpu: bool,
    cpu_count: int,
) -> StepVerdict:
    """The bottleneck is the stage that took the most time; advice follows from the settings.

    `loader_cpu_busy` is the loading processes' CPU use while the loop ran, in cores per loading
    process (1.0: each was always computing). `device_is_cpu`: no GPU ran the step, so the
    compute stage (still called `gpu_compute`) is the CPU.
    """
    shares = stage_shares(data_wait_s, h2d_s, compute_s)
    times = {
        data_stage(loader_cpu_busy): data_wait_s,
        Bottleneck.PCIE: h2d_s,
        Bottleneck.GPU_COMPUTE: compute_s,
    }
    bottleneck = max(times, key=lambda stage: times[stage])
    advice: list[str] = []
    if bottleneck is Bottleneck.GPU_COMPUTE:
        advice += _compute_advice(device_is_cpu)
    if bottleneck is Bottleneck.CPU_PREPROCESSING or (
        bottleneck is not Bottleneck.STORAGE
        and shares["data_wait"] > NOTABLE_SHARE
        and data_stage(loader_cpu_busy) is Bottleneck.CPU_PREPROCESSING
    ):
        advice += _cpu_advice(loader, cpu_count, shares["data_wait"])
    if bottleneck is Bottleneck.STORAGE or (
        shares["data_wait"] > NOTABLE_SHARE and data_stage(loader_cpu_busy) is Bottleneck.STORAGE
    ):
        advice += _storage_advice(loader, loader_cpu_busy)
    if not device_is_cpu and (bottleneck is Bottleneck.PCIE or shares["h2d"] > NOTABLE_SHARE):
        advice += _pcie_advice(loader)
    return StepVerdict(bottleneck=bottleneck, shares=shares, advice=tuple(advice))


def _compute_advice(device_is_cpu: bool) -> list[str]:
    if device_is_cpu:
        return [
            "the device computing is the CPU (no GPU ran the step): the input pipeline keeps "
            "up, so a GPU is what would speed this loop up"
        ]
    return [
        "the input pipeline keeps up and the GPU is the limit: train in bf16/fp16 on tensor "
        "cores (GPU.3) or use a faster GPU"
    ]


def _cpu_advice(loader: LoaderSettings | None, cpu_count: int, wait_share: float) -> list[str]:
    lines = [f"the step waits for data {wait_share:.0%} of the time, on CPU preprocessing"]
    if loader is None:
        lines.append(
            "load with a torch DataLoader with num_workers > 0 so that preprocessing runs in "
            "parallel with the step (CPU.1, DISK.2); pass it to StepTimer to get exact advice"
        )
        return lines
    if loader.num_workers == 0:
        suggested = max(2, min(cpu_count - 1, 8))
        lines.append(
            "DataLoader(num_workers=0) preprocesses in the training process, in series with the "
            f"step: set num_workers={suggested} (this host has {cpu_count} CPUs; CPU.1: at least "
            "4 threads, 2 cores, per GPU when preprocessing while training)"
        )
    elif loader.num_workers < cpu_count:
        lines.append(
            f"num_workers={loader.num_workers} of {cpu_count} CPUs: raise it towards "
            f"{min(cpu_count, 2 * loader.num_workers)} (CPU.1: each extra core per GPU helps "
            "when preprocessing online)"
        )
    else:
        lines.append(
            f"all {cpu_count} CPUs already preprocess (num_workers={loader.num_workers}): "
            "preprocess once before training and load the results (CPU.1 strategy 2), lighten "
            "the augmentation, or add CPU cores"
        )
    if loader.num_workers > 0 and not loader.persistent_workers:
        lines.append(
            "persistent_workers=False starts the workers again every epoch: set "
            "persistent_workers=True"
        )
    if loader.num_workers > 0 and loader.prefetch_factor is not None:
        lines.append(
            f"prefetch_factor={loader.prefetch_factor}: raise it to keep more batches ready "
            "when the wait comes in bursts (DISK.2: load several mini-batches ahead)"
        )
    return lines


def _storage_advice(loader: LoaderSettings | None, loader_cpu_busy: float | None) -> list[str]:
    busy = "" if loader_cpu_busy is None else f" (its CPUs {loader_cpu_busy:.0%} busy)"
    lines = [
        f"the loader waits on reads{busy}, not on preprocessing: move the dataset to an NVMe "
        "SSD or keep it in RAM (DISK.3: a 100-150 MB/s disk can starve a GPU)"
    ]
    if loader is None or loader.num_workers == 0:
        lines.append(
            "read asynchronously, several batches ahead: a DataLoader with num_workers > 0 "
            "overlaps the reads with the step (DISK.1, DISK.2)"
        )
    elif loader.prefetch_factor is not None:
        lines.append(
            f"more reads in flight hide the latency: num_workers={loader.num_workers}, "
            f"prefetch_factor={loader.prefetch_factor} can both go up (DISK.2)"
        )
    return lines


def _pcie_advice(loader: LoaderSettings | None) -> list[str]:
    lines = []
    if loader is None or not loader.pin_memory:
        lines.append(
            "pin_memory=True: pinned pages go to the GPU by DMA and the copy can overlap the "
            "step (PCIE.1, RAM.1)"
        )
    lines.append(
        "copy with .to(device, non_blocking=True) ahead of the step, e.g. dlrig.torch.Prefetcher "
        "(PCIE.1: with pinned memory and async loading the link costs ~0%)"
    )
    return lines


def loader_settings_of(loader: Any) -> LoaderSettings | None:
    """The settings of a torch DataLoader (duck-typed: any object with `num_workers`), or of
    the loader a wrapper such as `Prefetcher` holds in its `loader` attribute."""
    num_workers = getattr(loader, "num_workers", None)
    if not isinstance(num_workers, int):
        inner = getattr(loader, "loader", None)
        return None if inner is None or inner is loader else loader_settings_of(inner)
    prefetch = getattr(loader, "prefetch_factor", None)
    batch_size = getattr(loader, "batch_size", None)
    return LoaderSettings(
        num_workers=num_workers,
        pin_memory=bool(getattr(loader, "pin_memory", False)),
        # torch reports prefetch_factor even with num_workers=0, where it means nothing.
        prefetch_factor=prefetch if isinstance(prefetch, int) and num_workers > 0 else None,
        persistent_workers=bool(getattr(loader, "persistent_workers", False)),
        batch_size=batch_size if isinstance(batch_size, int) else None,
    )
