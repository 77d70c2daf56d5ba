"""Render a serving estimate (dlrig.model.served): the `serving` key of `dlrig estimate
--json`, the estimate people read, and what a plan adds for a serving workload. Every figure
is the estimate's own (one rate of output tokens/s, one memory figure); a job that does not
fit shows no speed, run time or energy. No I/O here."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from dlrig.model.served import ADVICE
from dlrig.report.estimate import cannot_run_line, hours, ms, power_line, stages_table

if TYPE_CHECKING:
    from dlrig.model.arrivals import Load
    from dlrig.model.result import Estimate
    from dlrig.model.serving import ServingEstimate
    from dlrig.model.serving_batch import BatchRun
    from dlrig.model.serving_load import ServingLoad
    from dlrig.plan.evaluate import Outcome


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def serving_dict(est: Estimate, s: ServingEstimate) -> dict[str, Any]:
    """The `serving` object of the estimate JSON (issue 14); the speed and energy figures are
    null for a job that does not fit."""
    runs = est.runs

    def speed(x: float | None) -> float | None:
        return _finite(x) if runs else None

    kwh = speed(est.kwh_per_million_tokens)
    return {
        "model": s.model,
        "engine": s.engine,
        "quantization": s.quantization,
        "kv_precision": s.kv_precision,
        "gpus": s.gpus,
        "gpu": s.gpu,
        "parallelism": s.parallelism,
        "users": s.users,
        "users_per_copy": est.batch_per_gpu,
        "prompt_tokens": s.prompt_tokens,
        "output_tokens": s.output_tokens,
        "ttft_s": speed(s.ttft_s),
        "ttft_all_at_once_s": speed(s.ttft_all_at_once_s),
        "tpot_s": speed(s.tpot_s),
        "prefill_s": speed(s.prefill_s),
        "decode_step_s": speed(s.decode_step_s),
        "host_step_s": speed(s.host_step_s),
        "tokens_per_s_per_user": speed(s.tokens_per_s_per_user),
        "tokens_per_s_total": speed(s.tokens_per_s_total),
        "batch1_tokens_per_s": speed(s.batch1_tokens_per_s),
        "max_users_fit": s.max_users_fit,
        "users_running": s.users - s.users_waiting if runs else None,
        "users_waiting": s.users_waiting if runs else None,
        "queue_wait_s": speed(s.queue_wait_s),
        "min_tokens_per_s_per_user": s.min_tokens_per_s_per_user,
        "max_users_at_target": s.max_users_at_target,
        "binding": s.binding.value,
        "decode_parts_s": dict(s.decode_parts_s),
        "memory": {
            "weights_gb": s.weights_gb,
            "kv_per_user_gb": s.kv_per_user_gb,
            "kv_shared_gb": s.kv_shared_gb,
            "kv_per_token_per_layer_bytes": s.kv_per_token_per_layer_bytes,
            "kv_capacity_gb": s.kv_capacity_gb,
            "available_gb": s.memory_available_gb,
            "fits": s.fits,
            "offloaded_fraction": s.offloaded_fraction,
        },
        "energy": {
            "power_w": est.power.average_wall_w,
            "kwh_per_million_tokens": kwh,
            "cost_per_million_tokens": None if kwh is None else kwh * est.run.electricity_per_kwh,
        },
        "notes": list(s.notes),
        "load": None if s.load is None or not runs else load_dict(s.load, s.output_tokens),
        "batch": None if s.batch is None or not runs else batch_dict(est, s.batch),
    }


def batch_dict(est: Estimate, b: BatchRun) -> dict[str, Any]:
    """`serving.batch`: `serve.requests` sent at once, run in waves of the requests the build
    runs at once (dlrig.model.serving_batch), with the run time's interval."""
    low, high = batch_run_s_interval(est, b)
    return {
        "requests": b.requests,
        "running_at_once": b.running_at_once,
        "full_waves": b.full_waves,
        "last_wave_requests": b.last_wave_requests,
        "run_s": b.run_s,
        "run_s_low": low,
        "run_s_high": high,
        "tokens_per_s_total": b.tokens_per_s_total,
        "steady_tokens_per_s": b.steady_tokens_per_s,
    }


def batch_run_s_interval(est: Estimate, b: BatchRun) -> tuple[float, float]:
    """The batch's run time at the serving interval's ends: shortest at the fast end (what
    JSON's run_s_low / run_s_high, the terminal and the page give)."""
    return b.run_s / est.throughput_ratio_high, b.run_s / est.throughput_ratio_low


def hours_of_s(seconds: float) -> str:
    """A duration in seconds as `hours` writes it: 42 s, 45 min, 12.3 h, 6.1 days."""
    return hours(seconds / 3600)


def batch_waves(b: BatchRun) -> str:
    """How a batch runs, in words: 'all 300 run at once', '2 waves of 353 at once, then the
    last 294'."""
    if b.requests <= b.running_at_once:
        return f"all {b.requests:,} run at once"
    waves = f"{b.full_waves:,} wave{'s' * (b.full_waves != 1)} of {b.running_at_once:,} at once"
    if b.last_wave_requests:
        waves += f", then the last {b.last_wave_requests:,}"
    return waves


def batch_line(est: Estimate, b: BatchRun) -> str:
    """`serve.requests` for people: the waves, the run time and the tokens/s over it."""
    low, high = batch_run_s_interval(est, b)
    return (
        f"batch of {b.requests:,} requests sent at once: {batch_waves(b)}; {hours_of_s(b.run_s)} "
        f"({hours_of_s(low)}-{hours_of_s(high)}, 80% interval), "
        f"{b.tokens_per_s_total:,.0f} output tokens/s over the run "
        f"({b.steady_tokens_per_s:,.0f} while every slot is full)"
    )


def _load_figures(x: Load, output_tokens: int) -> dict[str, Any]:
    return {
        "requests_per_s": x.requests_per_s,
        "output_tokens_per_s": x.requests_per_s * output_tokens if x.stable else None,
        "ttft_p50_s": x.ttft_p50_s,
        "ttft_p99_s": x.ttft_p99_s,
        "tpot_p50_s": x.tpot_p50_s,
        "tpot_p99_s": x.tpot_p99_s,
        "utilisation": x.utilisation,
        "busy_share": x.busy_share,
        "mean_batch": x.mean_batch,
        "stable": x.stable,
    }


def load_dict(load: ServingLoad, output_tokens: int) -> dict[str, Any]:
    """`serving.load` (issue 36): Poisson arrivals at `requests_per_s` and the largest rate
    meeting the 99th-percentile bounds, with what stops a higher one."""
    return {
        "percentile": load.percentile,
        "requests_simulated": load.requests_simulated,
        "copies": load.copies,
        "gpus_per_copy": load.gpus_per_copy,
        "layout_chosen": load.layout_chosen,
        "max_batch_per_copy": load.max_batch_per_copy,
        "saturated_requests_per_s": load.saturated_requests_per_s,
        "ttft_target_s": load.ttft_target_s,
        "tpot_target_s": load.tpot_target_s,
        "requests_per_s": load.requests_per_s,
        "at_rate": None if load.at_rate is None else _load_figures(load.at_rate, output_tokens),
        "meets_targets": load.meets_targets,
        "max_requests_per_s": load.max_requests_per_s,
        "max_requests_per_s_low": load.max_requests_per_s_low,
        "max_requests_per_s_high": load.max_requests_per_s_high,
        "at_max": None if load.at_max is None else _load_figures(load.at_max, output_tokens),
        "limit": None if load.limit is None else load.limit.value,
        "bottleneck": None if load.bottleneck is None else load.bottleneck.value,
    }


def _bounds(load: ServingLoad) -> str:
    parts = []
    if load.ttft_target_s is not None:
        parts.append(f"TTFT <= {ms(load.ttft_target_s)}")
    if load.tpot_target_s is not None:
        parts.append(f"TPOT <= {ms(load.tpot_target_s)}")
    return " and ".join(parts)


def _latency(x: Load) -> str:
    ttft = (
        "grows without bound"
        if x.ttft_p99_s is None or x.ttft_p50_s is None
        else f"p50 {ms(x.ttft_p50_s)}, p99 {ms(x.ttft_p99_s)}"
    )
    tpot = (
        "none (one-token answers)"
        if x.tpot_p99_s is None or x.tpot_p50_s is None
        else f"p50 {ms(x.tpot_p50_s)}, p99 {ms(x.tpot_p99_s)}"
    )
    return f"TTFT {ttft}; TPOT {tpot}"


def _rate_interval(load: ServingLoad) -> str:
    low, high = load.max_requests_per_s_low, load.max_requests_per_s_high
    if low is None or high is None:
        return ""
    return f" (interval {low:,.3g}-{high:,.3g})"


def load_lines(load: ServingLoad, output_tokens: int) -> list[str]:
    """Arrivals at the asked rate, and the largest rate meeting the bounds (issue 36)."""
    gpus = f"{load.gpus_per_copy} GPU{'s' * (load.gpus_per_copy != 1)} each, "
    chosen = (
        " (the layout with the highest saturated rate; serve.tensor_parallel sets another)"
        if load.layout_chosen
        else ""
    )
    lines = [
        f"Poisson arrivals (simulated, {load.requests_simulated:,} requests per copy, "
        f"{load.copies} cop{'ies' if load.copies != 1 else 'y'} of the model, {gpus}up to "
        f"{load.max_batch_per_copy} sequences{chosen}): saturated at "
        f"{load.saturated_requests_per_s:,.3g} requests/s"
    ]
    if load.at_rate is not None:
        x = load.at_rate
        line = f"at {x.requests_per_s:g} requests/s: {_latency(x)}; utilisation {x.utilisation:.0%}"
        if not x.stable:
            line += " (past saturation: the queue grows without bound)"
        if load.meets_targets is not None:
            line += f"; {'meets' if load.meets_targets else 'MISSES'} {_bounds(load)} at p99"
        lines.append(line)
    if load.max_requests_per_s is not None:
        bounds = _bounds(load)
        if load.at_max is None or load.max_requests_per_s <= 0:
            lines.append(
                f"no arrival rate meets {bounds} at p99: a lone request's prefill "
                f"{ms(load.prefill_s)}, batch-1 step {ms(load.batch1_step_s)}"
            )
        else:
            x = load.at_max
            lines.append(
                f"largest rate with p99 {bounds}: {x.requests_per_s:,.3g} requests/s"
                f"{_rate_interval(load)} ({x.requests_per_s * output_tokens:,.0f} output "
                f"tokens/s, utilisation {x.utilisation:.0%}); there {_latency(x)}"
            )
        if load.limit is not None and load.bottleneck is not None:
            lines.append(
                f"a higher rate is held by {load.limit.value} ({load.bottleneck.value}): "
                f"{ADVICE[load.limit]}"
            )
    return lines


def serving_head(est: Estimate, s: ServingEstimate) -> str:
    """What is served on what: 'llama-3.1-8b-serve on X: 2 x GeForce RTX 4090, batched
    engine, bf16 weights, bf16 KV cache (2 copies of the model, one per GPU); 16 users,
    1000-token prompts, 300-token answers'."""
    return (
        f"{est.workload} on {est.build}: {s.gpus} x {s.gpu}, {s.engine} engine, "
        f"{s.quantization} weights, {s.kv_precision} KV cache ({s.parallelism}); {s.users} "
        f"user{'s' * (s.users != 1)}, {s.prompt_tokens}-token prompts, "
        f"{s.output_tokens}-token answers"
    )


def memory_line(est: Estimate, s: ServingEstimate) -> str:
    """One card's memory: weights, the KV cache of the users it runs at once, the engine's
    reserve."""
    m = est.memory
    users = held_users(est, s)
    shared = (
        f", the shared prompt prefix's {s.kv_shared_gb:.2f} GiB held once" if s.kv_shared_gb else ""
    )
    line = (
        f"GPU memory per card: {m.gpu_required_gb:.1f} GiB needed of {m.gpu_available_gb:g} GiB "
        f"({'fits' if m.fits else 'DOES NOT FIT'}; weights {m.model_states_gb:.1f}, KV cache "
        f"{m.activations_gb:.1f} for {_users(users)}{' at once' * bool(s.users_waiting)}, "
        f"engine reserve {m.overhead_gb:.1f}); KV cache {s.kv_per_user_gb:.2f} GiB per user "
        f"({s.kv_per_token_per_layer_bytes:,.0f} B per token per layer{shared})"
    )
    if s.offloaded_fraction > 0:
        line += f"; {s.offloaded_fraction:.0%} of the weights in system RAM"
    return line


def _users(n: int) -> str:
    return f"{n} user{'s' * (n != 1)}"


def held_users(est: Estimate, s: ServingEstimate) -> int:
    """Users one model copy holds in its KV cache: those it runs at once when the others
    queue, else every user it serves."""
    if not est.runs:
        return est.batch_per_gpu
    return min(est.batch_per_gpu, s.running_per_copy)


def users_line(s: ServingEstimate) -> str:
    """How many users' contexts fit at once, how many wait for a slot, and how many keep
    the asked speed."""
    line = f"users whose contexts fit at once: {s.max_users_fit} (asked: {s.users})"
    if s.fits and s.users_waiting:
        # Past the cache, or, with room for all, the engine's cap on running requests
        # (serving.max_running).
        knob = {"vllm": "vLLM's max_num_seqs", "sglang": "SGLang's max_running_requests"}.get(
            s.engine, "the engine's max_batch_size"
        )
        capped = f" ({knob})" if s.max_users_fit >= s.users else ""
        line += (
            f"; {s.users - s.users_waiting} run at once{capped}, {s.users_waiting} wait for a slot"
        )
    if s.min_tokens_per_s_per_user is not None:
        line += (
            f"; at {s.min_tokens_per_s_per_user:g} tokens/s each: {s.max_users_at_target} "
            f"user{'s' * (s.max_users_at_target != 1)}"
        )
    return line


def speed_lines(est: Estimate, s: ServingEstimate) -> list[str]:
    """Time to first token and the tokens/s in total and per user (a job that fits)."""
    queued = f", {ms(s.queue_wait_s)} waiting for a slot" if s.users_waiting else ""
    at_once = f"; {ms(s.ttft_all_at_once_s)} when all {s.users} ask at once" if s.users > 1 else ""
    return [
        f"time to first token {ms(s.ttft_s)} (a prompt's prefill {ms(s.prefill_s)}{queued}"
        f"{at_once})",
        f"throughput: {est.samples_per_s:,.0f} output tokens/s in total "
        f"({est.samples_per_s_low:,.0f}-{est.samples_per_s_high:,.0f}, 80% interval)",
        f"{s.tokens_per_s_per_user:,.1f} tokens/s per user ({s.batch1_tokens_per_s:,.1f} for a "
        "lone user)",
    ]


def run_line(est: Estimate) -> str:
    """The run's output tokens, time, wall energy and its cost, and the energy per million."""
    r, p = est.run, est.power
    kwh = _finite(est.kwh_per_million_tokens)
    per_million = "" if kwh is None else f", {kwh:,.2f} kWh per million output tokens"
    return (
        f"run: {hours(r.time_h)} for {r.samples:,.0f} output tokens; {r.energy_kwh:,.1f} kWh at "
        f"the wall ({p.average_wall_w:,.0f} W average, {p.psu_efficiency:.0%} PSU){per_million}; "
        f"{r.energy_cost:,.2f} {r.currency} at {r.electricity_per_kwh:g}/kWh; {r.co2_kg:,.1f} kg "
        f"CO2 at {r.co2_kg_per_kwh:g} kg/kWh"
    )


def serving_renderable(est: Estimate, s: ServingEstimate) -> RenderableType:
    """`dlrig estimate` of a serving workload for people."""
    head = Text(serving_head(est, s))
    head.stylize("bold", 0, len(est.workload))
    parts: list[RenderableType] = [head]
    lines = Text()
    if est.runs:
        parts.append(stages_table(est, "per output token"))
        lines.append(f"time per output token {ms(est.step_time_s)}; binds: ")
        lines.append(s.binding.value, style="bold red")
        lines.append(f" ({est.bottleneck.value})")
        lines.append(f"\nwhat would move it: {est.advice}")
        if est.next_bottleneck is not None and math.isfinite(est.speedup_if_removed):
            lines.append(
                f"\nremoving it entirely: {est.speedup_if_removed:.2f}x faster, then "
                f"{est.next_bottleneck.value} binds"
            )
        for line in speed_lines(est, s):
            lines.append(f"\n{line}")
    else:
        lines.append("binds: ")
        lines.append(s.binding.value, style="bold red")
        lines.append(f"\nwhat would move it: {est.advice}")
        lines.append(f"\n{cannot_run_line(est)}")
    if est.runs and s.load is not None:
        for line in load_lines(s.load, s.output_tokens):
            lines.append(f"\n{line}")
    if est.runs and s.batch is not None:
        lines.append(f"\n{batch_line(est, s.batch)}")
    lines.append(f"\n{users_line(s)}")
    lines.append(f"\n{memory_line(est, s)}")
    lines.append(f"\n{power_line(est)}")
    if est.runs:
        lines.append(f"\n{run_line(est)}")
    parts.append(lines)
    if est.assumptions:
        assumed = Text("assumptions:", style="dim")
        for a in est.assumptions:
            assumed.append(f"\n  - {a}", style="dim")
        parts.append(assumed)
    return Group(*parts)


def planned_serving(o: Outcome) -> dict[str, Any]:
    """What a plan adds for a serving workload: the limit that binds and the energy per
    million output tokens at the wall, as the estimate gives them (empty for other
    workloads)."""
    if o.serving_limit is None:
        return {}
    return {
        "serving_limit": o.serving_limit,
        "kwh_per_million_tokens": _finite(o.kwh_per_million_tokens),
    }


def planned_serving_cell(o: Outcome) -> str:
    """The plan table's limit cell for a serving workload: 'decode_bandwidth, 0.42 kWh/M'."""
    kwh = _finite(o.kwh_per_million_tokens)
    return f"{o.serving_limit}, {kwh:.2f} kWh/M tokens" if kwh is not None else str(o.serving_limit)
