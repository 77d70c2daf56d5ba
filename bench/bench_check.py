"""Speed of `dlrig check`: start-up, one check in-process, and check_build per call.

    .venv/bin/python bench/bench_check.py [--runs N] [--calls N] [--out FILE]
        [--against NAME=SRC ...]

Targets (issue #2): `dlrig --help` under 0.5 s wall time; one check under 100 ms after
start-up; check_build under 0.5 ms per build (the planner calls it per candidate). Issue 39: a
`dlrig check` costs under 0.15 s of CPU beyond `dlrig --help` (import only what it needs).

- `dlrig --help` and `dlrig check` run as subprocesses; the best of N runs is reported (the
  least disturbed by other load), with the median beside it. Beside wall time, each run's CPU
  time (user + system, from the kernel's accounting of the child): on a shared machine it is
  the steadier figure, and "beyond start-up" is check's best CPU less --help's. It is split at
  the moment `check`'s body starts (the command stopped there): before it, typer parses and
  coerces the arguments; after it, the command's own work.
- Every run reads dlrig's modules from bytecode, compiled first (as an installed dlrig is).
- --against NAME=SRC (SRC: a folder holding another revision's `dlrig` package, e.g.
  `git archive REV src | tar -x -C /tmp/REV`): check's CPU beyond --help for this tree and
  each SRC, their runs interleaved (each round runs --help and check once per tree), so that
  a before/after meets the same load; two bench runs one after the other on a shared machine
  can differ by tens of ms that are not the code's.
- "one check in-process" is what the command does after the interpreter and its imports are
  up: load the catalog (first call: parses the TOML files), read and resolve the build, run
  the rules, render the table and the JSON; measured on the first call in a fresh process
  (cold catalog) and as the best of N later calls.
- check_build: mean and 99th percentile microseconds per call over every example build,
  without and with a workload.
Writes bench/results/check.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine_info import machine

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "builds" / "4x-blower-workstation.yaml"
DLRIG = [sys.executable, "-m", "dlrig"]


def timed(args: list[str], runs: int) -> tuple[float, float, float]:
    """(best wall, median wall, best CPU) seconds of a subprocess over runs; CPU is user +
    system time of the child, as the kernel accounts it."""
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(args, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(times), statistics.median(times), min(cpu)


def interleaved(trees: dict[str, Path], runs: int) -> dict[str, tuple[list[float], list[float]]]:
    """CPU seconds of `dlrig --help` and `dlrig check` runs per source tree, the trees taking
    turns in each round so that every tree meets the same load."""

    def cpu_s(src: Path, args: list[str]) -> float:
        env = {**os.environ, "PYTHONPATH": str(src)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([*DLRIG, *args], capture_output=True, env=env, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

    import compileall

    for src in trees.values():
        compileall.compile_dir(src / "dlrig", quiet=1)
        cpu_s(src, ["check", str(EXAMPLE)])  # a tree's first run may write the catalog cache
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in trees}
    for _ in range(runs):
        for name, src in trees.items():
            out[name][0].append(cpu_s(src, ["--help"]))
            out[name][1].append(cpu_s(src, ["check", str(EXAMPLE)]))
    return out


# `dlrig check` stopped where its body would start: what typer costs before dlrig's code runs.
# Typer (0.29) coerces each option through a pydantic TypeAdapter, so this imports pydantic.
UP_TO_BODY = r"""
import functools, os, sys
import dlrig.cli as cli

for info in cli.app.registered_commands:
    if info.name == "check":
        @functools.wraps(info.callback)
        def stop(*args, **kwargs):
            os._exit(0)
        info.callback = stop
sys.argv = ["dlrig", "check", sys.argv[1]]
cli.main()
"""

IN_PROCESS = r"""
import io, sys, time
t0 = time.perf_counter()
from dlrig.machine import load_build
from dlrig.catalog import load_catalog
from dlrig.report.check import check_json, check_renderable
from dlrig.rules import check_build
from rich.console import Console
imports_s = time.perf_counter() - t0

def one(path):
    cat = load_catalog()
    build = load_build(path, cat)
    result = check_build(build)
    Console(file=io.StringIO(), width=100).print(check_renderable(build, result))
    check_json(build, result, cat)

path = sys.argv[1]
t = time.perf_counter(); one(path); first = time.perf_counter() - t
later = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); one(path); later.append(time.perf_counter() - t)
print(imports_s, first, min(later))
"""


def in_process(runs: int) -> tuple[float, float, float]:
    """(imports s, first check s, best later check s) in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(EXAMPLE), str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    imports_s, first, later = (float(x) for x in out.stdout.split())
    return imports_s, first, later


# The planner checks each candidate with errors_only=True (plan/evaluate.py), which is what
# the 0.5 ms is for; the full check of a build with a workload also runs the model's estimate
# that the speed rules read (CPU.1, CPU.4: one estimate, and CPU.4 bisects an oversized CPU's
# cores with a few more), so it costs what those estimates cost and has no target of its own.
CALL_CASES = (
    ("no workload", False, False, "< 500 us"),
    ("resnet50, errors only: the planner's call", True, True, "< 500 us"),
    ("resnet50, every rule: reads the model's estimate", True, False, "-"),
)


def per_call_us(calls: int) -> dict[str, tuple[float, float, float]]:
    """(median wall, p99 wall, p99 CPU) microseconds of check_build over the example builds,
    for each of CALL_CASES.

    CPU time (time.process_time) is beside wall time because a shared machine preempts the
    process now and then, which shows in the wall-clock tail but is not the code's cost."""
    from dlrig.machine import load_build
    from dlrig.rules import check_build
    from dlrig.workloads import load_workload

    builds = [load_build(p) for p in sorted((REPO / "examples" / "builds").iterdir())]
    resnet50 = load_workload("resnet50")
    out = {}
    for label, with_workload, errors_only, _ in CALL_CASES:
        workload = resnet50 if with_workload else None
        for b in builds:
            check_build(b, workload)  # first calls import the model's helpers
        wall, cpu = [], []
        for _ in range(calls):
            for b in builds:
                t, c = time.perf_counter(), time.process_time()
                check_build(b, workload, errors_only=errors_only)
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
        wall.sort()
        cpu.sort()
        p99 = int(0.99 * len(wall))
        out[label] = (statistics.median(wall) * 1e6, wall[p99] * 1e6, cpu[p99] * 1e6)
    return out


def startup_imports(top: int = 6) -> list[tuple[str, float]]:
    """The heaviest imports of `dlrig --help` (python -X importtime), ms cumulative."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dlrig", "--help"],
        capture_output=True,
        text=True,
        check=False,
    ).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if cumulative.isdigit():
            rows.append((name, int(cumulative) / 1e3))
    return sorted(rows, key=lambda r: -r[1])[:top]


def check_imports_by_package(top: int = 8) -> list[tuple[str, float]]:
    """Where `dlrig check`'s import time goes: each module's own time (python -X importtime),
    summed by top-level package (dlrig's by subpackage), ms, heaviest first."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dlrig", "check", str(EXAMPLE)],
        capture_output=True,
        text=True,
        check=False,
    ).stderr
    totals: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, _, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if own.isdigit():
            parts = name.split(".")
            package = ".".join(parts[:2]) if parts[0] == "dlrig" else parts[0]
            totals[package] = totals.get(package, 0.0) + int(own) / 1e3
    return sorted(totals.items(), key=lambda r: -r[1])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "check.md")
    parser.add_argument(
        "--against",
        nargs="*",
        default=[],
        metavar="NAME=SRC",
        help="other source trees to compare with, runs interleaved",
    )
    args = parser.parse_args()
    against = {name: Path(src).resolve() for name, src in (a.split("=", 1) for a in args.against)}
    # Time imports as an installed dlrig makes them, from bytecode: a checkout run with
    # PYTHONDONTWRITEBYTECODE (or just edited) would compile its changed modules in every run.
    import compileall

    import dlrig

    compileall.compile_dir(Path(dlrig.__file__).parent, quiet=1)

    help_best, help_median, help_cpu = timed([*DLRIG, "--help"], args.runs)
    check_best, check_median, check_cpu = timed([*DLRIG, "check", str(EXAMPLE)], args.runs)
    _, _, body_cpu = timed([sys.executable, "-c", UP_TO_BODY, str(EXAMPLE)], args.runs)
    imports_s, first_s, later_s = in_process(args.runs)
    calls = per_call_us(args.calls)

    buf = io.StringIO()
    buf.write("# dlrig check: speed\n\n")
    buf.write(f"Command: `.venv/bin/python bench/bench_check.py --runs {args.runs} ")
    buf.write(f"--calls {args.calls}")
    buf.write("".join(f" --against {a}" for a in args.against) + "`  \n")
    buf.write(f"Machine: {machine()}  \nDate: {dt.date.today().isoformat()}  \n")
    # Other processes' load inflates every time below; say how much there was.
    buf.write(f"Load: {os.getloadavg()[0]:.1f} (1-minute average) when it started\n\n")
    buf.write("| what | target | measured |\n|---|---|---|\n")
    buf.write(
        f"| `dlrig --help` wall time, best of {args.runs} (median) | < 0.5 s | "
        f"{help_best:.3f} s ({help_median:.3f} s) |\n"
    )
    buf.write(
        f"| `dlrig check examples/builds/4x-blower-workstation.yaml` wall time, best of "
        f"{args.runs} (median) | - | {check_best:.3f} s ({check_median:.3f} s) |\n"
    )
    buf.write(
        f"| `dlrig check` beyond `dlrig --help`: CPU time, best of {args.runs} each "
        f"({check_cpu:.3f} s less {help_cpu:.3f} s) | < 0.15 s | {check_cpu - help_cpu:.3f} s |\n"
    )
    buf.write(
        f"| of which typer's, before `check`'s body runs (parsing and coercing the arguments "
        f"imports pydantic): CPU time, best of {args.runs} ({body_cpu:.3f} s less "
        f"{help_cpu:.3f} s) | - | {body_cpu - help_cpu:.3f} s |\n"
    )
    buf.write(
        f"| of which `check`'s own: its imports, the cached catalog, the build file, the rules, "
        f"the table ({check_cpu:.3f} s less {body_cpu:.3f} s) | - | "
        f"{check_cpu - body_cpu:.3f} s |\n"
    )
    buf.write(
        f"| imports of the check path (build, catalog, rules, report) | - | "
        f"{imports_s * 1e3:.0f} ms |\n"
    )
    buf.write(
        f"| one check in-process, first call (parses the catalog) | < 100 ms | "
        f"{first_s * 1e3:.1f} ms |\n"
    )
    buf.write(
        f"| one check in-process, later calls, best of {args.runs} | < 100 ms | "
        f"{later_s * 1e3:.1f} ms |\n"
    )
    targets = {label: target for label, _, _, target in CALL_CASES}
    for label, (median_us, p99_us, p99_cpu_us) in calls.items():
        buf.write(
            f"| `check_build` per call ({label}): median, p99 wall, p99 CPU over the example "
            f"builds x {args.calls} | {targets[label]} | {median_us:.0f} us, {p99_us:.0f} us, "
            f"{p99_cpu_us:.0f} us |\n"
        )
    buf.write(
        "\nThe planner checks each candidate with `errors_only=True`; a full check with a "
        "workload also runs the model's estimate that CPU.1 and CPU.4 read (CPU.4 bisects an "
        "oversized CPU's cores with a few more), ~0.25 ms each, so it has no target of its own.\n"
    )
    buf.write("\nHeaviest imports of `dlrig --help` (`python -X importtime`, one run), ")
    buf.write("cumulative:\n\n")
    for name, ms in startup_imports():
        buf.write(f"- `{name}`: {ms:.0f} ms\n")
    buf.write(
        "\nWhere `dlrig check`'s imports go (`python -X importtime`, one run; each module's "
        "own time, summed by package): beyond start-up, typer's coercion of the arguments "
        "imports pydantic (and, through its plugin loader, importlib.metadata) before the "
        "command runs; the command then imports the catalog's part models (the cached catalog "
        "is made of them), the named-parts build schema, the build and topology dataclasses, "
        "the rules, PyYAML and rich's table; the full build schema, the catalog's TOML files, "
        "the speed estimate and the workload loader are not needed for a build of catalog "
        "names without a workload.\n\n"
    )
    for name, ms in check_imports_by_package():
        buf.write(f"- `{name}`: {ms:.0f} ms\n")
    if against:
        import dlrig

        trees = {"this tree": Path(dlrig.__file__).resolve().parents[1], **against}
        buf.write(
            f"\nThis tree against {', '.join(against)}, runs interleaved (CPU s, best of "
            f"{args.runs} (median)):\n\n| tree | `--help` | `check` | beyond `--help` |\n"
            "|---|---|---|---|\n"
        )
        for name, (helps, checks) in interleaved(trees, args.runs).items():
            h, c = statistics.median(helps), statistics.median(checks)
            buf.write(
                f"| {name} | {min(helps):.3f} ({h:.3f}) | {min(checks):.3f} ({c:.3f}) | "
                f"{min(checks) - min(helps):.3f} ({c - h:.3f}) |\n"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(buf.getvalue())
    sys.stdout.write(buf.getvalue())


if __name__ == "__main__":
    main()
