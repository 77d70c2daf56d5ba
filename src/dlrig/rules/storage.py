"""Storage rules: feed rate (DISK.1), asynchronous loading (DISK.2), hard disks (DISK.3),
capacity (DISK.4), the job's own files (DISK.job: weights and checkpoints) and the drive they
belong on (DISK.nvme), judged against the workload when one is given."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dlrig.enums import PreprocessingStrategy, StorageKind
from dlrig.machine.fit import dataset_fits, job_fits
from dlrig.rules.engine import Judgement, error, info, rule, unknown, warning
from dlrig.rules.facts import Facts
from dlrig.units import MB, s_to_ms, tb_to_gb

# DISK.4: "an SSD should hold the datasets you usually work with plus some tens of GB".
WORKING_SPACE_GB = 50.0
# DISK.job: checkpoint saves that stall training longer than this share of it waste the
# hardware as DISK.2's missing asynchronous loading does ("5-10%": its lower figure).
CHECKPOINT_SHARE_TOLERATED = 0.05


@dataclass(frozen=True)
class Feed:
    """One training step as the drive sees it: every GPU's mini-batch read from the dataset
    drive, against the least time the GPUs take to compute it (at the model's fitted matmul
    rate: memory-bound layers and overheads only make the GPUs slower, the disk's task easier).
    """

    samples_per_step: int
    bytes_per_step: float
    read_s: float
    compute_s: float
    read_mb_s: float
    cached: bool
    # of read_s, the drive's random accesses to files read in random order (DISK.1, small files)
    seek_s: float = 0.0

    @property
    def need_mb_s(self) -> float:
        """The read rate that keeps up with the GPUs."""
        return self.bytes_per_step / MB / self.compute_s

    @property
    def samples_per_s(self) -> float:
        return self.samples_per_step / self.compute_s

    @property
    def delivered_mb_s(self) -> float:
        """What the drive delivers of this dataset, its random accesses counted."""
        return self.bytes_per_step / MB / self.read_s if self.read_s > 0 else self.read_mb_s

    @property
    def too_slow(self) -> bool:
        """Reading a step's batches takes longer than computing them (DISK.1), and the data
        is not served from RAM."""
        return not self.cached and self.read_s > self.compute_s


def _feed(f: Facts) -> Feed | None:
    """The dataset drive against the GPUs' appetite; None without workload data."""
    w, drive = f.workload, f.build.dataset_storage
    if w is None or w.dataset is None or drive is None or not f.cards:
        return None
    from dlrig.model.calibration import default_calibration
    from dlrig.model.compute import training_flop_multiplier
    from dlrig.model.pipeline import (
        dataset_fits_page_cache,
        file_access_time_s,
        random_reads_per_s,
        storage_read_time_s,
    )
    from dlrig.model.rates import matmul_peak

    efficiency = default_calibration().matmul_efficiency
    flops_per_sample = training_flop_multiplier(w) * w.forward_flops_per_sample
    if flops_per_sample <= 0:
        return None
    # Data-parallel GPUs step together: the slowest card sets the step time.
    slowest_flop_s = min(
        peak * efficiency.get(path.value, 0.5)
        for peak, path, _ in (matmul_peak(c.gpu, w.precision) for c in f.cards)
    )
    compute_s = w.batch_size * flops_per_sample / slowest_flop_s
    samples = w.batch_size * f.n_gpus
    n_bytes = samples * w.dataset.bytes_per_sample
    read_mb_s = f.build.storage_read_mb_s(drive)  # the probe's figure when the build has one
    cached = f.ram_gb is not None and dataset_fits_page_cache(w.dataset.total_gb, f.ram_gb)
    # A run of more than one epoch reads the disk once when the dataset stays in RAM.
    cached = cached and (w.epochs is None or w.epochs > 1)
    measured = f.build.measured is not None and f.build.measured.disk(drive.device.name)
    # files read in random order each cost the drive an access (the model's own figure)
    seek_s = (
        0.0
        if measured
        else file_access_time_s(
            samples * w.dataset.files_per_sample, random_reads_per_s(drive.device)
        )
    )
    return Feed(
        samples_per_step=samples,
        bytes_per_step=n_bytes,
        read_s=storage_read_time_s(n_bytes, read_mb_s) + seek_s,
        compute_s=compute_s,
        read_mb_s=read_mb_s,
        cached=cached,
        seek_s=seek_s,
    )


def _mb_s(value: float) -> str:
    return f"{value:,.0f} MB/s" if value >= 10 else f"{value:.2g} MB/s"


@rule(
    "DISK.1",
    reads=(
        "storage.read_mb_s",
        "storage.kind",
    ),
)
def feed_rate(f: Facts) -> Iterator[Judgement]:
    """New mini-batches must arrive as fast as the GPUs finish them; 32 ImageNet images from a
    100 MB/s disk take 185 ms, hidden by ~200 ms of compute when loaded asynchronously."""
    if not f.cards:
        return
    w = f.workload
    if w is None:
        if f.build.storage:
            yield unknown("whether storage keeps the GPUs fed", "no workload given (--workload)")
        return
    if w.dataset is None:
        return  # synthetic inputs: no storage on the path
    feed = _feed(f)
    if feed is None:
        yield unknown("whether storage keeps the GPUs fed", "no storage given")
        return
    evidence = {
        "samples_per_step": feed.samples_per_step,
        "mb_per_step": round(feed.bytes_per_step / MB, 2),
        "read_ms_per_step": round(s_to_ms(feed.read_s), 1),
        "compute_ms_per_step_min": round(s_to_ms(feed.compute_s), 1),
        "need_mb_s": round(feed.need_mb_s, 1),
        "read_mb_s": feed.read_mb_s,
        "dataset_cached_in_ram": feed.cached,
    }
    seeks = (
        f", {s_to_ms(feed.seek_s):,.0f} ms of it reaching their files in random order"
        if feed.seek_s > 0
        else ""
    )
    what = (
        f"a step's {feed.samples_per_step:,} samples ({feed.bytes_per_step / MB:,.1f} MB) take "
        f"{s_to_ms(feed.read_s):,.1f} ms to read at {_mb_s(feed.read_mb_s)}{seeks}; the GPUs "
        f"compute them in >= {s_to_ms(feed.compute_s):,.1f} ms"
    )
    if feed.cached:
        yield info(what + ", and the dataset fits in RAM after the first epoch", evidence)
    elif feed.too_slow and f.build.dataset_storage is not None:
        kind = f.build.dataset_storage.device.kind
        if kind is not StorageKind.HDD:  # DISK.3 judges hard disks
            yield warning(what, evidence, "a faster NVMe drive, or more RAM to cache the dataset")
    else:
        yield info(what + ": enough", evidence)


@rule("DISK.2")
def async_loading(f: Facts) -> Iterator[Judgement]:
    """Load asynchronously, several mini-batches ahead; without it performance drops by a
    noticeable 5-10%."""
    w = f.workload
    if w is None or w.dataset is None or not f.cards:
        return
    if w.async_loading:
        return
    message = (
        f"{w.name} loads batches in the training loop (workers {w.loader_workers}, "
        f"prefetch {w.prefetch}): up to 5-10% slower"
    )
    evidence = {"loader_workers": w.loader_workers, "prefetch": w.prefetch}
    fix = "a DataLoader with num_workers > 0 and prefetch_factor >= 2"
    if w.preprocessing_strategy is PreprocessingStrategy.ONLINE:
        yield warning(message, evidence, fix)
    else:
        # Preprocessed batches (e.g. a memory-mapped token file) load in microseconds.
        yield info(message + " when loading is slow; preprocessed data loads fast", evidence, fix)


@rule(
    "DISK.3",
    reads=(
        "storage.read_mb_s",
        "storage.kind",
    ),
)
def hard_disk(f: Facts) -> Iterator[Judgement]:
    """A 100-150 MB/s hard disk can be too slow to feed a GPU when inputs are high-dimensional
    and compress poorly: then an SSD is required; otherwise an SSD is for comfort."""
    drive = f.build.dataset_storage
    if drive is None:
        if f.cards:
            yield unknown("the dataset drive", "no storage given")
        return
    if drive.device.kind is not StorageKind.HDD:
        return
    feed = _feed(f)
    evidence: dict[str, object] = {"read_mb_s": drive.device.read_mb_s}
    if feed is None:
        yield info(
            f"the data is on a {drive.device.read_mb_s:.0f} MB/s hard disk: fine for compact "
            "inputs, too slow for high-dimensional ones",
            evidence,
            "an NVMe SSD for the datasets in use (DISK.4)",
        )
        return
    evidence.update(
        need_mb_s=round(feed.need_mb_s, 1),
        dataset_cached_in_ram=feed.cached,
        delivered_mb_s=round(feed.delivered_mb_s, 2),
    )
    if feed.too_slow:
        small = (
            f" ({feed.delivered_mb_s:,.1f} MB/s of this dataset: its files are read in random "
            "order, each a seek)"
            if feed.seek_s > 0
            else ""
        )
        yield error(
            f"the GPUs can take {feed.need_mb_s:,.0f} MB/s; the hard disk reads "
            f"{feed.read_mb_s:,.0f} MB/s{small}: an SSD is required",
            evidence,
            "put the dataset on an NVMe SSD (or enough RAM to cache it)",
        )
    else:
        yield info(
            f"the hard disk's {feed.read_mb_s:,.0f} MB/s keeps up with "
            f"{feed.need_mb_s:,.0f} MB/s" + (" (dataset cached in RAM)" if feed.cached else ""),
            evidence,
        )


@rule("DISK.4", reads=("storage.capacity_tb",))
def capacity(f: Facts) -> Iterator[Judgement]:
    """An SSD should hold the datasets you usually work with plus some tens of GB; keep unused
    datasets on a cheap hard disk (>= 3 TB suggested for data)."""
    if not f.build.storage:
        return
    w = f.workload
    if w is None:
        yield unknown("whether the datasets fit", "no workload given (--workload)")
        return
    if w.dataset is None:
        return
    need_gb = w.dataset.total_gb + WORKING_SPACE_GB
    drive = f.build.dataset_storage
    largest = max(f.build.storage, key=lambda s: s.device.capacity_tb * s.count)
    evidence = {
        "dataset_gb": round(w.dataset.total_gb, 1),
        "needed_gb": round(need_gb, 1),
        "dataset_drive_gb": tb_to_gb(drive.device.capacity_tb * drive.count) if drive else None,
    }
    if not dataset_fits(largest.device.capacity_tb * largest.count, w.dataset.total_gb):
        yield error(
            f"the {w.dataset.total_gb:,.0f} GB dataset fits on no drive (largest "
            f"{largest.device.capacity_tb * largest.count:g} TB)",
            evidence,
            f"a drive of >= {need_gb / tb_to_gb(1):.1f} TB for the data",
        )
    elif drive is not None and not dataset_fits(drive.device.capacity_tb * drive.count, need_gb):
        yield warning(
            f"the dataset drive holds {drive.device.capacity_tb * drive.count:g} TB; the "
            f"{w.dataset.total_gb:,.0f} GB dataset plus {WORKING_SPACE_GB:.0f} GB of room need "
            f"{need_gb:,.0f} GB",
            evidence,
            "a larger SSD, or mark the drive that holds the data with holds_dataset: true",
        )
    else:
        yield info(f"the {w.dataset.total_gb:,.0f} GB dataset fits with room to spare", evidence)


@rule("DISK.nvme", reads=("storage.kind",), bar=True)
def job_on_nvme(f: Facts) -> Iterator[Judgement]:
    """The data in use, the weights and the checkpoints belong on a local NVMe drive, a hard
    disk only as bulk storage (Puget Systems: "use fast NVMe storage whenever possible", HDDs
    "for archival storage"; Stas Bekman: fast local disk for data and the last checkpoints)."""
    drive = f.build.dataset_storage
    if drive is None or not f.cards:
        return  # DISK.3 says what it cannot judge
    kind = drive.device.kind
    evidence = {"drive": drive.device.name, "kind": kind.value}
    if kind is StorageKind.NVME:
        yield info(f"the job's files are on an NVMe drive ({drive.device.name})", evidence)
        return
    what = "hard disk" if kind is StorageKind.HDD else "SATA SSD"
    yield warning(
        f"the job's data, weights and checkpoints are on a {what} ({drive.device.name}): "
        "workstation builders stage them on NVMe and keep hard disks for bulk storage",
        evidence,
        "an NVMe drive (2-4 TB) for the job; keep the "
        + ("hard disk" if kind is StorageKind.HDD else "SATA drive")
        + " for archives (holds_dataset: true on the NVMe)",
    )


@rule("DISK.job", reads=("storage.capacity_tb", "storage.write_mb_s"))
def job_files_fit(f: Facts) -> Iterator[Judgement]:
    """Extends DISK.4 (a drive should hold the data you work with plus some tens of GB) to the
    job's own files, the model's weights and the checkpoints a run keeps, and DISK.3 (a hard
    disk can be too slow) to writing those checkpoints."""
    w, drive = f.workload, f.build.dataset_storage
    if w is None or drive is None:
        return
    from dlrig.model.checkpoint import CHECKPOINT_EVERY_H, job_files, job_io

    files = job_files(w)
    data_gb = w.dataset.total_gb if w.dataset is not None else 0.0
    need_gb = data_gb + files.total_gb
    largest = max(f.build.storage, key=lambda s: s.device.capacity_tb * s.count)
    evidence: dict[str, object] = {
        "dataset_gb": round(data_gb, 1),
        "weights_gb": round(files.weights_gb, 1),
        "checkpoint_gb": round(files.checkpoint_gb, 1),
        "checkpoints_kept": files.kept,
        "needed_gb": round(need_gb, 1),
        "job_drive_gb": tb_to_gb(drive.device.capacity_tb * drive.count),
    }
    parts = f"the {data_gb:,.0f} GB dataset, {files.weights_gb:,.1f} GB of weights" + (
        f" and {files.kept} checkpoints of {files.checkpoint_gb:,.1f} GB" if files.kept else ""
    )
    if not job_fits(largest.device.capacity_tb * largest.count, data_gb, files.total_gb):
        yield error(
            f"{parts} need {need_gb:,.0f} GB: no drive holds them (largest "
            f"{largest.device.capacity_tb * largest.count:g} TB)",
            evidence,
            f"a drive of >= {(need_gb + WORKING_SPACE_GB) / tb_to_gb(1):.1f} TB for the job",
        )
        return
    if not job_fits(drive.device.capacity_tb * drive.count, data_gb, files.total_gb):
        yield warning(
            f"{parts} need {need_gb:,.0f} GB; the job's drive ({drive.device.name}) holds "
            f"{drive.device.capacity_tb * drive.count:g} TB",
            evidence,
            "mark the drive that holds the job with holds_dataset: true, or a larger drive",
        )
        return
    io = job_io(f.build, w, CHECKPOINT_EVERY_H)
    share = io.save_s / (CHECKPOINT_EVERY_H * 3600.0) if io is not None and files.kept else 0.0
    if io is not None and share > CHECKPOINT_SHARE_TOLERATED:
        evidence["save_s"] = round(io.save_s, 1)
        evidence["write_mb_s"] = io.write_mb_s
        yield warning(
            f"{parts} fit, but each checkpoint save takes {io.save_s / 60:,.1f} min at "
            f"{io.write_mb_s:,.0f} MB/s: {share:.0%} of the training time at one save an hour",
            evidence,
            "an SSD (NVMe) for the job's files",
        )
        return
    yield info(f"{parts} fit on {drive.device.name}", evidence)
