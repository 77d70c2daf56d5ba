"""How the planner asks "is this build feasible, and how fast is it?" — one seam, two answers.

The planner never judges a build itself: feasibility is the rule engine's (`dlrig.rules.
check_build`, no error-level finding) and speed is the model's (`dlrig.model.estimate`). Both
sit behind the `Evaluator` protocol so that the search can be tested against small fakes, and
so that the real ones are called at most once per distinct build and workload (the search
revisits builds: an upper bound, a top-K pass, a Pareto pass).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from dlrig.enums import Bottleneck, Severity
from dlrig.errors import ValidationError
from dlrig.machine.model import Build

if TYPE_CHECKING:
    from dlrig.model import Estimate
    from dlrig.rules import Finding
    from dlrig.workloads import Workload


class DatasetLike(Protocol):
    """What the planner reads of a workload's dataset: its size on disk."""

    @property
    def total_gb(self) -> float: ...


class WorkloadLike(Protocol):
    """What the planner reads of a workload itself (dlrig.workloads.Workload satisfies it)."""

    @property
    def name(self) -> str: ...

    @property
    def dataset(self) -> Any: ...


@dataclass(frozen=True)
class Outcome:
    """The model's answer for one build on one workload, reduced to what the planner ranks by.

    `time_h`, `energy_kwh` and `energy_cost` are for one training run (the workload's epochs or
    tokens); None when the workload states no run length. `throughput_ratio_low/high`: the
    model's 80% interval as ratios to samples_per_s (leave-one-architecture-out residuals;
    1.0/1.0 where the figure has no stated interval). `comparison_ratio_low`: how far the model
    may misjudge this build against another on the same job (80% of pairs; 1.0: no stated
    figure), what the ranking's ties use (plan.ties); `same_gpu_ratio_low` the same against
    a build of the same GPU model (the GPU's own error cancels: only the scaling error is left).
    """

    samples_per_s: float
    bottleneck: Bottleneck
    fits: bool
    gpu_required_gb: float
    gpu_available_gb: float
    time_h: float | None = None
    energy_kwh: float | None = None
    energy_cost: float | None = None
    system_peak_w: float | None = None
    serving_limit: str | None = None  # a serving workload's binding limit (issue 14)
    kwh_per_million_tokens: float | None = None  # a serving workload's, at the wall
    throughput_ratio_low: float = 1.0
    throughput_ratio_high: float = 1.0
    comparison_ratio_low: float = 1.0
    same_gpu_ratio_low: float = 1.0

    def at_ratio(self, ratio: float) -> Outcome:
        """The outcome were the build ratio times as fast as estimated: the run takes 1/ratio
        as long at the same draw, so its energy scales with the time too."""

        def longer(x: float | None) -> float | None:
            return None if x is None else x / ratio

        return dataclasses.replace(
            self,
            samples_per_s=self.samples_per_s * ratio,
            time_h=longer(self.time_h),
            energy_kwh=longer(self.energy_kwh),
            energy_cost=longer(self.energy_cost),
            kwh_per_million_tokens=longer(self.kwh_per_million_tokens),
        )


class Evaluator(Protocol):
    """Feasibility and speed of a build; `key` names the build for caching (same key, same
    build)."""

    def errors(self, key: Hashable, build: Build, workload: WorkloadLike) -> tuple[Finding, ...]:
        """The error-level findings on build for workload (empty: feasible)."""
        ...

    def outcome(self, key: Hashable, build: Build, workload: WorkloadLike) -> Outcome:
        """The model's estimate of build on workload."""
        ...

    def warnings(self, key: Hashable, build: Build, workload: WorkloadLike) -> tuple[str, ...]:
        """The ids of the warning-level findings on build for workload."""
        ...

    def fails(self, key: Hashable, build: Build, workload: WorkloadLike) -> bool:
        """Whether errors() would find any: the search's question for most builds."""
        ...


class ModelEvaluator:
    """The shipped evaluator: `dlrig.rules.check_build` and `dlrig.model.estimate`, memoised.

    With `expert_bar` (the planner's), a warning of an expert-bar rule (`CheckResult.
    below_bar`: RAM below the GPUs' memory, a 3+ GPU build on a desktop platform, the job on a
    hard disk, ...) counts as an error: `check` accepts such a build, `plan` offers none.
    Without it (`upgrade`, which judges the user's own build) only errors do.
    Counts the distinct calls it made (`estimates`, `checks`) for the search report.
    """

    def __init__(self, *, expert_bar: bool = True) -> None:
        self.expert_bar = expert_bar
        self._errors: dict[tuple[Hashable, str], tuple[Finding, ...]] = {}
        self._warnings: dict[tuple[Hashable, str], tuple[str, ...]] = {}
        self._outcomes: dict[tuple[Hashable, str], Outcome] = {}
        self._fails: dict[tuple[Hashable, str], bool] = {}
        # How often each rule stopped a build, and the rules by that count: `fails` tries them
        # first (a search's builds fail the same few rules over and over).
        self._stopped_by: dict[str, int] = {}
        self._try_first: tuple[str, ...] = ()
        self.estimates = 0
        self.checks = 0

    def errors(self, key: Hashable, build: Build, workload: WorkloadLike) -> tuple[Finding, ...]:
        """Error-level findings of check_build(build, workload), cached per (key, workload)."""
        from dlrig.rules import Finding, check_build

        cache_key = (key, workload.name)
        found = self._errors.get(cache_key)
        if found is None:
            self.checks += 1
            try:
                # The search asks most builds for errors only (probes of parts, candidates
                # that fail); warnings are asked of scored builds alone (`warnings`).
                result = check_build(build, cast("Workload", workload), errors_only=True)
            except ValidationError as exc:
                if not (exc.field or "").startswith("parallel."):
                    raise
                # The workload's tensor x pipeline layout does not fit this build's GPUs
                # (dlrig.model.parallelism.check_layout): a build the job cannot run on.
                found = (Finding("COMPAT.parallel", Severity.ERROR, exc.message),)
                self._errors[cache_key] = found
                self._warnings[cache_key] = ()
                return found
            found = result.errors + (result.below_bar if self.expert_bar else ())
            self._errors[cache_key] = found
        return found

    def fails(self, key: Hashable, build: Build, workload: WorkloadLike) -> bool:
        """Whether errors(key, build, workload) finds any, cached per (key, workload): the
        rule engine stops at the first rule that says no (`dlrig.rules.first_error`), trying
        first the rules that stopped this evaluator's builds most often."""
        from dlrig.rules import first_error

        cache_key = (key, workload.name)
        if cache_key in self._errors:
            return bool(self._errors[cache_key])
        failed = self._fails.get(cache_key)
        if failed is None:
            self.checks += 1
            try:
                first = first_error(
                    build,
                    cast("Workload", workload),
                    expert_bar=self.expert_bar,
                    try_first=self._try_first,
                )
            except ValidationError as exc:
                if not (exc.field or "").startswith("parallel."):
                    raise
                return self._failed(cache_key, "COMPAT.parallel")  # as errors() says
            failed = self._failed(cache_key, first.rule) if first is not None else False
            self._fails[cache_key] = failed
        return failed

    def _failed(self, cache_key: tuple[Hashable, str], rule: str) -> bool:
        self._fails[cache_key] = True
        self._stopped_by[rule] = self._stopped_by.get(rule, 0) + 1
        self._try_first = tuple(sorted(self._stopped_by, key=lambda r: -self._stopped_by[r]))
        return True

    def warnings(self, key: Hashable, build: Build, workload: WorkloadLike) -> tuple[str, ...]:
        """Warning rule ids of check_build(build, workload), cached per (key, workload); a
        build that errors() found infeasible has none to give."""
        from dlrig.rules import check_build

        cache_key = (key, workload.name)
        found = self._warnings.get(cache_key)
        if found is None:
            if self.errors(key, build, workload):
                found = ()
            else:
                result = check_build(build, cast("Workload", workload))
                found = tuple(f.rule for f in result.warnings)
            self._warnings[cache_key] = found
        return found

    def outcome(self, key: Hashable, build: Build, workload: WorkloadLike) -> Outcome:
        """estimate(build, workload) as an Outcome, cached per (key, workload)."""
        from dlrig.model import estimate

        cache_key = (key, workload.name)
        found = self._outcomes.get(cache_key)
        if found is None:
            self.estimates += 1
            job = cast("Workload", workload)
            try:
                est = estimate(build, job)
            except ValidationError as exc:
                if not (exc.field or "").startswith("parallel."):
                    raise
                # The job's tensor x pipeline layout does not fit the build's GPUs: it cannot
                # run there, as if it did not fit their memory.
                found = Outcome(0.0, Bottleneck.INTERCONNECT, False, 0.0, 0.0)
                self._outcomes[cache_key] = found
                return found
            found = outcome_of(est)
            if getattr(job, "serve", None) is not None:  # ranked by its serving figures
                from dlrig.plan.serving import serving_outcome

                found = serving_outcome(est)
            self._outcomes[cache_key] = found
        return found


def outcome_of(est: Estimate) -> Outcome:
    """Reduce a `dlrig.model.Estimate` to what the planner ranks by (the comparison interval
    from the calibration the planner's estimates use, the default one)."""
    from dlrig.model.calibration import default_calibration

    return Outcome(
        samples_per_s=est.samples_per_s,
        bottleneck=est.bottleneck,
        fits=est.memory.fits,
        gpu_required_gb=est.memory.gpu_required_gb,
        gpu_available_gb=est.memory.gpu_available_gb,
        time_h=est.run.time_h,
        energy_kwh=est.run.energy_kwh,
        energy_cost=est.run.energy_cost,
        system_peak_w=est.power.system_peak_w,
        throughput_ratio_low=est.throughput_ratio_low,
        throughput_ratio_high=est.throughput_ratio_high,
        comparison_ratio_low=default_calibration().comparison_ratio_low,
        same_gpu_ratio_low=default_calibration().same_gpu_ratio_low,
    )
