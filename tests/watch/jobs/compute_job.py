"""A training loop with a fast loader: one loader process hands out ready batches at once and
the main process computes on each (a CPU-bound step; there is no GPU).
Usage: compute_job.py SECONDS"""

import multiprocessing as mp
import sys
import time

STEP_S = 0.05  # CPU seconds per training step in the main process


def burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def loader(queue: "mp.Queue[int]", stop_at: float) -> None:
    while time.monotonic() < stop_at:
        queue.put(1)  # nothing to preprocess
    queue.put(0)


if __name__ == "__main__":
    stop_at = time.monotonic() + float(sys.argv[1])
    queue: "mp.Queue[int]" = mp.Queue(maxsize=4)
    worker = mp.Process(target=loader, args=(queue, stop_at))
    worker.start()
    while queue.get():
        burn(STEP_S)
    worker.join()
