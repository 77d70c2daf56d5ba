"""Issue 11: `estimate` on a job that does not fit says so first, in check's words (GPU.4),
with the largest batch that fits and the change that would fit it, and exits as check does.

On main it printed a throughput and a run time for llama-3-70b-qlora on one 24 GB RTX 3090
(47.5 GB needed at batch 1, by the model's memory arithmetic) and exited 0, while check failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BUDGET = str(Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml")


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_estimate_of_70b_qlora_on_one_3090_says_it_does_not_fit_first_and_exits_like_check() -> (
    None
):
    est = dlrig("estimate", BUDGET, "--workload", "llama-3-70b-qlora")
    check = dlrig("check", BUDGET, "--workload", "llama-3-70b-qlora")
    first = " ".join(est.stdout.splitlines()[0].split())
    assert first.startswith("DOES NOT FIT (GPU.4 error): llama-3-70b-qlora needs 49.1 GiB")
    assert "does not fit even at batch 1" in first and "fix: " in first
    assert est.returncode == check.returncode == 1


def test_estimate_of_a_batch_too_big_names_the_largest_batch_that_fits() -> None:
    args = ("estimate", BUDGET, "--workload", "llama-3-8b-lora", "--set", "batch_size=64")
    est = dlrig(*args)
    doc = json.loads(dlrig(*args, "--json").stdout)
    memory = doc["memory"]
    # It runs split into accumulated micro-batches that fit (memory_plan), and says so first.
    assert memory["fits"] is True
    assert doc["device"]["batch_per_gpu"] <= memory["max_batch_per_gpu"] < 64
    first = est.stdout.splitlines()[0]
    # check calls a batch that is too big (but a smaller one fits) a warning: exit 0 as it does,
    # and the job runs, so the line is check's warning, not "DOES NOT FIT" (issue 39).
    assert first.startswith("GPU.4 warning: ") and "DOES NOT FIT" not in est.stdout
    assert f"at most batch {memory['max_batch_per_gpu']} per GPU fits" in first
    assert f"fix: batch {memory['max_batch_per_gpu']} with gradient accumulation" in first
    assert est.returncode == 0


def test_estimate_of_a_job_that_fits_says_nothing_of_fit() -> None:
    est = dlrig("estimate", BUDGET, "--workload", "resnet50")
    assert est.returncode == 0 and "DOES NOT FIT" not in est.stdout
