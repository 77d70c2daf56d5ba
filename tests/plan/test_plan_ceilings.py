"""The fused parts the search probes a (RAM, drive) pair and a CPU with (plan.bounds.
slower_drives_fused, fewer_cores_fused) really bound every part they stand for, with the
shipped model and the built-in catalog: the model finds the fused part no slower, and its run
no hungrier, than with any drive that reads no faster, or any CPU of no more cores and threads.
The search turns away every part a useless fused probe covers, so a plan depends on this."""

from __future__ import annotations

import dataclasses

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.plan.bounds import (
    IdealParts,
    fewer_cores_fused,
    ideal_parts,
    parts_build,
    slower_drives_fused,
    with_cpu,
)
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.evaluate import ModelEvaluator, Outcome
from dlrig.plan.groups import Group
from dlrig.plan.results import WeightedWorkload, job_storage_gb
from dlrig.plan.space import search_space
from dlrig.workloads import load_workload
from dlrig.workloads.model import Workload

ELECTRICITY_PER_KWH = 0.20
SLACK = 1 + 1e-9


def _groups(job: Workload, count: int, gpu: str) -> list[Group]:
    catalog = builtin_catalog()
    limits = Constraints()
    space = search_space(
        catalog, limits, part_filter(limits, catalog), job_storage_gb([WeightedWorkload(job)])
    )
    return [g for g in space.groups if g.count == count and g.gpu.name == gpu]


def _outcome(group: Group, parts: IdealParts, job: Workload) -> Outcome:
    build = parts_build(group, parts, ELECTRICITY_PER_KWH)
    return ModelEvaluator().outcome("probe", build, job)


def _at_least(bound: Outcome, exact: Outcome) -> bool:
    faster = exact.samples_per_s <= bound.samples_per_s * SLACK
    leaner = exact.energy_kwh is None or bound.energy_kwh is None
    return faster and (leaner or bound.energy_kwh <= exact.energy_kwh * SLACK)  # type: ignore[operator]


def test_slower_drives_fused_bounds_each_drive_it_covers() -> None:
    job = load_workload("resnet50")  # ImageNet from the drive (DISK.1, DISK.3)
    compared = storage_bound = 0
    for group in _groups(job, 1, "GeForce RTX 4090")[:3]:
        # The smallest RAM: the dataset stays on the drive (no page cache), so the drive binds.
        ideal = dataclasses.replace(ideal_parts(group), memory=group.memory[0])
        for i, drive in enumerate(group.storage):
            fused = slower_drives_fused(group.storage, i)
            assert fused.read_mb_s == drive.read_mb_s
            bound = _outcome(group, dataclasses.replace(ideal, storage=fused), job)
            for other in group.storage:
                if other.read_mb_s > drive.read_mb_s:
                    continue
                exact = _outcome(group, dataclasses.replace(ideal, storage=other), job)
                assert _at_least(bound, exact), (group.key, drive.name, other.name)
                compared += 1
                storage_bound += exact.bottleneck.value == "storage"
    # Many pairs, and the drive bound the step in many of them (a bound that only met
    # GPU-bound builds would show nothing).
    assert compared > 50
    assert storage_bound > 10


@pytest.mark.parametrize("job_name", ["resnet50", "bert-large-squad"])
def test_fewer_cores_fused_bounds_each_cpu_it_covers(job_name: str) -> None:
    job = load_workload(job_name)
    compared = cpu_bound = 0
    # Four fast cards: the smaller CPUs of a board cannot decode JPEGs for them all (CPU.1).
    for group in _groups(job, 4, "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition")[:6]:
        ideal = ideal_parts(group)
        for i, cpu in enumerate(group.cpus):
            fused_parts = with_cpu(group, ideal, fewer_cores_fused(group.cpus, i))
            assert fused_parts is not None
            assert (fused_parts.cpu.cores, fused_parts.cpu.threads) == (cpu.cores, cpu.threads)
            bound = _outcome(group, fused_parts, job)
            for other in group.cpus:
                if other.cores > cpu.cores or other.threads > cpu.threads:
                    continue
                parts = with_cpu(group, ideal, other)
                if parts is None:
                    continue
                exact = _outcome(group, parts, job)
                assert _at_least(bound, exact), (group.key, other.name)
                compared += 1
                cpu_bound += exact.bottleneck.value == "cpu_preprocessing"
    assert compared > 50
    if job_name == "resnet50":  # the CPU bound some of those steps: the bound met them
        assert cpu_bound >= 3
