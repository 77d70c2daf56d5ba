"""The monitor's own CPU: `dlrig watch` at 1 Hz and 10 Hz, measured from outside.

For each case, `python -m dlrig watch --interval S -- JOB` runs on a job that sleeps (so the
machine is quiet and only dlrig's work shows); after a warm-up that excludes the interpreter's
start-up and imports, the dlrig process's CPU seconds (user + system, its own, not the job's)
are read twice with psutil and divided by the wall time between. Target: under 1% of one core
at 1 Hz. The history database is written as in real use (DLRIG_HOME points at a temporary
folder); there is no GPU here, so NVML costs nothing in these figures.

Usage: .venv/bin/python bench/bench_watch.py [--window S] [--write bench/results/watch.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from machine_info import machine

WARMUP_S = 3.0

# A job of one sleeping process, and one shaped like a DataLoader: 8 worker processes of 4
# threads each (the per-process and per-thread reads are what grows with the job).
JOBS = {
    "sleep (1 process)": [sys.executable, "-c", "import time; time.sleep(600)"],
    "8 workers x 4 threads": [
        sys.executable,
        "-c",
        "import multiprocessing as mp, threading, time\n"
        "def w():\n"
        "    for _ in range(3):\n"
        "        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
        "    time.sleep(600)\n"
        "if __name__ == '__main__':\n"
        "    ps = [mp.Process(target=w) for _ in range(8)]\n"
        "    [p.start() for p in ps]; [p.join() for p in ps]\n",
    ],
}


def measure(interval_s: float, job: list[str], window_s: float) -> float:
    """Percent of one core the dlrig process used over `window_s` after the warm-up."""
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dlrig", "watch", "--interval", str(interval_s), "--", *job],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "DLRIG_HOME": home},
            start_new_session=True,
        )
        try:
            me = psutil.Process(proc.pid)
            time.sleep(WARMUP_S)
            cpu0 = sum(me.cpu_times()[:2])
            wall0 = time.monotonic()
            time.sleep(window_s)
            cpu1 = sum(me.cpu_times()[:2])
            wall1 = time.monotonic()
        finally:
            os.killpg(proc.pid, 9)
            proc.wait()
    return 100.0 * (cpu1 - cpu0) / (wall1 - wall0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured per case")
    parser.add_argument("--write", type=Path, help="write a markdown table to this file")
    args = parser.parse_args()
    rows = []
    for job_name, job in JOBS.items():
        for hz in (1, 10):
            pct = measure(1.0 / hz, job, args.window)
            rows.append((job_name, hz, pct))
            print(f"{job_name:24s} {hz:3d} Hz  {pct:6.2f} % of one core")
    if args.write:
        lines = [
            "## dlrig watch: the monitor's own CPU",
            "",
            f"Command: `.venv/bin/python bench/bench_watch.py --window {args.window:g} "
            f"--write {args.write}`",
            f"Machine: {machine()}; measured {dt.date.today().isoformat()}; no GPU (NVML absent); "
            f"load average {os.getloadavg()[0]:.1f} at the end (other work shares the CPUs).",
            "",
            "The dlrig process's own CPU time (user + system) over the window, after a "
            f"{WARMUP_S:g} s warm-up, as a share of one core; the history database is written.",
            "",
            "| job | sampling | CPU (% of one core) | target |",
            "|---|---|---|---|",
        ]
        for job_name, hz, pct in rows:
            target = "< 1%" if hz == 1 else "-"
            lines.append(f"| {job_name} | {hz} Hz | {pct:.2f} | {target} |")
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
