"""A serving build under Poisson arrivals (issue 36): `serve.arrival_rate` and the latency
bounds `serve.ttft_target_s` / `serve.tpot_target_s` answered from the serving model's own
timings (dlrig.model.serving: a prompt's prefill, the decode step at each batch, the users
whose context the KV cache holds) by the continuous-batching simulation of
dlrig.model.arrivals. Percentiles are the 99th (MLPerf's Server scenario) with the median.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from dlrig.enums import Bottleneck
from dlrig.machine.model import Build
from dlrig.model import arrivals
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import Calibration
from dlrig.model.host import host_memory_bandwidth
from dlrig.model.served import LIMIT_STAGE
from dlrig.model.serving import (
    Cards,
    ServingEstimate,
    ServingLimit,
    alone_prefill_s,
    binding_limit,
    cards,
    decode_parts_s,
    decode_step_s,
    gemm_overlap_exponent,
    host_step_s,
    max_running,
    prefill_s,
    request_overhead_s,
    serving_ratio_band,
    tensor_parallel_degree,
    with_host_s,
)
from dlrig.workloads.serving import Engine, ServeSpec

# The size of the change each candidate limit is tried with (dlrig.model.serving_load._limit).
LIFT = 2


@dataclass(frozen=True)
class ServingLoad:
    """What arrivals at a rate see, and what rate the bounds allow: `at_rate` the latency at
    the asked `requests_per_s` (None when not asked) and `meets_targets` whether both bounds
    hold there; `max_requests_per_s` the largest rate meeting the bounds (None without
    bounds), `max_requests_per_s_low` / `_high` that rate on an engine as slow and as fast as
    the serving interval's ends (serving.serving_ratio_band), `at_max`
    the latency at the largest rate, and `limit` / `bottleneck` what stops a higher rate
    (ServingLimit, and its stage in the bottleneck vocabulary)."""

    percentile: float
    copies: int
    gpus_per_copy: int
    layout_chosen: bool  # dlrig chose the copies for the rate (no serve.tensor_parallel)
    max_batch_per_copy: int
    prefill_s: float
    batch1_step_s: float
    saturated_requests_per_s: float
    ttft_target_s: float | None
    tpot_target_s: float | None
    requests_per_s: float | None
    at_rate: arrivals.Load | None
    meets_targets: bool | None
    max_requests_per_s: float | None
    max_requests_per_s_low: float | None
    max_requests_per_s_high: float | None
    at_max: arrivals.Load | None
    limit: ServingLimit | None
    bottleneck: Bottleneck | None
    requests_simulated: int


def asks_for_load(spec: ServeSpec) -> bool:
    """The workload asks about arrivals: a rate or a latency bound."""
    return any(v is not None for v in (spec.arrival_rate, spec.ttft_target_s, spec.tpot_target_s))


def engine_times(
    spec: ServeSpec, c: Cards, prefill_one_s: float, max_batch: int, host_gb_s: float
) -> arrivals.EngineTimes:
    """One copy's timings as the simulation reads them: the decode step at each batch is the
    serving model's (its parts at that batch, with the layers the cards cannot hold then, and
    at least the engine's CPU time for that batch); a prefill pass takes its prompts' FLOPs, a
    lone prompt's pass at least (the estimate's), and every first token the serving stack's
    time a request."""

    @functools.cache  # every simulation of the bisection asks for the same batches
    def step_s(batch: int) -> float:
        at = replace(spec, users=batch)
        off = mem.offloaded_fraction(at, c.memory_bytes, c.count)
        gpu = decode_step_s(
            decode_parts_s(at, c, batch, off, host_gb_s), gemm_overlap_exponent(c.gpu, spec)
        )
        return with_host_s(gpu, host_step_s(spec, c, batch))

    lone = replace(spec, users=1)
    offloaded = mem.offloaded_fraction(lone, c.memory_bytes, c.count)
    lone_pass_s = alone_prefill_s(lone, c, offloaded, host_gb_s, gemm_overlap_exponent(c.gpu, spec))
    return arrivals.EngineTimes(
        prefill_one_s, step_s, max_batch, spec.output_tokens, request_overhead_s(spec), lone_pass_s
    )


def rate_band(
    engine: arrivals.EngineTimes,
    copies: int,
    ttft_target_s: float | None,
    tpot_target_s: float | None,
    speed_band: tuple[float, float],
) -> tuple[float, float]:
    """The largest rate meeting the bounds on an engine whose every prefill and decode step
    runs at the serving interval's slow and fast ends (`speed_band`, measured / predicted
    speed: serving.serving_ratio_band). The bounds are absolute times, so the rate is searched
    again at each end rather than scaled: a faster engine both serves more and leaves more of
    the bound for queueing."""

    def at_speed(speed: float) -> float:
        scaled = replace(
            engine,
            prefill_s=engine.prefill_s / speed,
            lone_pass_s=engine.lone_pass_s / speed,
            step_s=lambda b: engine.step_s(b) / speed,
        )
        return arrivals.max_rate(scaled, copies, ttft_target_s, tpot_target_s).max_requests_per_s

    low, high = speed_band
    return at_speed(low), at_speed(high)


def _score(x: arrivals.Load, ttft: float | None, tpot: float | None) -> tuple[float, float]:
    """How far a load is past its bounds (the larger p99 over its bound; an unbounded queue is
    infinitely far), then its utilisation: smaller is better."""
    worst = 0.0
    if ttft is not None:
        worst = math.inf if x.ttft_p99_s is None else x.ttft_p99_s / ttft
    if tpot is not None and x.tpot_p99_s is not None:
        worst = max(worst, x.tpot_p99_s / tpot)
    return worst, x.utilisation


def _limit(
    spec: ServeSpec,
    c: Cards,
    host_gb_s: float,
    engine: arrivals.EngineTimes,
    cap: arrivals.Capacity,
    copies: int,
) -> ServingLimit:
    """What stops a higher rate: at the first rate that fails the bounds, the one of three
    changes, each worth LIFT (a KV cache holding LIFT times the sequences, a prefill LIFT
    times faster, a decode step LIFT times faster), that brings the p99s nearest their
    bounds; a faster decode step names what binds the step at the batch it then runs. A
    lone request missing a bound names its own cause."""
    ttft, tpot = spec.ttft_target_s, spec.tpot_target_s
    if cap.at_max is None:  # a lone request misses a bound
        if ttft is not None and engine.lone_ttft_s() > ttft:
            return ServingLimit.PREFILL_COMPUTE
        return _decode_limit(spec, c, host_gb_s, 1)
    above = cap.above_max
    rate = engine.saturated_rate() * copies if above is None else above.requests_per_s
    step = engine.step_s
    lifts = {
        ServingLimit.KV_MEMORY: replace(engine, max_batch=engine.max_batch * LIFT),
        ServingLimit.PREFILL_COMPUTE: replace(
            engine, prefill_s=engine.prefill_s / LIFT, lone_pass_s=engine.lone_pass_s / LIFT
        ),
        ServingLimit.DECODE_BANDWIDTH: replace(engine, step_s=lambda b: step(b) / LIFT),
    }
    if engine.max_batch < mem.max_users_fit(spec, c.memory_bytes, c.count):
        # The engine's batch limit, not the KV cache, caps the batch: more memory would not
        # lift it.
        del lifts[ServingLimit.KV_MEMORY]
    scores = {k: _score(arrivals.load_at(e, rate, copies), ttft, tpot) for k, e in lifts.items()}
    best = min(scores, key=lambda k: scores[k])
    if best is not ServingLimit.DECODE_BANDWIDTH:
        return best
    batch = engine.max_batch if above is None else max(round(above.mean_batch), 1)
    return _decode_limit(spec, c, host_gb_s, batch)


def _decode_limit(spec: ServeSpec, c: Cards, host_gb_s: float, batch: int) -> ServingLimit:
    at = replace(spec, users=batch)
    off = mem.offloaded_fraction(at, c.memory_bytes, c.count)
    return binding_limit(decode_parts_s(at, c, batch, off, host_gb_s), 0.0)


def running_slots(spec: ServeSpec, c: Cards, fit: int) -> int:
    """Sequences one copy runs at once: those whose whole context its KV cache holds, and no
    more than its engine's batch limit (serving.max_running)."""
    return min(fit, max_running(spec, c) or fit)


def _rate_layout(
    spec: ServeSpec, group: Cards, host_gb_s: float
) -> tuple[Cards, arrivals.EngineTimes] | None:
    """The cards one copy spans when the workload leaves it to dlrig on a batched server:
    of the tensor-parallel degrees that divide the GPUs and the heads and leave room for a
    context, the one whose copies together saturate at the highest rate among those where
    a lone request meets the bounds (a wider copy holds more contexts and steps faster, fewer
    copies share the arrivals). None where the workload or a local runner fixes the layout:
    the serving estimate's own then applies."""
    if spec.tensor_parallel is not None or not spec.engine.is_batched:
        return None
    best: tuple[float, Cards, arrivals.EngineTimes] | None = None
    for d in range(1, group.count + 1):
        fit = mem.max_users_fit(spec, group.memory_bytes, d)
        if group.count % d or spec.heads % d or fit < 1:
            continue
        c = replace(group, count=d, nvlink=group.nvlink and d > 1)
        engine = engine_times(spec, c, prefill_s(spec, c), running_slots(spec, c, fit), host_gb_s)
        lone_ok = (spec.ttft_target_s is None or engine.lone_ttft_s() <= spec.ttft_target_s) and (
            spec.tpot_target_s is None or engine.step_s(1) <= spec.tpot_target_s
        )
        rate = engine.saturated_rate() * (group.count // d) * (1.0 if lone_ok else 0.0)
        if best is None or rate > best[0]:
            best = (rate, c, engine)
    return None if best is None else (best[1], best[2])


def serving_load(
    build: Build, spec: ServeSpec, s: ServingEstimate, cal: Calibration
) -> ServingLoad | None:
    """Arrivals on `build`'s copies of the model, from the same layout and timings as the
    serving estimate `s`; None when the workload asks nothing of arrivals, the build has no
    GPU, or the model does not fit."""
    group = cards(build, cal)
    if not asks_for_load(spec) or group is None or not s.fits:
        return None
    host_gb_s = host_memory_bandwidth(build, cal.host_memory_bandwidth_gb_s).gb_s
    ttft, tpot = spec.ttft_target_s, spec.tpot_target_s
    chosen = _rate_layout(spec, group, host_gb_s)
    if chosen is not None:
        c, engine = chosen
        copies = group.count // c.count * build.nodes
    else:
        tp = tensor_parallel_degree(spec, group.count, group.memory_bytes, nodes=build.nodes)
        copies = max(group.count // tp, 1) * build.nodes
        c = replace(group, count=tp, nvlink=group.nvlink and tp > 1)
        fit = s.max_users_fit // copies
        max_batch = max(fit, 1) if spec.engine is Engine.LOCAL else running_slots(spec, c, fit)
        # Prompts admitted together share one pass over the weights: their FLOPs, not the
        # lone user's pass the estimate reports (serving.alone_prefill_s).
        engine = engine_times(spec, c, prefill_s(spec, c), max_batch, host_gb_s)
    at_rate = None if spec.arrival_rate is None else arrivals.load_at(
        engine, spec.arrival_rate, copies
    )  # fmt: skip
    meets = None
    if at_rate is not None and (ttft is not None or tpot is not None):
        meets = arrivals.meets(at_rate, ttft, tpot)
    cap = None
    limit = None
    band: tuple[float | None, float | None] = (None, None)
    if ttft is not None or tpot is not None:
        cap = arrivals.max_rate(engine, copies, ttft, tpot)
        limit = _limit(spec, c, host_gb_s, engine, cap, copies)
        band = rate_band(engine, copies, ttft, tpot, serving_ratio_band(spec))
    return ServingLoad(
        percentile=arrivals.PERCENTILE,
        copies=copies,
        gpus_per_copy=c.count,
        layout_chosen=chosen is not None,
        max_batch_per_copy=engine.max_batch,
        prefill_s=engine.prefill_s,
        batch1_step_s=engine.step_s(1),
        saturated_requests_per_s=engine.saturated_rate() * copies,
        ttft_target_s=ttft,
        tpot_target_s=tpot,
        requests_per_s=spec.arrival_rate,
        at_rate=at_rate,
        meets_targets=meets,
        max_requests_per_s=None if cap is None else cap.max_requests_per_s,
        max_requests_per_s_low=band[0],
        max_requests_per_s_high=band[1],
        at_max=None if cap is None else cap.at_max,
        limit=limit,
        bottleneck=None if limit is None else LIMIT_STAGE[limit],
        requests_simulated=arrivals.request_count(engine.max_batch),
    )
