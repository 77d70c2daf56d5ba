"""Why a planned build wins: one sentence per result, generated from the numbers.

The first build is compared with the best build of another GPU model under the same budget
(else with the best one of another GPU count); the others with the first. The sentence names the
deciding fact when the numbers show one: the job fits in the smaller card's memory, the build
is held back by something other than its GPUs, a further card adds little.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from dlrig.catalog.currency import USD, Currency
from dlrig.enums import Bottleneck
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.results import PlanResult, Scored
from dlrig.plan.ties import chance_ahead

if TYPE_CHECKING:
    from dlrig.rules.engine import Finding
    from dlrig.workloads import Workload

ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh"}


def gpu_set(s: Scored) -> str:
    """'2x GeForce RTX 4090' (with the node count when more than one, and the power limit
    when the plan set one: 'at 310 W')."""
    g = s.candidate.group
    nodes = f"{g.nodes} nodes of " if g.nodes > 1 else ""
    limited = f" at {g.power_limit_w:.0f} W" if g.power_limit_w is not None else ""
    return f"{nodes}{g.count}x {g.gpu.name}{limited}"


def rate(value: float) -> str:
    """A rate with sensible precision: 1,830 / 52.4 / 0.81."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _percent(fraction: float) -> str:
    """'38%', or '0.4%' under 10% (so that a small gap does not read as none)."""
    pct = fraction * 100.0
    return f"{pct:.1f}%" if abs(pct) < 10 else f"{pct:.0f}%"


def _percent_more(a: float, b: float) -> str:
    return _percent(a / b - 1.0) if b > 0 else "infinitely"


def _same_spend(a: Scored, b: Scored) -> bool:
    ga, gb = a.candidate.group, b.candidate.group
    return (ga.gpu.name, ga.count, ga.nodes) == (gb.gpu.name, gb.count, gb.nodes)


def _significant(value: float) -> str:
    """Three significant digits, thousands separated: 0.0412, 12.3, 4,120."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def objective_phrase(result: PlanResult, s: Scored, currency: Currency = USD) -> str:
    """The build's objective value in words: '12.3 h to train' ('to serve' when every
    workload is served), '0.0412 USD a run' (money in `currency`)."""
    obj = result.objective
    shown = obj.display(s.value)
    if obj.kind is ObjectiveKind.TIME_TO_TRAIN:
        verb = "serve" if result.rate_unit == "tokens/s" else "train"
        return f"{_significant(shown)} h to {verb}"
    if obj.kind is ObjectiveKind.COST_PER_RUN:
        return f"{_significant(currency.from_usd(shown))} {currency.code} a run"
    if obj.kind is ObjectiveKind.PERF_PER_DOLLAR:
        return (
            f"{_significant(shown / currency.per_usd)} {result.rate_unit} per 1,000 {currency.code}"
        )
    if obj.kind is ObjectiveKind.CHEAPEST:
        return f"{_significant(currency.from_usd(shown))} {currency.code}"
    return f"{rate(s.throughput)} {result.rate_unit}"


def _bottleneck_clause(s: Scored) -> str:
    o = s.outcomes[0]
    if o.bottleneck is Bottleneck.GPU_COMPUTE:
        return ""
    return (
        f"; it is {o.bottleneck.value}-bound, so faster GPUs alone would not help"
        if o.bottleneck in (Bottleneck.STORAGE, Bottleneck.CPU_PREPROCESSING, Bottleneck.PCIE)
        else f"; it is {o.bottleneck.value}-bound"
    )


def _versus(result: PlanResult, s: Scored, other: Scored, currency: Currency) -> str:
    """The comparison of s with an alternative way to spend the money."""
    this, that = s.candidate.group, other.candidate.group
    cost = s.price_usd - other.price_usd
    money = (
        f"for {currency.format(cost)} more"
        if cost > 0.5
        else f"for {currency.format(-cost)} less"
        if cost < -0.5
        else "for the same money"
    )
    numbers = f"{rate(s.throughput)} vs {rate(other.throughput)} {result.rate_unit} {money}"
    if result.objective.kind is not ObjectiveKind.THROUGHPUT:
        numbers += (
            f"; {objective_phrase(result, s, currency)} vs "
            f"{objective_phrase(result, other, currency)}"
        )
    more = _percent_more(s.throughput, other.throughput)
    if s.throughput < other.throughput:
        goal = result.objective.kind.value
        return f"{gpu_set(s)} wins on {goal} over the faster {gpu_set(other)}: {numbers}"
    if this.gpu.name == that.gpu.name and this.count > that.count and this.nodes == that.nodes:
        extra = this.count - that.count
        what = (
            f"a {ORDINALS.get(this.count, f'{this.count}th')} {this.gpu.name}"
            if extra == 1
            else f"{extra} more {this.gpu.name} cards"
        )
        return f"{what} is worth it here ({more} more than {gpu_set(other)}): {numbers}"
    if that.gpu.memory_gb > this.gpu.memory_gb:
        need = s.outcomes[0].gpu_required_gb
        return (
            f"{gpu_set(s)} is worth more than {gpu_set(other)} here because the job fits in "
            f"{this.gpu.memory_gb:g} GiB (it needs {need:.1f} GiB per GPU): {numbers}"
        )
    return f"{gpu_set(s)} beats {gpu_set(other)} by {more}: {numbers}"


def _where(result: PlanResult, s: Scored, currency: Currency) -> str:
    """'#2' when s is ranked, else its GPUs and price."""
    for rank, r in enumerate(result.builds, start=1):
        if r is s:
            return f"#{rank}"
    return f"{gpu_set(s)} at {currency.format(s.price_usd)}"


def _tie_clause(result: PlanResult, s: Scored, leader: Scored, currency: Currency) -> str:
    """Why s stands for its GPU set rather than the faster leader of the same GPUs (plan.ties):
    within the model's same-GPU uncertainty of it, and better value for money."""
    o = leader.outcomes[0]
    band = (
        f"the model misjudges builds of one GPU model against each other by up to "
        f"{1 - o.same_gpu_ratio_low:.0%} in 80% of comparisons"
    )
    saving = leader.price_usd - s.price_usd
    warned = f"{len(s.warnings)} warnings against {len(leader.warnings)}"
    if saving > 0.5:
        money = f"{currency.format(saving)} cheaper"
    elif saving < -0.5:
        money = f"{currency.format(-saving)} dearer with {warned}"
    else:
        money = f"as cheap with {warned}"
    return (
        f"the best value for money of the hosts of these GPUs within the model's uncertainty "
        f"of the best one ({_where(result, leader, currency)}: "
        f"{objective_phrase(result, leader, currency)} vs "
        f"{objective_phrase(result, s, currency)}; {band}), {money}"
    )


# Below this chance that a build beats the next one, the order is called a near-tie.
NEAR_TIE_CHANCE = 0.8


def chances(result: PlanResult) -> tuple[float | None, ...]:
    """Per ranked build, the chance that it is in fact better than the next one by the
    objective (plan.ties.chance_ahead; None for the last)."""
    builds = result.builds
    return tuple(chance_ahead(a, b, result.objective) for a, b in itertools.pairwise(builds)) + (
        (None,) if builds else ()
    )


def odds_line(result: PlanResult) -> str | None:
    """'the order, as sure as the model's comparison error lets it be: #1 over #2 84%, #2 over
    #3 55% (a near-tie)'; None with fewer than two builds or an objective speed does not
    enter."""
    pairs = [c for c in chances(result) if c is not None]
    if not pairs or all(c in (0.0, 1.0) for c in pairs):
        return None
    said = []
    for i, chance in enumerate(pairs, start=1):
        tie = " (a near-tie)" if chance < NEAR_TIE_CHANCE else ""
        said.append(f"#{i} over #{i + 1} {chance:.0%}{tie}")
    return "the chance each build beats the next, from the model's comparison error: " + ", ".join(
        said
    )


def value_pick_line(result: PlanResult, currency: Currency = USD) -> str | None:
    """'value pick: 3x AMD Radeon RX 7900 XTX (#2) at 6,419 USD, 24% slower than #1 for 1,586
    USD less, within the model's uncertainty of it (a 25% chance it is in fact faster)'."""
    pick, builds = result.value_pick, result.builds
    if pick is None or not builds:
        return None
    first = builds[0]
    chance = chance_ahead(pick, first, result.objective)
    gap = 1 - pick.throughput / first.throughput if first.throughput > 0 else 0.0
    speed = f"{_percent(gap)} slower than #1" if gap >= 0.0005 else "as fast as #1"
    where = _where(result, pick, currency)
    at = f"({where})" if where.startswith("#") else f"at {currency.format(pick.price_usd)}"
    return (
        f"value pick: {gpu_set(pick)} {at}, {speed} for "
        f"{currency.format(first.price_usd - pick.price_usd)} less and within the model's "
        f"uncertainty of it (a {chance:.0%} chance it is in fact better by "
        f"{result.objective.kind.value})"
    )


def software_clause(s: Scored) -> str:
    """'; it runs on ROCm (AMD Radeon RX 7900 XTX: gfx1100 on AMD's ROCm Linux list; several
    Radeon cards need CPU-wired slots of one width, which these have)' for an AMD build, naming
    the libraries the job needs (SW.*); '' for other builds."""
    amd = list(dict.fromkeys(g.gpu.name for g in s.build.gpus if g.gpu.vendor == "amd"))
    if not amd:
        return ""
    from dlrig.catalog.software import software_table

    table = software_table()
    rows = [(name, table.rocm(name)) for name in amd]
    said = [
        f"{name}: {row.llvm_target}, {row.rocm_linux} on AMD's ROCm Linux list"
        if row is not None
        else f"{name}: not in dlrig's ROCm table, check AMD's list"
        for name, row in rows
    ]
    extra = ""
    radeon = [row for _, row in rows if row is not None and row.radeon]
    if radeon and s.build.gpu_count > 1:
        extra = "; several Radeon cards need CPU-wired slots of one width (RCCL), which it has"
    supported = all(row is not None and row.rocm_linux == "supported" for _, row in rows)
    verb = "runs on" if supported else "needs"
    return f"; it {verb} ROCm ({'; '.join(said)}{extra})"


def why(
    result: PlanResult, alternatives: Sequence[Scored] = (), currency: Currency = USD
) -> tuple[str, ...]:
    """One sentence per build of result.builds, money in `currency`. alternatives: other
    scored builds (e.g. the Pareto frontier) to compare the winner with when the top K all
    spend alike."""
    builds = result.builds
    if not builds:
        return ()
    first = builds[0]
    pool = [s for s in (*builds[1:], *alternatives, *result.pareto) if not _same_spend(s, first)]
    pool.sort(key=lambda s: -s.value)
    if result.rival is not None:
        pool.insert(0, result.rival)
    phrase_first = objective_phrase(result, first, currency)
    if pool:
        head = _versus(result, first, pool[0], currency)
    else:
        head = f"{gpu_set(first)} is the only GPU set that fits the job under this budget"
    leaders = result.leaders or (None,) * len(builds)
    odds = chances(result)
    if leaders[0] is not None:
        head += f"; {_tie_clause(result, first, leaders[0], currency)}"
    sentences = [head + _bottleneck_clause(first) + software_clause(first)]
    for rank, s in enumerate(builds[1:], start=2):
        slower = first.throughput > s.throughput
        saving = first.price_usd - s.price_usd
        if slower and saving > 0.5:
            gap = 1 - s.throughput / first.throughput
            text = (
                f"{_percent(gap)} slower than #1 for {currency.format(saving)} less"
                if gap >= 0.0005
                else f"as fast as #1 (within 0.05%) for {currency.format(saving)} less"
            )
        elif slower:
            gap = 1 - s.throughput / first.throughput
            money = f"{currency.format(-saving)} more" if saving < -0.5 else "the same money"
            text = f"{_percent(gap)} slower than #1 for {money}"
        elif not slower and saving < -0.5:
            text = f"as fast or faster than #1 but {currency.format(-saving)} dearer"
        else:
            text = f"{objective_phrase(result, s, currency)} against {phrase_first} for #1"
        before = odds[rank - 2]
        if before is not None and 0.0 < before < 1.0:
            text += f"; #{rank - 1} is ahead of it with a {before:.0%} chance" + (
                " (a near-tie)" if before < NEAR_TIE_CHANCE else ""
            )
        leader = leaders[rank - 1]
        if leader is not None:
            text += f"; {_tie_clause(result, s, leader, currency)}"
        sentences.append(f"{gpu_set(s)}: {text}" + _bottleneck_clause(s) + software_clause(s))
    return tuple(sentences)


def warnings_of(result: PlanResult, s: Scored, currency: Currency = USD) -> tuple[Finding, ...]:
    """The warnings `dlrig check` gives a planned build on each workload (once each): the
    search keeps builds without errors, and a buyer must see the rest before buying (a third
    card in a chipset slot, PCIE.3). Money in them is in `currency`."""
    from dlrig.rules import check_build

    seen: dict[tuple[str, str], Finding] = {}
    for w in result.workloads:
        for f in check_build(s.build, cast("Workload", w.workload), currency=currency).warnings:
            seen.setdefault((f.rule, f.message), f)
    return tuple(seen.values())
