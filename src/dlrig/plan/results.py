"""What a plan answers: the top builds, the frontier, the cheapest feasible build, and what the
search did to find them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dlrig.machine.model import Build
from dlrig.mains import Mains
from dlrig.plan.evaluate import Outcome, WorkloadLike
from dlrig.plan.groups import Candidate
from dlrig.plan.objectives import Objective


@dataclass(frozen=True)
class WeightedWorkload:
    """A workload and its share of the user's work (weights need not sum to 1)."""

    workload: WorkloadLike
    weight: float = 1.0


@dataclass(frozen=True)
class Scored:
    """A feasible candidate with its outcomes (one per workload) and objective value.

    `value_low`: the value at the low end of the model's 80% interval (plan.ties);
    `value_low_same_gpu`: the same against a build of the same GPU model (None: as value_low);
    `warnings`: the ids of the warnings `check` gives it (one per rule and workload).
    """

    candidate: Candidate
    build: Build
    outcomes: tuple[Outcome, ...]
    value: float
    throughput: float
    best_outcomes: tuple[Outcome, ...]
    value_low: float
    warnings: tuple[str, ...] = ()
    value_low_same_gpu: float | None = None

    @property
    def price_usd(self) -> float:
        return self.candidate.price_usd


@dataclass(frozen=True)
class SearchStats:
    """What the search did: groups in the space, candidates it scored, distinct model and rule
    calls, the parts it could not price, the rule errors that stopped whole GPU groups (even
    their best parts failed them), most often first, each with one finding's words, and the
    priced GPUs (name, USD) no priced server holds (plan.space.SearchSpace.no_priced_server)."""

    groups: int
    evaluated: int
    estimates: int
    checks: int
    unpriced: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    no_priced_server: tuple[tuple[str, float], ...] = ()
    # Loop parts water-cooled builds wanted priced (plan.space), and the circuit judged on.
    loop_parts_unpriced: tuple[str, ...] = ()
    mains: Mains | None = None
    off_circuit: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanResult:
    """The top builds (best first), the price/throughput frontier (cheapest first), and, when
    nothing fits the budget, the cheapest feasible build there is (None: nothing at all).
    `rival` is the best build with another GPU model than the winner's. `leaders[i]`: the
    better-valued build of the same GPUs that builds[i] tied with and was ranked before for
    being cheaper (plan.ties), None where builds[i] was itself the best left. `value_pick`: the
    cheapest build within the model's comparison band of builds[0], when one is cheaper
    (plan.ties.value_pick)."""

    workloads: tuple[WeightedWorkload, ...]
    budget_usd: float
    objective: Objective
    builds: tuple[Scored, ...]
    pareto: tuple[Scored, ...]
    cheapest: Scored | None
    stats: SearchStats
    rival: Scored | None = None
    leaders: tuple[Scored | None, ...] = ()
    value_pick: Scored | None = None

    @property
    def rate_unit(self) -> str:
        """What the plan's rates count: a serving workload's output tokens/s, another's
        samples/s (both, weighted together, when the workloads mix them)."""
        served = [getattr(w.workload, "serve", None) is not None for w in self.workloads]
        if all(served):
            return "tokens/s"
        return "samples or tokens/s" if any(served) else "samples/s"

    @property
    def weighted(self) -> bool:
        """The plan's throughput is a weighted mean of several workloads' rates."""
        return len(self.workloads) > 1


def job_storage_gb(workloads: Sequence[WeightedWorkload]) -> float:
    """The most disk one of the workloads needs on its job drive, GB: its dataset and its own
    files, the model's weights and the checkpoints a training run keeps (model.checkpoint;
    DISK.4, DISK.job)."""
    from dlrig.model.checkpoint import job_files
    from dlrig.workloads.model import Workload

    sizes = []
    for w in workloads:
        data = float(w.workload.dataset.total_gb) if w.workload.dataset is not None else 0.0
        own = job_files(w.workload).total_gb if isinstance(w.workload, Workload) else 0.0
        sizes.append(data + own)
    return max(sizes, default=0.0)
