"""How long dlrig takes to refuse issue 39's hostile inputs: each reproducer as a fresh
subprocess, its exit code, its wall time and its one line.

    .venv/bin/python bench/bench_edges.py [--runs N] [--out FILE]

Target (issue 39): every reproducer answers in one line, exit 2 (or the documented code),
within 5 s. The tests (tests/commands/test_input_edges.py) check the line and the code under
a hang guard; the time is measured here, not asserted in a test. Writes bench/results/edges.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_info import machine

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "examples" / "builds" / "budget-1gpu-3090.yaml"
TARGET_S = 5.0


def cases(tmp: Path) -> list[tuple[str, list[str]]]:
    """(what, arguments) of each reproducer, its files made under tmp."""
    fifo = tmp / "f.yaml"
    os.mkfifo(fifo)
    (tmp / "n.html").touch()
    (tmp / "notes.html").write_text("<p>mine</p>")
    (tmp / "u.yaml").write_text(BUILD.read_text().replace("name: budget", "name: café"))
    (tmp / "loop.html").symlink_to(tmp / "loop.html")
    b, long = str(BUILD), "y" * 300
    return [
        ("300-byte BUILD", ["check", long]),
        ("300-byte --html", ["check", b, "--html", long]),
        ("--html below a file", ["check", b, "--html", str(tmp / "n.html" / "x.html")]),
        ("--html /dev/zero", ["check", b, "--html", "/dev/zero"]),
        ("FIFO without a writer as BUILD", ["check", str(fifo)]),
        ("FIFO without a writer as --workload", ["estimate", b, "--workload", str(fifo)]),
        ("--html onto a FIFO", ["check", b, "--html", str(fifo)]),
        ("watch --show 99999999999999999999999", ["watch", "--show", "99999999999999999999999"]),
        ("--set gpus.0.power_limit_w=300 (works)",
         ["estimate", b, "-w", "resnet50", "--set", "gpus.0.power_limit_w=300"]),
        ("--exclude ''", ["plan", "-w", "resnet50", "--budget", "8000", "--exclude", ""]),
        ("--include X --exclude X",
         ["plan", "-w", "resnet50", "--budget", "8000", "--include", "4090", "--exclude", "4090"]),
        ("--set batch_size=", ["estimate", b, "-w", "resnet50", "--set", "batch_size="]),
        ("--workload twice", ["estimate", b, "-w", "resnet50", "-w", "gpt2"]),
        ("--compare =1,2", ["estimate", b, "-w", "resnet50", "--compare", "=1,2"]),
        ("--set serve.users on resnet50",
         ["estimate", b, "-w", "resnet50", "--set", "serve.users=1000000"]),
        ("--set finetune=qlora", ["estimate", b, "-w", "resnet50", "--set", "finetune=qlora"]),
        ("plan --workload resnet50:1:2", ["plan", "-w", "resnet50:1:2", "--budget", "3000"]),
        ("check probe:7", ["check", "probe:7"]),
        ("watch --html (user's file) -- JOB",
         ["watch", "--html", str(tmp / "notes.html"), "--", "sleep", "30"]),
        ("plan --html /nonexistent/dir/x.html",
         ["plan", "-w", "resnet50", "--budget", "8000", "--html", "/nonexistent/dir/x.html"]),
        ("--html newdir/", ["check", b, "--html", str(tmp / "newdir") + "/"]),
        ("--html through a symlink loop", ["check", b, "--html", str(tmp / "loop.html")]),
        ("watch -- no-such-cmd", ["watch", "--", "no-such-cmd-h39"]),
    ]  # fmt: skip


def run_case(args: list[str], runs: int, home: Path) -> tuple[int, float, str]:
    """(exit code, best wall seconds over runs, first stderr line) of `dlrig ARGS`."""
    best, code, line = float("inf"), 0, ""
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "dlrig", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "DLRIG_HOME": str(home)},
            timeout=120,
            check=False,
        )
        best = min(best, time.perf_counter() - start)
        code, line = out.returncode, (out.stderr.splitlines() or [""])[0]
    return code, best, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "edges.md")
    args = parser.parse_args()
    buf = io.StringIO()
    buf.write("# Hostile input: how fast dlrig refuses it (issue 39)\n\n")
    buf.write(f"Command: `.venv/bin/python bench/bench_edges.py --runs {args.runs}`  \n")
    buf.write(f"Machine: {machine()}  \nDate: {dt.date.today().isoformat()}  \n")
    # Other processes' load inflates every time below; say how much there was.
    buf.write(f"Load: {os.getloadavg()[0]:.1f} (1-minute average) when it started\n\n")
    buf.write(f"Target: one line and exit 2 (or the documented code) within {TARGET_S:.0f} s. ")
    buf.write(f"Wall time of a fresh process, best of {args.runs}.\n\n")
    buf.write("| reproducer | exit | wall s | first line on stderr |\n|---|---|---|---|\n")
    slowest = 0.0
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for what, argv in cases(tmp):
            code, wall, line = run_case(argv, args.runs, tmp / "home")
            slowest = max(slowest, wall)
            shown = line.replace("|", "\\|").replace("`", "'")
            shown = shown if len(shown) <= 110 else shown[:107] + "..."
            buf.write(f"| {what} | {code} | {wall:.2f} | `{shown}` |\n")
    verdict = "met" if slowest < TARGET_S else "NOT met"
    buf.write(f"\nSlowest: {slowest:.2f} s (target < {TARGET_S:.0f} s: {verdict}).\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(buf.getvalue())
    sys.stdout.write(buf.getvalue())


if __name__ == "__main__":
    main()
