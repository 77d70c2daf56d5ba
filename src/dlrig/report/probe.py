"""Rendering a probe: the JSON document (`probe --json`, and what the history stores) and the
terminal summary (rich renderables). No I/O here: the command prints what these return."""

from __future__ import annotations

from typing import Any

from dlrig.probe.compare import Change
from dlrig.probe.result import GpuProbe, ProbeResult
from dlrig.probe.verdicts import Verdict
from dlrig.report.jsonout import to_jsonable
from dlrig.units import bytes_to_gb

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def _reading_json(reading: Any) -> dict[str, Any] | None:
    if reading is None:
        return None
    out = to_jsonable(reading)
    out["memory_total_gb"] = reading.memory_total_gb
    out["event_reason_names"] = list(reading.event_reason_names)
    out["thermal_throttled"] = reading.thermal_throttled
    out["power_capped"] = reading.power_capped
    return dict(out)


def _gpu_json(gpu: GpuProbe) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "name": gpu.reading.name,
        "catalog_name": gpu.catalog_name,
        "lost": gpu.reading.lost,
        "reading": _reading_json(gpu.reading),
        "under_load": _reading_json(gpu.loaded),
        "torch": to_jsonable(gpu.torch),
    }


def _links_json(result: ProbeResult) -> dict[str, Any]:
    pcie = []
    for gpu in result.gpus:
        r = gpu.link_reading
        pcie.append(
            {
                "gpu": gpu.index,
                "gen_current": r.pcie_gen_current,
                "gen_max": r.pcie_gen_max,
                "width_current": r.pcie_width_current,
                "width_max": r.pcie_width_max,
                "under_load": gpu.loaded is not None,
                "nvlink_active": r.nvlink_active_count,
            }
        )
    return {
        "pcie": pcie,
        "topology": to_jsonable(result.topology),
        "p2p_gb_s": to_jsonable(result.p2p_gb_s),
    }


def probe_json(
    result: ProbeResult, verdicts: tuple[Verdict, ...], document: dict[str, Any]
) -> dict[str, Any]:
    """The probe as design.md's JSON: cpu, memory, disks, gpus, links, build (+ more keys)."""
    cpu = to_jsonable(result.cpu)
    cpu["avx512"] = result.cpu.avx512
    cpu["amx"] = result.cpu.amx
    memory = to_jsonable(result.memory)
    memory["bandwidth"] = to_jsonable(result.memory_bandwidth)
    disks = []
    for disk in result.disks:
        entry = to_jsonable(disk.filesystem)
        entry["speed"] = to_jsonable(disk.speed)
        if disk.speed is not None:
            entry["speed"]["cold_mb_s"] = disk.speed.cold_mb_s
        entry["error"] = disk.error
        disks.append(entry)
    loader = None
    if result.loader is not None:
        loader = to_jsonable(result.loader)
        loader["ms_per_sample"] = result.loader.ms_per_sample
    return {
        "host": result.host,
        "time_utc": result.time_utc,
        "quick": result.quick,
        "elapsed_s": result.elapsed_s,
        "stage_s": result.stage_s,
        "cpu": cpu,
        "memory": memory,
        "disks": disks,
        "loader": loader,
        "gpus": [_gpu_json(g) for g in result.gpus],
        "links": _links_json(result),
        "system": {"nvml": to_jsonable(result.nvml), "cuda": to_jsonable(result.cuda)},
        "verdicts": to_jsonable(verdicts),
        "notes": list(result.notes),
        "build": document["build"],
        "assumptions": document["assumptions"],
    }


def _gb(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _gpu_row(gpu: dict[str, Any]) -> str:
    if gpu["lost"]:
        return f"LOST ({gpu['reading']['error']})"
    r = gpu["under_load"] or gpu["reading"]
    parts = [f"{_gb(r['memory_total_gb'])} GB"]
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


def probe_summary(data: dict[str, Any]) -> Any:
    """The terminal summary of a probe's JSON document: a table, verdicts, notes."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"dlrig probe: {data['host']} ({data['time_utc']})", show_lines=False)
    table.add_column("part", style="bold")
    table.add_column("measured")
    table.add_column("method", style="dim", overflow="fold")
    cpu = data["cpu"]
    isa = ", ".join(f for f in ("avx512", "amx") if cpu.get(f)) or "no AVX-512/AMX"
    table.add_row(
        "CPU",
        f"{cpu['model']}: {cpu['sockets']} socket(s), {cpu['cores']} cores, "
        f"{cpu['threads']} threads, {cpu['numa_nodes']} NUMA node(s), {isa}",
        "/proc/cpuinfo, /sys",
    )
    mem = data["memory"]
    total = bytes_to_gb(mem["total_bytes"] or 0)
    table.add_row(
        "RAM",
        f"{total:.1f} GB total, {bytes_to_gb(mem['available_bytes'] or 0):.1f} GB free",
        "psutil",
    )
    for bw in mem["bandwidth"]:
        table.add_row(
            f"RAM bandwidth ({bw['threads']} thr)",
            f"copy {bw['copy_gb_s']:.1f} GB/s, triad {bw['triad_gb_s']:.1f} GB/s",
            f"STREAM-style, {bw['array_bytes'] / 2**20:.0f} MiB arrays, best of {bw['repeats']}",
        )
    for disk in data["disks"]:
        kind = (disk["disk"] or {}).get("kind") or "unknown kind"
        label = f"disk {disk['mountpoint']}"
        speed = disk["speed"]
        if speed is None:
            table.add_row(label, f"not measured: {disk['error']}", "")
            continue
        direct = _gb(speed["cold_direct_mb_s"], 0)
        iops = "n/a" if speed["random_4k_iops"] is None else f"{speed['random_4k_iops']:.0f}"
        table.add_row(
            label,
            f"{disk['device']} ({kind}): cold {direct} MB/s direct, "
            f"{speed['cold_buffered_mb_s']:.0f} buffered, warm {speed['warm_mb_s']:.0f}; "
            f"4K random {iops} IOPS",
            f"{speed['file_bytes'] / 2**20:.0f} MiB temp file, O_DIRECT / fadvise, QD1",
        )
    loader = data["loader"]
    if loader:
        points = ", ".join(f"{p['workers']}w {p['samples_per_s']:.0f}/s" for p in loader["points"])
        table.add_row(
            "input pipeline",
            f"{points} ({loader['ms_per_sample']:.1f} ms CPU per sample)",
            "synthetic decode, multiprocessing",
        )
    if not data["gpus"]:
        nvml = data["system"]["nvml"]
        table.add_row("GPUs", f"none: {nvml['error'] or 'NVML sees no GPU'}", "NVML")
    for gpu in data["gpus"]:
        name = gpu["name"] or f"GPU {gpu['index']}"
        table.add_row(f"GPU {gpu['index']}", f"{name}: {_gpu_row(gpu)}", "NVML, torch.cuda events")
    parts: list[Any] = [table]
    verdicts = data["verdicts"]
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
    if data["notes"]:
        parts.append(Text("\n".join(f"note: {n}" for n in data["notes"]), style="dim"))
    parts.append(Text(f"probe took {data['elapsed_s']:.1f} s", style="dim"))
    return Group(*parts)


def history_table(rows: list[dict[str, Any]]) -> Any:
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


def compare_table(changes: tuple[Change, ...], before: str, after: str) -> Any:
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


def distributed_summary(data: dict[str, Any]) -> Any:
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
