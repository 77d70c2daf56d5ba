"""Run every benchmark under bench/ and assemble BENCHMARKS.md from their result files.

Each bench script measures one target and writes bench/results/<name>.md with its command, the
machine and the date; this script only runs them in order and joins what they wrote, so every
figure in BENCHMARKS.md comes from a script in this folder.

Usage: .venv/bin/python bench/run_all.py [--only NAME ...] [--assemble-only]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
ORDER = [
    "check",
    "edges",
    "estimate",
    "accuracy",
    "external",
    "frameworks",
    "neusight",
    "external_llm",
    "fsdp_qlora",
    "kernel_libraries",
    "lambda_v2",
    "h200",
    "memory",
    "peak_memory",
    "plan",
    "rent",
    "probe",
    "cpu_train",
    "watch",
    "watch_overhead",
    "health",
    "serving",
    "arrivals",
    "amd",
    "report",
]

HEADER = """# Benchmarks

Speed, memory and accuracy targets of dlrig, measured by the scripts in `bench/`; each section
below is the result file that its script wrote (`bench/results/<name>.md`), with the command, the
machine and the date. Regenerate all with `make bench` (or one: `.venv/bin/python
bench/bench_<name>.py`, then `.venv/bin/python bench/run_all.py --assemble-only`).
"""


def run(names: list[str]) -> None:
    for name in names:
        script = BENCH_DIR / f"bench_{name}.py"
        print(f"== {script.name}", flush=True)
        subprocess.run([sys.executable, str(script)], check=True)


def _headings(markdown: str) -> list[tuple[int, str]]:
    """(index, line) of each heading line outside code fences."""
    found, in_fence = [], False
    for i, line in enumerate(markdown.splitlines()):
        if line.startswith("```"):
            in_fence = not in_fence
        elif line.startswith("#") and not in_fence:
            found.append((i, line))
    return found


def as_section(markdown: str) -> str:
    """Shift headings so the result file's top level becomes a section (##) here."""
    lines = markdown.splitlines()
    heads = _headings(markdown)
    if not heads:
        return markdown
    shift = 2 - min(len(line) - len(line.lstrip("#")) for _, line in heads)
    for i, line in heads:
        lines[i] = "#" * shift + line if shift > 0 else line[-shift:]
    return "\n".join(lines)


def assemble() -> str:
    parts = [HEADER]
    for name in ORDER:
        result = RESULTS_DIR / f"{name}.md"
        if result.exists():
            parts.append(as_section(result.read_text(encoding="utf-8").strip()) + "\n")
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=ORDER, help="run only these benchmarks")
    parser.add_argument("--assemble-only", action="store_true", help="join existing results")
    args = parser.parse_args()
    if not args.assemble_only:
        run(args.only or ORDER)
    (BENCH_DIR.parent / "BENCHMARKS.md").write_text(assemble(), encoding="utf-8")


if __name__ == "__main__":
    main()
