"""The walk leaves out the candidates whose PSU cannot power them before it makes them
(plan.groups.Group.powered): exactly those PSU.1 errors on ("the parts plus 10% for peaks,
plus 10% margin"), so no build the rules would pass is lost."""

from __future__ import annotations

from dlrig.catalog.loader import builtin_catalog
from dlrig.enums import Severity
from dlrig.plan.constraints import Constraints, part_filter
from dlrig.plan.space import search_space
from dlrig.rules import check_build
from dlrig.workloads import load_workload

CATALOG = builtin_catalog()
JOB = load_workload("resnet50")


def test_a_pair_the_walk_leaves_out_is_one_psu_1_errors_on() -> None:
    limits = Constraints()
    space = search_space(CATALOG, limits, part_filter(limits, CATALOG), 100.0)
    # Groups where some PSU cannot carry some CPU (731 of the built-in catalog's 2,822).
    groups = [g for g in space.groups if not all(map(all, g.powered))][:8]
    assert groups
    left_out = kept = 0
    for group in groups:
        for i_cpu in range(len(group.cpus)):
            for i_psu in range(len(group.psus)):
                cand = group.candidate((i_cpu, 0, 0, i_psu, 0))
                if not cand.assembles:
                    continue
                errors = {
                    f.rule for f in check_build(cand.build(), JOB).findings
                    if f.severity is Severity.ERROR
                }  # fmt: skip
                assert group.powered[i_cpu][i_psu] == ("PSU.1" not in errors)
                left_out += not group.powered[i_cpu][i_psu]
                kept += group.powered[i_cpu][i_psu]
                if i_psu in group.weak_psus:
                    assert not any(row[i_psu] for row in group.powered)
    assert left_out and kept


def test_the_walk_yields_only_powered_candidates() -> None:
    limits = Constraints()
    space = search_space(CATALOG, limits, part_filter(limits, CATALOG), 100.0)
    group = next(g for g in space.groups if not all(map(all, g.powered)))
    walked = list(group.cheapest_first(float("inf")))
    assert walked
    assert all(group.powered[c.index[0]][c.index[3]] for c in walked)
