"""MEASURING (touches the machine): a disk's sequential read and random 4 KiB read rates.

Method: in a temporary directory created under the target path (and always removed, even on
Ctrl-C or SIGTERM), a file of random bytes is written in 8 MiB blocks, fsync'ed, and dropped
from the page cache with posix_fadvise(DONTNEED). Then, each bounded in time:

1. cold, direct: the file read start to end with O_DIRECT in 1 MiB reads into a page-aligned
   (mmap-allocated) buffer, one request at a time: the device's rate, the page cache bypassed;
2. cold, buffered: dropped from the cache again, read with ordinary 1 MiB reads (what a data
   loader reading files sees from a cold cache, kernel read-ahead included);
3. warm: the same buffered read again, now from the page cache (RAM speed, not the disk's);
4. random 4 KiB reads with O_DIRECT at random aligned offsets, one at a time (queue depth 1).

MB = 10^6 bytes. Where O_DIRECT is refused (tmpfs, some network filesystems) the cold figure
comes from the buffered read after DONTNEED, and the result says so.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from dlrig.errors import HardwareError
from dlrig.units import MIB, bytes_s_to_mb_s, bytes_to_gb

BLOCK_BYTES = MIB
RANDOM_BYTES = 4096
_WRITE_BLOCK_BYTES = 8 * BLOCK_BYTES
TEMP_PREFIX = "dlrig-probe-"
METHOD = (
    "temp file of random bytes written, fsync'ed, dropped with posix_fadvise(DONTNEED); "
    "cold direct: O_DIRECT 1 MiB sequential reads, queue depth 1; cold buffered: ordinary 1 MiB "
    "reads after DONTNEED; warm: the same from the page cache; random: O_DIRECT 4 KiB reads at "
    "random aligned offsets, queue depth 1; MB = 10^6 bytes"
)


@dataclass(frozen=True)
class DiskSpeed:
    """A disk's measured read rates (MB/s, IOPS) and how they were measured."""

    path: str
    file_bytes: int
    write_mb_s: float
    cold_direct_mb_s: float | None
    cold_buffered_mb_s: float
    warm_mb_s: float
    random_4k_iops: float | None
    direct_io: bool
    elapsed_s: float
    method: str

    @property
    def cold_mb_s(self) -> float:
        """The honest sequential figure: direct I/O when possible, else cold buffered."""
        return (
            self.cold_direct_mb_s if self.cold_direct_mb_s is not None else self.cold_buffered_mb_s
        )


class ProbeInterrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a disk probe: raised so that the temp directory is removed."""


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into an exception (main thread only: elsewhere signals go to it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise ProbeInterrupted(f"signal {signum}")

    saved = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)


@contextlib.contextmanager
def probe_directory(parent: Path) -> Iterator[Path]:
    """A fresh temporary directory under parent, removed on exit, whatever the exit."""
    if not parent.is_dir():
        raise HardwareError(f"cannot probe {parent}: not a directory")
    try:
        path = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=parent))
    except OSError as exc:
        raise HardwareError(f"cannot create a temporary directory in {parent}: {exc}") from exc
    try:
        with _signals_raise():
            yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _drop_cache(fd: int) -> None:
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def write_probe_file(path: Path, size_bytes: int, time_limit_s: float) -> tuple[int, float]:
    """Write size_bytes of random data to a new file, fsync it, drop it from the page cache;
    (bytes written, seconds). Stops early at the time limit."""
    block = os.urandom(
        _WRITE_BLOCK_BYTES
    )  # random: a compressing or deduplicating disk can't cheat
    written = 0
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while written < size_bytes and time.perf_counter() - start < time_limit_s:
            written += os.write(fd, block)
        _drop_cache(fd)
    finally:
        os.close(fd)
    return written, time.perf_counter() - start


def direct_read_mb_s(path: Path, size_bytes: int, time_limit_s: float) -> float | None:
    """The cold sequential figure alone: O_DIRECT 1 MiB reads of path (None: O_DIRECT refused)."""
    fd = _open_direct(path)
    if fd is None:
        return None
    buffer = mmap.mmap(-1, BLOCK_BYTES)
    try:
        return _sequential_read(fd, buffer, size_bytes, time_limit_s)
    except OSError:
        return None
    finally:
        buffer.close()
        os.close(fd)


def _open_direct(path: Path) -> int | None:
    flag = getattr(os, "O_DIRECT", None)
    if flag is None:
        return None
    try:
        return os.open(path, os.O_RDONLY | flag)
    except OSError:
        return None


def _sequential_read(fd: int, buffer: mmap.mmap, size_bytes: int, time_limit_s: float) -> float:
    """MB/s of reading fd from the start in len(buffer) requests (stops at the time limit)."""
    done = 0
    start = time.perf_counter()
    while done < size_bytes and time.perf_counter() - start < time_limit_s:
        got = os.preadv(fd, [buffer], done)
        if got <= 0:
            break
        done += got
    return bytes_s_to_mb_s(done / (time.perf_counter() - start))


def _random_reads(fd: int, size_bytes: int, seconds: float) -> float:
    buffer = mmap.mmap(-1, RANDOM_BYTES)
    blocks = size_bytes // RANDOM_BYTES
    rng = random.Random(0)
    count = 0
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            os.preadv(fd, [buffer], rng.randrange(blocks) * RANDOM_BYTES)
            count += 1
    finally:
        buffer.close()
    return count / (time.perf_counter() - start)


def measure_disk(
    parent: Path, size_bytes: int, time_limit_s: float = 10.0, random_s: float = 2.0
) -> DiskSpeed:
    """Write, then read back past the page cache, a file in a temp dir under parent."""
    began = time.perf_counter()
    free = shutil.disk_usage(parent).free
    size_bytes = min(size_bytes, free // 4)  # never fill the user's disk
    size_bytes -= size_bytes % _WRITE_BLOCK_BYTES
    if size_bytes < _WRITE_BLOCK_BYTES:
        raise HardwareError(f"cannot probe {parent}: only {bytes_to_gb(free):.1f} GB free")
    with probe_directory(parent) as directory:
        path = directory / "probe.bin"
        written, write_s = write_probe_file(path, size_bytes, time_limit_s)
        buffer = mmap.mmap(-1, BLOCK_BYTES)  # page-aligned, as O_DIRECT requires
        try:
            cold_direct = iops = None
            direct_fd = _open_direct(path)
            if direct_fd is not None:
                try:
                    cold_direct = _sequential_read(direct_fd, buffer, written, time_limit_s)
                    iops = _random_reads(direct_fd, written, random_s)
                except OSError:
                    cold_direct = iops = None  # O_DIRECT opened but reads refused (tmpfs, FUSE)
                finally:
                    os.close(direct_fd)
            fd = os.open(path, os.O_RDONLY)
            try:
                _drop_cache(fd)
                cold_buffered = _sequential_read(fd, buffer, written, time_limit_s)
                _sequential_read(fd, buffer, written, time_limit_s)  # make sure all is cached
                warm = _sequential_read(fd, buffer, written, time_limit_s)
            finally:
                os.close(fd)
        finally:
            buffer.close()
    return DiskSpeed(
        path=str(parent),
        file_bytes=written,
        write_mb_s=bytes_s_to_mb_s(written / write_s),
        cold_direct_mb_s=cold_direct,
        cold_buffered_mb_s=cold_buffered,
        warm_mb_s=warm,
        random_4k_iops=iops,
        direct_io=cold_direct is not None,
        elapsed_s=time.perf_counter() - began,
        method=METHOD if cold_direct is not None else METHOD + "; O_DIRECT refused here",
    )
