"""HTML pages of dlrig's results: each page function takes the same typed result that the
terminal and `--json` render, lays it out as charts and tables, and returns one
self-contained HTML document (jinja2, autoescaped: every user string is text)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from dlrig import __version__
from dlrig.enums import Bottleneck, Severity
from dlrig.probe.verdicts import PASS_FRACTION as FAULT_FRACTION
from dlrig.report.html.board import board_drawing
from dlrig.report.html.charts import (
    Bar,
    Point,
    Segment,
    Series,
    bar_chart,
    fmt,
    scatter,
    stacked_bars,
    timeline,
)
from dlrig.report.plan import without_server_line
from dlrig.report.prices import PriceView, age_line, currency_line, stale_warning
from dlrig.units import GIB

if TYPE_CHECKING:
    from dlrig.machine.model import Build
    from dlrig.model import Estimate
    from dlrig.plan.results import PlanResult, Scored
    from dlrig.probe.report import ProbeReport
    from dlrig.rules import CheckResult
    from dlrig.watch.samples import Sample
    from dlrig.watch.summary import WatchSummary

STAGE_STYLE = {
    Bottleneck.STORAGE: "s6",
    Bottleneck.CPU_PREPROCESSING: "s1",
    Bottleneck.PCIE: "s5",
    Bottleneck.GPU_COMPUTE: "s0",
    Bottleneck.GPU_MEMORY_BANDWIDTH: "s3",
    Bottleneck.INTERCONNECT: "s2",
    Bottleneck.NETWORK: "s4",
}
SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.INFO)
SEVERITY_HEADING = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Notes"}


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("dlrig.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(version=__version__, **context)


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _waited(exposed_s: dict[Bottleneck, float]) -> list[Segment]:
    """A step's stages as the milliseconds each adds after overlap."""
    return [Segment(s.value, _ms(exposed_s[s]), style) for s, style in STAGE_STYLE.items()]


def stage_bars(est: Estimate) -> Markup:
    """Each stage's time per step (light) and the part of it that adds to the step after
    overlap (dark): the waterfall of what the step is made of."""
    bars = [
        Bar(
            stage.value,
            _ms(est.stages_s[stage]),
            highlighted=_ms(est.exposed_s[stage]),
            hover=(
                f"{stage.value}: {fmt(_ms(est.stages_s[stage]))} ms per step, "
                f"{fmt(_ms(est.exposed_s[stage]))} ms of it not hidden by overlap"
            ),
            style=STAGE_STYLE[stage],
        )
        for stage in STAGE_STYLE
    ]
    return bar_chart(
        f"Where a {fmt(_ms(est.step_time_s))} ms step goes (bottleneck: {est.bottleneck.value})",
        bars,
        "milliseconds per step",
        legend=[("s0", "time the step waits for"), ("faint", "time hidden behind other work")],
    )


def memory_bar(est: Estimate) -> Markup:
    """The memory one GPU (or, on a CPU, the RAM) needs: model states, activations and
    overhead against its capacity."""
    m = est.memory
    where = "RAM" if est.device_is_cpu else "GPU memory"
    return stacked_bars(
        f"{where} per GPU: {m.gpu_required_gb:.1f} GiB needed of {m.gpu_available_gb:g} GiB",
        [
            (
                "",
                [
                    Segment("model states", m.model_states_gb, "s0"),
                    Segment("activations", m.activations_gb, "s1"),
                    Segment("overhead", m.overhead_gb, "s6"),
                ],
            )
        ],
        "GB",
        capacity=m.gpu_available_gb,
        capacity_label=f"capacity {m.gpu_available_gb:g} GiB",
    )


def power_bar(est: Estimate) -> Markup:
    """A node's peak draw beside the supply PSU.1 asks for and the one installed."""
    p = est.power
    bars = [
        Bar("peak draw", p.system_peak_w, style="s4"),
        Bar("PSU needed (PSU.1)", float(p.psu_recommended_w), style="s1"),
    ]
    if p.psu_installed_w:
        bars.append(Bar("PSU installed", p.psu_installed_w, style="s2"))
    return bar_chart("Power per node", bars, "watts")


def estimate_page(est: Estimate) -> str:
    """`dlrig estimate --html`: the step's stages, the bottleneck, memory, power and the run."""
    facts = [
        # The model's interval, as the terminal prints it.
        ("step", f"{fmt(_ms(est.step_time_s))} ms",
         f"interval {fmt(_ms(est.step_time_s_low))}-{fmt(_ms(est.step_time_s_high))} ms"),
        ("throughput", f"{fmt(est.samples_per_s)} samples/s",
         f"interval {fmt(est.samples_per_s_low)}-{fmt(est.samples_per_s_high)}"),
        ("bottleneck", est.bottleneck.value, ", ".join(m.value for m in est.modifiers)),
        ("memory", "fits" if est.memory.fits else "does not fit",
         f"largest batch {est.memory.max_batch_per_gpu}"),
        ("run", f"{fmt(est.run.time_h)} h", f"{est.run.energy_cost:,.2f} {est.run.currency}"),
    ]  # fmt: skip
    return _render(
        "estimate.html.j2",
        title=f"{est.workload} on {est.build}",
        subtitle=(
            f"{est.gpus} x {est.compute_device}, batch {est.batch_per_gpu} per GPU, "
            f"{est.precision.value}"
        ),
        facts=facts,
        charts=[stage_bars(est), memory_bar(est), power_bar(est)],
        est=est,
    )


def estimate_compare_page(key: str, values: Sequence[Any], estimates: Sequence[Estimate]) -> str:
    """`dlrig estimate --compare KEY=... --html`: the same figures per value, on shared axes."""
    labels = [f"{key}={v}" for v in values]
    steps = stacked_bars(
        "Step time by stage (time the step waits for)",
        [(label, _waited(e.exposed_s)) for label, e in zip(labels, estimates, strict=True)],
        "milliseconds per step",
    )
    throughput = bar_chart(
        "Throughput",
        [
            Bar(
                label,
                e.samples_per_s,
                hover=f"{label}: {fmt(e.samples_per_s)} samples/s",
                low=e.samples_per_s_low,
                high=e.samples_per_s_high,
            )
            for label, e in zip(labels, estimates, strict=True)
        ],
        "samples per second (whiskers: the model's 80% interval)",
    )
    rows = [
        (label, e.samples_per_s, _ms(e.step_time_s), e.bottleneck.value, e.memory.fits)
        for label, e in zip(labels, estimates, strict=True)
    ]
    first = estimates[0]
    return _render(
        "estimate_compare.html.j2",
        title=f"{first.workload}: {key} = {', '.join(str(v) for v in values)}",
        subtitle=f"one estimate per value of {key}; everything else as in the build",
        charts=[steps, throughput],
        rows=rows,
    )


def _parts_hover(s: Scored, view: PriceView) -> str:
    return "\n".join(f"{part}: {view.money(price)}" for part, price in s.candidate.price_lines())


def plan_page(
    result: PlanResult, estimates: Sequence[Estimate], view: PriceView | None = None
) -> str:
    """`dlrig plan --html`: the price/throughput frontier with the ranked builds marked, each
    ranked build's parts with their prices' age, stage bars and why it ranks where it does,
    money in the view's currency. `estimates`: the ranked builds' full estimates on the first
    workload, in rank order."""
    from dlrig.plan.explain import why

    view = view or PriceView()
    code = view.currency.code
    describe = [s.candidate.describe() for s in result.builds]
    chosen = {id(s) for s in result.builds}
    points = [
        Point(
            s.price_usd,
            s.throughput,
            f"#{i + 1}",
            f"#{i + 1}: {name}\n{view.money(s.price_usd)}, {fmt(s.throughput)} samples/s\n"
            + _parts_hover(s, view),
            chosen=True,
        )
        for i, (s, name) in enumerate(zip(result.builds, describe, strict=True))
    ] + [
        Point(
            s.price_usd,
            s.throughput,
            "",
            f"{view.money(s.price_usd)}, {fmt(s.throughput)} samples/s\n" + _parts_hover(s, view),
        )
        for s in result.pareto
        if id(s) not in chosen
    ]
    names = ", ".join(w.workload.name for w in result.workloads)
    frontier = scatter(
        "Price against throughput: the frontier (no cheaper build is faster)",
        points,
        f"price ({code})",
        "samples/s (weighted)",
    )
    stages = stacked_bars(
        f"What each stage adds to a ranked build's step ({result.workloads[0].workload.name})",
        [
            (f"#{i + 1} ({e.bottleneck.value})", _waited(e.exposed_s))
            for i, e in enumerate(estimates)
        ],
        "milliseconds per step",
    )
    builds = [
        {
            "rank": i + 1,
            "name": name,
            "price": view.money(s.price_usd),
            "throughput": s.throughput,
            "bottleneck": s.outcomes[0].bottleneck.value,
            "parts": [(part, view.amount(price)) for part, price in s.candidate.price_lines()],
            "age": age_line(s.build, view) or "",
            "why": reason,
        }
        for i, (s, name, reason) in enumerate(
            zip(result.builds, describe, why(result, currency=view.currency), strict=True)
        )
    ]
    notes = [
        line
        for line in (
            currency_line(view),
            stale_warning((s.build for s in result.builds), view),
            without_server_line(result),
        )
        if line
    ]
    return _render(
        "plan.html.j2",
        title=f"Plan for {names} under {view.money(result.budget_usd)}",
        subtitle=f"by {result.objective.kind.value}",
        charts=[frontier, stages] if estimates else [frontier],
        builds=builds,
        currency=code,
        notes=notes,
    )


def check_page(build: Build, result: CheckResult, verdict: str) -> str:
    """`dlrig check --html`: the verdict, the findings by severity with each rule's reasoning,
    and the board with the cards in their slots."""
    from dlrig.rules import RULES

    reasons = {r.id: " ".join((r.check.__doc__ or r.title).split()) for r in RULES}
    groups = [
        (
            SEVERITY_HEADING[severity],
            severity.value,
            [
                {
                    "rule": f.rule,
                    "message": f.message,
                    "fix": f.fix or "",
                    "reason": reasons.get(f.rule, ""),
                }
                for f in result.of(severity)
            ],
        )
        for severity in SEVERITIES
    ]
    return _render(
        "check.html.j2",
        title=f"Check of {build.name}",
        subtitle="the guide's rules on this build",
        verdict=verdict,
        ok=result.ok,
        groups=groups,
        board=board_drawing(build),
    )


def compare_page(rows: Sequence[dict[str, Any]], workload: str) -> str:
    """`dlrig compare --html`: builds side by side on one workload."""
    throughput = bar_chart(
        f"Throughput on {workload}",
        [
            Bar(
                r["name"],
                r["samples_per_s"],
                style=f"s{i % 7}",
                low=r["samples_per_s_low"],
                high=r["samples_per_s_high"],
            )
            for i, r in enumerate(rows)
        ],
        "samples per second (whiskers: the model's 80% interval)",
    )
    price = bar_chart(
        "Price",
        [Bar(r["name"], r["price_usd"] or 0.0, style=f"s{i % 7}") for i, r in enumerate(rows)],
        "USD",
    )
    steps = stacked_bars(
        "Step time by stage (time the step waits for)",
        [
            (
                r["name"],
                [Segment(s.value, _ms(r["exposed_s"][s]), STAGE_STYLE[s]) for s in STAGE_STYLE],
            )
            for r in rows
        ],
        "milliseconds per step",
    )
    return _render(
        "compare.html.j2",
        title=f"{len(rows)} builds on {workload}",
        subtitle="side by side: price, speed, memory, power, findings, energy per run",
        charts=[throughput, price, steps],
        rows=rows,
    )


def _gpu_series(samples: Sequence[Sample], field: str, scale: float = 1.0) -> list[Series]:
    """One line per GPU of a reading field over the run (None where it was not read)."""
    count = max((len(s.gpus) for s in samples), default=0)
    xs = [s.t_s for s in samples]
    out = []
    for i in range(count):
        ys: list[float | None] = []
        for s in samples:
            value = getattr(s.gpus[i], field, None) if i < len(s.gpus) else None
            ys.append(None if value is None else float(value) * scale)
        out.append(Series(f"GPU {i}", xs, ys, f"s{i % 7}"))
    return out


def _exit(code: int | None) -> str:
    return "did not finish under dlrig" if code is None else f"exit code {code}"


def watch_page(summary: WatchSummary, samples: Sequence[Sample]) -> str:
    """`dlrig watch --html`: the GPUs' utilisation, memory, power, temperature and clocks over
    the run with the alarms marked, the host's CPU and disks, and the verdict."""
    marks = [(a.start_s, f"{a.rule}: {a.message}") for a in summary.alarms]
    xs = [s.t_s for s in samples]
    charts = []
    if any(s.gpus for s in samples):
        for title, field, unit, scale in (
            ("GPU utilisation", "utilization_gpu_pct", "%", 1.0),
            ("GPU memory used", "memory_used_bytes", "GiB", 1 / GIB),
            ("GPU power", "power_w", "W", 1.0),
            ("GPU temperature", "temperature_c", "°C", 1.0),
            ("SM clock", "clock_sm_mhz", "MHz", 1.0),
        ):
            charts.append(timeline(title, _gpu_series(samples, field, scale), unit, marks=marks))
    host = [
        Series(
            "CPU busy (all cores)", xs, [100.0 * s.host.cpu_busy_mean_ratio for s in samples], "s1"
        ),
        Series("I/O wait", xs, [100.0 * s.host.iowait_ratio for s in samples], "s6"),
    ]
    charts.append(timeline("Host CPU", host, "% of CPU time", marks=marks))
    disks = sorted({d.name for s in samples for d in s.host.disks})
    if disks:
        reads = [
            Series(
                name,
                xs,
                [
                    next((d.read_mb_s for d in s.host.disks if d.name == name), None)
                    for s in samples
                ],
                f"s{i % 7}",
            )
            for i, name in enumerate(disks)
        ]
        charts.append(timeline("Disk reads", reads, "MB/s", marks=marks))
    v = summary.verdict
    return _render(
        "watch.html.j2",
        title=f"Watched: {summary.command}",
        subtitle=(
            f"{_exit(summary.exit_code)}, {summary.duration_s:.1f} s, {summary.samples} samples "
            f"every {summary.interval_s:g} s"
        ),
        verdict=v,
        alarms=summary.alarms,
        warnings=summary.warnings,
        charts=charts,
    )


# Measured/reference pairs in the probe's verdict evidence, with their unit.
MEASURED_PAIRS = (
    ("measured_tflops", "datasheet_tflops", "TFLOPS"),
    ("measured_gb_s", "reference_gb_s", "GB/s"),
    ("read_mb_s", "datasheet_mb_s", "MB/s"),
)


def _measured_bars(report: ProbeReport) -> list[Bar]:
    bars = []
    for v in report.verdicts:
        ev = v.get("evidence", {})
        for measured_key, reference_key, unit in MEASURED_PAIRS:
            measured, reference = ev.get(measured_key), ev.get(reference_key)
            if isinstance(measured, int | float) and isinstance(reference, int | float):
                share = measured / reference if reference else 0.0
                label = f"{v.get('rule', '')} " + " ".join(
                    str(ev[k]) for k in ("gpu", "disk", "precision", "what") if k in ev
                )
                bars.append(
                    Bar(
                        label,
                        100.0 * share,
                        hover=f"{measured:g} of {reference:g} {unit}: {v.get('message', '')}",
                        style="s2" if share >= FAULT_FRACTION else "s4",
                    )
                )
    return bars


def probe_page(report: ProbeReport) -> str:
    """`dlrig probe --html`: each figure measured against its datasheet (a bar per figure with
    the 0.75 line below which DCGM calls a part faulty), disk reads cold and warm, the loader's
    scaling with workers, and the verdicts."""
    charts = []
    bars = _measured_bars(report)
    if bars:
        charts.append(
            bar_chart(
                "Measured as a share of the datasheet",
                bars,
                "% of the datasheet figure",
                line_at=100.0 * FAULT_FRACTION,
                line_label=f"fault line {FAULT_FRACTION:.0%}",
            )
        )
    disk_bars = []
    for i, d in enumerate(report.disks):
        speed = d.get("speed") or {}
        deep = f"QD{speed.get('deep_queue_depth')}" if speed.get("deep_queue_depth") else "deep"
        for key, what in (
            ("deep_read_mb_s", f"cold {deep}"),
            ("cold_mb_s", "cold QD1"),
            ("warm_mb_s", "warm (page cache)"),
        ):
            if isinstance(speed.get(key), int | float):
                disk_bars.append(
                    Bar(f"{d.get('mountpoint', i)} {what}", float(speed[key]), style=f"s{i % 7}")
                )
    if disk_bars:
        charts.append(bar_chart("Disk sequential read", disk_bars, "MB/s"))
    loader = report.loader or {}
    points = loader.get("points") or []
    if points:
        xs = [float(p["workers"]) for p in points]
        ys: list[float | None] = [float(p["samples_per_s"]) for p in points]
        charts.append(
            timeline(
                "Data loader: samples per second against workers",
                [Series("samples/s", xs, ys, "s0")],
                "samples/s",
                x_label="DataLoader workers",
            )
        )
    return _render(
        "probe.html.j2",
        title=f"Probe of {report.host}",
        subtitle=(
            f"{report.time_utc}, {'quick' if report.quick else 'full'} probe, "
            f"{report.elapsed_s:.0f} s"
        ),
        charts=charts,
        verdicts=report.verdicts,
        notes=report.notes,
    )
