"""The planner's view of a serving workload (issue 14): a build is feasible when the asked
users' contexts fit at once and each user gets the asked speed; it is ranked by output
tokens/s in total, and the serving limit that binds travels with it. Every figure is the
estimate's own (dlrig.model.served): the rate, the run and its energy are the same output
tokens/s.

`estimate` runs a batched engine past its KV cache, the users beyond it queued (their wait in
the time to first token); a plan does not size a build that way. Who asks for N concurrent
users buys memory for N contexts: a queue turns into seconds before the first token that no
per-user speed target sees, so a build whose cache holds fewer than the asked users is not
offered (vLLM's max_num_seqs, a setting and not the hardware, does not count against it).
An offline batch (serve.requests) is meant to queue: any build that runs it is offered, and
ranked by the batch's own rate, so a plan by time-to-train finds the build that finishes it
first.
"""

from __future__ import annotations

from dlrig.model.result import Estimate
from dlrig.model.serving import ServingEstimate
from dlrig.plan.evaluate import Outcome
from dlrig.workloads.serving import Engine


def meets_targets(serving: ServingEstimate) -> bool:
    """Every asked user's context fits at once, none queued for the KV cache, and each gets
    at least the asked tokens/s; a batch sent at once only has to run."""
    target = serving.min_tokens_per_s_per_user
    fast_enough = target is None or serving.tokens_per_s_per_user >= target
    # A local runner holds every user by leaving layers in RAM (its `fits`).
    holds_all = (
        serving.engine == Engine.LOCAL.value
        or serving.batch is not None
        or serving.max_users_fit >= serving.users
    )
    return serving.fits and holds_all and fast_enough


def serving_outcome(est: Estimate) -> Outcome:
    """The estimate reduced for the planner: tokens/s of all users as the rate, serving
    feasibility (users and speed) as `fits`; a build without GPUs serves nothing."""
    serving = est.serving
    if serving is None:  # no GPU: nothing serves
        return Outcome(
            samples_per_s=0.0,
            bottleneck=est.bottleneck,
            fits=False,
            gpu_required_gb=est.memory.gpu_required_gb,
            gpu_available_gb=est.memory.gpu_available_gb,
            system_peak_w=est.power.system_peak_w,
        )
    return Outcome(
        samples_per_s=est.samples_per_s,
        bottleneck=est.bottleneck,
        fits=meets_targets(serving),
        gpu_required_gb=est.memory.gpu_required_gb,
        gpu_available_gb=est.memory.gpu_available_gb,
        time_h=est.run.time_h,
        energy_kwh=est.run.energy_kwh,
        energy_cost=est.run.energy_cost,
        system_peak_w=est.power.system_peak_w,
        serving_limit=serving.binding.value,
        kwh_per_million_tokens=est.kwh_per_million_tokens,
    )
