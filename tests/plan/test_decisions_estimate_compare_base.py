"""Issue 11, misleading answers: `estimate --compare gpus=<one card>` printed "+0.0%" for an
RTX 4090 in place of the build's RTX 3090 (the change was against the first value compared, so
one value alone was its own baseline), while `upgrade` on the same build called the swap 1.58x.
The table now opens with the build as built and says each change against it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

BUILD = str(Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml")
CARD = "GeForce RTX 4090"


def dlrig(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", *args],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_estimate_compare_says_the_change_against_the_build_as_built() -> None:
    table = dlrig("estimate", BUILD, "-w", "resnet50", "--compare", f"gpus={CARD}")
    assert "(as built)" in table
    row = next(line for line in table.splitlines() if line.strip().startswith(CARD))
    found = re.search(r"([+-]\d+\.\d)%", row)
    assert found is not None, row
    # The same swap as `upgrade` scores it: its speedup over the build as it is.
    doc = json.loads(dlrig("upgrade", BUILD, "-w", "resnet50", "--budget", "3000", "--json"))
    (swap,) = [c for c in doc["changes"] if c["change"] == f"swap GPUs -> 1x {CARD}"]
    assert float(found.group(1)) == round(100 * (swap["speedup"] - 1), 1)
    assert float(found.group(1)) > 30  # a 4090 in place of a 3090, not "+0.0%"
