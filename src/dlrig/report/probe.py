"""Rendering a probe: the terminal summary of a `ProbeReport` (the probe package builds it and
the history stores it), history and comparison tables (rich renderables). No I/O here: the
command prints what these return."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlrig.probe.compare import Change
from dlrig.probe.report import ProbeReport
from dlrig.units import bytes_to_gib

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def _gb(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _gpu_row(gpu: dict[str, Any]) -> str:
    if gpu["lost"]:
        return f"LOST ({gpu['reading']['error']})"
    r = gpu["under_load"] or gpu["reading"]
    parts = [f"{_gb(r['memory_total_gb'])} GiB"]
    if r["pcie_gen_current"] is not None:
        parts.append(
            f"PCIe Gen{r['pcie_gen_current']} x{r['pcie_width_current']} "
            f"(max Gen{r['pcie_gen_max']} x{r['pcie_width_max']})"
            + ("" if gpu["under_load"] else " idle")
        )
    if r["power_w"] is not None:
        limit = f"/{r['power_limit_w']:.0f}" if r["power_limit_w"] is not None else ""
        parts.append(f"{r['power_w']:.0f}{limit} W")
    if r["temperature_c"] is not None:
        parts.append(f"{r['temperature_c']} C")
    torch = gpu["torch"]
    if torch:
        best = [m for m in torch["matmul"] if m["tflops"]]
        if best:
            top = max(best, key=lambda m: m["tflops"])
            parts.append(f"{top['precision']} {top['tflops']:.0f} TFLOPS")
        parts.append(f"H2D pinned {_gb(torch['h2d_pinned_gb_s'])} GB/s")
    return ", ".join(parts)


def _mb_s(value: object) -> str:
    return f"{value:.0f}" if isinstance(value, int | float) else "n/a"


def _disk_cells(disk: dict[str, Any]) -> tuple[str, str]:
    """(what was measured, how) for one disk; a figure the document lacks reads n/a."""
    speed = disk.get("speed")
    if speed is None:
        return f"not measured: {disk.get('error')}", ""
    kind = (disk.get("disk") or {}).get("kind") or "unknown kind"
    iops = speed.get("random_4k_iops")
    deep = speed.get("deep_read_mb_s")
    deep_text = f"{deep:.0f} MB/s at QD{speed.get('deep_queue_depth')}, " if deep else ""
    measured = (
        f"{disk.get('device', 'unknown device')} ({kind}): {deep_text}cold "
        f"{_mb_s(speed.get('cold_direct_mb_s', speed.get('cold_mb_s')))} MB/s direct at QD1, "
        f"{_mb_s(speed.get('cold_buffered_mb_s'))} buffered, warm "
        f"{_mb_s(speed.get('warm_mb_s'))}; 4K random {_mb_s(iops)} IOPS"
    )
    method = "O_DIRECT / fadvise"
    if isinstance(speed.get("file_bytes"), int | float):
        method = f"{speed['file_bytes'] / 2**20:.0f} MiB temp file, {method}"
    if deep:
        method += f", deep queue: {'fio' if 'fio' in speed.get('method', '') else 'threads'}"
    return measured, method


def probe_summary(report: ProbeReport) -> Group:
    """The terminal summary of a probe: a table, verdicts, notes."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"dlrig probe: {report.host} ({report.time_utc})", show_lines=False)
    table.add_column("part", style="bold")
    table.add_column("measured")
    table.add_column("method", style="dim", overflow="fold")
    cpu = report.cpu
    if cpu:  # a document saved by an older dlrig may lack the CPU and RAM
        isa = ", ".join(f for f in ("avx512", "amx") if cpu.get(f)) or "no AVX-512/AMX"
        table.add_row(
            "CPU",
            f"{cpu.get('model')}: {cpu.get('sockets')} socket(s), {cpu.get('cores')} cores, "
            f"{cpu.get('threads')} threads, {cpu.get('numa_nodes')} NUMA node(s), {isa}",
            "/proc/cpuinfo, /sys",
        )
    mem = report.memory
    if mem:
        total = bytes_to_gib(mem.get("total_bytes") or 0)
        free = bytes_to_gib(mem.get("available_bytes") or 0)
        table.add_row("RAM", f"{total:.1f} GiB total, {free:.1f} GiB free", "psutil")
    for bw in mem.get("bandwidth") or ():
        table.add_row(
            f"RAM bandwidth ({bw['threads']} thr)",
            f"copy {bw['copy_gb_s']:.1f} GB/s, triad {bw['triad_gb_s']:.1f} GB/s",
            f"STREAM-style, {bw['array_bytes'] / 2**20:.0f} MiB arrays, best of {bw['repeats']}",
        )
    for disk in report.disks:
        table.add_row(f"disk {disk.get('mountpoint')}", *_disk_cells(disk))
    loader = report.loader
    if loader and loader.get("points"):
        points = ", ".join(f"{p['workers']}w {p['samples_per_s']:.0f}/s" for p in loader["points"])
        cpu_ms = loader.get("ms_per_sample")
        per_sample = "" if cpu_ms is None else f" ({cpu_ms:.1f} ms CPU per sample)"
        table.add_row("input pipeline", points + per_sample, "synthetic decode, multiprocessing")
    if not report.gpus:
        nvml = report.system.get("nvml") or {}
        table.add_row("GPUs", f"none: {nvml.get('error') or 'NVML sees no GPU'}", "NVML")
    for gpu in report.gpus:
        name = gpu["name"] or f"GPU {gpu['index']}"
        table.add_row(f"GPU {gpu['index']}", f"{name}: {_gpu_row(gpu)}", "NVML, torch.cuda events")
    parts: list[Any] = [table]
    verdicts = report.verdicts
    if verdicts:
        lines = Text()
        for item in verdicts:
            style = _SEVERITY_STYLE.get(item["severity"], "")
            lines.append(
                f"{item['severity']:<7} {item['rule']:<12} {item['message']}\n", style=style
            )
            if item.get("fix") and item["severity"] != "info":
                lines.append(f"        fix: {item['fix']}\n", style="dim")
        parts.append(lines)
    if report.health is not None:
        parts.append(health_lines(report.health))
    if report.notes:
        parts.append(Text("\n".join(f"note: {n}" for n in report.notes), style="dim"))
    parts.append(Text(f"probe took {report.elapsed_s:.1f} s", style="dim"))
    return Group(*parts)


def health_lines(health: dict[str, Any]) -> Text:
    """A health summary (what `probe` carries) as lines: the verdict, then each error and
    warning with what to do."""
    from rich.text import Text

    style = "green" if health.get("healthy") else "bold red"
    lines = Text(f"health: {health.get('verdict')} ({health.get('taken_utc')})\n", style=style)
    for f in health.get("findings") or ():
        severity = str(f.get("severity"))
        lines.append(
            f"{severity:<7} {f.get('check'):<12} {f.get('message')}\n",
            style=_SEVERITY_STYLE.get(severity, ""),
        )
        if f.get("action"):
            lines.append(f"        do: {f['action']}\n", style="dim")
    return lines


def history_table(rows: list[dict[str, Any]]) -> Table:
    """Past probes, newest first."""
    from rich.table import Table

    table = Table(title="saved probes")
    for column in (
        "id",
        "time (UTC)",
        "host",
        "mode",
        "RAM copy GB/s",
        "disk MB/s",
        "GPUs",
        "faults",
    ):
        table.add_column(column)
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["time_utc"],
            row["host"],
            "quick" if row["quick"] else "full",
            _gb(row["ram_copy_gb_s"]),
            _gb(row["disk_mb_s"], 0),
            str(row["gpus"]),
            str(row["faults"]),
        )
    return table


def _figure(value: object) -> str:
    """A measured figure for people: 3 significant digits, '-' when it was not measured."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def compare_table(changes: tuple[Change, ...], before: str, after: str) -> Table:
    """What changed between two probes."""
    from rich.table import Table

    table = Table(title=f"changes from probe {before} to {after}")
    for column in ("figure", "before", "after", "change"):
        table.add_column(column)
    for c in changes:
        pct = "" if c.change_pct is None else f"{c.change_pct:+.0f}%"
        table.add_row(c.key, _figure(c.before), _figure(c.after), pct)
    if not changes:
        table.add_row("(nothing changed beyond noise)", "", "", "")
    return table


def distributed_summary(data: dict[str, Any]) -> Group:
    """The cluster report of `probe --distributed`: ranks, all-reduce table, slow ranks."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    ranks = Table(title=f"ranks ({data['world_size']}, backend {data['backend']})")
    for column in ("rank", "host", "local rank", "GPU", "compute TFLOPS"):
        ranks.add_column(column)
    for r in data["ranks"]:
        gpu = (r.get("gpu") or {}).get("name") or "-"
        ranks.add_row(
            str(r["rank"]), r["host"], str(r["local_rank"]), gpu, f"{r['compute_tflops']:.3f}"
        )
    table = Table(title="all-reduce")
    for column in ("bytes", "time (ms)", "algbw GB/s", "busbw GB/s"):
        table.add_column(column, justify="right")
    for p in data["allreduce"]:
        table.add_row(
            f"{p['bytes']:,}",
            f"{p['time_s'] * 1000:.3f}",
            f"{p['algbw_gb_s']:.2f}",
            f"{p['busbw_gb_s']:.2f}",
        )
    slow = data["slow_ranks"]
    verdict = (
        Text(f"slow ranks: {', '.join(map(str, slow))}", style="yellow")
        if slow
        else Text("no slow rank (all within 75% of the median compute figure)", style="dim")
    )
    return Group(ranks, table, verdict, Text(data["method"], style="dim"))


def train_summary(data: dict[str, Any]) -> Group:
    """`probe --train`: measured against estimated, stage by stage, and what stands in."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    timing = data["timing"]
    table = Table(title=f"{data['workload']}: measured vs estimated ({timing['device']})")
    for column in ("stage", "measured ms", "estimated ms", "measured / estimated"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for row in data["rows"]:
        style = "bold" if row["stage"] == data["most_different"] else ""
        table.add_row(
            row["stage"],
            f"{row['measured_s'] * 1000:.2f}",
            f"{row['estimated_s'] * 1000:.2f}",
            f"{row['ratio']:.2f}x",
            style=style,
        )
    lines = [
        Text(f"differs most: {data['most_different']}", style="bold")
        if data["most_different"]
        else Text("no stage to compare", style="dim"),
        Text(
            f"{timing['steps']} timed steps after {timing['warmup_steps']} warm-up, batch "
            f"{data['batch']}, {timing['precision']}, {timing['samples_per_s']:.1f} samples/s "
            f"(steps {timing['step_s_min'] * 1000:.1f}-{timing['step_s_max'] * 1000:.1f} ms), "
            f"torch {timing['torch_version']}"
        ),
        Text(f"stand-in: {data['stand_in']}"),
        Text(f"estimated on: {data['build']} ({data['compute_device']})"),
        Text(timing["method"], style="dim"),
    ]
    lines += [Text(f"assumed: {a}", style="dim") for a in data["assumptions"]]
    return Group(table, *lines)
