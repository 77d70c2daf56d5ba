"""The input pipeline: storage reads (DISK.1, DISK.3) and CPU preprocessing (CPU.1)."""

from __future__ import annotations

from dlrig.catalog.schema import Storage
from dlrig.enums import StorageKind
from dlrig.units import GB, gib_to_bytes, mb_s_to_bytes_s, ms_to_s

# Share of RAM the page cache may hold for the dataset; the rest serves the processes, pinned
# buffers and the OS (RAM.2 sizes RAM to the GPU memory, not to the dataset).
PAGE_CACHE_SHARE_OF_RAM = 0.7


def storage_read_time_s(n_bytes: float, read_mb_s: float) -> float:
    """Seconds to read n_bytes from a device at read_mb_s (DISK.1: 32 float32 ImageNet images,
    19.3 MB, from a 100 MB/s disk take ~0.19 s)."""
    return n_bytes / mb_s_to_bytes_s(read_mb_s)


# A file read in random order costs the drive one random access before its bytes stream. A
# 7,200 rpm hard disk "can perform at 75 to 100 IOPS" (Wikipedia, "IOPS", examples; quoted at
# https://snippets.cacher.io/snippet/6c2847be39143257ee4d, 2015): a seek and half a turn each,
# and SATA disks gain up to ~2x with deep queues (same article), so a loader's few requests in
# flight get the top of that range. An SSD's random reads at a loader's queue depth run at 1e5
# to 1e6 a second (Samsung 990 Pro: 1.4 M 4 KB reads a second at QD32, Samsung's datasheet):
# microseconds a file, left out.
HDD_RANDOM_READS_PER_S = 100.0


def random_reads_per_s(drive: Storage) -> float | None:
    """Files a second the drive opens at random: its catalog figure, else a hard disk's
    HDD_RANDOM_READS_PER_S; None for an SSD without one (its per-file cost is left out)."""
    if drive.random_read_iops is not None:
        return drive.random_read_iops
    return HDD_RANDOM_READS_PER_S if drive.kind is StorageKind.HDD else None


def file_access_time_s(files: float, reads_per_s: float | None) -> float:
    """Seconds the drive spends reaching `files` files read in random order (DISK.random: an
    ImageNet step of 256 JPEGs costs a hard disk 2.6 s of seeks before its 28 MB stream)."""
    if reads_per_s is None or files <= 0:
        return 0.0
    return files / reads_per_s


def dataset_fits_page_cache(dataset_gb: float, ram_gb: float) -> bool:
    """After the first epoch the dataset is read from RAM when it fits in the page cache: a
    dataset's files in decimal GB, RAM in GiB (dlrig.units)."""
    return dataset_gb * GB <= PAGE_CACHE_SHARE_OF_RAM * gib_to_bytes(ram_gb)


def amortized_storage_time_s(first_epoch_s: float, epochs: float, cached: bool) -> float:
    """Average storage time per step over a run: only the first epoch reads the disk when the
    dataset stays in the page cache."""
    if cached and epochs > 1:
        return first_epoch_s / epochs
    return first_epoch_s


def preprocessing_workers_per_gpu(
    loader_workers: int, cpu_cores: int, gpus: int, async_loading: bool
) -> float:
    """Cores that preprocess for one GPU: the loader's workers, limited by the cores left
    after each GPU's training process takes one (CPU.1); without workers the training process
    preprocesses itself, on one core."""
    if not async_loading:
        return 1.0
    spare = max(cpu_cores - gpus, 1) / gpus
    return max(min(float(loader_workers), spare), 1.0 / gpus)


def cpu_time_s(samples: int, cpu_ms_per_sample: float, workers: float) -> float:
    """Seconds of preprocessing per step for one GPU's samples, spread over its workers."""
    return ms_to_s(samples * cpu_ms_per_sample) / workers
