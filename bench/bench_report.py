"""How big and how fast the HTML pages are: each kind of `--html` page written through the CLI
from the example builds, its size on disk and the command's wall time (target: a page that a
mail or a chat takes as an attachment, under 1 MB, since everything is inline).

Usage: .venv/bin/python bench/bench_report.py [--out bench/results/report.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_check import machine

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "builds"
PAGES = {
    "check": ["check", str(EXAMPLES / "4x-blower-workstation.yaml"), "--workload", "resnet50"],
    "estimate": ["estimate", str(EXAMPLES / "2x-4090-spaced-workstation.yaml"), "-w", "resnet50"],
    "estimate --compare": [
        "estimate", str(EXAMPLES / "2x-4090-spaced-workstation.yaml"), "-w", "resnet152",
        "--compare", "gpus.0.pcie.lanes=4,8,16",
    ],
    "plan": ["plan", "--workload", "resnet50", "--budget", "8000"],
    "compare": [
        "compare", str(EXAMPLES / "2x-4090-spaced-workstation.yaml"),
        str(EXAMPLES / "budget-1gpu-3090.yaml"), str(EXAMPLES / "4x-blower-workstation.yaml"),
        "-w", "resnet50",
    ],
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results/report.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in PAGES.items():
            page = Path(tmp) / f"{name.replace(' ', '_')}.html"
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "dlrig", *cmd, "--html", str(page)],
                capture_output=True, check=False,
            )  # fmt: skip
            seconds = time.perf_counter() - started
            rows.append((name, page.stat().st_size / 1e3, seconds))
    lines = [
        "# HTML pages: size and time",
        "",
        "Command: `.venv/bin/python bench/bench_report.py`  ",
        f"Machine: {machine()}  ",
        f"Date: {dt.date.today().isoformat()}",
        "",
        "Each page is one file with its styles and SVG charts inline (no script, no font, no",
        "request). Time is the whole command (start-up, the model, the page).",
        "",
        "| page | size (kB) | target | command wall time (s) |",
        "|---|---:|---|---:|",
        *(f"| `{n}` | {kb:.1f} | < 1,000 kB | {s:.2f} |" for n, kb, s in rows),
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
