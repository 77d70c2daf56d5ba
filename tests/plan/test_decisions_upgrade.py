"""Issue 11: `upgrade` says when a GPU swap loses memory (GUIDE GPU.2: too little GPU memory is
the second most costly GPU mistake). On main it proposed swapping the 24 GB RTX 3090 of
examples/builds/budget-1gpu-3090.yaml for a 16 GB RTX 5080 without a word on memory
(catalog: RTX 3090 24 GB, RTX 5080 16 GB, NVIDIA's spec pages)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from dlrig.catalog.loader import load_catalog

BUDGET = str(Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml")


def test_upgrade_3090_to_5080_says_it_loses_gpu_memory() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "upgrade", BUDGET, "--workload", "resnet50",
         "--budget", "3000", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    memory = {g.name: g.memory_gb for g in load_catalog().gpus}
    swaps = [c["steps"][0] for c in changes if c["steps"][0].startswith("swap GPUs")]
    assert any("RTX 5080" in s for s in swaps)
    for swap in swaps:
        name = re.match(r"swap GPUs -> \d+x (.+?)( \(|$)", swap).group(1)  # type: ignore[union-attr]
        loses = memory[name] < 24
        assert ("LOSES GPU memory: 24 -> " in swap) is loses, swap
    (to_5080,) = [s for s in swaps if "RTX 5080" in s]
    assert "LOSES GPU memory: 24 -> 16 GiB per GPU, GPU.2" in to_5080
