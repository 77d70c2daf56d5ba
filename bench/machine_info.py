"""The machine a benchmark ran on, as every bench/results file states it."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def machine() -> str:
    """'AMD EPYC 7B13, 2 CPUs, Python 3.11.7': lscpu's model name (else the platform's), the
    CPUs this process may use and the interpreter."""
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next(
            (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")),
            model,
        )
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def write_result(path: Path, lines: list[str]) -> None:
    """Write a bench's result file (bench/results/<name>.md) and print it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    print("\n".join(lines))
