"""Constraints, the infeasible answer and the explanations, on the fake catalog and toy model
(plan_fakes.py: toy samples/s = count x TFLOPS / TFLOP per sample, capped by CPU and drive)."""

from __future__ import annotations

import dataclasses

import pytest
from plan_fakes import FAKE_WORKLOADS, TOY_MAINS, FakeEvaluator, fake_catalog

from dlrig.enums import Vendor
from dlrig.errors import ValidationError
from dlrig.plan.constraints import Constraints
from dlrig.plan.explain import why
from dlrig.plan.kinds import BuildForm, ObjectiveKind
from dlrig.plan.objectives import make_objective
from dlrig.plan.results import PlanResult, WeightedWorkload
from dlrig.plan.search import plan
from dlrig.report.plan import infeasible_message

CATALOG = fake_catalog()


def run(
    workload: str,
    budget: float,
    constraints: Constraints | None = None,
    kind: ObjectiveKind = ObjectiveKind.THROUGHPUT,
) -> PlanResult:
    return plan(
        CATALOG,
        [WeightedWorkload(FAKE_WORKLOADS[workload])],
        budget,
        make_objective(kind, [1.0]),
        FakeEvaluator(),
        constraints=dataclasses.replace(constraints or Constraints(), mains=TOY_MAINS),
        top_k=3,
    )


def test_gpus_fixes_the_count() -> None:
    result = run("vision", 12_000, Constraints(gpus=2))
    assert result.builds
    assert {s.candidate.group.count for s in result.builds} == {2}
    assert {s.candidate.group.count for s in result.pareto} == {2}


def test_exclude_vendor_amd_leaves_out_amd_gpus_and_cpus() -> None:
    # Unconstrained, the AMD "Red 24" (30 TFLOPS for 900 USD) wins at 4000 USD (toy model).
    assert run("vision", 4000).builds[0].candidate.group.gpu.name == "Red 24"
    result = run("vision", 4000, Constraints(exclude_vendors=(Vendor.AMD,)))
    assert result.builds
    for s in (*result.builds, *result.pareto):
        assert s.candidate.group.gpu.vendor is not Vendor.AMD
        assert s.candidate.cpu.vendor is not Vendor.AMD


def test_form_server_picks_a_platform() -> None:
    result = run("vision", 40_000, Constraints(form=BuildForm.SERVER))
    assert result.builds
    assert all(s.build.platform is not None and s.build.motherboard is None for s in result.builds)
    assert all(s.build.psu is None and s.build.case is None for s in result.builds)


def test_include_forces_a_gpu_and_min_memory_filters() -> None:
    result = run("vision", 20_000, Constraints(include=("Fast 24",)))
    assert {s.candidate.group.gpu.name for s in result.builds} == {"Fast 24"}
    big = run("vision", 20_000, Constraints(min_gpu_memory_gb=40))
    assert all(s.candidate.group.gpu.memory_gb >= 40 for s in big.builds)


def test_unknown_include_is_bad_input() -> None:
    with pytest.raises(ValidationError, match="neither a catalog part nor a vendor"):
        run("vision", 5000, Constraints(include=("Quantum 9000",)))


def test_nothing_fits_names_the_cheapest_feasible_build() -> None:
    # "huge" needs 80 GB per GPU: only the 4x Module 80 platform holds it. Its cheapest
    # feasible form: 30,000 platform + 2 x 1,300 CPUs + 3 x 150 RDIMM (RAM.2 >= 80 GB) + 90
    # disk = 33,140 USD; toy speed 4 x 60 TFLOPS / 5 TFLOP per sample = 48 samples/s.
    result = run("huge", 3000)
    assert result.builds == ()
    assert infeasible_message(result) == (
        "nothing under 3,000 USD fits huge: the cheapest feasible build costs 33,140 USD "
        "(4x Module 80, 80 GiB each, on HGX 4; the job needs 80.0 GiB per GPU; 48.0 samples/s)"
    )


def test_why_a_second_card_beats_one_bigger_card() -> None:
    # Toy numbers at 4000 USD on "vision" (needs 8 GB): 2x Red 24 (2 x 30 TFLOPS) gives 2000
    # samples/s for 3010 USD, 50% more than 1x Fast 24 (40 TFLOPS: 1333 samples/s, 2460 USD).
    result = run("vision", 4000)
    # Red 24 is the fake catalog's AMD card: an AMD pick names its software stack (issue 35),
    # here a card dlrig's ROCm table does not know.
    assert why(result)[0] == (
        "2x Red 24 beats 1x Fast 24 by 50%: 2,000 vs 1,333 samples/s for 550 USD more; it needs "
        "ROCm (Red 24: not in dlrig's ROCm table, check AMD's list)"
    )


def test_why_mentions_memory_when_the_job_fits_the_smaller_card() -> None:
    # At 9000 USD with only these two GPUs: 2x Fast 24 (2 x 40 TFLOPS / 0.03 = 2667 samples/s,
    # 4710 USD) against the best 48 GB build, 2x Blower 48 on the 180 MB/s disk (storage-bound
    # at 180e6 / 110e3 = 1636 samples/s, 8940 USD).
    result = run("vision", 9000, Constraints(include=("Fast 24", "Blower 48")))
    assert why(result)[0] == (
        "2x Fast 24 is worth more than 2x Blower 48 here because the job fits in 24 GiB (it "
        "needs 8.0 GiB per GPU): 2,667 vs 1,636 samples/s for 4,230 USD less"
    )


def test_nothing_at_all_names_the_rule_that_stopped_every_group() -> None:
    # Four open-air cards on one board fail COOL.3 (toy rule, as the guide's), and four of
    # them draw more than the fake catalog's largest PSU (PSU.1): with only the open-air
    # "Fast 24" allowed at 4 GPUs even the group's best parts fail both, and the answer says
    # which rules stopped it rather than only that nothing passed.
    result = run("vision", 40_000, Constraints(gpus=4, include=("Fast 24",)))
    assert result.builds == () and result.cheapest is None
    assert {b.split(" ")[0] for b in result.stats.blocked} == {"PSU.1", "COOL.3"}
    assert infeasible_message(result).endswith(f"; most often {result.stats.blocked[0]}")
