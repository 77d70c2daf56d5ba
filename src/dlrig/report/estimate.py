"""Render estimates and the workload zoo: rich renderables for people, JSON (design.md keys)
for programs. No I/O here: the command prints what these return."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from dlrig.enums import Bottleneck
from dlrig.model.result import Estimate, ParallelEstimate
from dlrig.report.jsonout import dumps
from dlrig.units import s_to_ms
from dlrig.workloads.model import Workload

STAGE_ORDER = (
    Bottleneck.STORAGE,
    Bottleneck.CPU_PREPROCESSING,
    Bottleneck.PCIE,
    Bottleneck.GPU_COMPUTE,
    Bottleneck.GPU_MEMORY_BANDWIDTH,
    Bottleneck.INTERCONNECT,
    Bottleneck.NETWORK,
)


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def estimate_dict(est: Estimate) -> dict[str, Any]:
    """The estimate as design.md's JSON object (plus extra keys beside the fixed ones). A job
    that does not fit has no throughput or run figures (null); the serving figures, which
    have no validated interval of their own, none either."""
    runs, ranged = est.runs, est.runs and est.has_interval

    def given(x: float | None, shown: bool = True) -> float | None:
        return _finite(x) if shown else None

    doc = {
        "build": est.build,
        "workload": est.workload,
        "device": {
            "compute": est.compute_device,
            "is_cpu": est.device_is_cpu,
            "gpus": est.gpus,
            "batch_per_gpu": est.batch_per_gpu,
            "precision": est.precision.value,
            "compute_path": est.compute_path,
            "pcie_gen": est.pcie_gen,
            "pcie_lanes": est.pcie_lanes,
        },
        "step": {
            "time_s": est.step_time_s,
            "time_s_low": given(est.step_time_s_low, est.has_interval),
            "time_s_high": given(est.step_time_s_high, est.has_interval),
            "bottleneck": est.bottleneck.value,
            "stages_s": {b.value: est.stages_s[b] for b in STAGE_ORDER},
            "exposed_s": {b.value: est.exposed_s[b] for b in STAGE_ORDER},
            "hidden": [b.value for b in est.hidden],
            "modifiers": [m.value for m in est.modifiers],
            "advice": est.advice,
            "next_bottleneck": est.next_bottleneck.value if est.next_bottleneck else None,
            "speedup_if_removed": _finite(est.speedup_if_removed),
        },
        "throughput": {
            "samples_per_s": given(est.samples_per_s, runs),
            "samples_per_s_low": given(est.samples_per_s_low, ranged),
            "samples_per_s_high": given(est.samples_per_s_high, ranged),
            "tokens_per_s": given(est.tokens_per_s, runs),
        },
        "memory": {
            "gpu_required_gb": est.memory.gpu_required_gb,
            "gpu_required_gb_low": est.memory.gpu_required_gb_low,
            "gpu_required_gb_high": est.memory.gpu_required_gb_high,
            "gpu_available_gb": est.memory.gpu_available_gb,
            "fits": est.memory.fits,
            "max_batch_per_gpu": est.memory.max_batch_per_gpu,
            "model_states_gb": est.memory.model_states_gb,
            "activations_gb": est.memory.activations_gb,
            "overhead_gb": est.memory.overhead_gb,
        },
        "power": {
            "system_peak_w": est.power.system_peak_w,
            "psu_recommended_w": est.power.psu_recommended_w,
            "psu_installed_w": est.power.psu_installed_w,
            "average_w": est.power.average_w,
            "psu_efficiency": est.power.psu_efficiency,
            "wall_w": round(est.power.wall_w, 1),
            "per_circuit_w": round(est.power.per_circuit_w, 1),
            "circuit": est.power.circuit,
            "circuit_origin": est.power.circuit_origin,
            "circuit_continuous_w": est.power.circuit_continuous_w,
            "circuit_headroom_w": round(est.power.circuit_headroom_w, 1),
        },
        "run": {
            "time_h": given(est.run.time_h, runs),
            "energy_kwh": given(est.run.energy_kwh, runs),
            "energy_cost": given(est.run.energy_cost, runs),
            "co2_kg": given(est.run.co2_kg, runs),
            "currency": est.run.currency,
            "samples": est.run.samples,
            "steps": est.run.steps,
            "electricity_per_kwh": est.run.electricity_per_kwh,
            "co2_kg_per_kwh": est.run.co2_kg_per_kwh,
        },
        "parallel": _parallel(est.parallel),
        "assumptions": list(est.assumptions),
    }
    if est.serving is not None:
        from dlrig.report.serving import serving_dict

        doc["serving"] = serving_dict(est, est.serving)
    return doc


def _parallel(par: ParallelEstimate | None) -> dict[str, Any] | None:
    """The training layout and its communication per step (None for inference and CPUs)."""
    if par is None:
        return None
    return {
        "data": par.data,
        "tensor": par.tensor,
        "pipeline": par.pipeline,
        "context": par.context,
        "expert": par.expert,
        "sequence": par.sequence,
        "zero_stage": par.zero_stage,
        "micro_batches": par.micro_batches,
        "gradient_accumulation": par.gradient_accumulation,
        "pipeline_bubble": par.pipeline_bubble,
        "tensor_parallel_s": par.tensor_parallel_s,
        "communication_s": par.communication_s,
        "communication_exposed_s": par.communication_exposed_s,
    }


def estimate_json(est: Estimate) -> str:
    """`dlrig estimate --json`."""
    return dumps(estimate_dict(est))


def compare_json(key: str, values: Sequence[Any], estimates: Sequence[Estimate]) -> str:
    """`dlrig estimate --compare KEY=V1,V2 --json`: one estimate object per value."""
    rows = [{"value": v, **estimate_dict(e)} for v, e in zip(values, estimates, strict=True)]
    return dumps({"compare": {"key": key, "estimates": rows}})


def ms(seconds: float) -> str:
    """A duration per step for people, to three figures: 1.23 ms, 22.6 ms, 216 ms, 1.20 s."""
    if seconds >= 10:
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    value = s_to_ms(seconds)
    if value < 10:
        return f"{value:.2f} ms"
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def rate(x: float) -> str:
    """A throughput for people: 52.4, 1,234, 35.6k, 1.20M."""
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k"
    return f"{x:.1f}" if x < 100 else f"{x:,.0f}"


def hours(h: float) -> str:
    """A run time for people: 42 s, 45 min, 12.3 h, 6.1 days."""
    if not math.isfinite(h):
        return "never"
    if h * 60 < 1:
        return f"{h * 3600:.0f} s"
    if h < 1:
        return f"{h * 60:.0f} min"
    return f"{h:.1f} h" if h < 48 else f"{h / 24:.1f} days"


def stages_table(est: Estimate, title: str = "per step") -> Table:
    """Each stage's time and what it adds after overlap, the bottleneck marked."""
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("stage")
    table.add_column("time", justify="right")
    table.add_column("adds to step", justify="right")
    table.add_column("")
    for b in STAGE_ORDER:
        t = est.stages_s[b]
        if t <= 0 and b is not Bottleneck.GPU_COMPUTE:
            continue
        note = ""
        if b is est.bottleneck:
            note = "bottleneck"
        elif b in est.hidden:
            note = "overlapped"
        label = b.value
        if b is Bottleneck.GPU_COMPUTE and est.device_is_cpu:
            label = "gpu_compute (on the CPU)"
        style = "bold red" if b is est.bottleneck else ""
        table.add_row(Text(label, style=style), ms(t), ms(est.exposed_s[b]), note)
    return table


def power_line(est: Estimate) -> str:
    """A node's peak draw and the PSU PSU.1 asks for, beside the one installed; the sustained
    draw at the wall against the circuit's continuous limit (PSU.6)."""
    p = est.power
    installed = f", installed {p.psu_installed_w:g} W" if p.psu_installed_w else ""
    spare = (
        f"{p.circuit_headroom_w:,.0f} W to spare"
        if p.circuit_headroom_w >= 0
        else f"{-p.circuit_headroom_w:,.0f} W OVER what it carries for hours (PSU.6)"
    )
    return (
        f"power: {p.system_peak_w:.0f} W peak per node; PSU needed {p.psu_recommended_w} W"
        f"{installed} (PSU.1); {p.wall_w:,.0f} W at the wall"
        + (f" ({p.per_circuit_w:,.0f} W a circuit)" if p.per_circuit_w < p.wall_w - 0.5 else "")
        + f" on {p.circuit} ({p.circuit_continuous_w:,.0f} W continuous"
        f"{'; assumed' if p.circuit_origin == 'default' else ''}): {spare}"
    )


def memory_line(est: Estimate) -> str:
    """The memory one GPU (on a CPU, the RAM) needs, what it has, and the largest batch."""
    m = est.memory
    fits = "fits" if m.fits else "DOES NOT FIT"
    top = m.gpu_required_gb_high
    if m.fits and top is not None and top > m.gpu_available_gb:
        fits = "fits, but its interval's top does not: it may run out"
    where = "RAM" if est.device_is_cpu else "GPU memory"
    band = (
        f" ({m.gpu_required_gb_low:.1f}-{m.gpu_required_gb_high:.1f}, 80% interval)"
        if m.gpu_required_gb_low is not None and m.gpu_required_gb_high is not None
        else ""
    )
    return (
        f"{where}: {m.gpu_required_gb:.1f} GiB needed{band} of {m.gpu_available_gb:g} GiB ({fits}; "
        f"states {m.model_states_gb:.1f}, activations {m.activations_gb:.1f}, overhead "
        f"{m.overhead_gb:.1f}); largest batch that fits: {m.max_batch_per_gpu}"
    )


def throughput_line(est: Estimate) -> str:
    """Samples/s with the model's interval, and tokens/s for a language model."""
    line = (
        f"throughput: {rate(est.samples_per_s)} samples/s "
        f"({rate(est.samples_per_s_low)}-{rate(est.samples_per_s_high)}, 80% interval)"
    )
    if est.tokens_per_s is not None:
        line += f", {rate(est.tokens_per_s)} tokens/s"
    return line


def run_line(est: Estimate) -> str:
    """The whole run: time, wall energy, its cost and CO2."""
    r, p = est.run, est.power
    return (
        f"run: {hours(r.time_h)} for {r.samples:,.0f} samples; {r.energy_kwh:,.1f} kWh at the "
        f"wall ({p.psu_efficiency:.0%} PSU); {r.energy_cost:,.2f} {r.currency} at "
        f"{r.electricity_per_kwh:g}/kWh; {r.co2_kg:,.1f} kg CO2 at {r.co2_kg_per_kwh:g} kg/kWh"
    )


def cannot_run_line(est: Estimate) -> str:
    """Why a job that does not fit has no speed, run time or energy."""
    s = est.serving
    if s is not None and s.binding.value == "kv_memory":
        why = (
            f"not even one request's {s.prompt_tokens + s.output_tokens:,}-token context fits "
            "the KV cache beside the weights, so the engine cannot start"
        )
    elif s is not None and s.engine == "local" and s.offloaded_fraction >= 1.0:
        why = "the users' KV cache alone fills the cards, with every layer in RAM"
    elif s is not None and s.engine == "local":
        why = "the layers left in RAM need more than the build's RAM"
    elif s is not None:
        why = "the weights do not fit the cards"
    else:
        why = "the job does not fit the memory it needs"
    return f"cannot run as asked: {why}; no throughput, run time or energy is given (GPU.4)"


def headline(est: Estimate) -> str:
    """'resnet50 on X: 1 x GeForce RTX 3090, batch 64 per GPU, fp16 (tensor 16bit)'."""
    return (
        f"{est.workload} on {est.build}: {est.gpus} x {est.compute_device}, batch "
        f"{est.batch_per_gpu} per GPU, {est.precision.value} "
        f"({est.compute_path.replace('_', ' ')})"
    )


def estimate_renderable(est: Estimate) -> RenderableType:
    """`dlrig estimate` for people: the step, the bottleneck, memory, power and the run; a
    job that does not fit shows its memory and no speed or run; a serving workload its
    serving figures (dlrig.report.serving)."""
    if est.serving is not None:
        from dlrig.report.serving import serving_renderable

        return serving_renderable(est, est.serving)
    head = Text(headline(est))
    head.stylize("bold", 0, len(est.workload))
    if not est.runs:
        lines = Text(f"{memory_line(est)}\n{cannot_run_line(est)}\n{power_line(est)}")
        return Group(head, lines, *_assumptions(est))
    return Group(head, stages_table(est), _figures(est), *_assumptions(est))


def _assumptions(est: Estimate) -> list[RenderableType]:
    if not est.assumptions:
        return []
    assumed = Text("assumptions:", style="dim")
    for a in est.assumptions:
        assumed.append(f"\n  - {a}", style="dim")
    return [assumed]


def _figures(est: Estimate) -> Text:
    """The step line, the advice, the throughput, layout, memory, power and the run."""
    lines = Text(
        f"step {ms(est.step_time_s)} ({ms(est.step_time_s_low)}-{ms(est.step_time_s_high)}); "
        "bottleneck: "
    )
    lines.append(est.bottleneck.value, style="bold red")
    if est.modifiers:
        lines.append(f" (slowed by {', '.join(m.value for m in est.modifiers)})")
    lines.append(f"\nwhat would move it: {est.advice}")
    if est.next_bottleneck is not None and math.isfinite(est.speedup_if_removed):
        lines.append(
            f"\nremoving it entirely: {est.speedup_if_removed:.2f}x faster, then "
            f"{est.next_bottleneck.value} binds"
        )
    lines.append(f"\n{throughput_line(est)}")
    if est.parallel is not None and est.gpus > 1:
        lines.append(_parallel_line(est.parallel))
    lines.append(f"\n{memory_line(est)}\n{power_line(est)}\n{run_line(est)}")
    return lines


def _parallel_line(par: ParallelEstimate) -> str:
    """The training layout and its communication per step, for the terminal."""
    layout = f"data {par.data} x tensor {par.tensor} x pipeline {par.pipeline}"
    if par.context > 1:
        layout += f" x context {par.context}"
    if par.sequence:
        layout += " (sequence parallel)"
    if par.expert > 1:
        layout += f", experts over {par.expert} GPUs"
    if par.zero_stage:
        layout += f", ZeRO-{par.zero_stage}"
    if par.gradient_accumulation > 1:
        layout += f", {par.gradient_accumulation} micro-batches a step"
    if par.pipeline_bubble > 0:
        layout += f", bubble {par.pipeline_bubble:.0%}"
    return (
        f"\nparallel: {layout}; communication {ms(par.communication_s)} a step, "
        f"{ms(par.communication_exposed_s)} of it not hidden by compute"
    )


def compare_renderable(
    key: str,
    values: Sequence[Any],
    estimates: Sequence[Estimate],
    as_built: Estimate | None = None,
) -> Table:
    """`dlrig estimate --compare`: one row per value of KEY; with `as_built` (the build as its
    file has it) a first row for it, and each change against it (else against the first
    value: one value alone read "+0.0%" for an RTX 4090 in place of a 3090). Figures are
    never cut: each figure column is as wide as its widest cell and the value wraps, so 80
    columns hold them; a value whose job does not fit has no speed or run."""
    first = estimates[0] if estimates else as_built
    unit = "tokens/s" if first is not None and first.serving is not None else "samples/s"
    base_est = as_built if as_built is not None else (estimates[0] if estimates else None)
    base = base_est.samples_per_s if base_est is not None and base_est.runs else 0.0
    rows = list(zip(values, estimates, strict=True))
    if as_built is not None:
        rows.insert(0, ("(as built)", as_built))
    # A serving job's time to first token, where users queued past the KV cache wait: the
    # tokens/s of more users than it holds stays put while their first token recedes.
    serving = first is not None and first.serving is not None
    cells = []
    for v, e in rows:
        ttft = "-"
        if not e.runs:
            speed, step, run, cost = "none", "-", "-", "-"
        else:
            change = "" if e is as_built or not base else f" ({e.samples_per_s / base - 1:+.1%})"
            speed, step = f"{rate(e.samples_per_s)}{change}", ms(e.step_time_s)
            run, cost = hours(e.run.time_h), f"{e.run.energy_cost:,.2f}"
            ttft = ms(e.serving.ttft_s) if e.serving is not None else "-"
        fits = f"{e.memory.gpu_required_gb:.1f}" + ("" if e.memory.fits else " NO")
        row = [str(v), step, speed, e.bottleneck.value, fits, run, cost]
        cells.append([*row[:2], ttft, *row[2:]] if serving else row)
    currency = (first.run.currency if first is not None else "").strip()
    headers = ["value", "step", unit, "bottleneck", "GiB", "run", f"cost {currency}".strip()]
    if serving:
        headers.insert(2, "TTFT")
    table = Table(
        title=f"what if {key} = ...",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=0,  # the box puts one space between columns
    )
    table.add_column(headers[0], overflow="fold")
    for i, header in enumerate(headers[1:], start=1):
        widest = max([len(row[i]) for row in cells] + [len(w) for w in header.split()])
        justify = "left" if header == "bottleneck" else "right"
        table.add_column(header, justify=justify, width=widest)  # type: ignore[arg-type]
    for row in cells:
        table.add_row(*row)
    return table


def workload_dict(w: Workload, memory_gb: float | None) -> dict[str, Any]:
    """One zoo entry for `dlrig workloads --json`."""
    return {
        "name": w.name,
        "kind": w.kind.value,
        "mode": w.mode.value,
        "params": w.params,
        "forward_flops_per_sample": w.forward_flops_per_sample,
        "forward_flops_per_token": w.forward_flops_per_token,
        "seq_len": w.seq_len,
        "activation_bytes_per_sample": w.activation_bytes_per_sample,
        "input_bytes_per_sample": w.input_bytes_per_sample,
        "batch_size": w.batch_size,
        "precision": w.precision.value,
        "optimizer": w.optimizer.value,
        "finetune": w.finetune.value,
        "dataset": None
        if w.dataset is None
        else {"samples": w.dataset.samples, "bytes_per_sample": w.dataset.bytes_per_sample},
        "memory_gb_at_batch": memory_gb,
        "serve": None if w.serve is None else dataclasses.asdict(w.serve),
        "sources": list(w.sources),
        "notes": w.notes,
    }


def workloads_json(items: Sequence[tuple[Workload, float | None]]) -> str:
    """`dlrig workloads --json`: a list of zoo entries."""
    return dumps([workload_dict(w, m) for w, m in items])


def _si(x: float, billions: str = "G") -> str:
    """3 significant figures with a suffix: 25.6M, 8.18G (parameters: 8.03B), 1.06P."""
    for unit, scale in (("P", 1e15), ("T", 1e12), (billions, 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def workloads_table(items: Sequence[tuple[Workload, float | None]]) -> Table:
    """`dlrig workloads`: name, parameters, FLOPs, batch, precision (a serving workload's
    stored weights), memory at the preset's batch and notes, a section per kind in the zoo's
    order; figures are never cut and notes wrap between words (80 columns hold them)."""
    table = Table(
        title="workload zoo",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=0,  # the box puts one space between columns
    )
    rows: dict[str, list[list[str]]] = {}
    for w, mem in items:
        extra = []
        if w.mode.value != "training":
            extra.append("serving" if w.serve is not None else w.mode.value)
        if w.finetune.value != "full":
            extra.append(w.finetune.value)
        if w.paged_optimizer:
            extra.append("paged optimizer")  # GPU GiB counts it all; a short card spills it
        if w.seq_len:
            extra.append(f"{w.seq_len} tokens")
        precision = w.precision.value if w.serve is None else w.serve.quantization.value
        rows.setdefault(w.kind.value, []).append(
            [
                w.name, _si(w.params, "B"), _si(w.forward_flops_per_sample), str(w.batch_size),
                precision, "" if mem is None else f"{mem:.1f}", ", ".join(extra),
            ]
        )  # fmt: skip
    cells = [row for group in rows.values() for row in group]
    headers = ["name", "params", "FLOPs", "batch", "prec.", "GPU GiB", "notes"]
    for i, header in enumerate(headers):
        if header == "notes":
            table.add_column(header, overflow="fold")
            continue
        widest = max([len(row[i]) for row in cells] + [*map(len, header.split()), 1])
        if header == "name":
            widest = max(widest, *(len(k) for k in rows))
        justify = "left" if header in ("name", "prec.") else "right"
        table.add_column(header, justify=justify, width=widest)  # type: ignore[arg-type]
    for kind, group in rows.items():
        table.add_row(Text(kind, style="bold"))
        for row in group:
            table.add_row(*row)
    return table
