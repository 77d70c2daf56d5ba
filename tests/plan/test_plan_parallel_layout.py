"""A job whose tensor x pipeline layout needs more GPUs than a build has: the planner leaves
such builds out instead of failing (estimate refuses them with a one-line error)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_plan_ranks_only_builds_that_hold_the_tensor_parallel_group(tmp_path: Path) -> None:
    job = tmp_path / "tp2.yaml"
    job.write_text("name: tp2\nmodel: llama-3-8b-lora\nparallel: {strategy: ddp, tensor: 2}\n")
    out = subprocess.run(
        [sys.executable, "-m", "dlrig", "plan", "--workload", str(job), "--budget", "8000",
         "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    builds = json.loads(out.stdout)["builds"]
    assert builds
    for build in builds:  # "2x GeForce RTX 3090": an even count holds tensor groups of 2
        assert int(build["gpus"].split("x", 1)[0]) % 2 == 0, build["gpus"]
