"""What changed between two probes of a machine, from their reports. Pure.

Figures are compared with a noise band: a measured rate that moved less than `NOISE_PCT`
percent is the same figure measured twice; identities (a GPU's name, a link's width) are
compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dlrig.probe.report import ProbeReport
from dlrig.units import bytes_to_gib

NOISE_PCT = 10.0
"""Run-to-run spread of the probe's rates on an unchanged machine is a few percent; a change
beyond 10% is reported."""


@dataclass(frozen=True)
class Change:
    """One figure that differs between two probes."""

    key: str
    before: Any
    after: Any
    change_pct: float | None


def key_figures(report: ProbeReport) -> dict[str, Any]:
    """The figures of a probe worth comparing, by a stable key."""
    out: dict[str, Any] = {}
    mem = report.memory
    out["ram total GiB"] = round(bytes_to_gib(mem.get("total_bytes") or 0), 1)
    for bw in mem.get("bandwidth", []):
        out[f"RAM copy GB/s ({bw['threads']} threads)"] = bw["copy_gb_s"]
        out[f"RAM triad GB/s ({bw['threads']} threads)"] = bw["triad_gb_s"]
    for disk in report.disks:
        speed = disk.get("speed")
        if speed:
            out[f"disk {disk['mountpoint']} cold MB/s"] = speed["cold_mb_s"]
            if speed.get("deep_read_mb_s") is not None:
                depth = speed.get("deep_queue_depth")
                out[f"disk {disk['mountpoint']} read MB/s at QD{depth}"] = speed["deep_read_mb_s"]
            if speed.get("random_4k_iops") is not None:
                out[f"disk {disk['mountpoint']} 4K IOPS"] = speed["random_4k_iops"]
    loader = report.loader
    if loader:
        best = max(loader["points"], key=lambda p: p["samples_per_s"])
        out["loader best samples/s"] = best["samples_per_s"]
    out["gpu count"] = len(report.gpus)
    for gpu in report.gpus:
        i = gpu["index"]
        out[f"GPU {i} name"] = gpu.get("name")
        out[f"GPU {i} lost"] = gpu.get("lost")
        r = gpu.get("under_load") or gpu.get("reading") or {}
        if gpu.get("under_load"):
            out[f"GPU {i} PCIe under load"] = (
                f"Gen{r.get('pcie_gen_current')} x{r.get('pcie_width_current')}"
            )
        out[f"GPU {i} power limit W"] = r.get("power_limit_w")
        torch = gpu.get("torch") or {}
        for m in torch.get("matmul", []):
            if m.get("tflops") is not None:
                out[f"GPU {i} {m['precision']} TFLOPS"] = m["tflops"]
        for name in ("h2d_pinned_gb_s", "device_memory_gb_s"):
            if torch.get(name) is not None:
                out[f"GPU {i} {name}"] = torch[name]
    return out


def _pct(before: float, after: float) -> float | None:
    return None if before == 0 else 100.0 * (after - before) / before


def compare_probes(before: ProbeReport, after: ProbeReport) -> tuple[Change, ...]:
    """Figures that appeared, disappeared, or moved beyond the noise band."""
    a, b = key_figures(before), key_figures(after)
    changes = []
    for key in sorted(set(a) | set(b), key=lambda k: (k not in a, k)):
        old, new = a.get(key), b.get(key)
        if (
            isinstance(old, int | float)
            and isinstance(new, int | float)
            and not isinstance(old, bool)
        ):
            pct = _pct(float(old), float(new))
            if pct is not None and abs(pct) <= NOISE_PCT:
                continue
            if pct is None and old == new:
                continue
            changes.append(Change(key, round(old, 2), round(new, 2), pct))
        elif old != new:
            changes.append(Change(key, old, new, None))
    return tuple(changes)


def history_row(probe_id: int, report: ProbeReport) -> dict[str, Any]:
    """One line of `probe --history`: the headline figures of a saved probe."""
    bandwidth = report.memory.get("bandwidth", [])
    disks = [
        d["speed"].get("read_mb_s", d["speed"]["cold_mb_s"]) for d in report.disks if d.get("speed")
    ]
    return {
        "id": probe_id,
        "time_utc": report.time_utc,
        "host": report.host,
        "quick": report.quick,
        "ram_copy_gb_s": max((bw["copy_gb_s"] for bw in bandwidth), default=None),
        "disk_mb_s": disks[0] if disks else None,
        "gpus": len(report.gpus),
        "faults": report.faults,
    }
