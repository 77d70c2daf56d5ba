"""`dlrig check`'s CPU time beyond `dlrig --help` for several source trees, runs interleaved.

    .venv/bin/python bench/ab_check.py [--runs N] NAME=SRC [NAME=SRC ...]

SRC is a folder that holds the `dlrig` package, e.g. `src` or a copy of another revision's
(`git archive REV src | tar -x -C /tmp/REV`). A shared machine's load drifts over a minute, so
comparing two bench_check.py runs made one after the other can show a change of tens of ms
that is not the code's; here each round runs --help and check once per tree, in turn, so every
tree meets the same load. Reported per tree: the best and the median of the runs' CPU time
(user + system of the child), for --help, for check, and check's less --help's. Each tree's
modules are compiled to bytecode first, as an installed dlrig's are.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "builds" / "4x-blower-workstation.yaml"


def cpu_s(src: Path, args: list[str]) -> float:
    """CPU seconds (user + system) of one `dlrig ARGS` run with src first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "dlrig", *args], capture_output=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("trees", nargs="+", metavar="NAME=SRC")
    args = parser.parse_args()
    trees = {name: Path(src).resolve() for name, src in (t.split("=", 1) for t in args.trees)}
    for src in trees.values():
        compileall.compile_dir(src / "dlrig", quiet=1)
        cpu_s(src, ["check", str(EXAMPLE)])  # the first run writes the catalog cache

    help_s: dict[str, list[float]] = {name: [] for name in trees}
    check_s: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, src in trees.items():
            help_s[name].append(cpu_s(src, ["--help"]))
            check_s[name].append(cpu_s(src, ["check", str(EXAMPLE)]))

    print(
        f"Command: `.venv/bin/python bench/ab_check.py --runs {args.runs} {' '.join(args.trees)}`"
    )
    print(f"Load: {os.getloadavg()[0]:.1f} (1-minute average) at the end\n")
    print(
        "| tree | `--help` CPU s, best (median) | `check` CPU s, best (median) | "
        "beyond `--help`, best (median) |"
    )
    print("|---|---|---|---|")
    for name in trees:
        h, c = help_s[name], check_s[name]
        print(
            f"| {name} | {min(h):.3f} ({statistics.median(h):.3f}) | {min(c):.3f} "
            f"({statistics.median(c):.3f}) | {min(c) - min(h):.3f} "
            f"({statistics.median(c) - statistics.median(h):.3f}) |"
        )


if __name__ == "__main__":
    main()
