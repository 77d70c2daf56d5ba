"""MEASURING (touches the machine): input-pipeline throughput against the number of workers.

Method: a synthetic sample is a zlib-compressed 224x224x3 uint8 image of noise over a gradient
(about 145 KB compressed; an ImageNet JPEG averages about 110 KB). Decoding it is
zlib.decompress, a conversion to float32, a normalisation by per-channel mean and std and a
transpose to CHW: the CPU work an online-preprocessing loader does per sample (CPU.1), with
nothing beyond numpy. Each worker count runs in a fresh multiprocessing pool, warmed up, then
timed over a fixed wall-clock window; samples/s is completed samples over elapsed time. It says
what CPU.1's "cores per GPU" buy on this CPU: the samples per second each added worker delivers.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import zlib
from dataclasses import dataclass

import numpy as np

SHAPE = (224, 224, 3)
_MEAN = np.array([123.7, 116.3, 103.5], dtype=np.float32)
_STD = np.array([58.4, 57.1, 57.4], dtype=np.float32)
METHOD = (
    "zlib-compressed 224x224x3 uint8 image (~145 KB); per sample: decompress, float32, "
    "normalise, transpose to CHW; one multiprocessing pool per worker count, warmed up, timed "
    "over a fixed window; samples/s = completed samples / elapsed"
)


@dataclass(frozen=True)
class LoaderPoint:
    """Throughput of the synthetic pipeline with a number of worker processes."""

    workers: int
    samples_per_s: float


@dataclass(frozen=True)
class LoaderScaling:
    """Throughput against worker count, and the per-sample CPU cost on one worker."""

    points: tuple[LoaderPoint, ...]
    sample_bytes: int
    method: str

    @property
    def ms_per_sample(self) -> float:
        """CPU milliseconds per sample, from the one-worker point."""
        one = next((p for p in self.points if p.workers == 1), self.points[0])
        return 1000.0 * one.workers / one.samples_per_s

    @property
    def best(self) -> LoaderPoint:
        """The worker count with the highest throughput."""
        return max(self.points, key=lambda p: p.samples_per_s)


def make_sample(seed: int = 0) -> bytes:
    """The compressed synthetic image every worker decodes."""
    rng = np.random.default_rng(seed)
    gradient = np.linspace(0, 160, SHAPE[1], dtype=np.float32)[None, :, None]
    noise = rng.normal(0, 24, SHAPE).astype(np.float32)
    image = np.clip(gradient + noise + 40, 0, 255).astype(np.uint8)
    return zlib.compress(image.tobytes(), 6)


def decode(payload: bytes) -> int:
    """One sample's preprocessing; returns a checksum so the work cannot be skipped."""
    raw = np.frombuffer(zlib.decompress(payload), dtype=np.uint8).reshape(SHAPE)
    x = (raw.astype(np.float32) - _MEAN) / _STD
    chw = np.ascontiguousarray(x.transpose(2, 0, 1))
    return int(chw[0, 0, 0] > 0)


_PAYLOAD: bytes = b""


def _init(payload: bytes) -> None:
    global _PAYLOAD
    _PAYLOAD = payload


def _task(_: int) -> int:
    return decode(_PAYLOAD)


def worker_counts(threads: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to the logical CPU count, which is always included."""
    counts = []
    n = 1
    while n < threads:
        counts.append(n)
        n *= 2
    counts.append(max(1, threads))
    return tuple(counts)


def measure_loader(counts: tuple[int, ...], window_s: float = 1.0) -> LoaderScaling:
    """Samples/s of the synthetic pipeline for each worker count."""
    payload = make_sample()
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    points = []
    for workers in counts:
        with context.Pool(workers, initializer=_init, initargs=(payload,)) as pool:
            pool.map(_task, range(workers * 4))  # warm-up: imports, page faults
            done = 0
            batch = workers * 16
            start = time.perf_counter()
            while time.perf_counter() - start < window_s:
                done += len(pool.map(_task, range(batch), chunksize=4))
            points.append(LoaderPoint(workers, done / (time.perf_counter() - start)))
    return LoaderScaling(tuple(points), len(payload), METHOD)


def logical_cpus() -> int:
    """CPUs this process may run on (the affinity mask, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
