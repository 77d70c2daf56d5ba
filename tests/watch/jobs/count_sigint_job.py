"""Counts the SIGINTs it receives: after the first it waits 1 s for a duplicate, then exits
with 10 + the count (11: one Ctrl-C arrived once). Usage: count_sigint_job.py"""

import signal
import sys
import time

received = 0


def on_sigint(signum: int, frame: object) -> None:
    global received
    received += 1


signal.signal(signal.SIGINT, on_sigint)
print("ready", flush=True)
deadline = time.monotonic() + 30
while time.monotonic() < deadline and received == 0:
    time.sleep(0.05)
time.sleep(1.0)
sys.exit(10 + received)
