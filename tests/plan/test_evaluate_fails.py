"""ModelEvaluator.fails (the search's feasibility question, answered by the first rule that
says no, the rules that failed its earlier builds tried first) agrees with errors() (every
rule) on every example and reference build, for the planner's expert bar and without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlrig.machine import load_build
from dlrig.plan.evaluate import ModelEvaluator
from dlrig.workloads import load_workload

ROOT = Path(__file__).resolve().parents[2]
BUILDS = sorted(
    [
        *(ROOT / "examples" / "builds").glob("*.*"),
        *(ROOT / "tests" / "fixtures" / "reference_builds").glob("*.yaml"),
    ]
)


@pytest.mark.parametrize("expert_bar", [True, False])
def test_fails_agrees_with_errors(expert_bar: bool) -> None:
    # One evaluator for every build: its rules-tried-first order grows as builds fail.
    quick = ModelEvaluator(expert_bar=expert_bar)
    answers = set()
    for path in BUILDS:
        build = load_build(path)
        for job in ("resnet50", "llama-3-70b-qlora"):
            workload = load_workload(job)
            full = ModelEvaluator(expert_bar=expert_bar).errors(path.name, build, workload)
            assert quick.fails(path.name, build, workload) == bool(full), (path.name, job)
            answers.add(bool(full))
    assert answers == {True, False}  # both answers occur among these builds
