"""A training loop whose DataLoader workers live one short epoch each (persistent_workers=False):
every epoch starts one loader process per CPU, each preprocesses for a moment and exits, and the
main process waits for them. A 1 Hz sampler rarely sees a worker alive; their CPU shows only as
the main process's reaped children. Usage: short_epoch_loader_job.py SECONDS [REPORT]
(REPORT: a file that gets the CPU seconds of every reaped worker, from os.times())."""

import multiprocessing as mp
import os
import sys
import time

EPOCH_CPU_S = 0.15  # CPU seconds each worker burns before its epoch ends


def burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


if __name__ == "__main__":
    stop_at = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < stop_at:
        workers = [mp.Process(target=burn, args=(EPOCH_CPU_S,)) for _ in range(os.cpu_count() or 2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    if len(sys.argv) > 2:
        times = os.times()
        with open(sys.argv[2], "w") as fh:
            fh.write(str(times.children_user + times.children_system))
