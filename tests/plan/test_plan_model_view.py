"""The search estimates a build once per model view (plan.bounds.model_view: what the model
reads of it), so builds with one view must get one estimate from the shipped model."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.plan.bounds import ideal_parts, model_view, parts_build, probes
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.evaluate import ModelEvaluator, Outcome
from dlrig.plan.results import WeightedWorkload, job_storage_gb
from dlrig.plan.space import search_space
from dlrig.workloads import load_workload

ELECTRICITY_PER_KWH = 0.20


# resnet50 reads the drive and the page cache (DISK.1, DISK.3), llama-3-70b offloads to host
# RAM (its bandwidth counts the modules), the serving job reads the GPUs alone.
@pytest.mark.parametrize("job", ["resnet50", "llama-3-70b", "llama-3.1-8b-serve"])
def test_builds_with_one_model_view_get_one_estimate(job: str) -> None:
    catalog = builtin_catalog()
    workload = load_workload(job)
    limits = Constraints()
    dataset_gb = job_storage_gb([WeightedWorkload(workload)])
    space = search_space(catalog, limits, part_filter(limits, catalog), dataset_gb)
    evaluator = ModelEvaluator()
    seen: dict[Hashable, Outcome] = {}
    shared = 0
    # Every 2-GPU group of one card: the same cards on many boards, some seated alike.
    groups = [g for g in space.groups if g.count == 2 and g.gpu.name == "GeForce RTX 4090"]
    for g, group in enumerate(groups):
        for kind, i, parts in probes(group, ideal_parts(group)):
            if parts is None:
                continue
            view = model_view(group, parts, ELECTRICITY_PER_KWH)
            build = parts_build(group, parts, ELECTRICITY_PER_KWH)
            outcome = evaluator.outcome((g, kind, i), build, workload)
            if view in seen:
                assert outcome == seen[view], (group.key, parts)
                shared += 1
            else:
                seen[view] = outcome
    # The probes of a group share views (cases, supplies of one efficiency) and so do boards
    # that seat the cards alike: the check compares many builds, not a few.
    assert len(groups) > 10
    assert shared > 100
