"""A loader that reads a large file without the page cache, the way a dataset bigger than RAM
is read: O_DIRECT reads of 16 MiB, few system calls per byte so that the disk, not the CPU, sets
the pace (posix_fadvise DONTNEED after each buffered read where the filesystem refuses
O_DIRECT). Usage: reader_job.py FILE SECONDS"""

import mmap
import os
import sys
import time

BLOCK = 16 << 20


def main(path: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    buffer = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        direct = True
    except OSError:
        fd = os.open(path, os.O_RDONLY)
        direct = False
    offset = 0
    while time.monotonic() < end:
        got = os.preadv(fd, [buffer], offset)
        if not direct:
            os.posix_fadvise(fd, offset, got, os.POSIX_FADV_DONTNEED)
        offset = offset + got if got == BLOCK else 0
    os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
