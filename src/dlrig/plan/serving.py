"""The planner's view of a serving workload (issue 14): a build is feasible when the asked
users' contexts fit and each user gets the asked speed; it is ranked by output tokens/s in
total, and the serving limit that binds travels with it."""

from __future__ import annotations

from dlrig.enums import Bottleneck
from dlrig.model.result import Estimate
from dlrig.model.serving import ServingEstimate, ServingLimit
from dlrig.plan.evaluate import Outcome

# The bottleneck vocabulary (design.md) for each serving limit; memory limits make a build
# infeasible, so their stage is the one that would bind once they are lifted.
LIMIT_STAGE = {
    ServingLimit.WEIGHT_MEMORY: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.KV_MEMORY: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.DECODE_BANDWIDTH: Bottleneck.GPU_MEMORY_BANDWIDTH,
    ServingLimit.DECODE_COMPUTE: Bottleneck.GPU_COMPUTE,
    ServingLimit.PREFILL_COMPUTE: Bottleneck.GPU_COMPUTE,
    ServingLimit.INTERCONNECT: Bottleneck.INTERCONNECT,
    ServingLimit.OFFLOAD: Bottleneck.PCIE,
    ServingLimit.ENGINE_OVERHEAD: Bottleneck.GPU_COMPUTE,
}


def meets_targets(serving: ServingEstimate) -> bool:
    """The asked users fit and each gets at least the asked tokens/s."""
    target = serving.min_tokens_per_s_per_user
    fast_enough = target is None or serving.tokens_per_s_per_user >= target
    return serving.fits and fast_enough


def serving_outcome(est: Estimate, serving: ServingEstimate | None) -> Outcome:
    """The estimate reduced for the planner, with serving figures in place of the per-step
    ones: tokens/s of all users as the rate, serving feasibility as `fits`."""
    if serving is None:  # no GPU: nothing serves
        return Outcome(
            samples_per_s=0.0,
            bottleneck=est.bottleneck,
            fits=False,
            gpu_required_gb=est.memory.gpu_required_gb,
            gpu_available_gb=est.memory.gpu_available_gb,
            system_peak_w=est.power.system_peak_w,
        )
    needed_gb = serving.weights_gb + serving.kv_per_user_gb * serving.users
    return Outcome(
        samples_per_s=serving.tokens_per_s_total,
        bottleneck=LIMIT_STAGE[serving.binding],
        fits=meets_targets(serving),
        gpu_required_gb=needed_gb / serving.gpus,
        gpu_available_gb=serving.memory_available_gb / serving.gpus,
        time_h=est.run.time_h,
        energy_kwh=est.run.energy_kwh,
        energy_cost=est.run.energy_cost,
        system_peak_w=est.power.system_peak_w,
        serving_limit=serving.binding.value,
    )
