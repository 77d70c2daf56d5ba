"""A training loop whose data loading burns CPU: loader processes preprocess (a busy loop per
batch, like JPEG decoding and augmentation) while the main process waits for batches and
"trains" for a moment on each. Usage: cpu_loader_job.py SECONDS"""

import multiprocessing as mp
import os
import sys
import time

PREPROCESS_S = 0.05  # CPU seconds per batch in a worker
STEP_S = 0.002  # CPU seconds per training step in the main process


def burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def loader(queue: "mp.Queue[int]", stop_at: float) -> None:
    while time.monotonic() < stop_at:
        burn(PREPROCESS_S)
        queue.put(1)
    queue.put(0)


if __name__ == "__main__":
    stop_at = time.monotonic() + float(sys.argv[1])
    queue: "mp.Queue[int]" = mp.Queue(maxsize=4)
    workers = [mp.Process(target=loader, args=(queue, stop_at)) for _ in range(os.cpu_count() or 2)]
    for w in workers:
        w.start()
    finished = 0
    while finished < len(workers):
        if queue.get() == 0:
            finished += 1
        else:
            burn(STEP_S)
    for w in workers:
        w.join()
