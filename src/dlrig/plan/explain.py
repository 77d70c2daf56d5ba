"""Why a planned build wins: one sentence per result, generated from the numbers.

The first build is compared with the best alternative the search scored that spends the money
differently (another GPU model or count); the others with the first. The sentence names the
deciding fact when the numbers show one: the job fits in the smaller card's memory, the build
is held back by something other than its GPUs, a further card adds little.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlrig.enums import Bottleneck
from dlrig.plan.kinds import ObjectiveKind
from dlrig.plan.search import PlanResult, Scored

ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh"}


def gpu_set(s: Scored) -> str:
    """'2x GeForce RTX 4090' (with the node count when more than one)."""
    g = s.candidate.group
    nodes = f"{g.nodes} nodes of " if g.nodes > 1 else ""
    return f"{nodes}{g.count}x {g.gpu.name}"


def usd(amount: float) -> str:
    """'4,120 USD'."""
    return f"{amount:,.0f} USD"


def rate(value: float) -> str:
    """A rate with sensible precision: 1,830 / 52.4 / 0.81."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _percent_more(a: float, b: float) -> str:
    return f"{(a / b - 1.0) * 100.0:.0f}%" if b > 0 else "infinitely"


def _same_spend(a: Scored, b: Scored) -> bool:
    ga, gb = a.candidate.group, b.candidate.group
    return (ga.gpu.name, ga.count, ga.nodes) == (gb.gpu.name, gb.count, gb.nodes)


def _objective_phrase(result: PlanResult, s: Scored) -> str:
    obj = result.objective
    shown = obj.display(s.value)
    if obj.kind is ObjectiveKind.TIME_TO_TRAIN:
        return f"{shown:,.1f} h to train"
    if obj.kind is ObjectiveKind.COST_PER_RUN:
        return f"{shown:,.2f} USD a run"
    if obj.kind is ObjectiveKind.PERF_PER_DOLLAR:
        return f"{shown:,.1f} samples/s per 1,000 USD"
    return f"{rate(s.throughput)} samples/s"


def _bottleneck_clause(s: Scored) -> str:
    o = s.outcomes[0]
    if o.bottleneck is Bottleneck.GPU_COMPUTE:
        return ""
    return (
        f"; it is {o.bottleneck.value}-bound, so faster GPUs alone would not help"
        if o.bottleneck in (Bottleneck.STORAGE, Bottleneck.CPU_PREPROCESSING, Bottleneck.PCIE)
        else f"; it is {o.bottleneck.value}-bound"
    )


def _versus(s: Scored, other: Scored, phrase_s: str, phrase_o: str) -> str:
    """The comparison of s with an alternative spend."""
    this, that = s.candidate.group, other.candidate.group
    faster = s.throughput >= other.throughput
    cost = s.price_usd - other.price_usd
    money = (
        f"for {usd(cost)} more"
        if cost > 0.5
        else f"and {usd(-cost)} less"
        if cost < -0.5
        else "for the same money"
    )
    if this.gpu.name == that.gpu.name and this.count > that.count and this.nodes == that.nodes:
        extra = this.count - that.count
        what = (
            f"a {ORDINALS.get(this.count, f'{this.count}th')} {this.gpu.name}"
            if extra == 1
            else f"{extra} more {this.gpu.name} cards"
        )
        return (
            f"{what} is worth it here: {_percent_more(s.throughput, other.throughput)} more "
            f"samples/s than {gpu_set(other)} ({phrase_s} vs {phrase_o}) {money}"
        )
    fits = s.outcomes[0]
    if that.gpu.memory_gb > this.gpu.memory_gb and faster:
        return (
            f"{gpu_set(s)} is worth more than {gpu_set(other)} here because the job fits in "
            f"{this.gpu.memory_gb:g} GB (it needs {fits.gpu_required_gb:.1f} GB per GPU): "
            f"{phrase_s} vs {phrase_o}, {money}"
        )
    if faster:
        return (
            f"{gpu_set(s)} beats {gpu_set(other)}: {_percent_more(s.throughput, other.throughput)}"
            f" more samples/s ({phrase_s} vs {phrase_o}) {money}"
        )
    return (
        f"{gpu_set(s)} scores better than the faster {gpu_set(other)} on this objective "
        f"({phrase_s} vs {phrase_o}), {money}"
    )


def why(result: PlanResult, alternatives: Sequence[Scored] = ()) -> tuple[str, ...]:
    """One sentence per build of result.builds. alternatives: other scored builds (e.g. the
    Pareto frontier) to compare the winner with when the top K all spend alike."""
    builds = result.builds
    if not builds:
        return ()
    first = builds[0]
    pool = [s for s in (*builds[1:], *alternatives, *result.pareto) if not _same_spend(s, first)]
    pool.sort(key=lambda s: -s.value)
    phrase_first = _objective_phrase(result, first)
    if pool:
        runner = pool[0]
        head = _versus(first, runner, phrase_first, _objective_phrase(result, runner))
    else:
        head = f"{gpu_set(first)} is the only GPU set that fits the job under this budget"
    sentences = [head + _bottleneck_clause(first)]
    for s in builds[1:]:
        slower = first.throughput > s.throughput
        saving = first.price_usd - s.price_usd
        if slower and saving > 0.5:
            text = (
                f"{(1 - s.throughput / first.throughput) * 100:.0f}% slower than #1 "
                f"but {usd(saving)} cheaper"
            )
        elif not slower and saving < -0.5:
            text = f"as fast or faster than #1 but {usd(-saving)} dearer"
        else:
            text = f"{_objective_phrase(result, s)} against {phrase_first} for #1"
        sentences.append(f"{gpu_set(s)}: {text}" + _bottleneck_clause(s))
    return tuple(sentences)
