"""MEASURING (touches the machine): a disk's sequential read and random 4 KiB read rates.

Method: in a temporary directory created under the target path (and always removed, even on
Ctrl-C or SIGTERM), a file of random bytes is written in 8 MiB blocks, fsync'ed, and dropped
from the page cache with posix_fadvise(DONTNEED). Then, each bounded in time:

1. cold, direct: the file read start to end with O_DIRECT in 1 MiB reads into a page-aligned
   (mmap-allocated) buffer, one request at a time (queue depth 1): the page cache bypassed;
2. deep queue: the same file read with O_DIRECT 1 MiB requests, many in flight, which is how
   drive datasheets rate sequential reads (an NVMe drive reaches its rated rate only with
   several requests outstanding). With `fio` on PATH: one fio job, libaio, iodepth 32, its
   JSON output read back. Without it: 8 threads, each reading its own contiguous eighth of the
   file with O_DIRECT 1 MiB reads (8 requests in flight: queue depth 8);
3. cold, buffered: dropped from the cache again, read with ordinary 1 MiB reads (what a data
   loader reading files sees from a cold cache, kernel read-ahead included);
4. warm: the same buffered read again, now from the page cache (RAM speed, not the disk's);
5. random 4 KiB reads with O_DIRECT at random aligned offsets, one at a time (queue depth 1).

MB = 10^6 bytes. Where O_DIRECT is refused (tmpfs, some network filesystems) the cold figure
comes from the buffered read after DONTNEED, and the result says so.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from dlrig.errors import HardwareError
from dlrig.units import MIB, bytes_s_to_mb_s, bytes_to_gb

BLOCK_BYTES = MIB
RANDOM_BYTES = 4096
_WRITE_BLOCK_BYTES = 8 * BLOCK_BYTES
TEMP_PREFIX = "dlrig-probe-"
FIO_QUEUE_DEPTH = 32
"""fio's iodepth for the deep-queue read: datasheets quote sequential reads at QD32 or more."""
READ_THREADS = 8
"""Threads of the deep-queue read without fio: 8 requests in flight (queue depth 8)."""
_FIO_GRACE_S = 30.0  # fio's own start-up and exit, past its runtime limit
METHOD = (
    "temp file of random bytes written, fsync'ed, dropped with posix_fadvise(DONTNEED); "
    "cold direct: O_DIRECT 1 MiB sequential reads, queue depth 1; deep queue: {deep}; "
    "cold buffered: ordinary 1 MiB reads after DONTNEED; warm: the same from the page cache; "
    "random: O_DIRECT 4 KiB reads at random aligned offsets, queue depth 1; MB = 10^6 bytes"
)


@dataclass(frozen=True)
class DeepRead:
    """A sequential read with many requests in flight: MB/s, the queue depth, and how."""

    mb_s: float
    queue_depth: int
    method: str


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
    deep_read_mb_s: float | None = None
    deep_queue_depth: int | None = None

    @property
    def cold_mb_s(self) -> float:
        """The queue-depth-1 sequential figure: direct I/O when possible, else cold buffered."""
        return (
            self.cold_direct_mb_s if self.cold_direct_mb_s is not None else self.cold_buffered_mb_s
        )

    @property
    def read_mb_s(self) -> float:
        """The sequential figure to compare with a datasheet: the deep-queue read when it was
        measured, else the queue-depth-1 one (`read_queue_depth` says which)."""
        return self.deep_read_mb_s if self.deep_read_mb_s is not None else self.cold_mb_s

    @property
    def read_queue_depth(self) -> int:
        """The queue depth `read_mb_s` was measured at."""
        if self.deep_read_mb_s is None or self.deep_queue_depth is None:
            return 1
        return self.deep_queue_depth


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


def fio_command(fio: str, path: Path, size_bytes: int, time_limit_s: float) -> list[str]:
    """fio reading path sequentially, O_DIRECT, 1 MiB blocks, FIO_QUEUE_DEPTH in flight."""
    return [
        fio,
        "--name=dlrig-seqread",
        f"--filename={path}",
        "--readonly",
        "--rw=read",
        "--bs=1M",
        "--direct=1",
        "--ioengine=libaio",
        f"--iodepth={FIO_QUEUE_DEPTH}",
        f"--size={size_bytes}",
        f"--runtime={max(1, round(time_limit_s))}",
        "--output-format=json",
    ]


def parse_fio_json(text: str) -> DeepRead | None:
    """The read rate of fio's JSON output (its `read.bw_bytes`, bytes/s, summed over jobs);
    None when the output holds no read (fio printed warnings only, or failed)."""
    start = text.find("{")  # fio may print warnings before the JSON document
    if start < 0:
        return None
    try:
        doc = json.loads(text[start:])
        jobs = doc["jobs"]
        bw = sum(float(job["read"]["bw_bytes"]) for job in jobs)
        depth = int(jobs[0]["job options"].get("iodepth", FIO_QUEUE_DEPTH))
        version = str(doc.get("fio version", "fio"))
        engine = str(jobs[0]["job options"].get("ioengine", "libaio"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    if bw <= 0:
        return None
    method = f"{version}, {engine}, iodepth {depth}, O_DIRECT 1 MiB sequential reads"
    return DeepRead(bytes_s_to_mb_s(bw), depth, method)


def fio_read(fio: str, path: Path, size_bytes: int, time_limit_s: float) -> DeepRead | None:
    """The deep-queue read by fio; None when fio fails (no libaio, O_DIRECT refused)."""
    try:
        done = subprocess.run(
            fio_command(fio, path, size_bytes, time_limit_s),
            capture_output=True,
            text=True,
            timeout=time_limit_s + _FIO_GRACE_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_fio_json(done.stdout) if done.returncode == 0 else None


def threaded_direct_read(
    path: Path, size_bytes: int, time_limit_s: float, threads: int = READ_THREADS
) -> DeepRead | None:
    """The deep-queue read without fio: `threads` threads, each reading its own contiguous
    share of the file with O_DIRECT 1 MiB reads (preadv releases the GIL, so the requests are
    in flight together); None when O_DIRECT is refused."""
    blocks = size_bytes // BLOCK_BYTES
    if blocks < threads:
        return None
    share = blocks // threads * BLOCK_BYTES
    start = time.perf_counter()

    def read_share(index: int) -> int:
        fd = _open_direct(path)
        if fd is None:
            raise OSError("O_DIRECT refused")
        buffer = mmap.mmap(-1, BLOCK_BYTES)  # page-aligned, as O_DIRECT requires
        done = 0
        try:
            while done < share and time.perf_counter() - start < time_limit_s:
                got = os.preadv(fd, [buffer], index * share + done)
                if got <= 0:
                    break
                done += got
        finally:
            buffer.close()
            os.close(fd)
        return done

    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            total = sum(pool.map(read_share, range(threads)))
    except OSError:
        return None
    elapsed = time.perf_counter() - start
    method = (
        f"{threads} threads, each O_DIRECT 1 MiB sequential reads of its own 1/{threads} of the "
        f"file (queue depth {threads}; fio not on PATH or it failed)"
    )
    return DeepRead(bytes_s_to_mb_s(total / elapsed), threads, method)


def deep_read(path: Path, size_bytes: int, time_limit_s: float, use_fio: bool) -> DeepRead | None:
    """fio's deep-queue read when fio is on PATH (and `use_fio`), else the threaded one."""
    fio = shutil.which("fio") if use_fio else None
    if fio is not None:
        found = fio_read(fio, path, size_bytes, time_limit_s)
        if found is not None:
            return found
    return threaded_direct_read(path, size_bytes, time_limit_s)


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
    parent: Path,
    size_bytes: int,
    time_limit_s: float = 10.0,
    random_s: float = 2.0,
    use_fio: bool = True,
) -> DiskSpeed:
    """Write, then read back past the page cache, a file in a temp dir under parent: at queue
    depth 1 and at a deep queue (fio when `use_fio` and it is on PATH, else threads)."""
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
            deep: DeepRead | None = None
            direct_fd = _open_direct(path)
            if direct_fd is not None:
                try:
                    cold_direct = _sequential_read(direct_fd, buffer, written, time_limit_s)
                    iops = _random_reads(direct_fd, written, random_s)
                except OSError:
                    cold_direct = iops = None  # O_DIRECT opened but reads refused (tmpfs, FUSE)
                finally:
                    os.close(direct_fd)
            if cold_direct is not None:
                deep = deep_read(path, written, time_limit_s, use_fio)
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
        method=_method(cold_direct is not None, deep),
        deep_read_mb_s=deep.mb_s if deep else None,
        deep_queue_depth=deep.queue_depth if deep else None,
    )


def _method(direct: bool, deep: DeepRead | None) -> str:
    if not direct:
        return METHOD.format(deep="not measured") + "; O_DIRECT refused here"
    return METHOD.format(deep=deep.method if deep else "not measured (reads refused)")
