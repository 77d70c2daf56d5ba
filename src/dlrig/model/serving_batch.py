"""A batch of requests sent at once, as an offline job and a throughput benchmark send them
(`serve.requests`; trtllm-bench's throughput runs, vLLM's benchmark_throughput): the run's time
and its output tokens/s.

The steady state (serving.serving_estimate at the build's capacity) holds only while enough
requests wait to refill every slot. A finite batch of requests of one length runs in waves:
the requests that start together end together, so the build runs as many as it holds, then the
next as many, and the last wave carries the rest. That wave reads the same weights each step
for fewer answers, so a batch a little over the build's capacity runs well below the steady
rate, and a batch under it never reaches that rate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dlrig.machine.model import Build
from dlrig.model.calibration import Calibration
from dlrig.model.serving import serving_estimate, tensor_parallel_options
from dlrig.workloads.serving import ServeSpec


@dataclass(frozen=True)
class BatchRun:
    """`requests` requests sent at once: `running_at_once` of them run together in each of
    `full_waves` waves, then `last_wave_requests` (0: none left over); the run lasts `run_s`
    and yields `tokens_per_s_total` output tokens/s over it, where the steady state at the
    build's capacity yields `steady_tokens_per_s`."""

    requests: int
    running_at_once: int
    full_waves: int
    last_wave_requests: int
    run_s: float
    tokens_per_s_total: float
    steady_tokens_per_s: float


def running_capacity(
    build: Build, spec: ServeSpec, model_name: str, cal: Calibration | None = None
) -> int:
    """Requests the build runs at once for `spec`'s lengths: every copy's running slots (its KV
    cache's contexts, capped by the engine's running limit), at least one."""
    probe = max(spec.users, 1)
    est = serving_estimate(build, replace(spec, users=probe), model_name, cal)
    if est is None:
        return 1
    if est.users_waiting == 0:  # the probe fits: ask for every context the KV caches hold
        probe = max(est.max_users_fit, 1)
        est = serving_estimate(build, replace(spec, users=probe), model_name, cal)
        assert est is not None
    return max(probe - est.users_waiting, 1)


def _wave_s(
    build: Build, spec: ServeSpec, users: int, model_name: str, cal: Calibration | None
) -> tuple[float, float]:
    """(seconds, output tokens/s) of one wave of `users` requests: their answers at the steady
    rate of that many users (their prompts' prefills inside it)."""
    est = serving_estimate(build, replace(spec, users=users), model_name, cal)
    assert est is not None
    return users * spec.output_tokens / est.tokens_per_s_total, est.tokens_per_s_total


def batch_run(
    build: Build,
    spec: ServeSpec,
    requests: int,
    model_name: str,
    cal: Calibration | None = None,
) -> BatchRun:
    """`requests` requests of `spec`'s lengths sent at once, run in waves of
    `running_capacity` requests, the last wave with the rest, every wave on one layout: the
    workload's `serve.tensor_parallel`, else the one that finishes the batch first
    (batch_layout; each wave's own users would otherwise choose their own)."""
    if spec.tensor_parallel is None and spec.engine.is_batched:
        degree = batch_layout(build, spec, requests, model_name, cal)
        spec = spec if degree is None else replace(spec, tensor_parallel=degree)
    capacity = running_capacity(build, spec, model_name, cal)
    full_waves, rest = divmod(requests, capacity)
    wave_s, steady = _wave_s(build, spec, capacity, model_name, cal)
    run_s = full_waves * wave_s
    if rest:
        run_s += _wave_s(build, spec, rest, model_name, cal)[0]
    return BatchRun(
        requests=requests,
        running_at_once=min(capacity, requests),
        full_waves=full_waves,
        last_wave_requests=rest,
        run_s=run_s,
        tokens_per_s_total=requests * spec.output_tokens / run_s,
        steady_tokens_per_s=steady,
    )


def batch_layout(
    build: Build, spec: ServeSpec, requests: int, model_name: str, cal: Calibration | None = None
) -> int | None:
    """Cards one copy spans to finish `requests` first (`serve.tensor_parallel` unset): every
    layout a batched server may take (serving.tensor_parallel_options) whose copy runs a
    request, the one with the shortest run; None where none does. A batch queues past its
    build's contexts, so the layout that holds every request at once, which a closed loop of
    that many users gets, is not the measure."""
    if not build.gpus:
        return None
    runs = {}
    for degree in tensor_parallel_options(spec, build.gpu_count):
        trial = replace(spec, tensor_parallel=degree)
        est = serving_estimate(build, trial, model_name, cal)
        if est is not None and est.fits:
            runs[degree] = batch_run(build, trial, requests, model_name, cal).run_s
    return min(runs, key=lambda d: runs[d]) if runs else None
