"""HTML pages of dlrig's results: each page function takes the same typed result that the
terminal and `--json` render, lays it out as charts and tables, and returns one
self-contained HTML document (jinja2, autoescaped: every user string is text)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup
from rich.text import Text

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
from dlrig.report.html.terminal import terminal_html
from dlrig.report.plan import bom_lines
from dlrig.report.prices import PriceView
from dlrig.report.probe import probe_summary
from dlrig.report.watch import summary_text
from dlrig.units import GIB

if TYPE_CHECKING:
    from dlrig.health import HealthReport
    from dlrig.machine.model import Build
    from dlrig.model import Estimate
    from dlrig.model.serving_batch import BatchRun
    from dlrig.model.serving_load import ServingLoad
    from dlrig.plan.results import PlanResult, Scored
    from dlrig.probe.report import ProbeReport
    from dlrig.report.compare import Compared
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
    overlap (solid): the waterfall of what the step is made of; the legend names each
    stage's colour."""
    from dlrig.report.estimate import ms

    shown = [s for s in STAGE_STYLE if est.stages_s[s] > 0 or s is est.bottleneck]
    bars = [
        Bar(
            stage.value,
            _ms(est.stages_s[stage]),
            highlighted=_ms(est.exposed_s[stage]),
            hover=(
                f"{stage.value}: {ms(est.stages_s[stage])} per step, "
                f"{ms(est.exposed_s[stage])} of it not hidden by overlap"
            ),
            style=STAGE_STYLE[stage],
        )
        for stage in shown
    ]
    what = "output token" if est.serving is not None else "step"
    return bar_chart(
        f"Where a {ms(est.step_time_s)} {what} goes (bottleneck: {est.bottleneck.value})",
        bars,
        f"milliseconds per {what} (solid: what it waits for; light: hidden behind other work)",
        legend=[(STAGE_STYLE[s], s.value) for s in shown] + [("faint", "hidden behind other work")],
    )


def memory_bar(est: Estimate) -> Markup:
    """The memory one GPU (or, on a CPU, the RAM) needs: model states, activations and
    overhead (served: weights, KV cache and the engine's reserve) against its capacity."""
    m = est.memory
    where = "RAM" if est.device_is_cpu else "GPU memory"
    names = ("model states", "activations", "overhead")
    if est.serving is not None:
        from dlrig.report.serving import held_users

        held = _count(held_users(est, est.serving), "user")
        at_once = " at once" if est.serving.users_waiting and est.runs else ""
        names = ("weights", f"KV cache ({held}{at_once})", "engine reserve")
    return stacked_bars(
        f"{where} per GPU: {m.gpu_required_gb:.1f} GiB needed of {m.gpu_available_gb:g} GiB",
        [
            (
                "",
                [
                    Segment(names[0], m.model_states_gb, "s0"),
                    Segment(names[1], m.activations_gb, "s1"),
                    Segment(names[2], m.overhead_gb, "s6"),
                ],
            )
        ],
        "GiB",
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


def _estimate_facts(est: Estimate) -> list[tuple[str, str, str]]:
    """The headline figures, in the terminal's own words and rounding."""
    from dlrig.report.estimate import hours, ms, rate

    m = est.memory
    memory = (
        "memory",
        "fits" if m.fits else "does not fit",
        f"{m.gpu_required_gb:.1f} GiB of {m.gpu_available_gb:g} GiB per GPU",
    )
    if not est.runs:
        return [memory, ("throughput", "none", "the job cannot run as asked")]
    run = ("run", hours(est.run.time_h), f"{est.run.energy_cost:,.2f} {est.run.currency}")
    s = est.serving
    if s is not None:
        return [
            ("time to first token", ms(s.ttft_s), _count(s.users, "user")
             + (f"; {ms(s.queue_wait_s)} of it waiting for a slot" if s.users_waiting else "")
             + (f"; {ms(s.ttft_all_at_once_s)} when all ask at once" if s.users > 1 else "")),
            ("time per output token", ms(est.step_time_s), f"binds: {s.binding.value}"),
            ("throughput", f"{est.samples_per_s:,.0f} tokens/s",
             f"interval {est.samples_per_s_low:,.0f}-{est.samples_per_s_high:,.0f}; "
             f"{s.tokens_per_s_per_user:,.1f} per user"),
            ("users that fit at once", f"{s.max_users_fit}",
             f"asked: {s.users}"
             + (f"; {s.users_waiting} wait for a slot" if s.users_waiting else "")),
            *_load_facts(s.load),
            *_batch_facts(est, s.batch),
            memory, run,
        ]  # fmt: skip
    return [
        ("step", ms(est.step_time_s),
         f"interval {ms(est.step_time_s_low)}-{ms(est.step_time_s_high)}"),
        ("throughput", f"{rate(est.samples_per_s)} samples/s",
         f"interval {rate(est.samples_per_s_low)}-{rate(est.samples_per_s_high)}"),
        ("bottleneck", est.bottleneck.value, ", ".join(m.value for m in est.modifiers)),
        (*memory[:2], f"{memory[2]}; largest batch {m.max_batch_per_gpu}"),
        run,
    ]  # fmt: skip


def _batch_facts(est: Estimate, batch: BatchRun | None) -> list[tuple[str, str, str]]:
    """`serve.requests` sent at once: the batch's run time with its interval, and its waves."""
    from dlrig.report.serving import batch_run_s_interval, batch_waves, hours_of_s

    if batch is None:
        return []
    low, high = batch_run_s_interval(est, batch)
    return [
        (f"batch of {batch.requests:,} requests", hours_of_s(batch.run_s),
         f"interval {hours_of_s(low)}-{hours_of_s(high)}; {batch_waves(batch)}; "
         f"{batch.tokens_per_s_total:,.0f} tokens/s over the run"),
    ]  # fmt: skip


def _load_facts(load: ServingLoad | None) -> list[tuple[str, str, str]]:
    """Poisson arrivals (issue 36): p99 latency at the asked rate, and the largest rate
    meeting the bounds with what stops a higher one."""
    from dlrig.report.estimate import ms

    if load is None:
        return []
    facts = []
    x = load.at_rate
    if x is not None:
        ttft = "unbounded" if x.ttft_p99_s is None else ms(x.ttft_p99_s)
        tpot = "-" if x.tpot_p99_s is None else ms(x.tpot_p99_s)
        facts.append((f"at {x.requests_per_s:g} requests/s", f"TTFT p99 {ttft}",
                      f"TPOT p99 {tpot}, {x.utilisation:.0%} utilised"))  # fmt: skip
    if load.max_requests_per_s is not None:
        limit = "-" if load.limit is None else load.limit.value
        rate = f"{load.max_requests_per_s:,.3g} requests/s"
        binds = f"then binds: {limit}"
        if load.max_requests_per_s_low is not None and load.max_requests_per_s_high is not None:
            binds = (
                f"interval {load.max_requests_per_s_low:,.3g}-"
                f"{load.max_requests_per_s_high:,.3g}; {binds}"
            )
        facts.append(("largest rate at the p99 bounds", rate, binds))
    return facts


def estimate_page(est: Estimate, note: str | None = None, rent: Markup | None = None) -> str:
    """`dlrig estimate --html`: the headline figures, the step's stages, memory and power as
    charts, and everything the terminal prints (`note`: the line it opens with, check's
    GPU.4 finding when the job does not fit as written; `rent`: the buy-or-rent section,
    report/html/rent.py, when `--rent` asked for it)."""
    from dlrig.report.estimate import estimate_renderable

    charts = [memory_bar(est), power_bar(est)]
    if est.runs:
        charts.insert(0, stage_bars(est))
    subtitle = (
        f"{est.gpus} x {est.compute_device}, batch {est.batch_per_gpu} per GPU, "
        f"{est.precision.value}"
    )
    if est.serving is not None:
        s = est.serving
        subtitle = (
            f"{s.gpus} x {s.gpu}, {s.engine} engine, {s.quantization} weights, "
            f"{_count(s.users, 'user')}"
        )
    return _render(
        "estimate.html.j2",
        title=f"{est.workload} on {est.build}",
        subtitle=subtitle,
        note=note,
        facts=_estimate_facts(est),
        charts=charts,
        est=est,
        details=terminal_html(estimate_renderable(est)),
        rent=rent,
    )


def estimate_compare_page(
    key: str,
    values: Sequence[Any],
    estimates: Sequence[Estimate],
    as_built: Estimate | None = None,
    refused: Sequence[str] = (),
) -> str:
    """`dlrig estimate --compare KEY=... --html`: the same figures per value, on shared axes,
    and the terminal's table and refusals."""
    from dlrig.report.estimate import compare_renderable

    labels = [f"{key}={v}" for v in values]
    runs = [(label, e) for label, e in zip(labels, estimates, strict=True) if e.runs]
    charts = []
    if runs:
        charts.append(
            stacked_bars(
                "Step time by stage (time the step waits for)",
                [(label, _waited(e.exposed_s)) for label, e in runs],
                "milliseconds per step",
            )
        )
        charts.append(
            bar_chart(
                "Throughput",
                [
                    Bar(
                        label,
                        e.samples_per_s,
                        hover=f"{label}: {fmt(e.samples_per_s)} {_unit(e)}",
                        low=e.samples_per_s_low if e.has_interval else None,
                        high=e.samples_per_s_high if e.has_interval else None,
                    )
                    for label, e in runs
                ],
                f"{_unit(runs[0][1])} (whiskers: the model's 80% interval)",
            )
        )
    first = estimates[0]
    return _render(
        "estimate_compare.html.j2",
        title=f"{first.workload}: {key} = {', '.join(str(v) for v in values)}",
        subtitle=f"one estimate per value of {key}; everything else as in the build",
        charts=charts,
        details=terminal_html(
            compare_renderable(key, values, estimates, as_built), *(Text(r) for r in refused)
        ),
    )


def _count(n: int, noun: str) -> str:
    """'1 user', '16 users'."""
    return f"{n} {noun}{'s' * (n != 1)}"


def _unit(est: Estimate) -> str:
    return "tokens/s" if est.serving is not None else "samples/s"


def _parts_hover(s: Scored, view: PriceView) -> str:
    return "\n".join(f"{part}: {view.money(price)}" for part, price in bom_lines(s))


def plan_page(
    result: PlanResult,
    estimates: Sequence[Estimate],
    view: PriceView | None = None,
    seconds: float = 0.0,
    rent: Markup | None = None,
) -> str:
    """`dlrig plan --html`: the price/throughput frontier with the ranked builds marked, what
    each stage adds to each ranked build's step, and everything the terminal prints (each
    build's parts, prices' age, why it ranks where it does and its warnings, the frontier and
    the search), money in the view's currency. `estimates`: the ranked builds' full
    estimates on the first workload, in rank order; `seconds`: the search's time; `rent`: the
    buy-or-rent section (report/html/rent.py) when `--rent` asked for it."""
    from dlrig.plan.explain import rate, why
    from dlrig.report.plan import plan_renderable

    view = view or PriceView()
    code = view.currency.code
    unit = result.rate_unit
    describe = [s.candidate.describe() for s in result.builds]
    chosen = {id(s) for s in result.builds}
    points = [
        Point(
            s.price_usd,
            s.throughput,
            f"#{i + 1}",
            f"#{i + 1}: {name}\n{view.money(s.price_usd)}, {rate(s.throughput)} {unit}\n"
            + _parts_hover(s, view),
            chosen=True,
        )
        for i, (s, name) in enumerate(zip(result.builds, describe, strict=True))
    ] + [
        Point(
            s.price_usd,
            s.throughput,
            "",
            f"{view.money(s.price_usd)}, {rate(s.throughput)} {unit}\n" + _parts_hover(s, view),
        )
        for s in result.pareto
        if id(s) not in chosen
    ]
    names = ", ".join(w.workload.name for w in result.workloads)
    charts = []
    if points:
        charts.append(
            scatter(
                "Price against throughput: the frontier (no cheaper build is faster)",
                points,
                f"price ({code})",
                f"{unit} (weighted)" if result.weighted else unit,
            )
        )
    if estimates:
        what = "output token" if estimates[0].serving is not None else "step"
        charts.append(
            stacked_bars(
                f"What each stage adds to a ranked build's {what} "
                f"({result.workloads[0].workload.name})",
                [
                    (f"#{i + 1} ({e.bottleneck.value})", _waited(e.exposed_s))
                    for i, e in enumerate(estimates)
                    if e.runs
                ],
                f"milliseconds per {what}",
            )
        )
    reasons = why(result, currency=view.currency) if result.builds else []
    return _render(
        "plan.html.j2",
        title=f"Plan for {names} under {view.money(result.budget_usd)}",
        subtitle=f"by {result.objective.kind.value}",
        why=reasons[0] if reasons else "",
        charts=charts,
        details=terminal_html(plan_renderable(result, seconds, view)),
        rent=rent,
    )


def check_page(
    build: Build, result: CheckResult, verdict: str, workload_name: str | None = None
) -> str:
    """`dlrig check --html`: the terminal's heading and verdict, the findings by severity as
    the terminal words them (fix included) beside each rule's reasoning, and the board with
    the cards in their slots."""
    from dlrig.report.check import check_heading
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
                    "fix": f"fix: {f.fix}" if f.fix else "",
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
        subtitle=check_heading(build, workload_name).plain,
        verdict=verdict,
        ok=result.ok,
        groups=groups,
        board=board_drawing(build),
    )


def compare_page(items: Sequence[Compared], workload: str) -> str:
    """`dlrig compare --html`: builds side by side on one workload, as charts and as the
    terminal's table with each build's errors and warnings in full."""
    from dlrig.report.compare import compare_rows, compare_table

    rows = compare_rows(items)
    runs = [r for r in rows if r["samples_per_s"] is not None]
    unit = " or ".join(sorted({r["rate_unit"] for r in rows}))
    charts = []
    if runs:
        charts.append(
            bar_chart(
                f"Throughput on {workload}",
                [
                    Bar(
                        r["name"],
                        r["samples_per_s"],
                        style=f"s{i % 7}",
                        low=r["samples_per_s_low"],
                        high=r["samples_per_s_high"],
                    )
                    for i, r in enumerate(runs)
                ],
                f"{unit} (whiskers: the model's 80% interval)",
            )
        )
    priced = [r for r in rows if r["price_usd"] is not None]
    if priced:
        charts.append(
            bar_chart(
                "Price",
                [Bar(r["name"], r["price_usd"], style=f"s{i % 7}") for i, r in enumerate(priced)],
                "USD",
            )
        )
    if runs:
        charts.append(
            stacked_bars(
                "Step time by stage (time the step waits for)",
                [
                    (
                        r["name"],
                        [
                            Segment(s.value, _ms(r["exposed_s"][s]), STAGE_STYLE[s])
                            for s in STAGE_STYLE
                        ],
                    )
                    for r in runs
                ],
                "milliseconds per step",
            )
        )
    return _render(
        "compare.html.j2",
        title=f"{len(rows)} builds on {workload}",
        subtitle="side by side: price, speed, memory, power, findings, energy per run",
        charts=charts,
        details=terminal_html(compare_table(workload, items)),
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
    charts.extend(_job_charts(samples, marks))
    v = summary.verdict
    bottleneck = v.bottleneck or "none found"
    if v.device_is_cpu and v.bottleneck == Bottleneck.GPU_COMPUTE.value:
        bottleneck += " (on the CPU)"  # design.md: the stage keeps its name, the page says so
    device = "the CPU (no GPU)" if v.device_is_cpu else "the GPU(s)"
    return _render(
        "watch.html.j2",
        title=f"Watched: {summary.command}",
        subtitle=(
            f"{_exit(summary.exit_code)}, {summary.duration_s:.1f} s, {summary.samples} samples "
            f"every {summary.interval_s:g} s"
        ),
        verdict=v,
        bottleneck=bottleneck,
        device=device,
        alarms=summary.alarms,
        warnings=summary.warnings,
        charts=charts,
        details=terminal_html(Text(summary_text(summary))),
    )


def _job_charts(samples: Sequence[Sample], marks: Sequence[tuple[float, str]]) -> list[Markup]:
    """The job's process tree over the run: CPU cores used by the main process and by its
    workers, resident memory, and how many workers ran."""
    jobs = [s for s in samples if s.job is not None]
    if not jobs:
        return []
    xs = [s.t_s for s in jobs]

    def series(name: str, field: str, style: str, scale: float = 1.0) -> Series:
        return Series(name, xs, [float(getattr(s.job, field)) * scale for s in jobs], style)

    return [
        timeline(
            "The job's CPU",
            [
                series("all its processes", "cpu_cores", "s0"),
                series("main process", "main_cpu_cores", "s1"),
                series("loader workers", "workers_cpu_cores", "s2"),
            ],
            "CPU cores busy",
            marks=marks,
        ),
        timeline(
            "The job's memory (RSS)",
            [series("resident set, all processes", "rss_bytes", "s3", 1.0 / GIB)],
            "GiB",
            marks=marks,
        ),
        timeline(
            "The job's processes",
            [series("loader workers", "workers", "s2"), series("processes", "processes", "s6")],
            "count",
            marks=marks,
        ),
    ]


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
    """`dlrig probe --html`: each figure measured against its datasheet (a bar per figure
    with the 0.75 line below which DCGM calls a part faulty), disk reads cold and warm, the
    loader's scaling with workers, and everything the terminal prints of the probe (CPU, RAM
    and its bandwidth, each disk's reads and 4K IOPS, the GPUs, verdicts and notes)."""
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
        details=terminal_html(probe_summary(report)),
    )


def _health_reason(check_id: str) -> str:
    from dlrig.health import CHECKS

    for c in CHECKS:
        if c.check_id == check_id:
            return " ".join((c.run.__doc__ or "").split())
    return ""


def health_page(report: HealthReport) -> str:
    """`dlrig health --html`: the verdict, the findings by severity with each check's
    reasoning, the GPUs' counters, each BMC temperature against its own critical threshold,
    and the BMC's parts."""
    from dlrig.report.health import throttle_names

    groups = [
        (
            SEVERITY_HEADING[severity],
            severity.value,
            [
                {**f, "reason": _health_reason(str(f.get("check")))}
                for f in report.findings
                if f.get("severity") == severity.value
            ],
        )
        for severity in SEVERITIES
    ]
    gpus = [
        {
            "index": g["index"],
            "name": "LOST: " + str(g.get("error") or "") if g.get("lost") else g.get("name") or "?",
            "ecc": f"{fmt_opt(g.get('ecc_volatile_uncorrected'))}/"
            f"{fmt_opt(g.get('ecc_aggregate_uncorrected'))}",
            "rows": f"{fmt_opt(g.get('remapped_rows_correctable'))}/"
            f"{fmt_opt(g.get('remapped_rows_uncorrectable'))}",
            "remap": "failed"
            if g.get("remap_failure")
            else "pending"
            if g.get("remap_pending")
            else "-",
            "replays": fmt_opt(g.get("pcie_replay_count")),
            "throttle": throttle_names(g.get("clocks_event_reasons")),
        }
        for g in report.gpus
    ]
    bmc = report.bmc or {}
    sensors = [s for s in bmc.get("sensors") or () if s.get("present", True)]
    bars = [
        Bar(
            s["name"],
            100.0 * s["reading"] / s["thresholds"]["upper_critical"],
            hover=f"{s['name']}: {s['reading']:g} C of its {s['thresholds']['upper_critical']:g} C "
            "upper critical threshold",
            style="s4" if s["reading"] >= s["thresholds"]["upper_critical"] else "s0",
        )
        for s in sensors
        if s["kind"] == "temperature"
        and s.get("reading") is not None
        and (s.get("thresholds") or {}).get("upper_critical")
    ]
    charts = (
        [
            bar_chart(
                "Temperatures as a share of the BMC's upper critical threshold",
                bars,
                "% of the critical threshold",
                line_at=100.0,
                line_label="critical",
            )
        ]
        if bars
        else []
    )
    bmc_rows = []
    for s in sensors:
        limits = {k: v for k, v in (s.get("thresholds") or {}).items() if v is not None}
        health = s.get("health") or "-"
        bmc_rows.append(
            {
                "kind": str(s["kind"]).replace("_", " "),
                "name": s["name"],
                "reading": "-"
                if s.get("reading") is None
                else f"{s['reading']:g} {s.get('units') or ''}",
                "health": health,
                "style": {"Critical": "sev-error", "Warning": "sev-warning"}.get(health, ""),
                "limits": ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in limits.items()),
            }
        )
    for r in bmc.get("redundancy") or ():
        health = r.get("health") or "-"
        bmc_rows.append(
            {
                "kind": "redundancy",
                "name": r["name"],
                "reading": f"{r.get('members_ok')}/{len(r.get('members') or ())} ok"
                if r.get("members")
                else "-",
                "health": health,
                "style": {"Critical": "sev-error", "Warning": "sev-warning"}.get(health, ""),
                "limits": f"needs {r['min_needed']}" if r.get("min_needed") is not None else "",
            }
        )
    against = (
        f"Counters judged by their growth since the {report.baseline['source']} of "
        f"{report.baseline['taken_utc']}."
        if report.baseline
        else "No earlier reading saved: counters since the driver loaded, logs of this boot."
    )
    return _render(
        "health.html.j2",
        title=f"Health of {report.host}",
        subtitle=report.taken_utc,
        verdict=report.verdict,
        healthy=report.healthy,
        against=against,
        groups=groups,
        gpus=gpus,
        charts=charts,
        bmc_title=f"BMC {bmc.get('address', '')} ({bmc.get('source', '')})"
        + (f": {bmc['product']}" if bmc.get("product") else ""),
        bmc_rows=bmc_rows,
        sources=report.sources,
        catalog_url=report.xid_catalog.get("url", ""),
        catalog_read=report.xid_catalog.get("read", ""),
    )


def fmt_opt(value: Any) -> str:
    """A value or "-" when unknown."""
    return "-" if value is None else str(value)
