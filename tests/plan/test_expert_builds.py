"""Issue 35, "done when": the top three of `plan` for llama-3-8b-lora at 20,000 and 40,000 USD,
resnet50 at 8,000 and llama-3-70b-qlora at 3,000 and 4,000 USD are builds an expert would sign
(the balance and software side; engineer A's tests cover circuits and water loops):

- with 3+ GPUs a workstation or server platform whose CPU lanes feed every GPU at x8 or more,
  none behind the chipset, and 4+ cores per GPU with 16 at least (Puget Systems, "Hardware
  Recommendations for Machine Learning / AI", 2024-04-09 clip: P1, P2);
- system RAM at least the GPUs' memory together (Stas Bekman, ml-engineering
  compute/cpu-memory/README.md);
- the job on an NVMe drive (Puget P8; Stas Bekman's storage chapter);
- ROCm named on any AMD pick (AMD's ROCm support table; RCCL's slot needs);
- 2x 24 GB cards offered for 70B QLoRA at 3,000-4,000 USD (Answer.AI, 2024-03-06: "train a 70b
  model on two 24GB GPUs"; 2x 16 GB = 32 GB is below the ~35 GB of 4-bit 70B weights), used
  RTX 3090s at their dated used price (runlocalai, May 2026: USD 700-1,000, low end 700).
"""

from __future__ import annotations

import functools

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.enums import StorageKind, Vendor
from dlrig.plan.constraints import Constraints
from dlrig.plan.evaluate import ModelEvaluator
from dlrig.plan.explain import why
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.objectives import make_objective
from dlrig.plan.results import PlanResult, Scored, WeightedWorkload
from dlrig.plan.search import plan
from dlrig.workloads import load_workload

CASES = [
    ("llama-3-8b-lora", 20_000),
    ("llama-3-8b-lora", 40_000),
    ("resnet50", 8_000),
    ("llama-3-70b-qlora", 3_000),
    ("llama-3-70b-qlora", 4_000),
]
WORKSTATION_FAMILIES = {"threadripper", "threadripper-pro", "epyc", "xeon-w", "xeon-scalable"}
USED_3090_USD = 700.0


@functools.cache
def planned(workload: str, budget: int) -> PlanResult:
    return plan(
        builtin_catalog(),
        [WeightedWorkload(load_workload(workload))],
        budget,
        make_objective(ObjectiveKind.THROUGHPUT, [1.0]),
        ModelEvaluator(),
        top_k=3,
    )


def top_three(workload: str, budget: int) -> tuple[Scored, ...]:
    result = planned(workload, budget)
    assert result.builds, f"nothing planned for {workload} at {budget}"
    return result.builds


@pytest.mark.parametrize(("workload", "budget"), CASES)
def test_three_or_more_gpus_sit_on_a_workstation_platform(workload: str, budget: int) -> None:
    for s in top_three(workload, budget):
        b = s.build
        n = b.gpu_count
        if n < 3:
            continue
        assert b.cpu is not None
        assert b.platform is not None or b.cpu.family in WORKSTATION_FAMILIES, b.cpu.name
        assert b.cpu.cores * b.cpu_count >= max(16, 4 * n)
        topo = b.topology
        assert topo.links is not None
        assert all(lk.lanes >= 8 for lk in topo.links)
        if topo.placement is not None:
            assert all(seat.slot.from_cpu for seat in topo.placement.seats)


@pytest.mark.parametrize(("workload", "budget"), CASES)
def test_ram_holds_the_gpus_memory_together(workload: str, budget: int) -> None:
    for s in top_three(workload, budget):
        b = s.build
        assert b.memory is not None
        total = sum(g.gpu.memory_gb * g.count for g in b.gpus)
        assert b.memory.size_gb >= total, s.candidate.describe()


@pytest.mark.parametrize(("workload", "budget"), CASES)
def test_the_job_is_on_an_nvme_drive(workload: str, budget: int) -> None:
    for s in top_three(workload, budget):
        drive = s.build.dataset_storage
        assert drive is not None and drive.device.kind is StorageKind.NVME


@pytest.mark.parametrize(("workload", "budget"), CASES)
def test_every_amd_pick_names_rocm(workload: str, budget: int) -> None:
    result = planned(workload, budget)
    for s, reason in zip(result.builds, why(result), strict=True):
        if any(g.gpu.vendor == "amd" for g in s.build.gpus):
            assert "ROCm" in reason


def test_an_amd_pick_for_resnet50_at_8000_names_rocm() -> None:
    # the case that prompted the rule: `make run` ranked 3x RX 7900 XTX without a word on ROCm;
    # with NVIDIA left out (--exclude-vendor nvidia) every pick is a Radeon and says so
    result = plan(
        builtin_catalog(),
        [WeightedWorkload(load_workload("resnet50"))],
        8_000,
        make_objective(ObjectiveKind.THROUGHPUT, [1.0]),
        ModelEvaluator(),
        constraints=Constraints(exclude_vendors=(Vendor.NVIDIA,)),
        top_k=3,
    )
    assert result.builds
    for s, reason in zip(result.builds, why(result), strict=True):
        assert s.candidate.group.gpu.vendor == "amd"
        assert "it runs on ROCm" in reason and "gfx11" in reason


@pytest.mark.parametrize("budget", [3_000, 4_000])
def test_70b_qlora_is_offered_on_two_24_gb_cards(budget: int) -> None:
    builds = top_three("llama-3-70b-qlora", budget)
    pairs = [
        s for s in builds if s.candidate.group.count == 2 and s.build.gpus[0].gpu.memory_gb == 24
    ]
    assert pairs, [s.candidate.describe() for s in builds]
    # no pick holds less GPU memory than the 4-bit weights (GPU.offload)
    for s in builds:
        assert sum(g.gpu.memory_gb * g.count for g in s.build.gpus) >= 35
    used = [s for s in pairs if s.candidate.group.gpu.name == "GeForce RTX 3090"]
    assert used, "the used RTX 3090 pair of Answer.AI's recipe is offered"
    assert used[0].candidate.price_lines()[0] == ("2x GeForce RTX 3090", 2 * USED_3090_USD)
