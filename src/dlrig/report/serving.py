"""Render serving figures (dlrig.model.serving): the `serving` key of `dlrig estimate --json`
and the serving block people read. No I/O here."""

from __future__ import annotations

import math
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from dlrig.model.serving import ServingEstimate, energy_kwh_per_million_tokens
from dlrig.units import s_to_ms


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def serving_dict(s: ServingEstimate, power_w: float, electricity_per_kwh: float) -> dict[str, Any]:
    """The `serving` object of the estimate JSON (issue 14). `power_w` is the build's draw
    under load, used for the energy and electricity cost per million output tokens."""
    kwh = energy_kwh_per_million_tokens(power_w, s.tokens_per_s_total)
    return {
        "model": s.model,
        "engine": s.engine,
        "quantization": s.quantization,
        "kv_precision": s.kv_precision,
        "gpus": s.gpus,
        "gpu": s.gpu,
        "parallelism": s.parallelism,
        "users": s.users,
        "prompt_tokens": s.prompt_tokens,
        "output_tokens": s.output_tokens,
        "ttft_s": s.ttft_s,
        "tpot_s": s.tpot_s,
        "prefill_s": s.prefill_s,
        "decode_step_s": s.decode_step_s,
        "tokens_per_s_per_user": s.tokens_per_s_per_user,
        "tokens_per_s_total": s.tokens_per_s_total,
        "batch1_tokens_per_s": s.batch1_tokens_per_s,
        "max_users_fit": s.max_users_fit,
        "min_tokens_per_s_per_user": s.min_tokens_per_s_per_user,
        "max_users_at_target": s.max_users_at_target,
        "binding": s.binding.value,
        "decode_parts_s": dict(s.decode_parts_s),
        "memory": {
            "weights_gb": s.weights_gb,
            "kv_per_user_gb": s.kv_per_user_gb,
            "kv_per_token_per_layer_bytes": s.kv_per_token_per_layer_bytes,
            "kv_capacity_gb": s.kv_capacity_gb,
            "available_gb": s.memory_available_gb,
            "fits": s.fits,
            "offloaded_fraction": s.offloaded_fraction,
        },
        "energy": {
            "power_w": power_w,
            "kwh_per_million_tokens": _finite(kwh),
            "cost_per_million_tokens": _finite(kwh * electricity_per_kwh),
        },
        "notes": list(s.notes),
    }


def serving_renderable(
    s: ServingEstimate,
    power_w: float,
    electricity_per_kwh: float,
    currency: str,
    per_step_fits: bool = True,
) -> RenderableType:
    """The serving block of `dlrig estimate` for people; `per_step_fits` False adds why the
    per-step memory line above may disagree (it holds one whole model per GPU)."""
    kwh = energy_kwh_per_million_tokens(power_w, s.tokens_per_s_total)
    t = Text()
    t.append("serving", style="bold")
    t.append(
        f" {s.model}: {s.engine} engine, {s.quantization} weights, {s.kv_precision} KV cache, "
        f"{s.gpus} x {s.gpu} ({s.parallelism}); {s.users} users, "
        f"{s.prompt_tokens}-token prompts, {s.output_tokens}-token answers"
    )
    t.append(
        f"\ntime to first token {s_to_ms(s.ttft_s):,.0f} ms; time per output token "
        f"{s_to_ms(s.tpot_s):,.1f} ms"
    )
    t.append(
        f"\n{s.tokens_per_s_per_user:,.1f} tokens/s per user, {s.tokens_per_s_total:,.0f} "
        f"tokens/s in total ({s.batch1_tokens_per_s:,.1f} tokens/s for a lone user)"
    )
    target = ""
    if s.min_tokens_per_s_per_user is not None:
        target = (
            f"; at {s.min_tokens_per_s_per_user:g} tokens/s each: {s.max_users_at_target} users"
        )
    t.append(f"\nusers whose contexts fit: {s.max_users_fit}{target}")
    fits = "fits" if s.fits else "DOES NOT FIT"
    t.append(
        f"\nmemory: weights {s.weights_gb:.1f} GiB, KV {s.kv_per_user_gb:.2f} GiB per user "
        f"({s.kv_per_token_per_layer_bytes:,.0f} B per token per layer); "
        f"{s.memory_available_gb:.0f} GiB usable ({fits})"
    )
    if s.offloaded_fraction > 0:
        t.append(f"; {s.offloaded_fraction:.0%} of the weights in system RAM")
    t.append("\nbinds: ")
    t.append(s.binding.value, style="bold red")
    if math.isfinite(kwh):
        t.append(
            f"\nenergy: {kwh:,.2f} kWh per million output tokens at {power_w:.0f} W; "
            f"{kwh * electricity_per_kwh:,.2f} {currency} per million at "
            f"{electricity_per_kwh:g}/kWh"
        )
    notes = list(s.notes)
    if not per_step_fits and s.fits:
        notes.append(
            "the per-step memory line above holds a whole 16-bit model on each GPU; serving "
            "splits it over the cards in its own format, as this block says"
        )
    for note in notes:
        t.append(f"\n  - {note}", style="dim")
    return t


def planned_serving(
    samples_per_s: float, limit: str | None, power_w: float | None
) -> dict[str, Any]:
    """What a plan adds for a serving workload: the limit that binds and the energy per
    million output tokens at the build's peak draw (empty for other workloads)."""
    if limit is None:
        return {}
    kwh = energy_kwh_per_million_tokens(power_w or 0.0, samples_per_s)
    return {"serving_limit": limit, "kwh_per_million_tokens": _finite(kwh)}


def planned_serving_cell(samples_per_s: float, limit: str | None, power_w: float | None) -> str:
    """The plan table's limit cell for a serving workload: 'decode_bandwidth, 0.42 kWh/M'."""
    info = planned_serving(samples_per_s, limit, power_w)
    kwh = info.get("kwh_per_million_tokens")
    return f"{limit}, {kwh:.2f} kWh/M tokens" if kwh is not None else str(limit)
