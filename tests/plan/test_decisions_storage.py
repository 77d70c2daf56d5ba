"""Issue 11: plans picked a 1 TB hard disk for any LLM job. The planner now keeps only drives
that hold the job's dataset and its own files (plan.results.job_storage_gb, machine.fit), the
same verdict DISK.job gives: a 50B-parameter full fine-tune (AdamW, bf16) keeps three 700 GB
checkpoints (14 B a parameter, model/checkpoint.py) beside 100 GB of weights: 2.2 TB."""

from __future__ import annotations

import dataclasses

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.enums import Severity
from dlrig.machine.model import Build, StorageDevice
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.results import WeightedWorkload, job_storage_gb
from dlrig.plan.space import search_space
from dlrig.rules import check_build
from dlrig.workloads import load_workload

CATALOG = builtin_catalog()
BIG = dataclasses.replace(load_workload("llama-3-8b"), name="llama-50b", params=50e9)


def test_a_50b_full_fine_tune_needs_about_2_2_tb() -> None:
    data_gb = BIG.dataset.total_gb if BIG.dataset is not None else 0.0
    assert job_storage_gb([WeightedWorkload(BIG)]) == pytest.approx(
        data_gb + 50e9 * 2 / 1e9 + 3 * 50e9 * 14 / 1e9
    )


def test_the_planner_offers_only_drives_that_hold_the_job() -> None:
    limits = Constraints()
    need_gb = job_storage_gb([WeightedWorkload(BIG)])
    space = search_space(CATALOG, limits, part_filter(limits, CATALOG), need_gb)
    offered = {s.name for g in space.groups for s in g.storage}
    assert offered, "no drive offered at all"
    assert "Western Digital Blue 1TB (WD10EZEX)" not in offered
    assert all(s.capacity_tb * 1000 >= need_gb for g in space.groups for s in g.storage)


@pytest.mark.parametrize("drive", [s.name for s in CATALOG.storage])
def test_the_planner_fit_and_disk_job_agree_on_every_catalog_drive(drive: str) -> None:
    build = Build(
        name="one drive",
        storage=(StorageDevice(device=next(s for s in CATALOG.storage if s.name == drive)),),
    )
    need_gb = job_storage_gb([WeightedWorkload(BIG)])
    fits = build.storage[0].device.capacity_tb * 1000 >= need_gb
    errors = [
        f for f in check_build(build, BIG).findings
        if f.rule == "DISK.job" and f.severity is Severity.ERROR
    ]  # fmt: skip
    assert fits == (not errors)
