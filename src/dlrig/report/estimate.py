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
    """The estimate as design.md's JSON object (plus extra keys beside the fixed ones)."""
    return {
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
            "time_s_low": est.step_time_s_low,
            "time_s_high": est.step_time_s_high,
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
            "samples_per_s": est.samples_per_s,
            "samples_per_s_low": est.samples_per_s_low,
            "samples_per_s_high": est.samples_per_s_high,
            "tokens_per_s": est.tokens_per_s,
        },
        "memory": {
            "gpu_required_gb": est.memory.gpu_required_gb,
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
        },
        "run": {
            "time_h": _finite(est.run.time_h),
            "energy_kwh": _finite(est.run.energy_kwh),
            "energy_cost": _finite(est.run.energy_cost),
            "co2_kg": _finite(est.run.co2_kg),
            "currency": est.run.currency,
            "samples": est.run.samples,
            "steps": est.run.steps,
            "electricity_per_kwh": est.run.electricity_per_kwh,
            "co2_kg_per_kwh": est.run.co2_kg_per_kwh,
        },
        "parallel": _parallel(est.parallel),
        "assumptions": list(est.assumptions),
    }


def _parallel(par: ParallelEstimate | None) -> dict[str, Any] | None:
    """The training layout and its communication per step (None for inference and CPUs)."""
    if par is None:
        return None
    return {
        "data": par.data,
        "tensor": par.tensor,
        "pipeline": par.pipeline,
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
    """A duration per step for people: 1.23 ms, 216 ms, 1.2 s."""
    if seconds >= 10:
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    value = s_to_ms(seconds)
    return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"


def rate(x: float) -> str:
    """A throughput for people: 1.2k, 35.6k, 1.20M."""
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k"
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def hours(h: float) -> str:
    """A run time for people: 45 min, 12.3 h, 6.1 days."""
    if not math.isfinite(h):
        return "never"
    if h < 1:
        return f"{h * 60:.0f} min"
    return f"{h:.1f} h" if h < 48 else f"{h / 24:.1f} days"


def _stages_table(est: Estimate) -> Table:
    table = Table(
        title="per step",
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


def estimate_renderable(est: Estimate) -> RenderableType:
    """`dlrig estimate` for people: the step, the bottleneck, memory, power and the run."""
    head = Text()
    head.append(f"{est.workload}", style="bold")
    head.append(f" on {est.build}: {est.gpus} x {est.compute_device}, batch {est.batch_per_gpu}")
    head.append(f" per GPU, {est.precision.value} ({est.compute_path.replace('_', ' ')})")
    parts: list[RenderableType] = [head, _stages_table(est)]
    lines = Text()
    lines.append(
        f"step {ms(est.step_time_s)} ({ms(est.step_time_s_low)}-{ms(est.step_time_s_high)}); "
        "bottleneck: ",
        style="",
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
    tput = (
        f"\nthroughput: {rate(est.samples_per_s)} samples/s "
        f"({rate(est.samples_per_s_low)}-{rate(est.samples_per_s_high)}, 80% interval)"
    )
    if est.tokens_per_s is not None:
        tput += f", {rate(est.tokens_per_s)} tokens/s"
    lines.append(tput)
    if est.parallel is not None and est.gpus > 1:
        lines.append(_parallel_line(est.parallel))
    m = est.memory
    fits = "fits" if m.fits else "DOES NOT FIT"
    where = "RAM" if est.device_is_cpu else "GPU memory"
    lines.append(
        f"\n{where}: {m.gpu_required_gb:.1f} GiB needed of {m.gpu_available_gb:g} GiB ({fits}; "
        f"states {m.model_states_gb:.1f}, activations {m.activations_gb:.1f}, overhead "
        f"{m.overhead_gb:.1f}); largest batch that fits: {m.max_batch_per_gpu}"
    )
    p = est.power
    installed = f", installed {p.psu_installed_w:g} W" if p.psu_installed_w else ""
    lines.append(
        f"\npower: {p.system_peak_w:.0f} W peak per node; PSU needed {p.psu_recommended_w} W"
        f"{installed} (PSU.1)"
    )
    r = est.run
    lines.append(
        f"\nrun: {hours(r.time_h)} for {r.samples:,.0f} samples; {r.energy_kwh:,.1f} kWh at the "
        f"wall ({p.psu_efficiency:.0%} PSU); {r.energy_cost:,.2f} {r.currency} at "
        f"{r.electricity_per_kwh:g}/kWh; {r.co2_kg:,.1f} kg CO2 at {r.co2_kg_per_kwh:g} kg/kWh"
    )
    parts.append(lines)
    if est.assumptions:
        assumed = Text("assumptions:", style="dim")
        for a in est.assumptions:
            assumed.append(f"\n  - {a}", style="dim")
        parts.append(assumed)
    return Group(*parts)


def _parallel_line(par: ParallelEstimate) -> str:
    """The training layout and its communication per step, for the terminal."""
    layout = f"data {par.data} x tensor {par.tensor} x pipeline {par.pipeline}"
    if par.sequence:
        layout += " (sequence parallel)"
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
    value: one value alone read "+0.0%" for an RTX 4090 in place of a 3090)."""
    table = Table(
        title=f"what if {key} = ...",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("value", no_wrap=True)
    for col, justify in [
        ("step", "right"), ("samples/s", "right"), ("change", "right"), ("bottleneck", "left"),
        ("GiB", "right"), ("fits", "left"), ("run", "right"),
        (f"cost {estimates[0].run.currency if estimates else ''}".strip(), "right"),
    ]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    base = estimates[0].samples_per_s if estimates else 0.0
    rows = list(zip(values, estimates, strict=True))
    if as_built is not None:
        base = as_built.samples_per_s
        rows.insert(0, ("(as built)", as_built))
    for v, e in rows:
        change = "" if e is as_built else f"{e.samples_per_s / base - 1:+.1%}" if base else ""
        table.add_row(
            str(v), ms(e.step_time_s), rate(e.samples_per_s), change, e.bottleneck.value,
            f"{e.memory.gpu_required_gb:.1f}", "yes" if e.memory.fits else "NO",
            hours(e.run.time_h), f"{e.run.energy_cost:,.2f}",
        )  # fmt: skip
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


def _si(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def workloads_table(items: Sequence[tuple[Workload, float | None]]) -> Table:
    """`dlrig workloads`: name, kind, params, FLOPs, memory at the preset's batch."""
    table = Table(
        title="workload zoo",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column(
        "name", no_wrap=True, min_width=max((len(w.name) for w, _ in items), default=4)
    )
    for col, justify in [
        ("kind", "left"), ("params", "right"), ("FLOPs", "right"), ("batch", "right"),
        ("prec.", "left"), ("GPU GiB", "right"), ("notes", "left"),
    ]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for w, mem in items:
        extra = []
        if w.mode.value != "training":
            extra.append(w.mode.value)
        if w.finetune.value != "full":
            extra.append(w.finetune.value)
        if w.paged_optimizer:
            extra.append("paged optimizer")  # GPU GiB counts it all; a short card spills it
        if w.seq_len:
            extra.append(f"{w.seq_len} tokens")
        table.add_row(
            w.name, w.kind.value, _si(w.params), _si(w.forward_flops_per_sample),
            str(w.batch_size), w.precision.value, "" if mem is None else f"{mem:.1f}",
            ", ".join(extra),
        )  # fmt: skip
    return table
